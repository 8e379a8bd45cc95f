#include "xcuda_interpreter.hpp"

#include "out_stream_py.hpp"  // generated from kernel/python/out_stream.py

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "pybind11/eval.h"
#include "pybind11_json/pybind11_json.hpp"

#include "interrupt_guard.hpp"

using namespace pybind11::literals;

namespace xcuda
{
    namespace
    {
        // The content of an error execute_reply. Built here because xeus 2.4.1's create_error_reply puts
        // ename in evalue and evalue in ename.
        nl::json error_content(const std::string& ename, const std::string& evalue, const nl::json& traceback)
        {
            return nl::json{{"status", "error"}, {"ename", ename}, {"evalue", evalue}, {"traceback", traceback}};
        }

        std::string exception_name(const py::handle& type)
        {
            if (py::isinstance<py::type>(type))
            {
                return type.attr("__name__").cast<std::string>();
            }
            return py::str(type).cast<std::string>();
        }

        std::string exception_message(const py::handle& value)
        {
            try
            {
                return py::str(value).cast<std::string>();
            }
            catch (py::error_already_set&)
            {
                return "<exception str() failed>";
            }
        }

        // The `cuda` cell magic registered when `import xcuda` fails at start-up, so that only cells using
        // %%cuda fail, and with the import error itself. Importing again either raises that error or, if
        // the module has appeared since (a build finished), loads the real extension and runs the cell.
        py::object run_cuda_magic_after_failed_import(const std::string& line, const std::string& cell)
        {
            py::module_ xcuda_module = py::module_::import("xcuda");
            py::object shell = py::module_::import("IPython").attr("get_ipython")();
            xcuda_module.attr("load_ipython_extension")(shell);
            return shell.attr("run_cell_magic")("cuda", line, cell);
        }
    }

    xcuda_interpreter::xcuda_interpreter(std::string module_dir, output_buffer& output)
        : m_module_dir(std::move(module_dir))
        , m_output(output)
    {
    }

    const py::object& xcuda_interpreter::ipython_shell() const noexcept
    {
        return m_ipython_shell;
    }

    void xcuda_interpreter::configure_impl()
    {
        xpyt::interpreter::configure_impl();

        py::gil_scoped_acquire acquire;
        // Read once: the xeus-python headers only know the Python it was built against.
        py::object version_info = py::module_::import("sys").attr("version_info");
        m_python_version = std::to_string(version_info.attr("major").cast<int>()) + "." +
                           std::to_string(version_info.attr("minor").cast<int>()) + "." +
                           std::to_string(version_info.attr("micro").cast<int>());
        m_debugger_available = !py::module_::import("importlib.util").attr("find_spec")("debugpy").is_none();
        report_bare_exception_names();
        buffer_standard_streams();
        install_ask_exit();
        publish_datetimes_as_text();
        share_history_connection();
        // A kernel started with SIGINT ignored (by a server launched with `&` from a script) inherits
        // that, and Python then installs no handler: interrupts would do nothing. Interrupting a cell
        // is the kernel's contract, so take SIGINT back (interrupt_guard still confines it to cells).
        py::module_ signal = py::module_::import("signal");
        py::object current = signal.attr("getsignal")(signal.attr("SIGINT"));
        if (current.is_none() || current.equal(signal.attr("SIG_IGN")))
        {
            signal.attr("signal")(signal.attr("SIGINT"), signal.attr("default_int_handler"));
        }
        load_xcuda_extension();
    }

    // XPythonShell._showtraceback records last_error = [str(etype), ...], i.e. "<class 'ZeroDivisionError'>",
    // and xeus-python publishes and replies with that. Replacing the method on this shell instance fixes
    // the name at its source, for the iopub error message and the reply alike. Needs the GIL.
    void xcuda_interpreter::report_bare_exception_names()
    {
        py::cpp_function record_error([](py::object self, py::object etype, py::object evalue, py::object stb) {
            py::list last_error;
            last_error.append(exception_name(etype));
            last_error.append(exception_message(evalue));
            last_error.append(stb);
            self.attr("last_error") = last_error;
        });
        m_ipython_shell.attr("_showtraceback") = py::module_::import("types").attr("MethodType")(record_error,
                                                                                                m_ipython_shell);
    }

