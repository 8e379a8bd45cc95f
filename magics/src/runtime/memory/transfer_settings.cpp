#include "transfer_settings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>

#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        // A positive (or, with allow_zero, non-negative) whole number from variable `name` times scale, or
        // `fallback` (in bytes or items, not scaled) when it is not set or malformed (then `problem` says so).
        std::size_t number(const char* name, std::size_t fallback, std::size_t scale, std::string& problem,
                           bool allow_zero = false)
        {
            const char* text = std::getenv(name);
            if (!text || !*text)
            {
                return fallback;
            }
            char* end = nullptr;
            errno = 0;
            unsigned long long value = std::strtoull(text, &end, 10);
            if (errno != 0 || *end != '\0' || (value == 0 && !allow_zero) || text[0] == '-')
            {
                problem = std::string(name) + "='" + text + "' is not a " +
                          (allow_zero ? "whole number (0 or more)" : "positive whole number");
                return fallback;
            }
            return static_cast<std::size_t>(value) * scale;
        }
    }

    transfer_settings transfer_settings::from_environment()
    {
        transfer_settings settings;
        const char* staging = std::getenv("XCUDA_STAGING");
        if (staging && std::string(staging) == "0")
        {
            settings.pageable = pageable_mode::driver;
        }
        std::string& problem = settings.problem;
        const char* mode = std::getenv("XCUDA_PAGEABLE");
        if (mode && *mode)
        {
            try
            {
                settings.pageable = parse_mode(mode);
            }
            catch (const usage_error& e)
            {
                problem = std::string("XCUDA_PAGEABLE: ") + e.what();
            }
        }
        settings.staging_threads = number("XCUDA_STAGING_THREADS", settings.staging_threads, 1, problem);
        settings.staging_spin_us = number("XCUDA_STAGING_SPIN_US", settings.staging_spin_us, 1, problem, true);
        settings.chunk_bytes = number("XCUDA_STAGING_CHUNK_MB", settings.chunk_bytes, 1u << 20, problem);
        settings.chunk_count = number("XCUDA_STAGING_BUFFERS", settings.chunk_count, 1, problem);
        settings.registration_limit =
            number("XCUDA_REGISTER_LIMIT_MB", settings.registration_limit, 1u << 20, problem);
        settings.temporary_cache_limit =
            number("XCUDA_TEMPORARY_CACHE_MB", settings.temporary_cache_limit, 1u << 20, problem, true);
        for (auto [name, flag] : {std::pair<const char*, bool*>{"XCUDA_STAGING_UNTOUCHED", &settings.skip_untouched},
                                  std::pair<const char*, bool*>{"XCUDA_STAGING_SCAN", &settings.scan_ahead},
                                  std::pair<const char*, bool*>{"XCUDA_STAGING_SCAN_WAIT", &settings.scan_wait}})
        {
            const char* text = std::getenv(name);
            if (text && *text)
            {
                std::string value(text);
                if (value == "0" || value == "1")
                {
                    *flag = value == "1";
                }
                else
                {
                    problem = std::string(name) + "='" + value + "' is not 0 or 1";
                }
            }
        }
        const char* stream = std::getenv("XCUDA_STAGING_STREAM");
        if (stream && *stream)
        {
            std::string value(stream);
            if (value == "0" || value == "1" || value == "in")
            {
                settings.stream_to_device = value != "0";
                settings.stream_to_host = value == "1";
            }
            else
            {
                problem = "XCUDA_STAGING_STREAM='" + value + "' is not 0, 1 or in";
            }
        }
        const char* prepare = std::getenv("XCUDA_STAGING_PREPARE");
        if (prepare && *prepare)
        {
            std::string value(prepare);
            bool known = false;
            for (prepare_mode mode : {prepare_mode::off, prepare_mode::pages, prepare_mode::huge})
            {
                if (value == prepare_name(mode))
                {
                    settings.prepare = mode;
                    known = true;
                }
            }
            if (!known)
            {
                problem = "XCUDA_STAGING_PREPARE='" + value + "' is not off, pages or huge";
            }
        }
        return settings;
    }

    const char* transfer_settings::mode_name(pageable_mode mode) noexcept
    {
        switch (mode)
        {
        case pageable_mode::automatic: return "auto";
        case pageable_mode::registered: return "registered";
        case pageable_mode::per_copy: return "per-copy";
        case pageable_mode::staged: return "staged";
        case pageable_mode::driver: return "driver";
        }
        return "auto";
    }

    const char* transfer_settings::prepare_name(prepare_mode mode) noexcept
    {
        switch (mode)
        {
        case prepare_mode::off: return "off";
        case prepare_mode::pages: return "pages";
        case prepare_mode::huge: return "huge";
        }
        return "pages";
    }

    transfer_settings::pageable_mode transfer_settings::parse_mode(const std::string& name)
    {
        for (pageable_mode mode : {pageable_mode::automatic, pageable_mode::registered, pageable_mode::per_copy,
                                   pageable_mode::staged, pageable_mode::driver})
        {
            if (name == mode_name(mode))
            {
                return mode;
            }
        }
        throw usage_error("pageable copies are 'auto', 'registered', 'per-copy', 'staged' or 'driver', not '" + name +
                          "'");
    }

    std::size_t transfer_settings::threads_for(unsigned cores) const noexcept
    {
        if (staging_threads)
        {
            return staging_threads;
        }
        return std::min<std::size_t>(12, std::max<std::size_t>(1, cores * 3 / 4));
    }

    std::chrono::microseconds transfer_settings::staging_spin() const noexcept
    {
        return std::chrono::microseconds(static_cast<long long>(std::min<std::size_t>(staging_spin_us, 1000000)));
    }

    transfer_settings transfer_settings::with(const changes& c) const
    {
        auto positive = [](const std::optional<long long>& value, const char* name, std::size_t current) {
            if (!value)
            {
                return current;
            }
            if (*value < 1)
            {
                throw argument_value_error(std::string(name) + " must be at least 1, got " + std::to_string(*value));
            }
            return static_cast<std::size_t>(*value);
        };
        transfer_settings changed = *this;
        changed.problem.clear();
        if (c.pageable)
        {
            changed.pageable = parse_mode(*c.pageable);
        }
        changed.staging_threads = positive(c.staging_threads, "staging_threads", staging_threads);
        if (c.staging_chunk_mb)
        {
            changed.chunk_bytes = positive(c.staging_chunk_mb, "staging_chunk_mb", 0) << 20;
        }
        changed.chunk_count = positive(c.staging_buffers, "staging_buffers", chunk_count);
        if (c.registration_limit_mb)
        {
            changed.registration_limit = positive(c.registration_limit_mb, "registration_limit_mb", 0) << 20;
        }
        changed.registration_entries = positive(c.registration_entries, "registration_entries", registration_entries);
        if (c.temporary_cache_mb)
        {
            if (*c.temporary_cache_mb < 0)
            {
                throw argument_value_error("temporary_cache_mb must be 0 (keep none) or more, got " +
                                           std::to_string(*c.temporary_cache_mb));
            }
            changed.temporary_cache_limit = static_cast<std::size_t>(*c.temporary_cache_mb) << 20;
        }
        return changed;
    }
}
