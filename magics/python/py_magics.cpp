// The IPython magics and load_ipython_extension: %%cuda, %cuda_info, %cuda_status, %cuda_timeit.
//
// They are real IPython magics (shell.register_magic_function), so IPython splits the cell, expands
// {variables} in the line, lists them in %lsmagic and shows their help with %%cuda?. The same
// registration serves the xcuda kernel and `%load_ext xcuda` in any IPython (ipykernel included).

#include "py_common.hpp"

#include <pybind11/eval.h>

#include "diagnostics_view.hpp"
#include "errors.hpp"
#include "magic_arguments.hpp"

namespace xcuda::python
{
    namespace
    {
        [[noreturn]] void raise_usage_error(const std::string& message)
        {
            py::object usage_error = py::module_::import("IPython.core.error").attr("UsageError");
            PyErr_SetString(usage_error.ptr(), message.c_str());
            throw py::error_already_set();
        }

        bool blank(const std::string& text)
        {
            return text.find_first_not_of(" \t\r\n") == std::string::npos;
        }

        void cuda_cell(py::object shell, const std::string& line, const std::string& cell)
        {
            cuda_magic_options options;
            try
            {
                options = magic_arguments::parse_cuda(line);
            }
            catch (const usage_error& e)
            {
                raise_usage_error(std::string(e.what()) + "\n\n" + magic_arguments::cuda_usage());
            }
            if (options.help)
            {
                py::print(magic_arguments::cuda_usage());
                return;
            }
            if (blank(cell))
            {
                raise_usage_error("the %%cuda cell is empty: write CUDA C++ below the %%cuda line, for example\n"
                                  "%%cuda\nextern \"C\" __global__ void scale(float* x, float a, size_t n)\n"
                                  "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }");
            }
            py::object module;
            try
            {
                module = compile_module(cell, options.name, options.compile);
            }
            catch (const compile_error& error)
            {
                // The messages with a caret under each, as HTML above the traceback; the traceback has the text.
                py::module_::import("IPython.display").attr("display")(
                    py::dict(py::arg("text/html") = diagnostics_view::html(error.parsed()),
                             py::arg("text/plain") = std::to_string(error.parsed().size()) + " NVRTC message(s)"),
                    py::arg("raw") = true);
                throw;
            }
            py::object user_ns = shell.attr("user_ns");
            if (!options.name.empty())
            {
                user_ns[py::str(options.name)] = module;
            }
            else
            {
                py::dict kernels = module.attr("kernels");
                for (auto item : kernels)
                {
                    // Instances ("saxpy<float>") are not identifiers: they stay reachable through the module.
                    if (item.first.attr("isidentifier")().cast<bool>())
                    {
                        user_ns[item.first] = item.second;
                    }
                }
            }
            // One compact line of resources per kernel, when ptxas ran (sm_XX targets).
            py::dict resources = module.attr("resources");
            for (auto item : resources)
            {
                py::print(str_of(item.first) + ": " + str_of(py::repr(item.second)));
            }
            std::string log = module.attr("log").cast<std::string>();
            if (log.find("warning") != std::string::npos)
            {
                py::module_::import("sys").attr("stderr").attr("write")("NVRTC warnings:\n" + log + "\n");
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
                    display(module.attr("sass"));
                }
            }
        }

        void cuda_header_cell(const std::string& line, const std::string& cell)
        {
            std::vector<std::string> words;
            try
            {
                words = magic_arguments::split(line);
            }
            catch (const usage_error& e)
            {
                raise_usage_error(e.what());
            }
            if (words.size() != 1 || words[0].empty() || words[0][0] == '-')
            {
                raise_usage_error("%%cuda_header takes one header name, e.g. %%cuda_header vec.cuh; later %%cuda "
                                  "cells use it with #include \"vec.cuh\"");
            }
            py::list stale = py::module_::import("xcuda").attr("set_header")(words[0], cell);
            std::string message = "header " + words[0] + " kept for #include \"" + words[0] + "\"";
            if (py::len(stale))
            {
                message += "; stale until their cells run again: " + str_of(py::str(", ").attr("join")(stale));
            }
            py::print(message);
        }

