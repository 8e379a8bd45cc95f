// The core's side of xcuda's IPython magics: the submodule xcuda._core._magic_core, which xcuda/magics.py
// (the magics themselves, load_ipython_extension, the shell's namespace, displays, warnings and prints)
// calls. Each function here reads a magic's line with the core's one parser (base/magic_arguments) or runs
// what the magic asks of the core (frontend/cuda_cell, compile/program_cell, runtime/header_cell,
// base/help_transform, frontend/launch_magic_options); a usage_error becomes _magic_core.MagicUsageError,
// which magics.py raises as IPython's UsageError (IPython shows it as one line): no IPython here.

#include "py_common.hpp"

#include <cstdio>

#include <pybind11/functional.h>

#include "cuda_cell.hpp"
#include "diagnostics_view.hpp"
#include "header_cell.hpp"
#include "help_transform.hpp"
#include "launch_magic_options.hpp"
#include "nvrtc_library.hpp"
#include "plain_magic.hpp"
#include "program_cell.hpp"

namespace xcuda::python
{
    namespace
    {
        // _magic_core.MagicUsageError: a magic's line is wrong (magics.py raises it as IPython's UsageError).
        // Made by register_magics, before any function here can run.
        PyObject* magic_usage_error = nullptr;

        // f(), with a usage_error it throws raised as MagicUsageError.
        template <class F>
        auto checked_usage(F f) -> decltype(f())
        {
            try
            {
                return f();
            }
            catch (const usage_error& e)
            {
                PyErr_SetString(magic_usage_error, e.what());
                throw py::error_already_set();
            }
        }

        // A compile's messages as the views magics.py displays: HTML, text, and the list the JupyterLab
        // extension reads (the editor's line numbers; file is "" for the cell's own lines, else the header cell).
        py::tuple diagnostics_views(const std::vector<diagnostic>& shown, const cell_lines& lines)
        {
            const std::string& cell_name = lines.label();
            return py::make_tuple(diagnostics_view::html(shown, cell_name), diagnostics_view::text(shown, cell_name),
                                  diagnostics_list(shown, false));
        }

        // %%cuda: compiles the cell; a compile error's messages go to show(html, text, diagnostics) before
        // CompileError is raised. Returns (module, warnings, the views of the NVRTC warnings located in the
        // cell or None, else the rest of the log for stderr).
        // execution_count: the cell's In[N] (IPython's shell.execution_count while it runs), how messages name it.
        py::tuple build_cuda_cell(notebook_session& notebook, const std::string& cell, const cuda_cell_options& options,
                                  py::object show, int execution_count)
        {
            checked_usage([&] { cuda_cell::check_source(cell); });
            cell_lines lines = cuda_cell::lines_of(execution_count, notebook.registry.header_cells());
            std::shared_ptr<cuda_module> built;
            try
            {
                built = build_module(notebook, cell, options.name, options.compile);
            }
            catch (const option_error& error)
            {
                // An option the cell does not fit (--instantiate 'nope<int>'): one line, like a wrong option line.
                PyErr_SetString(magic_usage_error, error.what());
                throw py::error_already_set();
            }
            catch (const compile_error& error)
            {
                cuda_cell::failure failure = cuda_cell::failed(error, lines);
                show(*diagnostics_views(failure.shown, lines));
                raise_shown_compile_error(error, failure.shown, lines.lines_above(), failure.summary);
            }
            built->set_lines(lines);
            cuda_cell::outcome outcome = cuda_cell::built(*built, cell, nvrtc_library::driver_note(), lines);
            py::object views = outcome.show_diagnostics ? py::object(diagnostics_views(outcome.shown, lines)) : py::none();
            return py::make_tuple(wrap_module(built), outcome.warnings, views, outcome.log);
        }

        // %%cuda_program's output, to the cell's sys.stdout / sys.stderr as it comes (called without the GIL).
        void program_output(bool is_stderr, const std::string& text)
        {
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
        }

        // %%cuda_program: false when the line asks for help, else the program has run. Python's signals
        // interrupt it; the core's errors become xcuda's exceptions through the module's translator.
        bool run_program_cell(const std::string& line, const std::string& cell)
        {
            program_cell program = checked_usage([&] { return program_cell::parse(line, cell); });
            if (program.help())
            {
                return false;
            }
            py::gil_scoped_release release;
            program.run(&program_output, python_interrupted);
            return true;
        }

        const magic_arguments& launch_declaration(const std::string& magic)
        {
            if (magic == "cuda_timeit")
                return launch_magic_options::timeit();
            if (magic == "cuda_bench")
                return launch_magic_options::bench();
            return magic == "cuda_profile" ? launch_magic_options::profile() : launch_magic_options::sanitize();
        }

