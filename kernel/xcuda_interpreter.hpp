#ifndef XCUDA_INTERPRETER_HPP
#define XCUDA_INTERPRETER_HPP

#include <string>

#include "nlohmann/json.hpp"
#include "pybind11/pybind11.h"
#include "xeus-python/xinterpreter.hpp"

#include "output_buffer.hpp"

namespace nl = nlohmann;
namespace py = pybind11;

namespace xcuda
{
    /**
     * xeus-python's interpreter with the `xcuda` IPython extension loaded, and with what xeus 2.4.1 /
     * xeus-python 0.14.3 get wrong fixed: replies to failed cells (ename is the bare class name, ename and
     * evalue in their places, no exception left to escape and hang the client), SIGINT confined to running
     * cells, kernel_info describing the Python actually running, sys.stdout and sys.stderr buffered into
     * few stream messages (output_buffer) instead of one per write, and exit/quit shutting the kernel down.
     *
     * Ownership: owned by the xeus kernel; owns the Python objects it holds (the shell via the base class,
     * the xcuda module). Python must be initialised before configure() and never finalised (xkernel::start
     * ends in std::exit).
     * Threading: the base configure_impl releases the GIL for the life of the interpreter, so every method
     * here acquires it before touching Python. Requests on the shell channel run on the main thread, the
     * one that initialised Python and the only one where SIGINT is ever unblocked (see interrupt_guard).
     *
     * Hidden visibility, like pybind11's own types that it holds: the class lives in the executable and is
     * never exported (GCC warns about a default-visibility class with hidden-visibility members).
     */
    class __attribute__((visibility("hidden"))) xcuda_interpreter : public xpyt::interpreter
    {
    public:

        // `module_dir` is the folder holding the `xcuda` module; it goes first on sys.path. `output` receives
        // what cells print; it must outlive the interpreter.
        xcuda_interpreter(std::string module_dir, output_buffer& output);

        // Set by exit/quit in a cell: the kernel ends once that cell's reply and idle status are out.
        bool exit_requested() const noexcept { return m_exit_requested; }

        // The IPython shell; valid after configure(). Callers must hold the GIL to use it.
        const py::object& ipython_shell() const noexcept;

    protected:

        void configure_impl() override;

        nl::json execute_request_impl(int execution_counter,
                                      const std::string& code,
                                      bool silent,
                                      bool store_history,
                                      nl::json user_expressions,
                                      bool allow_stdin) override;

        nl::json kernel_info_request_impl() override;

        void shutdown_request_impl() override;

    private:

        void report_bare_exception_names();
        void buffer_standard_streams();
        void install_ask_exit();
        void publish_datetimes_as_text();
        void share_history_connection();
        void load_xcuda_extension();
        nl::json corrected_error_reply(const nl::json& base_reply);
        nl::json reply_with_unreported_failure(nl::json base_reply);
        nl::json published_error_reply(const std::string& ename, const std::string& evalue, bool silent);

        std::string m_module_dir;
        output_buffer& m_output;
        bool m_exit_requested = false;
        std::string m_python_version;
        // The debugger (xeus-python's) needs debugpy: kernel_info says debugger: true only where it imports.
        bool m_debugger_available = false;
        py::object m_xcuda_module;
    };
}

#endif