        // Splits "callee(args)" at the call that ends the expression.
        bool split_call(const std::string& expression, std::string& callee, std::string& arguments)
        {
            std::string text = expression;
            while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
            {
                text.pop_back();
            }
            if (text.empty() || text.back() != ')')
            {
                return false;
            }
            int depth = 0;
            char quote = 0;
            for (std::size_t i = text.size(); i-- > 0;)
            {
                char c = text[i];
                if (quote)
                {
                    if (c == quote)
                        quote = 0;
                    continue;
                }
                if (c == '\'' || c == '"')
                    quote = c;
                else if (c == ')' || c == ']' || c == '}')
                    ++depth;
                else if (c == '(' || c == '[' || c == '{')
                {
                    if (--depth == 0)
                    {
                        if (c != '(' || i == 0)
                            return false;
                        callee = text.substr(0, i);
                        arguments = text.substr(i + 1, text.size() - i - 2);
                        return !blank(callee);
                    }
                }
            }
            return false;
        }

        py::object cuda_timeit(py::object shell, const std::string& line)
        {
            static const char* usage =
                "%cuda_timeit [-r REPEAT] [-w WARMUP] [-n NBYTES] [-o] kernel[grid, block](args...)\n\n"
                "Times the launch with CUDA events and prints the median kernel time and, when the byte count\n"
                "is known (-n, or by default the bytes of the array arguments), the achieved bandwidth.\n"
                "-o returns the KernelTiming object.";
            std::vector<std::string> words;
            std::string rest = line;
            int repeat = 100;
            int warmup = 5;
            py::object nbytes = py::none();
            bool return_result = false;
            // Options come first; the expression is the rest of the line, as written.
            while (true)
            {
                std::size_t start = rest.find_first_not_of(" \t");
                if (start == std::string::npos || rest[start] != '-')
                {
                    rest = start == std::string::npos ? "" : rest.substr(start);
                    break;
                }
                std::size_t end = rest.find_first_of(" \t", start);
                std::string option = rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
                rest = end == std::string::npos ? "" : rest.substr(end);
                if (option == "-o")
                {
                    return_result = true;
                    continue;
                }
                if (option != "-r" && option != "-w" && option != "-n")
                {
                    raise_usage_error("unknown option " + option + "\n\n" + usage);
                }
                std::size_t value_start = rest.find_first_not_of(" \t");
                std::size_t value_end = value_start == std::string::npos ? std::string::npos : rest.find_first_of(" \t", value_start);
                if (value_start == std::string::npos)
                {
                    raise_usage_error(option + " needs a value\n\n" + usage);
                }
                std::string value = rest.substr(value_start, value_end == std::string::npos ? std::string::npos : value_end - value_start);
                rest = value_end == std::string::npos ? "" : rest.substr(value_end);
                try
                {
                    long long number = std::stoll(value);
                    if (option == "-r")
                        repeat = static_cast<int>(number);
                    else if (option == "-w")
                        warmup = static_cast<int>(number);
                    else
                        nbytes = py::int_(number);
                }
                catch (const std::exception&)
                {
                    raise_usage_error(option + " needs an integer, got '" + value + "'\n\n" + usage);
                }
            }
            std::string callee;
            std::string arguments;
            if (!split_call(rest, callee, arguments))
            {
                raise_usage_error("expected a launch such as saxpy[grid, block](a, x, y, out, n), got '" + rest +
                                  "'\n\n" + usage);
            }
            py::object user_ns = shell.attr("user_ns");
            py::object launcher = py::eval(callee, user_ns);
            if (!py::hasattr(launcher, "time") || !py::hasattr(launcher, "grid"))
            {
                raise_usage_error("'" + callee + "' is not a kernel with a launch configuration; write kernel[grid, block](...)");
            }
            py::tuple args = py::eval("(" + arguments + (blank(arguments) ? ")" : ",)"), user_ns);
            py::object timing = launcher.attr("time")(*args, py::arg("repeat") = repeat, py::arg("warmup") = warmup,
                                                      py::arg("nbytes") = nbytes);
            py::print(py::repr(timing));
            return return_result ? timing : py::none();
        }

