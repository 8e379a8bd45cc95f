// The IPython magics and load_ipython_extension: %%cuda, %%cuda_header, %%cuda_program (a whole program
// through nvcc, cuda_program), %cuda_info, %cuda_status, and the
// registration of %cuda_timeit and %cuda_bench (py_launch_magics.cpp). Every magic's options are
// declared for the one parser (base/magic_arguments): -h works in each, and a usage error is one line.
//
// They are real IPython magics (shell.register_magic_function), so IPython splits the cell, expands
// {variables} in the line, lists them in %lsmagic and shows their help with %%cuda?. The same
// registration serves the xcuda kernel and `%load_ext xcuda` in any IPython (ipykernel included).
//
// What each magic does is the core's (operations/cuda_cell, compile/program_cell, runtime/header_cell,
// base/help_transform); here the shell's namespace, displays, warnings and prints.

#include "py_common.hpp"

#include <cstdio>

#include "cuda_cell_arguments.hpp"
#include "cuda_cell.hpp"
#include "header_cell.hpp"
#include "plain_magic.hpp"
#include "help_transform.hpp"
#include "program_cell.hpp"
#include "diagnostics_view.hpp"
#include "errors.hpp"
#include "nvrtc_library.hpp"
#include "magic_arguments.hpp"

namespace xcuda::python
{
    void raise_usage(const std::string& message)
    {
        py::object usage_error = py::module_::import("IPython.core.error").attr("UsageError");
        PyErr_SetString(usage_error.ptr(), message.c_str());
        throw py::error_already_set();
    }

    magic_arguments::parsed parse_magic_line(const magic_arguments& declared, const std::string& line)
    {
        return checked_usage([&] { return declared.parse(line); });
    }

    namespace
    {
        // The mimetype the JupyterLab / Notebook 7 extension (share/labextension) reads to mark each message
        // in the cell's editor; other frontends have no renderer for it and show the HTML or text beside it.
        constexpr const char* diagnostics_mimetype = "application/vnd.xcuda.diagnostics+json";

        // A name the shell needs (cuda_cell::reserved_name), or one of this shell's user_ns_hidden.
        bool shell_needs_name(py::handle shell, const std::string& name)
        {
            if (cuda_cell::reserved_name(name))
            {
                return true;
            }
            PyObject* hidden = PyObject_GetAttrString(shell.ptr(), "user_ns_hidden");
            if (!hidden)
            {
                PyErr_Clear();
                return false;
            }
            py::object key = py::str(name);
            int found = PyDict_Check(hidden) ? PyDict_Contains(hidden, key.ptr()) : 0;
            Py_DECREF(hidden);
            if (found < 0)
            {
                PyErr_Clear();
            }
            return found == 1;
        }

