// The line magics that take a launch or a sweep written as Python: %cuda_timeit, %cuda_bench, and
// %cuda_profile and %cuda_sanitize (one launch replayed under ncu / compute-sanitizer, py_replay.cpp).
//
// Their lines are read by the core (operations/launch_magic_options: options, values, the launch or
// the three expressions); here the Python in them is evaluated in the user's namespace and the call
// made. %cuda_bench looks up xcuda.bench at call time, so the magic is exactly the function (and tests
// may wrap it).

#include "py_common.hpp"

#include <pybind11/eval.h>

#include "launch_magic_options.hpp"

namespace xcuda::python
{
    namespace
    {
        bool compiles(const std::string& expression)
        {
            try
            {
                py::module_::import("builtins").attr("compile")(expression, "<cuda_bench>", "eval");
                return true;
            }
            catch (py::error_already_set&)
            {
                return false;
            }
        }

        // The Launcher and the argument tuple of a magic's launch, evaluated in the user's namespace.
        std::pair<py::object, py::tuple> evaluate(py::object shell, const magic_arguments& declared,
                                                  const launch_magic_line::launch_text& launch)
        {
            py::object user_ns = shell.attr("user_ns");
            py::object launcher = py::eval(launch.callee, user_ns);
            if (!py::hasattr(launcher, "time") || !py::hasattr(launcher, "grid"))
            {
                raise_usage(launch_magic_line::not_a_launcher(declared, launch.callee).what());
            }
            return {launcher, py::eval(launch.arguments, user_ns)};
        }

        // -h: the usage printed, and nothing done.
        template <class Request>
        bool helped(const Request& request, const magic_arguments& declared)
        {
            if (request.help)
            {
                py::print(declared.usage());
            }
            return request.help;
        }

        // The magic's result: returned with -o, else displayed.
        py::object shown(py::object result, bool return_object)
        {
            if (return_object)
            {
                return result;
            }
            py::module_::import("IPython.display").attr("display")(result);
            return py::none();
        }

        py::object cuda_timeit(py::object shell, const std::string& line)
        {
            auto request = checked_usage([&] { return launch_magic_options::read_timeit(line); });
            if (helped(request, launch_magic_options::timeit()))
                return py::none();
            auto [launcher, args] = evaluate(shell, launch_magic_options::timeit(), request.launch);
            py::object timing = launcher.attr("time")(*args, py::arg("repeat") = request.repeat,
                                                      py::arg("warmup") = request.warmup, py::arg("nbytes") = request.nbytes);
            py::print(py::repr(timing));
            return request.return_object ? timing : py::none();
        }

        py::object cuda_bench(py::object shell, const std::string& line)
        {
            auto request = checked_usage([&] { return launch_magic_options::read_bench(line, &compiles); });
            if (helped(request, launch_magic_options::bench()))
                return py::none();
            py::object user_ns = shell.attr("user_ns");
            py::object kernel = py::eval(request.expressions[0], user_ns);
            py::object sizes = py::eval(request.expressions[1], user_ns);
            py::object make_args = py::eval(request.expressions[2], user_ns);
            py::object result = py::module_::import("xcuda").attr("bench")(
                kernel, sizes, make_args, py::arg("block") = request.block,
                py::arg("bytes_per_element") = request.bytes_per_element, py::arg("repeat") = request.repeat,
                py::arg("warmup") = request.warmup, py::arg("peak") = request.peak, py::arg("plot") = request.plot,
                py::arg("progress") = request.progress);
            return shown(result, request.return_object);
        }

        py::object cuda_profile(py::object shell, const std::string& line)
        {
            auto request = checked_usage([&] { return launch_magic_options::read_profile(line); });
            if (helped(request, launch_magic_options::profile()))
                return py::none();
            auto [launcher, args] = evaluate(shell, launch_magic_options::profile(), request.launch);
            py::object result = launcher.attr("profile")(*args, py::arg("full") = request.options.full,
                                                         py::arg("source") = request.options.source,
                                                         py::arg("keep") = request.options.keep);
            result.attr("show_plot") = request.plot;
            return shown(result, request.return_object);
        }

        py::object cuda_sanitize(py::object shell, const std::string& line)
        {
            auto request = checked_usage([&] { return launch_magic_options::read_sanitize(line); });
            if (helped(request, launch_magic_options::sanitize()))
                return py::none();
            auto [launcher, args] = evaluate(shell, launch_magic_options::sanitize(), request.launch);
            py::object result = launcher.attr("sanitize")(*args, py::arg("tool") = request.tool, py::arg("keep") = request.keep);
            return shown(result, request.return_object);
        }

        // One line magic registered with shell, its docstring the magic's usage.
        // usage: the docstring, which pybind11 keeps by pointer (so a text that lives as long as the process).
        void register_line_magic(py::object shell, const char* name, const std::string& usage,
                                 py::object (*magic)(py::object, const std::string&))
        {
            py::cpp_function function([shell, magic](const std::string& line) { return magic(shell, line); },
                                      py::name(name), py::doc(usage.c_str()));
            shell.attr("register_magic_function")(function, "line", name);
        }
    }

    void register_launch_magics(py::object shell)
    {
        py::options options;
        options.disable_function_signatures();
        static const std::string usages[] = {launch_magic_options::timeit().usage(), launch_magic_options::bench().usage(),
                                             launch_magic_options::profile().usage(), launch_magic_options::sanitize().usage()};
        register_line_magic(shell, "cuda_timeit", usages[0], &cuda_timeit);
        register_line_magic(shell, "cuda_bench", usages[1], &cuda_bench);
        register_line_magic(shell, "cuda_profile", usages[2], &cuda_profile);
        register_line_magic(shell, "cuda_sanitize", usages[3], &cuda_sanitize);
    }
}
