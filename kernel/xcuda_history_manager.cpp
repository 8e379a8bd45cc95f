#include "xcuda_history_manager.hpp"

#include <utility>

#include "pybind11/pybind11.h"
#include "pybind11_json/pybind11_json.hpp"

#include "xcuda_interpreter.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace xcuda
{
    namespace
    {
        // IPython returns an iterator of (session, line, input) rows, or (session, line, (input, output))
        // with output=True; the reply wants them as a list of arrays. Rows of the running session read
        // from memory carry session 0 ("current"): a client needs the real number to ask for them again.
        nl::json history_reply(const py::object& manager, const py::object& rows)
        {
            const int current_session = manager.attr("session_number").cast<int>();
            nl::json history = nl::json(py::list(rows));
            for (nl::json& row : history)
            {
                if (row.at(0) == 0)
                {
                    row[0] = current_session;
                }
            }
            return nl::json{{"status", "ok"}, {"history", std::move(history)}};
        }

        // A failed history query must still produce a reply, not end the kernel's shell loop.
        nl::json history_error_reply(py::error_already_set& error)
        {
            return nl::json{{"status", "error"},
                            {"ename", py::str(error.type().attr("__name__")).cast<std::string>()},
                            {"evalue", py::str(error.value()).cast<std::string>()},
                            {"traceback", nl::json::array()},
                            {"history", nl::json::array()}};
        }
    }

    xcuda_history_manager::xcuda_history_manager(const xcuda_interpreter& interpreter)
        : m_interpreter(interpreter)
        , m_shell_thread(std::this_thread::get_id())
        , m_off_thread_reply{{"status", "error"},
                             {"ename", "BadRequest"},
                             {"evalue", "history_request is answered on the shell channel, not the control channel "
                                        "(IPython's history database belongs to the shell's thread): send it on the "
                                        "shell channel"},
                             {"traceback", nl::json::array()},
                             {"history", nl::json::array()}}
    {
    }

    const nl::json* xcuda_history_manager::refuse_off_shell_thread() const
    {
        return std::this_thread::get_id() == m_shell_thread ? nullptr : &m_off_thread_reply;
    }

    void xcuda_history_manager::configure_impl()
    {
    }

    void xcuda_history_manager::store_inputs_impl(int, int, const std::string&, const std::string&)
    {
        // Nothing to do: the shell's run_cell(store_history=True) has stored the cell already.
    }

    nl::json xcuda_history_manager::get_tail_impl(int n, bool raw, bool output) const
    {
        if (const nl::json* refused = refuse_off_shell_thread())
        {
            return *refused;
        }
        py::gil_scoped_acquire acquire;
        try
        {
            py::object manager = m_interpreter.ipython_shell().attr("history_manager");
            return history_reply(manager, manager.attr("get_tail")(n, "raw"_a = raw, "output"_a = output,
                                                           "include_latest"_a = true));
        }
        catch (py::error_already_set& error)
        {
            return history_error_reply(error);
        }
    }

    nl::json xcuda_history_manager::get_range_impl(int session, int start, int stop, bool raw, bool output) const
    {
        if (const nl::json* refused = refuse_off_shell_thread())
        {
            return *refused;
        }
        py::gil_scoped_acquire acquire;
        try
        {
            py::object manager = m_interpreter.ipython_shell().attr("history_manager");
            return history_reply(manager, manager.attr("get_range")(session, start, stop, "raw"_a = raw, "output"_a = output));
        }
        catch (py::error_already_set& error)
        {
            return history_error_reply(error);
        }
    }

    nl::json xcuda_history_manager::search_impl(const std::string& pattern, bool raw, bool output, int n,
                                                bool unique) const
    {
        if (const nl::json* refused = refuse_off_shell_thread())
        {
            return *refused;
        }
        py::gil_scoped_acquire acquire;
        try
        {
            py::object manager = m_interpreter.ipython_shell().attr("history_manager");
            return history_reply(manager, manager.attr("search")(pattern, "raw"_a = raw, "output"_a = output,
                                                        "n"_a = n, "unique"_a = unique));
        }
        catch (py::error_already_set& error)
        {
            return history_error_reply(error);
        }
    }
}