        void warn(const std::string& message)
        {
            if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) < 0)
            {
                throw py::error_already_set();
            }
        }

        // Binds a kernel or module under name, unless the shell needs the name (then a warning says how to
        // reach it). A variable of another kind already there is replaced, with a warning the first time.
        // On the path of every re-run of an unchanged cell: no import unless a warning is due.
        void bind_in_namespace(py::handle shell, py::dict user_ns, const std::string& name, py::handle value,
                               const char* what)
        {
            if (shell_needs_name(shell, name))
            {
                warn(cuda_cell::unbound_warning(what, name));
                return;
            }
            py::str key(name);
            PyObject* old = PyDict_GetItemWithError(user_ns.ptr(), key.ptr());  // borrowed
            if (old && Py_TYPE(old) != Py_TYPE(value.ptr()))
            {
                py::module_ xcuda = py::module_::import("xcuda");
                bool ours = py::isinstance(old, xcuda.attr("Kernel")) || py::isinstance(old, xcuda.attr("Module"));
                if (!ours)
                {
                    warn(cuda_cell::replaces_warning(what, name, type_name(old)));
                }
            }
            else if (!old && PyErr_Occurred())
            {
                throw py::error_already_set();
            }
            user_ns[key] = value;
        }

        // The messages of a compile, displayed as HTML, text and the extension's JSON (version 1: the messages
        // with the editor's line numbers; file is "" for the cell's own lines, else the header cell).
        void show_diagnostics(const std::vector<diagnostic>& shown, const cuda_cell_options& options)
        {
            std::string cell_name = cuda_cell::cell_name(options);
            py::module_::import("IPython.display").attr("display")(
                py::dict(py::arg("text/html") = diagnostics_view::html(shown, cell_name),
                         py::arg("text/plain") = diagnostics_view::text(shown, cell_name),
                         py::arg(diagnostics_mimetype) =
                             py::dict(py::arg("version") = 1, py::arg("diagnostics") = diagnostics_list(shown, false))),
                py::arg("raw") = true);
        }

        void run_cuda_cell(py::object shell, const std::string& line, const std::string& cell)
        {
            cuda_cell_options options = checked_usage([&] { return cuda_cell_arguments::parse(line); });
            if (options.help)
            {
                py::print(cuda_cell_arguments::usage());
                return;
            }
            if (!options.name.empty() && shell_needs_name(shell, options.name))
            {
                raise_usage(cuda_cell::reserved_name_problem(options.name));
            }
            checked_usage([&] { cuda_cell::check_source(cell); });
            std::shared_ptr<cuda_module> built;
            try
            {
                built = build_module(cell, options.name, options.compile);
            }
            catch (const compile_error& error)
            {
                cuda_cell::failure failure = cuda_cell::failed(error, options);
                show_diagnostics(failure.shown, options);
                raise_shown_compile_error(error, failure.shown, cuda_cell::magic_lines, failure.summary);
            }
            cuda_cell::outcome outcome = cuda_cell::built(*built, cell, nvrtc_library::driver_note());
            py::object module = wrap_module(built);
            for (const auto& warning : outcome.warnings)
            {
                warn(warning);
            }
            py::dict user_ns = shell.attr("user_ns");
            if (!options.name.empty())
            {
                bind_in_namespace(shell, user_ns, options.name, module, "module");
            }
            else
            {
                py::dict kernels = module.attr("kernels");
                for (auto item : kernels)
                {
                    // Instances ("saxpy<float>") are not identifiers: they stay reachable through the module.
                    if (PyUnicode_Check(item.first.ptr()) && PyUnicode_IsIdentifier(item.first.ptr()) == 1)
                    {
                        bind_in_namespace(shell, user_ns, item.first.cast<std::string>(), item.second, "kernel");
                    }
                }
            }
            // One compact line of resources per kernel, when ptxas ran (sm_XX targets).
            py::dict resources = module.attr("resources");
            for (auto item : resources)
            {
                py::print(str_of(item.first) + ": " + str_of(py::repr(item.second)));
            }
            if (outcome.show_diagnostics)
            {
                show_diagnostics(outcome.shown, options);
            }
            else if (!outcome.log.empty())
            {
                py::module_::import("sys").attr("stderr").attr("write")(outcome.log);
            }
            if (options.show_ptx || options.show_sass)
            {
                py::object display = py::module_::import("IPython.display").attr("display");
                if (options.show_ptx)
                {
                    display(module.attr("ptx"));
                }
                if (options.show_sass)
                {
                    // The module is bound and usable without a disassembler: say so, and let the cell (and
                    // Run All) succeed.
                    try
                    {
                        display(module.attr("sass"));
                    }
                    catch (py::error_already_set& e)
                    {
                        if (!e.matches(py::module_::import("xcuda").attr("ToolNotFoundError")))
                        {
                            throw;
                        }
                        warn(cuda_cell::sass_unavailable_warning(py::str(e.value()).cast<std::string>()));
                    }
                }
            }
        }

        // %%cuda_program: the core reads the line and runs the program (compile/program_cell); here its
        // output goes to the cell's sys.stdout / sys.stderr and Python's signals interrupt it.
        void cuda_program_cell(const std::string& line, const std::string& cell)
        {
            program_cell program = checked_usage([&] { return program_cell::parse(line, cell); });
            if (program.help())
            {
                py::print(program_cell::arguments().usage());
                return;
            }
            auto output = [](bool is_stderr, const std::string& text) {
                py::gil_scoped_acquire acquire;
                try
                {
                    py::object stream = py::module_::import("sys").attr(is_stderr ? "stderr" : "stdout");
                    // The bytes may split a UTF-8 character; a replacement keeps the stream readable.
                    py::object decoded = py::reinterpret_steal<py::object>(
                        PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace"));
                    stream.attr("write")(decoded);
                    stream.attr("flush")();
                }
                catch (py::error_already_set&)
                {
                    std::fwrite(text.data(), 1, text.size(), stderr);
                }
            };
            // The core's errors (tool_not_found_error, compile_error of nvcc, interrupted_error, program_error)
            // become xcuda's exceptions through the module's translator.
            py::gil_scoped_release release;
            program.run(output, python_interrupted);
        }

        void cuda_header_cell(const std::string& line, const std::string& cell)
        {
            py::print(checked_usage([&] { return header_cell::run(state().registry, line, cell); }));
        }

        // The cell transform of help_transform (its header says why), among input_transformers_cleanup.
        constexpr const char* help_transform_name = "xcuda_help_with_empty_body";

        py::list help_with_empty_body(py::list lines)
        {
            if (py::len(lines) == 0 || !help_transform::asks_for_help(lines[0].cast<std::string>()))
            {
                return lines;  // every cell passes here: most leave after one look at the first line
            }
            std::vector<std::string> text = lines.cast<std::vector<std::string>>();
            return help_transform::needs_body(text) ? py::list(py::cast(help_transform::with_body(text[0]))) : lines;
        }

        void add_help_transform(py::object shell)
        {
            if (!py::hasattr(shell, "input_transformers_cleanup"))
            {
                return;  // a shell without IPython's input transformers (a minimal one of a script)
            }
            py::list cleanup = shell.attr("input_transformers_cleanup");
            for (auto transform : cleanup)
            {
                if (py::str(py::getattr(transform, "__name__", py::str(""))).cast<std::string>() == help_transform_name)
                {
                    return;  // %load_ext again, or %reload_ext
                }
            }
            cleanup.append(py::cpp_function(&help_with_empty_body, py::name(help_transform_name)));
        }

        // Runs show() unless the line asks for help (or is wrong).
        void plain_magic(const char* magic, const char* description, const std::string& line,
                         const std::function<void()>& show)
        {
            const magic_arguments& declared = plain_magic::arguments(magic, description);
            if (parse_magic_line(declared, line).help)
            {
                py::print(declared.usage());
                return;
            }
            show();
        }

        void register_with(py::object shell, py::module_ m)
        {
            py::options options;
            options.disable_function_signatures();
            static const char* info_text = plain_magic::info_description;
            static const char* status_text = plain_magic::status_description;
            static const std::string info_usage = plain_magic::arguments("%cuda_info", info_text).usage();
            static const std::string status_usage = plain_magic::arguments("%cuda_status", status_text).usage();
            static const std::string header_usage = header_cell::arguments().usage();
            static const std::string program_usage = program_cell::arguments().usage();
            py::cpp_function cuda(
                [shell](const std::string& line, const std::string& cell) { run_cuda_cell(shell, line, cell); },
                py::name("cuda"), py::doc(cuda_cell_arguments::usage().c_str()));
            py::cpp_function info([](const std::string& line) {
                plain_magic("%cuda_info", info_text, line, [] {
                    py::module_::import("IPython.display").attr("display")(py::module_::import("xcuda").attr("info")());
                });
            }, py::name("cuda_info"), py::doc(info_usage.c_str()));
            py::cpp_function status([shell](const std::string& line) {
                plain_magic("%cuda_status", status_text, line, [shell] {
                    py::module_::import("IPython.display").attr("display")(
                        py::module_::import("xcuda").attr("status")(shell.attr("user_ns")));
                });
            }, py::name("cuda_status"), py::doc(status_usage.c_str()));
            py::cpp_function header([](const std::string& line, const std::string& cell) { cuda_header_cell(line, cell); },
                                    py::name("cuda_header"), py::doc(header_usage.c_str()));
            py::cpp_function program([](const std::string& line, const std::string& cell) { cuda_program_cell(line, cell); },
                                     py::name("cuda_program"), py::doc(program_usage.c_str()));
            // The lines of the cell magics are expanded by xcuda, under a limit (xcuda/magic_lines.py).
            py::object cell_magic = py::module_::import("xcuda.magic_lines").attr("cell_magic");
            shell.attr("register_magic_function")(cell_magic(shell, cuda, "cuda"), "cell", "cuda");
            shell.attr("register_magic_function")(cell_magic(shell, header, "cuda_header"), "cell", "cuda_header");
            shell.attr("register_magic_function")(cell_magic(shell, program, "cuda_program"), "cell", "cuda_program");
            shell.attr("register_magic_function")(info, "line", "cuda_info");
            shell.attr("register_magic_function")(status, "line", "cuda_status");
            register_launch_magics(shell);
            add_help_transform(shell);
            // %cuda_recover and the end-of-cell hook (device printf flush, replacement after a fault)
            // are Python: they pickle the namespace and exec the process (xcuda/recovery.py).
            py::module_ recovery = py::module_::import("xcuda.recovery");
            static const std::string recover_text = recovery.attr("cuda_recover").attr("__doc__").cast<std::string>();
            static const std::string recover_usage =
                plain_magic::arguments("%cuda_recover", recover_text).usage();
            py::object recover = recovery.attr("cuda_recover");
            shell.attr("register_magic_function")(
                py::cpp_function([recover](const std::string& line) {
                    plain_magic("%cuda_recover", recover_text.c_str(), line, [&] { recover(line); });
                }, py::name("cuda_recover"), py::doc(recover_usage.c_str())),
                "line", "cuda_recover");
            py::object events = shell.attr("events");
            py::object after_cell = recovery.attr("after_cell");
            py::list registered = events.attr("callbacks")["post_run_cell"];
            if (!registered.contains(after_cell))
            {
                events.attr("register")("post_run_cell", after_cell);
            }
            recovery.attr("restore_if_requested")(shell);
            // %px %load_ext xcuda: an engine joins its host here if importing xcuda did not already.
            join_host_if_engine();
            (void)m;
        }
    }

    void register_magics(py::module_& m)
    {
        m.def("load_ipython_extension",
              [m](py::object shell) {
                  register_with(shell, m);  // importing xcuda registered _shutdown with atexit
                  // The compile worker (xcuda-compile) starts now and warms NVRTC while the first cell is written.
                  state().compiler.start_worker();
              },
              py::arg("ipython"), "Register %%cuda, %cuda_info, %cuda_status and %cuda_timeit (for %load_ext xcuda).");
    }
}