        void register_with(py::object shell, py::module_ m)
        {
            py::options options;
            options.disable_function_signatures();
            py::cpp_function cuda(
                [shell](const std::string& line, const std::string& cell) { cuda_cell(shell, line, cell); },
                py::name("cuda"), py::doc(magic_arguments::cuda_usage().c_str()));
            py::cpp_function info([](const std::string&) {
                py::module_::import("IPython.display").attr("display")(py::module_::import("xcuda").attr("info")());
            }, py::name("cuda_info"), py::doc("%cuda_info\n\nShow the current device, its memory, and the driver and NVRTC versions."));
            py::cpp_function status([shell](const std::string&) {
                py::module_::import("IPython.display").attr("display")(
                    py::module_::import("xcuda").attr("status")(shell.attr("user_ns")));
            }, py::name("cuda_status"),
               py::doc("%cuda_status\n\nList resident modules with their kernels, the device arrays bound in the "
                       "namespace (shape, dtype, bytes), and the compile cache."));
            py::cpp_function timeit([shell](const std::string& line) { return cuda_timeit(shell, line); },
                                    py::name("cuda_timeit"),
                                    py::doc("%cuda_timeit [-r REPEAT] [-w WARMUP] [-n NBYTES] [-o] kernel[grid, block](args...)\n\n"
                                            "Time a launch with CUDA events: prints the median kernel time and the "
                                            "achieved bandwidth when the byte count is known."));
            py::cpp_function header([](const std::string& line, const std::string& cell) { cuda_header_cell(line, cell); },
                                    py::name("cuda_header"),
                                    py::doc("%%cuda_header NAME\n\nKeep the cell as a header named NAME for later %%cuda cells' "
                                            "#include \"NAME\". The compile cache key includes header texts; "
                                            "changing a header marks the modules built with the old text stale "
                                            "(%cuda_status shows them; launching one warns) until their cells run again."));
            shell.attr("register_magic_function")(cuda, "cell", "cuda");
            shell.attr("register_magic_function")(header, "cell", "cuda_header");
            shell.attr("register_magic_function")(info, "line", "cuda_info");
            shell.attr("register_magic_function")(status, "line", "cuda_status");
            shell.attr("register_magic_function")(timeit, "line", "cuda_timeit");
            shell.attr("register_magic_function")(bench_magic(shell), "line", "cuda_bench");
            // %cuda_recover and the end-of-cell hook (device printf flush, replacement after a fault)
            // are Python: they pickle the namespace and exec the process (xcuda_recovery.py).
            py::module_ recovery = py::module_::import("xcuda_recovery");
            shell.attr("register_magic_function")(recovery.attr("cuda_recover"), "line", "cuda_recover");
            py::object events = shell.attr("events");
            py::object after_cell = recovery.attr("after_cell");
            py::list registered = events.attr("callbacks")["post_run_cell"];
            if (!registered.contains(after_cell))
            {
                events.attr("register")("post_run_cell", after_cell);
            }
            recovery.attr("restore_if_requested")(shell);
            (void)m;
        }
    }

    void register_magics(py::module_& m)
    {
        m.def("load_ipython_extension",
              [m](py::object shell) {
                  register_with(shell, m);
                  // ipykernel and plain IPython run atexit handlers; the xcuda kernel calls _shutdown itself.
                  py::module_::import("atexit").attr("register")(m.attr("_shutdown"));
              },
              py::arg("ipython"), "Register %%cuda, %cuda_info, %cuda_status and %cuda_timeit (for %load_ext xcuda).");
    }
}
