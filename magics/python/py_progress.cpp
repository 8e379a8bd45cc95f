#include "py_progress.hpp"

namespace xcuda::python
{
    progress_bar::progress_bar(bool enabled, std::string label, std::size_t total)
        : m_label(std::move(label)), m_total(total), m_start(std::chrono::steady_clock::now())
    {
        if (!enabled)
        {
            return;
        }
        py::object shell = py::none();
        try
        {
            shell = py::module_::import("IPython").attr("get_ipython")();
        }
        catch (py::error_already_set&)
        {
            // IPython not importable: no notebook, so a terminal at most.
        }
        if (!shell.is_none() && py::hasattr(shell, "display_pub"))
        {
            py::object base = py::module_::import("IPython.core.displaypub").attr("DisplayPublisher");
            if (!py::type::handle_of(shell.attr("display_pub")).is(base))
            {
                m_mode = mode::display;
                return;
            }
        }
        py::object stderr_stream = py::module_::import("sys").attr("stderr");
        if (!stderr_stream.is_none() && py::hasattr(stderr_stream, "isatty") &&
            stderr_stream.attr("isatty")().cast<bool>())
        {
            m_mode = mode::text;
            m_stream = stderr_stream;
        }
    }

    void progress_bar::step(std::size_t done, long long n)
    {
        if (m_mode == mode::none)
        {
            return;
        }
        if (!m_shown && (done >= m_total || (m_total <= 4 && elapsed() <= 1.0)))
        {
            return;
        }
        std::string bar = "[" + std::string(24 * done / m_total, '#') + std::string(24 - 24 * done / m_total, '-') + "]";
        show(m_label + " " + bar + " " + std::to_string(done) + "/" + std::to_string(m_total) + " sizes, n = " +
                 std::to_string(n) + ", " + text::format("%.1f s", elapsed()),
             done);
    }

    void progress_bar::finish(const std::string& stopped, std::size_t done)
    {
        if (!m_shown)
        {
            return;
        }
        std::string text = stopped.empty() ? m_label + ": " + std::to_string(m_total) + " sizes in " + text::format("%.1f s", elapsed())
                                           : m_label + ": stopped after " + std::to_string(done) + "/" +
                                                 std::to_string(m_total) + " sizes (" + stopped + ")";
        show(text, done);
        if (m_mode == mode::text)
        {
            m_stream.attr("write")("\n");
            m_stream.attr("flush")();
        }
    }

    double progress_bar::elapsed() const
    {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    }

    void progress_bar::show(const std::string& text, std::size_t done)
    {
        if (m_mode == mode::display)
        {
            py::dict bundle;
            bundle["text/plain"] = text;
            bundle["text/html"] = "<div><progress value=\"" + std::to_string(done) + "\" max=\"" +
                                  std::to_string(m_total) + "\" style=\"width:16em\"></progress> " +
                                  html_escape(text) + "</div>";
            if (!m_shown)
            {
                m_handle = py::module_::import("IPython.display")
                               .attr("display")(bundle, py::arg("raw") = true, py::arg("display_id") = true);
            }
            else
            {
                m_handle.attr("update")(bundle, py::arg("raw") = true);
            }
        }
        else
        {
            std::size_t width = std::max(m_width, text.size());
            m_stream.attr("write")("\r" + text + std::string(width - text.size(), ' '));
            m_stream.attr("flush")();
            m_width = text.size();
        }
        m_shown = true;
    }
}