    // sys.stdout and sys.stderr become text streams whose writes go to the output buffer (see output_buffer
    // for when it publishes). A io.TextIOBase subclass, as ipykernel's OutStream, so that code checking
    // for a text stream (logging, tqdm, print(file=...)) accepts it. Needs the GIL.
    void xcuda_interpreter::buffer_standard_streams()
    {
        py::dict scope;
        scope["_write"] = py::cpp_function([this](const std::string& name, const std::string& text) {
            m_output.write(name, text);
        });
        scope["_flush"] = py::cpp_function([this] {
            py::gil_scoped_release release;
            m_output.flush();
        });
        py::exec(out_stream_py, scope);
    }

    // IPython's exit and quit call shell.ask_exit(), which XPythonShell lacks. As ipykernel's: mark the
    // kernel to end after this cell, with the payload frontends know ({"source": "ask_exit"}); the kernel
    // then closes its CUDA session and exits once the reply and idle status are sent (xcuda's server),
    // and Jupyter restarts it. `exit(keep_kernel=True)` keeps it. Needs the GIL.
    void xcuda_interpreter::install_ask_exit()
    {
        py::cpp_function ask_exit([this](py::object self) {
            bool keep = py::hasattr(self, "keepkernel_on_exit") && !self.attr("keepkernel_on_exit").is_none() &&
                        self.attr("keepkernel_on_exit").cast<bool>();
            self.attr("payload_manager").attr("write_payload")(
                py::dict("source"_a = "ask_exit", "keepkernel"_a = keep));
            if (!keep)
            {
                m_exit_requested = true;
            }
        });
        m_ipython_shell.attr("ask_exit") = py::module_::import("types").attr("MethodType")(ask_exit, m_ipython_shell);
    }

    // IPython's history database is a sqlite connection made on the main thread (the shell's), and sqlite3
    // refuses it on any other thread with an error IPython takes for a corrupt file: it renames the user's
    // history.sqlite to history-corrupt-<time>.sqlite and starts an empty one. Code a client runs on the control
    // channel runs on xeus' control thread: `%history -g x` there did exactly that (and stopped the history
    // saving thread: "History will not be written to the database"). So the connection is opened again,
    // usable from any thread (sqlite serialises its use; the GIL serialises IPython's). A history_request on
    // the control channel is still refused (xcuda_history_manager). An in-memory history stays as it is.
    // Needs the GIL.
    void xcuda_interpreter::share_history_connection()
    {
        py::object manager = m_ipython_shell.attr("history_manager");
        if (manager.is_none() || !manager.attr("enabled").cast<bool>() ||
            py::str(manager.attr("hist_file")).cast<std::string>() == ":memory:")
        {
            return;
        }
        py::object before = manager.attr("connection_options");
        py::dict options;
        options.attr("update")(before);
        options["check_same_thread"] = false;
        try
        {
            manager.attr("connection_options") = options;
            manager.attr("init_db")();
        }
        catch (py::error_already_set& error)
        {
            // The kernel starts anyway, with the connection IPython made (usable on the shell thread only).
            manager.attr("connection_options") = before;
            std::fprintf(stderr, "xcuda: IPython's history database was not reopened for every thread (%s)\n",
                         error.what());
        }
    }

