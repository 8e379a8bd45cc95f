// The line magics that take a launch or a sweep written as Python: %cuda_timeit, %cuda_bench, and
// %cuda_profile and %cuda_sanitize (one launch replayed under ncu / compute-sanitizer, py_replay.cpp).
//
// Their options are declared for the one magic-argument parser (base/magic_arguments), like every
// magic's; what follows the options is Python, evaluated in the user's namespace. %cuda_bench looks up
// xcuda.bench at call time, so the magic is exactly the function (and tests may wrap it).

#include "py_common.hpp"

#include <array>
#include <cctype>

#include <pybind11/eval.h>

#include "magic_arguments.hpp"

namespace xcuda::python
{
    namespace
    {
        // ---- Python text ---------------------------------------------------------------------------

        struct span
        {
            std::size_t begin;
            std::size_t end;
        };

        // Splits text at the separators (whitespace, or ',') that stand outside brackets and string literals.
        std::vector<span> split_top_level(const std::string& text, bool commas)
        {
            std::vector<span> pieces;
            int depth = 0;
            char quote = 0;
            std::size_t begin = std::string::npos;
            for (std::size_t i = 0; i < text.size(); ++i)
            {
                char c = text[i];
                bool separator = !quote && depth == 0 && (commas ? c == ',' : std::isspace(static_cast<unsigned char>(c)) != 0);
                if (separator)
                {
                    if (begin != std::string::npos || commas)
                    {
                        pieces.push_back({begin == std::string::npos ? i : begin, i});
                    }
                    begin = std::string::npos;
                    continue;
                }
                if (begin == std::string::npos)
                {
                    begin = i;
                }
                if (quote)
                {
                    if (c == '\\')
                        ++i;
                    else if (c == quote)
                        quote = 0;
                }
                else if (c == '\'' || c == '"')
                    quote = c;
                else if (c == '(' || c == '[' || c == '{')
                    ++depth;
                else if (c == ')' || c == ']' || c == '}')
                    --depth;
            }
            if (begin != std::string::npos || (commas && !pieces.empty()))
            {
                pieces.push_back({begin == std::string::npos ? text.size() : begin, text.size()});
            }
            return pieces;
        }

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

