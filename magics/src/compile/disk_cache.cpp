#include "disk_cache.hpp"

#include "byte_io.hpp"
#include "private_files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xcuda
{
    namespace
    {
        constexpr char magic[9] = "XCUDACC1";
        constexpr std::size_t header_size = 24;

        using byte_io::get_u64;
        using byte_io::put_u64;

        std::string environment(const char* name)
        {
            const char* value = std::getenv(name);
            return value ? std::string(value) : std::string();
        }
    }

    disk_cache disk_cache::from_environment()
    {
        std::string directory = environment("XCUDA_CACHE_DIR");
        if (directory.empty())
        {
            std::string base = environment("XDG_CACHE_HOME");
            if (base.empty() && !environment("HOME").empty())
            {
                base = environment("HOME") + "/.cache";
            }
            directory = base.empty() ? std::string() : base + "/xcuda";
        }
        std::uint64_t capacity = default_capacity;
        std::string size = environment("XCUDA_CACHE_SIZE");
        std::string size_problem;
        if (!size.empty() && !parse_size(size, capacity))
        {
            capacity = default_capacity;
            size_problem = "XCUDA_CACHE_SIZE=" + size.substr(0, 40) +
                           " is not a size in bytes (digits, optionally followed by K, M or G): the compile cache keeps "
                           "its default cap of 1 GiB. Set it to, e.g., 500M";
        }
        bool enabled = environment("XCUDA_CACHE") != "0" && !directory.empty();
        disk_cache cache(directory, capacity, enabled);
        if (!size_problem.empty())
        {
            cache.m_trust_problem = cache.m_trust_problem.empty() ? size_problem : size_problem + "\n" + cache.m_trust_problem;
        }
        return cache;
    }

    bool disk_cache::parse_size(const std::string& text, std::uint64_t& bytes)
    {
        std::size_t digits = 0;
        std::uint64_t value = 0;
        while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
        {
            std::uint64_t digit = static_cast<std::uint64_t>(text[digits] - '0');
            if (value > (UINT64_MAX - digit) / 10)
            {
                return false;
            }
            value = value * 10 + digit;
            ++digits;
        }
        if (digits == 0)
        {
            return false;
        }
        std::string suffix = text.substr(digits);
        int shift = suffix.empty() ? 0 : (suffix == "K" || suffix == "k") ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
        if (shift < 0 || value > (UINT64_MAX >> shift))
        {
            return false;
        }
        bytes = value << shift;
        return true;
    }

    disk_cache::disk_cache(std::string directory, std::uint64_t capacity_bytes, bool enabled)
        : m_directory(std::move(directory))
        , m_capacity(capacity_bytes)
        , m_enabled(enabled)
    {
        if (!m_enabled)
        {
            return;
        }
        if (!private_files::make_folder(m_directory))
        {
            m_enabled = false;
            struct stat st;
            bool exists = ::lstat(m_directory.c_str(), &st) == 0;
            m_trust_problem = "the compile cache folder " + m_directory + " " +
                              (exists ? "is " + private_files::kind_of(st.st_mode) + ", not a folder"
                                      : std::string("cannot be made (") + std::strerror(errno) + ")") +
                              ": the disk cache is off. Remove what is there, or set XCUDA_CACHE_DIR to a folder of yours.";
            return;
        }
        // A folder someone else can write to could hold a binary they planted: the cache is off for it.
        std::string problem = private_files::folder_problem(m_directory);
        if (!problem.empty())
        {
            m_enabled = false;
            m_trust_problem = "the compile cache folder " + m_directory + " " + problem +
                              ": another user could plant a binary there that this session would load and run, so "
                              "the disk cache is off for it. Use a folder only you can write to (chmod 700 " +
                              m_directory + ", or set XCUDA_CACHE_DIR to one).";
        }
    }

    std::uint64_t disk_cache::fnv1a(const std::string& bytes)
    {
        std::uint64_t hash = 1469598103934665603ull;
        for (unsigned char c : bytes)
        {
            hash ^= c;
            hash *= 1099511628211ull;
        }
        return hash;
    }

    std::uint64_t disk_cache::content_hash(const std::string& bytes)
    {
        return content_hash(bytes.data(), bytes.size());
    }

    std::uint64_t disk_cache::content_hash(const char* data, std::size_t size)
    {
        auto mix = [](std::uint64_t h, std::uint64_t word) {
            h ^= word * 0xbf58476d1ce4e5b9ull;
            h = (h << 31) | (h >> 33);
            return h * 0x94d049bb133111ebull;
        };
        std::uint64_t h = 0x9e3779b97f4a7c15ull ^ size;
        std::size_t i = 0;
        for (; i + 8 <= size; i += 8)
        {
            std::uint64_t word;
            std::memcpy(&word, data + i, 8);
            h = mix(h, word);
        }
        std::uint64_t tail = 0;
        std::memcpy(&tail, data + i, size - i);
        h = mix(h, tail);
        h ^= h >> 30;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 27;
        h *= 0x94d049bb133111ebull;
        return h ^ (h >> 31);
    }

    std::string disk_cache::path_for(const std::string& key) const
    {
        char name[32];
        std::snprintf(name, sizeof name, "%016llx.xcc", static_cast<unsigned long long>(fnv1a(key)));
        return m_directory + "/" + name;
    }

    std::string disk_cache::serialize(const std::string& key, const compile_result& result)
    {
        std::string payload;
        byte_io::put_text(payload, key);
        byte_io::put_text(payload, result.arch);
        byte_io::put_text(payload, result.ptx);
        byte_io::put_text(payload, result.cubin);
        byte_io::put_text(payload, result.log);
        char milliseconds[64];
        std::snprintf(milliseconds, sizeof milliseconds, "%.6f", result.milliseconds);
        byte_io::put_text(payload, milliseconds);
        put_u64(payload, result.options.size());
        for (const auto& option : result.options)
        {
            byte_io::put_text(payload, option);
        }
        put_u64(payload, result.lowered_names.size());
        for (const auto& [name, lowered] : result.lowered_names)
        {
            byte_io::put_text(payload, name);
            byte_io::put_text(payload, lowered);
        }
        std::string bytes(magic, 8);
        put_u64(bytes, content_hash(payload));
        put_u64(bytes, payload.size());
        return bytes + payload;
    }

    std::shared_ptr<const compile_result> disk_cache::deserialize(const std::string& bytes, const std::string& key)
    {
        if (bytes.size() < header_size || bytes.compare(0, 8, magic, 8) != 0)
        {
            return nullptr;
        }
        std::size_t at = 8;
        std::uint64_t hash = 0;
        std::uint64_t length = 0;
        get_u64(bytes, at, hash);
        get_u64(bytes, at, length);
        if (length != bytes.size() - header_size)
        {
            return nullptr;  // truncated, or trailing garbage
        }
        // The payload is read in place (no copy of the megabytes of PTX and CUBIN before the fields').
        const std::string& payload = bytes;
        if (content_hash(bytes.data() + header_size, bytes.size() - header_size) != hash)
        {
            return nullptr;
        }
        auto result = std::make_shared<compile_result>();
        std::string stored_key;
        std::string milliseconds;
        at = header_size;
        if (!byte_io::get_text(payload, at, stored_key) || stored_key != key || !byte_io::get_text(payload, at, result->arch) ||
            !byte_io::get_text(payload, at, result->ptx) || !byte_io::get_text(payload, at, result->cubin) ||
            !byte_io::get_text(payload, at, result->log) || !byte_io::get_text(payload, at, milliseconds))
        {
            return nullptr;
        }
        result->milliseconds = std::strtod(milliseconds.c_str(), nullptr);
        std::uint64_t count = 0;
        if (!get_u64(payload, at, count) || count > payload.size())
        {
            return nullptr;
        }
        for (std::uint64_t i = 0; i < count; ++i)
        {
            std::string option;
            if (!byte_io::get_text(payload, at, option))
            {
                return nullptr;
            }
            result->options.push_back(std::move(option));
        }
        if (!get_u64(payload, at, count) || count > payload.size())
        {
            return nullptr;
        }
        for (std::uint64_t i = 0; i < count; ++i)
        {
            std::string name;
            std::string lowered;
            if (!byte_io::get_text(payload, at, name) || !byte_io::get_text(payload, at, lowered))
            {
                return nullptr;
            }
            result->lowered_names.emplace(std::move(name), std::move(lowered));
        }
        return at == payload.size() ? result : nullptr;
    }

    std::shared_ptr<const compile_result> disk_cache::load(const std::string& key) const
    {
        if (!m_enabled)
        {
            return nullptr;
        }
        std::string path = path_for(key);
        std::string bytes;
        if (!private_files::read(path, bytes))
        {
            return nullptr;  // missing, or not trusted (a link, another owner, a second hard link, writable by others)
        }
        auto result = deserialize(bytes, key);
        if (result)
        {
            ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // recently used: last to be evicted
        }
        return result;
    }

    void disk_cache::store(const std::string& key, const compile_result& result) const
    {
        if (!m_enabled)
        {
            return;
        }
        std::string bytes = serialize(key, result);
        std::string path = path_for(key);
        std::string temporary = private_files::temporary_name(path);
        int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
        {
            return;
        }
        bool complete = byte_io::write_all(fd, bytes.data(), bytes.size());
        complete = (::close(fd) == 0) && complete;
        if (!complete || ::rename(temporary.c_str(), path.c_str()) != 0)
        {
            ::unlink(temporary.c_str());
            return;
        }
        account(bytes.size());
    }

    void disk_cache::account(std::uint64_t stored) const
    {
        listing_state& state = *m_listing;
        std::lock_guard<std::mutex> lock(state.mutex);  // one listing at a time in this process
        state.stored_since += stored;
        if (state.listed && state.listed_total + state.stored_since <= m_capacity &&
            state.stored_since < m_capacity / 32)
        {
            return;
        }
        state.listed_total = evict();
        state.listed = true;
        state.stored_since = 0;
        ++state.listings;
    }

    std::uint64_t disk_cache::listings() const
    {
        std::lock_guard<std::mutex> lock(m_listing->mutex);
        return m_listing->listings;
    }

    std::uint64_t disk_cache::evict() const
    {
        struct entry
        {
            std::string path;
            std::uint64_t size;
            std::int64_t used;
        };
        std::vector<entry> entries;
        std::uint64_t total = 0;
        DIR* dir = ::opendir(m_directory.c_str());
        if (!dir)
        {
            return 0;
        }
        while (dirent* item = ::readdir(dir))
        {
            std::string name = item->d_name;
            if (name.find(".xcc.tmp.") != std::string::npos)
            {
                // A store's temporary file: renamed within moments, unless its process died mid-write.
                // Left over for longer than any store takes, it is removed (it would never be evicted).
                std::string path = m_directory + "/" + name;
                struct stat st;
                if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                    ::time(nullptr) - st.st_mtim.tv_sec > stale_temporary_seconds)
                {
                    ::unlink(path.c_str());
                }
                continue;
            }
            if (name.size() < 4 || name.compare(name.size() - 4, 4, ".xcc") != 0)
            {
                continue;
            }
            std::string path = m_directory + "/" + name;
            struct stat st;
            if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
            {
                entries.push_back({path, static_cast<std::uint64_t>(st.st_size),
                                   static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
                total += static_cast<std::uint64_t>(st.st_size);
            }
        }
        ::closedir(dir);
        if (total <= m_capacity)
        {
            return total;
        }
        std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) { return a.used < b.used; });
        // Down to a 32nd below the cap: a full cache then takes that many bytes of stores before it lists again.
        const std::uint64_t low_water = m_capacity - m_capacity / 32;
        for (const auto& e : entries)
        {
            if (total <= low_water)
            {
                break;
            }
            if (::unlink(e.path.c_str()) == 0)
            {
                total -= e.size;
            }
        }
        return total;
    }
}