    // xeus-python turns display data and metadata into JSON with pybind11_json, which knows no datetime:
    // `%px expr` raised "to_json not implemented" here, because ipyparallel republishes each engine's
    // result with its message metadata (started, completed: datetimes). ipykernel's session writes
    // datetimes as ISO 8601 text (jupyter_client.jsonutil.json_default); so does this, on a retry only
    // when the plain conversion fails, so ordinary displays pay nothing. Needs the GIL.
    void xcuda_interpreter::publish_datetimes_as_text()
    {
        py::object dumps = py::module_::import("json").attr("dumps");
        py::object loads = py::module_::import("json").attr("loads");
        py::object json_default = py::module_::import("jupyter_client.jsonutil").attr("json_default");
        auto clean = [dumps, loads, json_default](py::object value) {
            return value.is_none() ? value : loads(dumps(value, "default"_a = json_default));
        };
        py::object display_pub = m_ipython_shell.attr("display_pub");
        py::object publish_display = display_pub.attr("publish_display_data");
        display_pub.attr("publish_display_data") = py::cpp_function(
            [publish_display, clean](py::object data, py::object metadata, py::object transient, py::object update) {
                if (metadata.is_none())
                {
                    // ipyparallel shows an engine's stderr with display(..., metadata=None); a message whose
                    // metadata is null fails nbformat's validation (ipykernel sends {} for it).
                    metadata = py::dict();
                }
                try
                {
                    publish_display(data, metadata, transient, update);
                }
                catch (py::error_already_set& error)
                {
                    if (!error.matches(PyExc_RuntimeError))
                    {
                        throw;
                    }
                    publish_display(clean(data), clean(metadata), clean(transient), update);
                }
            });
        py::object displayhook = m_ipython_shell.attr("displayhook");
        py::object publish_result = displayhook.attr("publish_execution_result");
        displayhook.attr("publish_execution_result") = py::cpp_function(
            [publish_result, clean](py::object count, py::object data, py::object metadata) {
                try
                {
                    publish_result(count, data, metadata);
                }
                catch (py::error_already_set& error)
                {
                    if (!error.matches(PyExc_RuntimeError))
                    {
                        throw;
                    }
                    publish_result(count, clean(data), clean(metadata));
                }
            });
    }

    // Needs the GIL. Never touches the CUDA driver: importing xcuda and registering its magics does not.
    void xcuda_interpreter::load_xcuda_extension()
    {
        py::module_ sys = py::module_::import("sys");
        if (!m_module_dir.empty())
        {
            sys.attr("path").attr("insert")(0, m_module_dir);
        }
        try
        {
            py::module_ xcuda_module = py::module_::import("xcuda");
            xcuda_module.attr("load_ipython_extension")(m_ipython_shell);
            m_xcuda_module = std::move(xcuda_module);
        }
        catch (py::error_already_set& error)
        {
            std::cerr << "xcuda: could not load the xcuda extension (module folder: " << m_module_dir
                      << "): " << error.what() << "\n"
                      << "xcuda: the kernel runs plain Python; %%cuda cells will fail with this error.\n"
                      << std::flush;
            m_ipython_shell.attr("register_magic_function")(py::cpp_function(&run_cuda_magic_after_failed_import),
                                                            "cell", "cuda");
        }
    }

    nl::json xcuda_interpreter::execute_request_impl(int execution_counter,
                                                     const std::string& code,
                                                     bool silent,
                                                     bool store_history,
                                                     nl::json user_expressions,
                                                     bool allow_stdin)
    {
        // Nothing may escape: xeus 2.4.1 sends no reply for a request whose handler throws, and the client
        // waits forever.
        // The parent header is stable while this request runs: output written meanwhile goes with it.
        m_output.set_parent(parent_header());
        struct flush_at_end
        {
            output_buffer& output;
            ~flush_at_end() { output.flush(); }  // what the cell printed, before its reply and idle status
        } flush{m_output};
        try
        {
            nl::json reply;
            {
                interrupt_guard guard;
                reply = xpyt::interpreter::execute_request_impl(execution_counter, code, silent, store_history,
                                                                std::move(user_expressions), allow_stdin);
            }
            if (reply.value("status", "") == "error")
            {
                return corrected_error_reply(reply);
            }
            return reply_with_unreported_failure(std::move(reply));
        }
        catch (py::error_already_set& error)
        {
            std::string ename;
            std::string evalue;
            {
                py::gil_scoped_acquire acquire;
                ename = exception_name(error.type());
                evalue = exception_message(error.value());
            }
            return published_error_reply(ename, evalue, silent);
        }
        catch (const std::exception& error)
        {
            return published_error_reply("KernelError", error.what(), silent);
        }
        catch (...)
        {
            return published_error_reply("KernelError", "unknown C++ exception in the kernel", silent);
        }
    }

