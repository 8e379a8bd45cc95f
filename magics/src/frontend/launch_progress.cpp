#include "launch_progress.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "text.hpp"

namespace xcuda
{
    namespace
    {
        constexpr double k_first_show = 1.0;    // seconds before the line appears
        constexpr double k_renew = 0.5;         // seconds between two texts
        constexpr double k_warn_over = 600.0;   // an estimate over this is warned about

        // 1234567 -> "1,234,567"
        std::string grouped(unsigned long long n)
        {
            std::string digits = std::to_string(n), out;
            for (std::size_t i = 0; i < digits.size(); ++i)
            {
                out += (i && (digits.size() - i) % 3 == 0 ? "," : "") + std::string(1, digits[i]);
            }
            return out;
        }
    }

    std::string launch_progress::duration(double seconds)
    {
        const long long s = std::llround(std::max(seconds, 0.0));
        if (s < 60)
            return std::to_string(s) + " s";
        if (s < 3600)
            return std::to_string(s / 60) + " min";
        if (s < 48 * 3600)
            return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
        return std::to_string(s / 86400) + " days";
    }

    launch_progress::update launch_progress::step(const cuda_driver::simulated_launch& launch)
    {
        update u;
        if (launch.finished)
        {
            if (m_shown)
            {
                u.what = update::kind::clear;
                u.line = "\r" + std::string(m_width, ' ') + "\r";
            }
            *this = launch_progress{};
            return u;
        }
        if (launch.seconds < k_first_show || (m_shown && launch.seconds - m_last_shown < k_renew))
        {
            return u;
        }
        const unsigned long long done = std::min(launch.blocks_done, launch.blocks);
        const double rate = done / launch.seconds;
        std::string text = "kernel '" + std::string(launch.kernel) + "' on the PTX simulator: " + grouped(done) + " of " +
                           grouped(launch.blocks) + " blocks (" + std::to_string(launch.blocks ? done * 100 / launch.blocks : 0) +
                           "%), ";
        text += done ? text::format("%.0f", rate) + " blocks/s, about " + duration((launch.blocks - done) / rate) + " left"
                     : duration(launch.seconds) + " in its first block";
        text += "; Kernel > Interrupt stops it";
        if (!m_warned && done && launch.blocks / rate > k_warn_over)
        {
            m_warned = true;
            u.warning = "kernel '" + std::string(launch.kernel) + "' on the PTX simulator: " + grouped(launch.blocks) +
                        " blocks at about " + text::format("%.0f", rate) + " blocks/s would take about " +
                        duration(launch.blocks / rate) +
                        " (the simulator interprets every thread on the CPU); Kernel > Interrupt (Ctrl-C) stops it and "
                        "keeps the session's state";
        }
        u.what = update::kind::show;
        u.html = "<div><progress value=\"" + std::to_string(done) + "\" max=\"" + std::to_string(launch.blocks) +
                 "\" style=\"width:16em\"></progress> " + text::html_escape(text) + "</div>";
        std::size_t width = std::max(m_width, text.size());
        u.line = "\r" + text + std::string(width - text.size(), ' ');
        m_width = text.size();
        u.text = std::move(text);
        m_shown = true;
        m_last_shown = launch.seconds;
        return u;
    }

    void launch_progress::connect(std::function<bool()> interrupted, std::function<void(const update&)> draw)
    {
        auto progress = std::make_shared<launch_progress>();
        cuda_driver::set_launch_watch([progress, interrupted = std::move(interrupted),
                                       draw = std::move(draw)](const cuda_driver::simulated_launch& launch) {
            const bool stop = !launch.finished && interrupted && interrupted();
            update u = progress->step(launch);
            if (draw && (u.what != update::kind::none || !u.warning.empty()))
            {
                draw(u);
            }
            return stop;
        });
    }
}
