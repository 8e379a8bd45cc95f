#include "launch_magic_options.hpp"

#include "errors.hpp"
#include "text.hpp"

namespace xcuda
{
    const magic_arguments& launch_magic_options::timeit()
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

    const magic_arguments& launch_magic_options::bench()
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

    const magic_arguments& launch_magic_options::profile()
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

    const magic_arguments& launch_magic_options::sanitize()
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

    launch_magic_options::timeit_request launch_magic_options::read_timeit(const std::string& line)
    {
        const magic_arguments& declared = timeit();
        magic_arguments::parsed p = declared.parse(line);
        timeit_request request;
        request.help = p.help;
        if (p.help)
        {
            return request;
        }
        request.repeat = static_cast<int>(declared.integer(p, "-r", 100, 1));
        request.warmup = static_cast<int>(declared.integer(p, "-w", 5, 0));
        if (p.has("-n"))
        {
            request.nbytes = declared.integer(p, "-n", 0, 0);
        }
        request.return_object = p.has("-o");
        request.launch = launch_magic_line::launch(declared, p.text);
        return request;
    }

    launch_magic_options::bench_request launch_magic_options::read_bench(const std::string& line,
                                                                         const launch_magic_line::is_expression& compiles)
    {
        const magic_arguments& declared = bench();
        magic_arguments::parsed p = declared.parse(line);
        bench_request request;
        request.help = p.help;
        if (p.help)
        {
            return request;
        }
        request.block = static_cast<int>(declared.integer(p, "-b", 256, 1));
        request.repeat = static_cast<int>(declared.integer(p, "-r", 20, 1));
        request.warmup = static_cast<int>(declared.integer(p, "-w", 3, 0));
        if (p.has("--bytes-per-element"))
        {
            request.bytes_per_element = declared.number(p, "--bytes-per-element", 0, true);
        }
        if (p.has("--peak"))
        {
            request.peak = declared.number(p, "--peak", 0, true);
        }
        if (text::blank(p.text))
        {
            throw usage_error(declared.problem("expected a kernel, the sizes and make_args after the options"));
        }
        request.expressions = launch_magic_line::three_expressions(declared, p.text, compiles);
        request.plot = !p.has("--no-plot");
        request.progress = !p.has("--no-progress");
        request.return_object = p.has("-o");
        return request;
    }

    launch_magic_options::profile_request launch_magic_options::read_profile(const std::string& line)
    {
        const magic_arguments& declared = profile();
        magic_arguments::parsed p = declared.parse(line);
        profile_request request;
        request.help = p.help;
        if (p.help)
        {
            return request;
        }
        if (text::blank(p.text))
        {
            throw usage_error(declared.problem("expected a launch after the options, such as saxpy[grid, block](a, x, y, out, n)"));
        }
        request.launch = launch_magic_line::launch(declared, p.text);
        request.options.full = p.has("--full");
        request.options.source = !p.has("--no-source");
        request.options.keep = p.has("--keep");
        request.plot = !p.has("--no-plot");
        request.return_object = p.has("-o");
        return request;
    }

    launch_magic_options::sanitize_request launch_magic_options::read_sanitize(const std::string& line)
    {
        const magic_arguments& declared = sanitize();
        magic_arguments::parsed p = declared.parse(line);
        sanitize_request request;
        request.help = p.help;
        if (p.help)
        {
            return request;
        }
        request.tool = p.value("--tool", "memcheck");
        if (request.tool != "memcheck" && request.tool != "racecheck" && request.tool != "initcheck" &&
            request.tool != "synccheck")
        {
            throw usage_error(declared.problem("--tool takes memcheck, racecheck, initcheck or synccheck, not '" +
                                               request.tool + "'"));
        }
        if (text::blank(p.text))
        {
            throw usage_error(declared.problem("expected a launch after the options, such as saxpy[grid, block](a, x, y, out, n)"));
        }
        request.launch = launch_magic_line::launch(declared, p.text);
        request.keep = p.has("--keep");
        request.return_object = p.has("-o");
        return request;
    }
}