        // Splits "callee(args)" at the call that ends the expression.
        bool split_call(const std::string& expression, std::string& callee, std::string& arguments)
        {
            std::string text = text::trim(expression);
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
                        return !text::blank(callee);
                    }
                }
            }
            return false;
        }

        // kernel[grid, block](args...) of a magic's line, evaluated in the user's namespace: the Launcher
        // and the arguments (positional: the line's call is read as a tuple).
        std::pair<py::object, py::tuple> launch_expression(py::object shell, const magic_arguments& declared,
                                                            const std::string& text)
        {
            std::string callee;
            std::string arguments;
            if (!split_call(text, callee, arguments))
            {
                raise_usage(declared.problem("expected a launch such as saxpy[grid, block](a, x, y, out, n), got '" +
                                             text + "'"));
            }
            py::object user_ns = shell.attr("user_ns");
            py::object launcher = py::eval(callee, user_ns);
            if (!py::hasattr(launcher, "time") || !py::hasattr(launcher, "grid"))
            {
                raise_usage(declared.problem("'" + callee + "' is not a kernel with a launch configuration; write "
                                             "kernel[grid, block](...)"));
            }
            py::tuple args = py::eval("(" + arguments + (text::blank(arguments) ? ")" : ",)"), user_ns);
            return {launcher, args};
        }

        // ---- %cuda_timeit --------------------------------------------------------------------------

        const magic_arguments& timeit_arguments()
        {
            static const magic_arguments declared = [] {
                magic_arguments a("%cuda_timeit", "kernel[grid, block](args...)",
                                  "Time the launch with CUDA events and print the median kernel time and, when the\n"
                                  "byte count is known (-n, or by default the bytes of the array arguments), the\n"
                                  "achieved bandwidth.");
                a.add({{"-r"}, "REPEAT", "timed launches (default 100)"})
                    .add({{"-w"}, "WARMUP", "untimed launches first (default 5)"})
                    .add({{"-n"}, "NBYTES", "bytes the launch moves, for the bandwidth"})
                    .add({{"-o"}, "", "return the KernelTiming object"})
                    .trailing_as(magic_arguments::trailing::text);
                return a;
            }();
            return declared;
        }

        py::object cuda_timeit(py::object shell, const std::string& line)
        {
            const magic_arguments& declared = timeit_arguments();
            magic_arguments::parsed p = parse_magic_line(declared, line);
            if (p.help)
            {
                py::print(declared.usage());
                return py::none();
            }
            int repeat = static_cast<int>(checked_usage([&] { return declared.integer(p, "-r", 100, 1); }));
            int warmup = static_cast<int>(checked_usage([&] { return declared.integer(p, "-w", 5, 0); }));
            py::object nbytes = p.has("-n") ? py::object(py::int_(checked_usage([&] { return declared.integer(p, "-n", 0, 0); })))
                                            : py::object(py::none());
            auto [launcher, args] = launch_expression(shell, declared, p.text);
            py::object timing = launcher.attr("time")(*args, py::arg("repeat") = repeat, py::arg("warmup") = warmup,
                                                      py::arg("nbytes") = nbytes);
            py::print(py::repr(timing));
            return p.has("-o") ? timing : py::none();
        }

        // ---- %cuda_bench ---------------------------------------------------------------------------

        const magic_arguments& bench_arguments()
        {
            static const magic_arguments declared = [] {
                magic_arguments a(
                    "%cuda_bench", "kernel sizes make_args",
                    "Sweep a kernel over problem sizes: for each n in sizes, launch kernel[ceil(n / BLOCK), BLOCK]\n"
                    "(*make_args(n)), time it with CUDA events (median of REPEAT launches after WARMUP), and show a\n"
                    "table and a plot of the achieved bandwidth against the device's measured peak (a device-to-device\n"
                    "copy). kernel, sizes and make_args are Python expressions evaluated in the notebook's namespace,\n"
                    "separated by spaces (or by commas), e.g.\n\n"
                    "    %cuda_bench saxpy [2**k for k in range(10, 27)] saxpy_args");
                a.add({{"-b"}, "BLOCK", "threads per block (default 256)"})
                    .add({{"-r"}, "REPEAT", "timed launches per size (default 20)"})
                    .add({{"-w"}, "WARMUP", "untimed launches per size first (default 3)"})
                    .add({{"--bytes-per-element"}, "N", "bytes moved are N * n (default: the bytes of the array arguments)"})
                    .add({{"--peak"}, "GBS", "the peak bandwidth to compare with, instead of measuring it"})
                    .add({{"--no-plot"}, "", "the table alone"})
                    .add({{"--no-progress"}, "", "no progress bar"})
                    .add({{"-o"}, "", "return the BenchResult instead of displaying it"})
                    .trailing_as(magic_arguments::trailing::text)
                    .epilog("The same as xcuda.bench(kernel, sizes, make_args, ...).");
                return a;
            }();
            return declared;
        }

        // The three expressions of the line: split at top-level commas when there are any, else at the one
        // split of the space-separated words where each part is a Python expression.
        std::array<std::string, 3> three_expressions(const magic_arguments& declared, const std::string& text)
        {
            std::vector<span> by_comma = split_top_level(text, true);
            auto piece = [&](const span& s) { return text::trim(text.substr(s.begin, s.end - s.begin)); };
            if (by_comma.size() > 1)
            {
                if (by_comma.size() != 3)
                {
                    raise_usage(declared.problem("expected three expressions (kernel, sizes, make_args), got " +
                                                 std::to_string(by_comma.size()) + " separated by commas in '" + text + "'"));
                }
                return {piece(by_comma[0]), piece(by_comma[1]), piece(by_comma[2])};
            }
            std::vector<span> words = split_top_level(text, false);
            if (words.size() < 3)
            {
                raise_usage(declared.problem("expected three expressions (kernel, sizes, make_args), got '" + text + "'"));
            }
            auto part = [&](std::size_t first, std::size_t last) {
                return text.substr(words[first].begin, words[last - 1].end - words[first].begin);
            };
            std::vector<std::array<std::string, 3>> readings;
            for (std::size_t i = 1; i + 1 < words.size(); ++i)
            {
                for (std::size_t j = i + 1; j < words.size(); ++j)
                {
                    std::array<std::string, 3> reading{part(0, i), part(i, j), part(j, words.size())};
                    if (compiles(reading[0]) && compiles(reading[1]) && compiles(reading[2]))
                    {
                        readings.push_back(reading);
                    }
                }
            }
            if (readings.empty())
            {
                raise_usage(declared.problem("could not read three Python expressions (kernel, sizes, make_args) from '" +
                                             text + "'"));
            }
            if (readings.size() > 1)
            {
                raise_usage(declared.problem("'" + text + "' reads as three expressions in more than one way: separate "
                                             "kernel, sizes and make_args with commas"));
            }
            return readings.front();
        }

        py::object cuda_bench(py::object shell, const std::string& line)
        {
            const magic_arguments& declared = bench_arguments();
            magic_arguments::parsed p = parse_magic_line(declared, line);
            if (p.help)
            {
                py::print(declared.usage());
                return py::none();
            }
            int block = static_cast<int>(checked_usage([&] { return declared.integer(p, "-b", 256, 1); }));
            int repeat = static_cast<int>(checked_usage([&] { return declared.integer(p, "-r", 20, 1); }));
            int warmup = static_cast<int>(checked_usage([&] { return declared.integer(p, "-w", 3, 0); }));
            auto number_or_none = [&](const char* name) {
                return p.has(name) ? py::object(py::float_(checked_usage([&] { return declared.number(p, name, 0, true); })))
                                   : py::object(py::none());
            };
            py::object bytes_per_element = number_or_none("--bytes-per-element");
            py::object peak = number_or_none("--peak");
            if (text::blank(p.text))
            {
                raise_usage(declared.problem("expected a kernel, the sizes and make_args after the options"));
            }
            std::array<std::string, 3> expressions = three_expressions(declared, p.text);
            py::object user_ns = shell.attr("user_ns");
            py::object kernel = py::eval(expressions[0], user_ns);
            py::object sizes = py::eval(expressions[1], user_ns);
            py::object make_args = py::eval(expressions[2], user_ns);
            py::object result = py::module_::import("xcuda").attr("bench")(
                kernel, sizes, make_args, py::arg("block") = block, py::arg("bytes_per_element") = bytes_per_element,
                py::arg("repeat") = repeat, py::arg("warmup") = warmup, py::arg("peak") = peak,
                py::arg("plot") = !p.has("--no-plot"), py::arg("progress") = !p.has("--no-progress"));
            if (p.has("-o"))
            {
                return result;
            }
            py::module_::import("IPython.display").attr("display")(result);
            return py::none();
        }
    }

    namespace
    {
        // ---- %cuda_profile and %cuda_sanitize -------------------------------------------------------

        const magic_arguments& profile_arguments()
        {
            static const magic_arguments declared = [] {
                magic_arguments a(
                    "%cuda_profile", "kernel[grid, block](args...)",
                    "Profile one launch with Nsight Compute (ncu) and show what limited it: duration, DRAM throughput\n"
                    "(GB/s and % of peak), SM throughput, achieved and theoretical occupancy, registers, shared\n"
                    "memory, a verdict (memory-, compute- or latency-bound, and how far from the peak), the source\n"
                    "lines the time goes to (warp stall samples), ncu's advice and a roofline plot.\n\n"
                    "The launch is made again in a child process (xcuda-replay) from a copy of its arguments and\n"
                    "buffers: the session is only read, and a fault or an interrupt costs it nothing. Needs a GPU and\n"
                    "ncu (the toolkit's bin/, $CUDA_HOME, PATH, or $XCUDA_NCU). kernel.lines(profile=result) shows\n"
                    "the per-line figures beside the PTX or SASS.");
                a.add({{"--full"}, "", "ncu's full section set (more passes, slower)"})
                    .add({{"--no-source"}, "", "no per-line figures"})
                    .add({{"--no-plot"}, "", "the tables alone"})
                    .add({{"--keep"}, "", "keep the replay bundle and ncu's report (profile.ncu-rep); the result names the folder"})
                    .add({{"-o"}, "", "return the LaunchProfile instead of displaying it"})
                    .trailing_as(magic_arguments::trailing::text)
                    .epilog("The same as kernel[grid, block].profile(args...).");
                return a;
            }();
            return declared;
        }

        py::object cuda_profile(py::object shell, const std::string& line)
        {
            const magic_arguments& declared = profile_arguments();
            magic_arguments::parsed p = parse_magic_line(declared, line);
            if (p.help)
            {
                py::print(declared.usage());
                return py::none();
            }
            if (text::blank(p.text))
            {
                raise_usage(declared.problem("expected a launch after the options, such as saxpy[grid, block](a, x, y, out, n)"));
            }
            auto [launcher, args] = launch_expression(shell, declared, p.text);
            py::object result = launcher.attr("profile")(*args, py::arg("full") = p.has("--full"),
                                                         py::arg("source") = !p.has("--no-source"),
                                                         py::arg("keep") = p.has("--keep"));
            result.attr("show_plot") = !p.has("--no-plot");
            if (p.has("-o"))
            {
                return result;
            }
            py::module_::import("IPython.display").attr("display")(result);
            return py::none();
        }

        const magic_arguments& sanitize_arguments()
        {
            static const magic_arguments declared = [] {
                magic_arguments a(
                    "%cuda_sanitize", "kernel[grid, block](args...)",
                    "Run one launch under compute-sanitizer and show what it found, each finding with its kernel,\n"
                    "the cell's line and the thread and block: out-of-bounds and misaligned accesses (memcheck, the\n"
                    "default), shared-memory races (racecheck), reads of uninitialised device memory (initcheck),\n"
                    "misused barriers (synccheck).\n\n"
                    "The launch is made again in a child process (xcuda-replay) from a copy of its arguments and\n"
                    "buffers: an out-of-bounds write faults the child, not the session, whose arrays and variables\n"
                    "are untouched. Needs a GPU and compute-sanitizer (the toolkit's bin/, $CUDA_HOME, PATH, or\n"
                    "$XCUDA_COMPUTE_SANITIZER).");
                a.add({{"--tool", "-t"}, "TOOL", "memcheck, racecheck, initcheck or synccheck (default memcheck)"})
                    .add({{"--keep"}, "", "keep the replay bundle; the result names the folder"})
                    .add({{"-o"}, "", "return the SanitizerReport instead of displaying it"})
                    .trailing_as(magic_arguments::trailing::text)
                    .epilog("The same as kernel[grid, block].sanitize(args..., tool=TOOL).");
                return a;
            }();
            return declared;
        }

        py::object cuda_sanitize(py::object shell, const std::string& line)
        {
            const magic_arguments& declared = sanitize_arguments();
            magic_arguments::parsed p = parse_magic_line(declared, line);
            if (p.help)
            {
                py::print(declared.usage());
                return py::none();
            }
            std::string tool = p.value("--tool", "memcheck");
            if (tool != "memcheck" && tool != "racecheck" && tool != "initcheck" && tool != "synccheck")
            {
                raise_usage(declared.problem("--tool takes memcheck, racecheck, initcheck or synccheck, not '" + tool + "'"));
            }
            if (text::blank(p.text))
            {
                raise_usage(declared.problem("expected a launch after the options, such as saxpy[grid, block](a, x, y, out, n)"));
            }
            auto [launcher, args] = launch_expression(shell, declared, p.text);
            py::object result = launcher.attr("sanitize")(*args, py::arg("tool") = tool, py::arg("keep") = p.has("--keep"));
            if (p.has("-o"))
            {
                return result;
            }
            py::module_::import("IPython.display").attr("display")(result);
            return py::none();
        }
    }

    void register_launch_magics(py::object shell)
    {
        py::options options;
        options.disable_function_signatures();
        // pybind11 keeps the docstring's pointer: the texts live as long as the process.
        static const std::string timeit_usage = timeit_arguments().usage();
        static const std::string bench_usage = bench_arguments().usage();
        py::cpp_function timeit([shell](const std::string& line) { return cuda_timeit(shell, line); },
                                py::name("cuda_timeit"), py::doc(timeit_usage.c_str()));
        py::cpp_function bench([shell](const std::string& line) { return cuda_bench(shell, line); },
                               py::name("cuda_bench"), py::doc(bench_usage.c_str()));
        static const std::string profile_usage = profile_arguments().usage();
        static const std::string sanitize_usage = sanitize_arguments().usage();
        py::cpp_function profile([shell](const std::string& line) { return cuda_profile(shell, line); },
                                 py::name("cuda_profile"), py::doc(profile_usage.c_str()));
        py::cpp_function sanitize([shell](const std::string& line) { return cuda_sanitize(shell, line); },
                                  py::name("cuda_sanitize"), py::doc(sanitize_usage.c_str()));
        shell.attr("register_magic_function")(timeit, "line", "cuda_timeit");
        shell.attr("register_magic_function")(bench, "line", "cuda_bench");
        shell.attr("register_magic_function")(profile, "line", "cuda_profile");
        shell.attr("register_magic_function")(sanitize, "line", "cuda_sanitize");
    }
}
