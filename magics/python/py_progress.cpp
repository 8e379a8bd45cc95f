#include "py_progress.hpp"

namespace xcuda::python
{
    progress_bar::progress_bar(bool enabled, std::string label, std::size_t total) : m_meter(std::move(label), total)
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
        std::optional<std::string> text;
        if (m_mode != mode::none && (text = m_meter.step(done, n)))
        {
            show(*text, done);
        }
    }

    void progress_bar::finish(const std::string& stopped, std::size_t done)
    {
        std::optional<std::string> text = m_meter.finish(stopped, done);
        if (!text)
        {
            return;
        }
        show(*text, done);
        if (m_mode == mode::text)
        {
            m_stream.attr("write")("\n");
            m_stream.attr("flush")();
        }
    }

    void progress_bar::show(const std::string& text, std::size_t done)
    {
        if (m_mode == mode::display)
        {
            py::dict bundle;
            bundle["text/plain"] = text;
            bundle["text/html"] = m_meter.html(text, done);
            if (!m_meter.shown())
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
            m_stream.attr("write")(m_meter.overwrite(text));
            m_stream.attr("flush")();
        }
        m_meter.mark_shown();
    }
}