    // For a failure the base class has already published on iopub: rebuild its reply with ename and
    // evalue in their places.
    nl::json xcuda_interpreter::corrected_error_reply(const nl::json& base_reply)
    {
        py::gil_scoped_acquire acquire;
        py::object last_error = m_ipython_shell.attr("last_error");
        if (!last_error.is_none())
        {
            // The cell's own error, as recorded by report_bare_exception_names' _showtraceback.
            py::list error = last_error;
            return error_content(error[0].cast<std::string>(), error[1].cast<std::string>(), nl::json(error[2]));
        }
        // run_cell itself raised; the base published the error and replied through create_error_reply,
        // which swapped the two. Its std::runtime_error branch published "RuntimeError" and left both empty.
        std::string ename = base_reply.value("evalue", "");
        std::string evalue = base_reply.value("ename", "");
        if (ename.empty() && evalue.empty())
        {
            ename = "RuntimeError";
        }
        return error_content(ename, evalue, base_reply.value("traceback", nl::json::array()));
    }

    // Some failures never reach _showtraceback, so the base replies "ok": IPython shows a UsageError (an
    // unknown magic, bad magic arguments) as a message on stderr. The shell's last ExecutionResult still
    // records it; like ipykernel, reply with an error naming it (stderr already told the user, so nothing
    // more is published).
    nl::json xcuda_interpreter::reply_with_unreported_failure(nl::json base_reply)
    {
        py::gil_scoped_acquire acquire;
        py::object result = m_ipython_shell.attr("last_execution_result");
        if (result.is_none() || result.attr("success").cast<bool>())
        {
            return base_reply;
        }
        py::object error = result.attr("error_before_exec");
        if (error.is_none())
        {
            error = result.attr("error_in_exec");
        }
        return error_content(exception_name(py::type::handle_of(error)), exception_message(error), nl::json::array());
    }

    // For a failure outside the base class (it threw): publish it, as the base would have, and reply.
    nl::json xcuda_interpreter::published_error_reply(const std::string& ename, const std::string& evalue, bool silent)
    {
        const std::vector<std::string> traceback{ename + ": " + evalue};
        if (!silent)
        {
            publish_execution_error(ename, evalue, traceback);
        }
        return error_content(ename, evalue, traceback);
    }

    nl::json xcuda_interpreter::kernel_info_request_impl()
    {
        const std::string banner = "xcuda " XCUDA_VERSION ": Python " + m_python_version +
                                   " with CUDA C++ cells\n"
                                   "  A cell starting with %%cuda is CUDA C++: it is compiled and its kernels\n"
                                   "  become Python callables. %%cuda? shows how.\n";
        return nl::json{
            {"status", "ok"},
            {"protocol_version", "5.3"},
            {"implementation", "xcuda"},
            {"implementation_version", XCUDA_VERSION},
            {"language_info",
             {{"name", "python"},
              {"version", m_python_version},
              {"mimetype", "text/x-python"},
              {"file_extension", ".py"},
              {"pygments_lexer", "ipython3"},
              {"codemirror_mode", {{"name", "ipython"}, {"version", 3}}},
              {"nbconvert_exporter", "python"}}},
            {"banner", banner},
            {"debugger", m_debugger_available},
            {"help_links", nl::json::array()}};
    }

    // Called from a shutdown_request. xkernel::start() then calls std::exit(0): Python is never finalised,
    // so the CUDA context is released here or not at all, and the atexit handlers run here or never (as
    // ipykernel runs them: an ipyparallel.Cluster started in a notebook stops its controller and engines
    // from one). A failure here cannot stop the shutdown, so it is only logged.
    void xcuda_interpreter::shutdown_request_impl()
    {
        {
            py::gil_scoped_acquire acquire;
            try
            {
                // Prints a failing handler's traceback and goes on with the others.
                py::module_::import("atexit").attr("_run_exitfuncs")();
            }
            catch (py::error_already_set& error)
            {
                std::cerr << "xcuda: running the atexit handlers at shutdown failed: " << error.what() << std::endl;
            }
            if (m_xcuda_module && py::hasattr(m_xcuda_module, "_shutdown"))
            {
                try
                {
                    m_xcuda_module.attr("_shutdown")();
                }
                catch (py::error_already_set& error)
                {
                    std::cerr << "xcuda: releasing CUDA resources at shutdown failed: " << error.what() << std::endl;
                }
            }
        }
        xpyt::interpreter::shutdown_request_impl();
    }
}
