// The xcuda kernel: `xcuda -f connection_file`. Starts Python, then a xeus kernel whose interpreter is
// xeus-python's with the xcuda extension loaded (see xcuda_interpreter).

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "pybind11/embed.h"
#include "xeus/xeus_context.hpp"
#include "xeus/xkernel.hpp"
#include "xeus/xkernel_configuration.hpp"
#include "xeus/xserver_shell_main.hpp"
#include "xeus-python/xdebugger.hpp"
#include "xeus-python/xutils.hpp"
#include "zmq.hpp"

#include "interrupt_guard.hpp"
#include "output_buffer.hpp"
#include "private_files.hpp"
#include "replaceable_server.hpp"
#include "xcuda_history_manager.hpp"
#include "xcuda_interpreter.hpp"

namespace
{
    // The command line, for a replacement of this process with the same connection file (exec keeps
    // the pid, so the Jupyter server still sees its kernel). Read by xcuda's %cuda_recover, which
    // needs a new process to get the GPU back after a kernel fault; the pid tells a child process
    // that inherited these that they are not its own.
    void remember_command_line(int argc, char* argv[])
    {
        std::string joined;
        for (int i = 0; i < argc; ++i)
        {
            joined += (i ? "\x1f" : "") + std::string(argv[i]);
        }
        setenv("XCUDA_KERNEL_ARGV", joined.c_str(), 1);
        setenv("XCUDA_KERNEL_PID", std::to_string(getpid()).c_str(), 1);
    }

    bool is_directory(const std::string& path)
    {
        struct stat info;
        return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
    }

    // A folder the kernel imports code from must be one nobody else can have written to (see
    // private_files::code_folder_problem); else a one-line warning says why, and it is not used.
    bool trusted_code_folder(const std::string& path, const char* what)
    {
        std::string problem = xcuda::private_files::code_folder_problem(path);
        if (problem.empty())
        {
            return true;
        }
        std::cerr << "xcuda: not importing xcuda from " << path << " (" << what << "): " << problem
                  << "; another user could put code there. Fix its permissions (chmod go-w) or unset it." << std::endl;
        return false;
    }

    // Where the `xcuda` Python module is: $XCUDA_PYTHONPATH, else the build tree's module folder while it
    // exists (a kernel run from its build folder), else the installed one; each of the first two only when
    // it is a trusted code folder.
    std::string xcuda_module_dir()
    {
        const char* from_environment = std::getenv("XCUDA_PYTHONPATH");
        if (from_environment && (!*from_environment || trusted_code_folder(from_environment, "XCUDA_PYTHONPATH")))
        {
            return from_environment;  // "": no folder of ours, Python's own sys.path
        }
        if (is_directory(XCUDA_BUILD_MODULE_DIR) && trusted_code_folder(XCUDA_BUILD_MODULE_DIR, "the build folder"))
        {
            return XCUDA_BUILD_MODULE_DIR;
        }
        return XCUDA_INSTALL_MODULE_DIR;
    }