        // The line of %cuda_timeit, %cuda_bench, %cuda_profile or %cuda_sanitize read: (help, -o, the Python to
        // evaluate (the launcher and its argument tuple, or bench's three expressions), the call's keywords).
        py::tuple read_launch_magic(const std::string& magic, const std::string& line,
                                    const launch_magic_line::is_expression& compiles)
        {
            using namespace py::literals;
            using options = launch_magic_options;
            auto launch = [](const launch_magic_line::launch_text& text) { return py::make_tuple(text.callee, text.arguments); };
            return checked_usage([&]() -> py::tuple {
                if (magic == "cuda_timeit")
                {
                    auto r = options::read_timeit(line);
                    return py::make_tuple(r.help, r.return_object, launch(r.launch),
                                          py::dict("repeat"_a = r.repeat, "warmup"_a = r.warmup, "nbytes"_a = r.nbytes));
                }
                if (magic == "cuda_bench")
                {
                    auto r = options::read_bench(line, compiles);
                    return py::make_tuple(r.help, r.return_object, py::cast(r.expressions),
                                          py::dict("block"_a = r.block, "bytes_per_element"_a = r.bytes_per_element,
                                                   "repeat"_a = r.repeat, "warmup"_a = r.warmup, "peak"_a = r.peak,
                                                   "plot"_a = r.plot, "progress"_a = r.progress));
                }
                if (magic == "cuda_profile")
                {
                    auto r = options::read_profile(line);
                    return py::make_tuple(r.help, r.return_object, launch(r.launch),
                                          py::dict("full"_a = r.options.full, "source"_a = r.options.source,
                                                   "keep"_a = r.options.keep, "plot"_a = r.plot));
                }
                auto r = options::read_sanitize(line);
                return py::make_tuple(r.help, r.return_object, launch(r.launch), py::dict("tool"_a = r.tool, "keep"_a = r.keep));
            });
        }
    }

    void register_magics(py::module_& m, notebook_session& notebook)
    {
        py::module_ core = m.def_submodule("_magic_core", "The core's side of xcuda's magics (xcuda/magics.py).");
        magic_usage_error = PyErr_NewExceptionWithDoc(
            "xcuda._core._magic_core.MagicUsageError",
            "A magic's line is wrong: magics.py raises it as IPython's UsageError, which IPython shows as one line.",
            PyExc_ValueError, nullptr);
        core.attr("MagicUsageError") = py::handle(magic_usage_error);
        py::class_<cuda_cell_options>(core, "CudaCellOptions", "The options of a %%cuda line, as magics.py reads them.")
            .def_readonly("name", &cuda_cell_options::name)
            .def_readonly("show_ptx", &cuda_cell_options::show_ptx)
            .def_readonly("show_sass", &cuda_cell_options::show_sass)
            .def_readonly("help", &cuda_cell_options::help);
        core.def("cuda_options", [](const std::string& line) { return checked_usage([&] { return cuda_cell_arguments::parse(line); }); });
        core.def("cuda_usage", [] { return cuda_cell_arguments::usage(); });
        core.def("build_cuda_cell", [&notebook](const std::string& cell, const cuda_cell_options& options, py::object show,
                                                int execution_count) {
            return build_cuda_cell(notebook, cell, options, std::move(show), execution_count);
        });
        core.def("reserved_name", &cuda_cell::reserved_name);
        core.def("reserved_name_problem", &cuda_cell::reserved_name_problem);
        core.def("unbound_warning", [](const std::string& what, const std::string& name) {
            return cuda_cell::unbound_warning(what.c_str(), name);
        });
        core.def("replaces_warning", [](const std::string& what, const std::string& name, py::handle old) {
            return cuda_cell::replaces_warning(what.c_str(), name, type_name(old));
        });
        core.def("sass_unavailable_warning", &cuda_cell::sass_unavailable_warning);
        core.def("header_usage", [] { return header_cell::arguments().usage(); });
        core.def("run_header_cell", [&notebook](const std::string& line, const std::string& cell) {
            return checked_usage([&] { return header_cell::run(notebook.registry, line, cell); });
        });
        core.def("program_usage", [] { return program_cell::arguments().usage(); });
        core.def("run_program_cell", &run_program_cell);
        core.attr("info_description") = plain_magic::info_description;
        core.attr("status_description") = plain_magic::status_description;
        core.def("plain_usage", [](const std::string& magic, const std::string& description) {
            return plain_magic::arguments(magic, description).usage();
        });
        core.def("plain_asks_help", [](const std::string& magic, const std::string& description, const std::string& line) {
            return checked_usage([&] { return plain_magic::arguments(magic, description).parse(line).help; });
        });
        core.def("asks_for_help", &help_transform::asks_for_help);
        core.def("needs_body", &help_transform::needs_body);
        core.def("with_body", &help_transform::with_body);
        core.def("launch_usage", [](const std::string& magic) { return launch_declaration(magic).usage(); });
        core.def("read_launch_magic", &read_launch_magic);
        core.def("not_a_launcher", [](const std::string& magic, const std::string& callee) {
            return std::string(launch_magic_line::not_a_launcher(launch_declaration(magic), callee).what());
        });
        // The compile worker (xcuda-compile) starts at %load_ext and warms NVRTC while the first cell is written.
        core.def("start_compile_worker", [&notebook] { notebook.compiler.start_worker(); });
    }
}
