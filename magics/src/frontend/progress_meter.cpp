#include "progress_meter.hpp"

#include <algorithm>

#include "text.hpp"

namespace xcuda
{
    progress_meter::progress_meter(std::string label, std::size_t total, clock::time_point start)
        : m_label(std::move(label)), m_total(total), m_start(start)
    {
    }

    std::optional<std::string> progress_meter::step(std::size_t done, long long n, clock::time_point now) const
    {
        if (!m_shown && (done >= m_total || (m_total <= 4 && elapsed(now) <= 1.0)))
        {
            return std::nullopt;
        }
        std::string bar = "[" + std::string(24 * done / m_total, '#') + std::string(24 - 24 * done / m_total, '-') + "]";
        return m_label + " " + bar + " " + std::to_string(done) + "/" + std::to_string(m_total) + " sizes, n = " +
               std::to_string(n) + ", " + text::format("%.1f s", elapsed(now));
    }

    std::optional<std::string> progress_meter::finish(const std::string& stopped, std::size_t done,
                                                      clock::time_point now) const
    {
        if (!m_shown)
        {
            return std::nullopt;
        }
        return stopped.empty() ? m_label + ": " + std::to_string(m_total) + " sizes in " + text::format("%.1f s", elapsed(now))
                               : m_label + ": stopped after " + std::to_string(done) + "/" + std::to_string(m_total) +
                                     " sizes (" + stopped + ")";
    }

    std::string progress_meter::html(const std::string& text, std::size_t done) const
    {
        return "<div><progress value=\"" + std::to_string(done) + "\" max=\"" + std::to_string(m_total) +
               "\" style=\"width:16em\"></progress> " + text::html_escape(text) + "</div>";
    }

    std::string progress_meter::overwrite(const std::string& text)
    {
        std::size_t width = std::max(m_width, text.size());
        m_width = text.size();
        return "\r" + text + std::string(width - text.size(), ' ');
    }

    double progress_meter::elapsed(clock::time_point now) const
    {
        return std::chrono::duration<double>(now - m_start).count();
    }
}