    // Python gets only argv[0]: XPythonShellApp parses sys.argv and warns about the kernel's `-f`.
    // The program name is the interpreter the kernel was built for, so that Python finds its home from
    // there (the binary's own prefix is a build folder); a PYTHONHOME in the environment still wins, as
    // the Python configuration reads the environment (a packed runtime under another prefix).
    void initialize_python(char* program)
    {
        PyConfig config;
        PyConfig_InitPythonConfig(&config);
        config.parse_argv = 0;
        // With PYTHONHOME set (a Python unpacked under another prefix), that prefix's interpreter is the one
        // sys.executable must name: subprocesses started from cells (ipyparallel's controller and engines)
        // run it.
        std::string interpreter = XCUDA_PYTHON_EXECUTABLE;
        const char* home = std::getenv("PYTHONHOME");
        // XCUDA_KERNEL_PYTHON: a venv's python, made from the interpreter the kernel embeds (the kernelspec
        // of .ci/kernel-for-venv sets it). Python reads the venv's pyvenv.cfg from there: sys.prefix and
        // site-packages are the venv's, and sys.executable is its python, so %pip installs into it.
        const char* venv_python = std::getenv("XCUDA_KERNEL_PYTHON");
        if (venv_python && *venv_python && access(venv_python, X_OK) == 0)
        {
            interpreter = venv_python;
        }
        else if (home && *home)
        {
            std::string candidate = std::string(home) + "/bin/" + interpreter.substr(interpreter.rfind('/') + 1);
            if (access(candidate.c_str(), X_OK) == 0)
            {
                interpreter = candidate;
            }
        }
        PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, interpreter.c_str());
        if (!PyStatus_Exception(status))
        {
            char* python_argv[] = {program};
            status = PyConfig_SetBytesArgv(&config, 1, python_argv);
        }
        if (!PyStatus_Exception(status))
        {
            status = Py_InitializeFromConfig(&config);
        }
        PyConfig_Clear(&config);
        if (PyStatus_Exception(status))
        {
            Py_ExitStatusException(status);
        }
        if (venv_python && *venv_python && access(venv_python, X_OK) == 0)
        {
            // The kernel's own Python packages (Debian's IPython, xeus-python's) after the venv's, as a venv
            // made with --system-site-packages has them.
            PyRun_SimpleString("import site, sys\n"
                               "for p in site.getsitepackages([sys.base_prefix]):\n"
                               "    if p not in sys.path: sys.path.append(p)\n");
        }
    }
}

int main(int argc, char* argv[])
{
    // Before any thread exists (Python's, xeus's, zmq's), so that all of them inherit the blocked mask.
    xcuda::interrupt_guard::block_in_all_threads();

    const std::string connection_file = xpyt::extract_parameter("-f", argc, argv);
    if (connection_file.empty())
    {
        std::cerr << "usage: " << argv[0] << " -f CONNECTION_FILE\n"
                  << "The xcuda Jupyter kernel; start it with `jupyter console --kernel xcuda` or from a notebook.\n";
        return 2;
    }

    remember_command_line(argc, argv);
    initialize_python(argv[0]);

    // Never destroyed: the kernel ends in std::exit, with the buffer's timer thread still waiting.
    auto* output = new xcuda::output_buffer(std::chrono::milliseconds(100), std::size_t(1) << 20);
    auto interpreter = std::make_unique<xcuda::xcuda_interpreter>(xcuda_module_dir(), *output);
    xcuda::xcuda_interpreter& interpreter_ref = *interpreter;
    auto history_manager = std::make_unique<xcuda::xcuda_history_manager>(*interpreter);

    xeus::xconfiguration config = xeus::load_configuration(connection_file);
    // The debugger of Python cells is xeus-python's, on debugpy (docs/debugger.md): debugpy's adapter runs
    // as a child process of the interpreter Python was started for (the GIL is still this thread's here).
    nl::json debugger_config{{"python", pybind11::module_::import("sys").attr("executable").cast<std::string>()}};
    bool debugger_present = !pybind11::module_::import("importlib.util").attr("find_spec")("debugpy").is_none();
    xeus::xkernel kernel(config,
                         xeus::get_user_name(),
                         xeus::make_context<zmq::context_t>(),
                         std::move(interpreter),
                         xcuda::replaceable_server::make,
                         std::move(history_manager),
                         nullptr,
                         xpyt::make_python_debugger,
                         debugger_config);
    auto& server = static_cast<xcuda::replaceable_server&>(kernel.get_server());
    output->set_publisher([&server](const std::string& name, const std::string& text, const nl::json& parent) {
        server.publish_stream(name, text, parent);
    });
    server.set_before_publish([output] { output->flush(); });
    // The wire gate lets debug_request through only to a kernel that has the debugger (debugpy importable,
    // as kernel_info says); otherwise it answers with an error reply.
    server.set_debugger_present(debugger_present);
    server.set_exit_check([&interpreter_ref] { return interpreter_ref.exit_requested(); },
                          [&interpreter_ref] { interpreter_ref.shutdown_request(); });
    kernel.start();
    return 0;
}
