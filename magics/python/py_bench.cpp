// xcuda.bench, xcuda.BenchResult, xcuda.peak_bandwidth and %cuda_bench: sweep a kernel over problem
// sizes, time each size with CUDA events, and plot the achieved bandwidth against the device's
// measured peak.
//
// Timing goes through the kernel's own Kernel.time (time_launch), so a sweep measures exactly what
// %cuda_timeit measures. The peak is a large device-to-device copy timed with events, measured once per
// session and device. The plot is a matplotlib Figure made without pyplot (no global figure list, no
// backend needed, nothing shown twice by an inline backend); a BenchResult shows it in its HTML as a PNG.
//
// Test hooks: bench(..., _timer=f) times with f(grid, block, *args, repeat=, warmup=, nbytes=) instead
// of kernel.time, and %cuda_bench calls xcuda.bench looked up at call time; with them the sweep, the
// table, the plot, the progress bar and the magic are tested on machines without a GPU.
//
// Threading: everything holds the GIL except the peak probe's copies and event waits.

#include "py_common.hpp"
#include "py_progress.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <pybind11/eval.h>

#include "cuda_session.hpp"
#include "errors.hpp"
#include "table_view.hpp"

namespace xcuda::python
{
    namespace
    {
        using text::format;
        std::string bytes_text(double bytes) { return text::bytes(bytes); }

        // ---- the device's peak ------------------------------------------------------------------

        // GB/s of the device-to-device copy ceiling (runtime/bandwidth_probe), measured once a session.
        double measured_peak_gbs(bool refresh)
        {
            refuse_while_capturing("xcuda.peak_bandwidth()", "it times copies with CUDA events; call it outside the "
                                   "`with xcuda.graph()` block");
            bandwidth_probe& probe = state().probe;
            py::gil_scoped_release release;
            return probe.measure(refresh);
        }

        // The device's name and the bandwidth from its memory clock and bus width, when a session runs
        // (a sweep has started it); None otherwise (a sweep timed by a test's _timer).
        py::object device_name()
        {
            cuda_session& session = process_session();
            return session.active() ? py::object(py::str(session.properties().name)) : py::object(py::none());
        }

        py::object theoretical_peak_gbs()
        {
            cuda_session& session = process_session();
            if (!session.active())
            {
                return py::none();
            }
            double peak = session.properties().theoretical_bandwidth_gbs();
            return peak > 0 ? py::object(py::float_(peak)) : py::object(py::none());
        }

        // ---- the result -------------------------------------------------------------------------

        struct bench_result
        {
            std::string kernel;
            py::object device = py::none();  // str, or None when no session ran
            int block = 0;
            int repeat = 0;
            int warmup = 0;
            std::vector<long long> sizes;
            std::vector<long long> grids;
            std::vector<long long> nbytes;
            std::vector<double> median_ms;
            std::vector<double> bandwidth_gbs;
            double peak_gbs = 0;
            std::string peak_source;                 // "measured" or "given"
            py::object theoretical_gbs = py::none();  // float or None
            double elapsed_s = 0;
            bool show_plot = true;
            mutable std::string png_base64;  // the plot for _repr_html_, made once

            std::vector<double> fraction_of_peak() const
            {
                std::vector<double> fractions;
                for (double bandwidth : bandwidth_gbs)
                {
                    fractions.push_back(bandwidth / peak_gbs);
                }
                return fractions;
            }

            std::string heading() const
            {
                std::string text = kernel;
                if (!device.is_none())
                {
                    text += " on " + str_of(device);
                }
                return text + ", block " + std::to_string(block) + ", median of " + std::to_string(repeat) +
                       " launch" + (repeat == 1 ? "" : "es");
            }

            std::string peak_text() const
            {
                std::string text = "peak " + format("%.0f GB/s", peak_gbs) +
                                   (peak_source == "measured" ? " measured (device-to-device copy)" : " (given)");
                if (!theoretical_gbs.is_none())
                {
                    text += "; theoretical " + format("%.0f GB/s", theoretical_gbs.cast<double>()) +
                            " (memory clock x bus width)";
                }
                return text;
            }

            std::vector<std::vector<std::string>> rows() const
            {
                std::vector<std::vector<std::string>> rows;
                for (std::size_t i = 0; i < sizes.size(); ++i)
                {
                    rows.push_back({std::to_string(sizes[i]), std::to_string(grids[i]),
                                    bytes_text(static_cast<double>(nbytes[i])), format("%.2f", median_ms[i] * 1e3),
                                    format("%.1f", bandwidth_gbs[i]), format("%.1f", 100 * bandwidth_gbs[i] / peak_gbs)});
                }
                return rows;
            }

            static const std::vector<std::string>& columns()
            {
                static const std::vector<std::string> names{"n", "grid", "bytes", "median us", "GB/s", "% of peak"};
                return names;
            }

            text_table table() const
            {
                return text_table{heading(), columns(), rows(), "", true};
            }

            std::string text() const
            {
                return table_view::text(table()) + peak_text();
            }

            std::string html() const
            {
                std::string out = "<div class=\"xcuda-bench\">" + table_view::html(table());
                out += "<p>" + html_escape(peak_text()) + "</p>";
                if (show_plot)
                {
                    if (png_base64.empty())
                    {
                        png_base64 = py::module_::import("xcuda.plots").attr("png_base64")(plot(py::none()), 100)
                                         .cast<std::string>();
                    }
                    out += "<img alt=\"" + html_escape(kernel) + " bandwidth plot\" src=\"data:image/png;base64," +
                           png_base64 + "\"/>";
                }
                return out + "</div>";
            }

            // Achieved GB/s against n, with the peaks as lines (xcuda/plots.py).
            py::object plot(py::object ax) const
            {
                return py::module_::import("xcuda.plots")
                    .attr("bandwidth_sweep")(sizes, bandwidth_gbs, peak_gbs, peak_source, theoretical_gbs, kernel, block,
                                             device, py::arg("ax") = ax);
            }
        };

        // ---- the sweep --------------------------------------------------------------------------

        std::vector<long long> sizes_from(py::handle object)
        {
            if (py::isinstance<py::str>(object) || py::isinstance<py::bytes>(object) || !py::hasattr(object, "__iter__"))
            {
                throw py::type_error("sizes must be an iterable of ints (a list, a range, a numpy array), got " +
                                     type_name(object));
            }
            std::vector<long long> sizes;
            for (py::handle item : object)
            {
                PyObject* index = PyNumber_Index(item.ptr());
                if (!index)
                {
                    PyErr_Clear();
                    throw py::type_error("sizes must be ints, got " + str_of(py::repr(item)) + " (" + type_name(item) +
                                         ")" + (PyFloat_Check(item.ptr()) ? ": write int(...) or 2**k" : ""));
                }
                long long n = py::reinterpret_steal<py::int_>(index).cast<long long>();
                if (n < 1)
                {
                    throw py::value_error("every size must be at least 1, got " + std::to_string(n) + " at position " +
                                          std::to_string(sizes.size()));
                }
                sizes.push_back(n);
            }
            if (sizes.empty())
            {
                throw py::value_error("sizes is empty: give the problem sizes to sweep, e.g. [2**k for k in range(10, 27)]");
            }
            return sizes;
        }

        py::object bench(py::object kernel, py::object sizes_object, py::object make_args, int block,
                         py::object bytes_per_element, int repeat, int warmup, py::object peak, bool plot,
                         bool progress, py::object timer)
        {
            refuse_while_capturing("xcuda.bench", "it times launches with CUDA events; run it outside the `with "
                                   "xcuda.graph()` block");
            // Everything that can be checked before any GPU work is, so a mistake costs no sweep.
            py::module_ xcuda_module = py::module_::import("xcuda");
            if (py::isinstance(kernel, xcuda_module.attr("Launcher")))
            {
                throw py::type_error("bench takes the kernel itself, not kernel[grid, block]: the grid follows each "
                                     "size as ceil(n / block); pass block= for the block size");
            }
            if (!py::isinstance(kernel, xcuda_module.attr("Kernel")))
            {
                throw py::type_error("bench needs an xcuda.Kernel (a __global__ function of a %%cuda cell), got " +
                                     type_name(kernel));
            }
            std::vector<long long> sizes = sizes_from(sizes_object);
            if (!PyCallable_Check(make_args.ptr()))
            {
                throw py::type_error("make_args must be a function of the size n that returns the kernel's arguments, "
                                     "e.g. lambda n: (a, x, y, out, n); got " + type_name(make_args));
            }
            if (block < 1)
            {
                throw py::value_error("block must be at least 1, got " + std::to_string(block));
            }
            if (repeat < 1 || warmup < 0)
            {
                throw py::value_error("repeat must be at least 1 and warmup at least 0");
            }
            double per_element = 0;
            if (!bytes_per_element.is_none())
            {
                per_element = bytes_per_element.cast<double>();
                if (!(per_element > 0))
                {
                    throw py::value_error("bytes_per_element must be positive, got " + str_of(bytes_per_element));
                }
            }
            if (!peak.is_none() && !(peak.cast<double>() > 0))
            {
                throw py::value_error("peak must be a positive bandwidth in GB/s, got " + str_of(peak));
            }
            if (plot)
            {
                try
                {
                    py::module_::import("matplotlib.figure");
                }
                catch (py::error_already_set&)
                {
                    PyErr_SetString(PyExc_ImportError,
                                    "bench(plot=True) needs matplotlib (Debian: apt-get install python3-matplotlib); "
                                    "pass plot=False (%cuda_bench --no-plot) for the table alone");
                    throw py::error_already_set();
                }
            }
            bench_result result;
            result.kernel = kernel.attr("name").cast<std::string>();
            result.block = block;
            result.repeat = repeat;
            result.warmup = warmup;
            result.show_plot = plot;
            if (peak.is_none())
            {
                result.peak_gbs = measured_peak_gbs(false);  // CudaUnavailableError here without a GPU
                result.peak_source = "measured";
            }
            else
            {
                result.peak_gbs = peak.cast<double>();
                result.peak_source = "given";
            }
            if (timer.is_none())
            {
                timer = kernel.attr("time");
            }
            std::size_t parameters = kernel.attr("is_template").cast<bool>() ? 0 : py::len(kernel.attr("parameters"));

            auto start = std::chrono::steady_clock::now();
            progress_bar bar(progress, result.kernel, sizes.size());
            std::size_t done = 0;
            try
            {
                for (long long n : sizes)
                {
                    py::object made = make_args(n);
                    py::tuple args = py::isinstance<py::tuple>(made)  ? py::reinterpret_borrow<py::tuple>(made)
                                     : py::isinstance<py::list>(made) ? py::tuple(made)
                                                                      : py::make_tuple(made);
                    if (parameters && args.size() != parameters)
                    {
                        throw py::type_error("make_args(" + std::to_string(n) + ") returned " + std::to_string(args.size()) +
                                             " value" + (args.size() == 1 ? "" : "s") + "; kernel " +
                                             kernel.attr("signature").cast<std::string>() + " takes " +
                                             std::to_string(parameters) + " argument" + (parameters == 1 ? "" : "s"));
                    }
                    long long grid = (n + block - 1) / block;
                    py::object nbytes = per_element > 0 ? py::object(py::int_(std::llround(per_element * static_cast<double>(n))))
                                                        : py::object(py::none());
                    py::object timing = timer(*(py::make_tuple(grid, block) + args), py::arg("repeat") = repeat,
                                              py::arg("warmup") = warmup, py::arg("nbytes") = nbytes);
                    double median = timing.attr("median_ms").cast<double>();
                    py::object counted = timing.attr("nbytes");
                    if (counted.is_none())
                    {
                        throw py::value_error("the bytes " + result.kernel + " moves are not known (none of its arguments is "
                                              "an array): pass bytes_per_element= (%cuda_bench --bytes-per-element)");
                    }
                    double moved = counted.cast<double>();
                    result.sizes.push_back(n);
                    result.grids.push_back(grid);
                    result.nbytes.push_back(static_cast<long long>(moved));
                    result.median_ms.push_back(median);
                    result.bandwidth_gbs.push_back(median > 0 ? moved / (median * 1e-3) / 1e9 : std::nan(""));
                    ++done;
                    if (PyErr_CheckSignals() != 0)
                    {
                        throw py::error_already_set();
                    }
                    bar.step(done, n);
                }
            }
            catch (py::error_already_set& e)
            {
                bar.finish(py::str(e.type().attr("__name__")).cast<std::string>() + " at n = " +
                               std::to_string(sizes[std::min(done, sizes.size() - 1)]),
                           done);
                throw;
            }
            catch (...)
            {
                bar.finish("error at n = " + std::to_string(sizes[std::min(done, sizes.size() - 1)]), done);
                throw;
            }
            bar.finish("", done);
            result.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            result.device = device_name();
            result.theoretical_gbs = theoretical_peak_gbs();
            return py::cast(std::move(result));
        }
    }

    void register_bench(py::module_& m)
    {
        py::class_<bench_result>(m, "BenchResult", R"(A size sweep of one kernel: what xcuda.bench and %cuda_bench return.

Shown as a table (and, when made with plot=True, the bandwidth plot) in notebooks, as a text table
elsewhere. Times are medians of CUDA-event timings in milliseconds; bandwidths are in GB/s (1e9 B/s).)")
            .def_readonly("kernel", &bench_result::kernel, "The kernel's name.")
            .def_readonly("device", &bench_result::device, "The device's name (None when no CUDA session ran).")
            .def_readonly("block", &bench_result::block, "Threads per block; each size n ran on ceil(n / block) blocks.")
            .def_readonly("repeat", &bench_result::repeat, "Timed launches per size.")
            .def_readonly("warmup", &bench_result::warmup, "Untimed launches before them.")
            .def_readonly("sizes", &bench_result::sizes, "The problem sizes n, in the order swept.")
            .def_readonly("grids", &bench_result::grids, "Blocks launched for each size: ceil(n / block).")
            .def_readonly("nbytes", &bench_result::nbytes, "Bytes counted as moved at each size.")
            .def_readonly("median_ms", &bench_result::median_ms, "Median kernel time at each size, in milliseconds.")
            .def_readonly("bandwidth_gbs", &bench_result::bandwidth_gbs, "nbytes / median time at each size, in GB/s.")
            .def_readonly("peak_gbs", &bench_result::peak_gbs, "The peak compared against, in GB/s.")
            .def_readonly("peak_source", &bench_result::peak_source,
                          "'measured' (a device-to-device copy timed with events) or 'given' (peak=).")
            .def_readonly("theoretical_gbs", &bench_result::theoretical_gbs,
                          "2 x memory clock x bus width, in GB/s (None when no CUDA session ran).")
            .def_readonly("elapsed_s", &bench_result::elapsed_s, "Wall time of the sweep in seconds.")
            .def_property_readonly("fraction_of_peak", &bench_result::fraction_of_peak,
                                   "bandwidth_gbs / peak_gbs at each size.")
            .def("plot", &bench_result::plot, py::arg("ax") = py::none(),
                 R"(Plot the achieved bandwidth against n (log scale) with the peak as a horizontal line.

Parameters
----------
ax : matplotlib Axes, optional
    Draw into these axes (e.g. to overlay several kernels); default: a new Figure.

Returns
-------
matplotlib.figure.Figure
    Not registered with pyplot: a notebook shows it when it is a cell's value; fig.savefig saves it.)")
            .def("__len__", [](const bench_result& r) { return r.sizes.size(); })
            .def("__repr__", &bench_result::text)
            .def("_repr_html_", &bench_result::html);

        m.def("peak_bandwidth", &measured_peak_gbs, py::arg("refresh") = false,
              R"(The device's measured peak memory bandwidth in GB/s.

A device-to-device copy between two buffers of up to 512 MiB, timed with CUDA events (the fastest of 10
after 2 untimed copies), counting bytes read plus bytes written. Measured once per session and
device; refresh=True measures again. Raises CudaUnavailableError without a driver or GPU.)");

        m.def("bench", &bench, py::arg("kernel"), py::arg("sizes"), py::arg("make_args"), py::kw_only(),
              py::arg("block") = 256, py::arg("bytes_per_element") = py::none(), py::arg("repeat") = 20,
              py::arg("warmup") = 3, py::arg("peak") = py::none(), py::arg("plot") = true, py::arg("progress") = true,
              py::arg("_timer") = py::none(),
              R"(Sweep a kernel over problem sizes and compare its bandwidth with the device's peak.

For each n in sizes: args = make_args(n), then kernel.time(ceil(n / block), block, *args) (CUDA events,
median of `repeat` launches after `warmup`); bandwidth = bytes moved / median time.

Parameters
----------
kernel : xcuda.Kernel
    The kernel itself (not kernel[grid, block]).
sizes : iterable of int
    Problem sizes n, each at least 1.
make_args : callable
    make_args(n) returns the kernel's arguments for size n (a tuple), e.g. device arrays of n elements.
block : int
    Threads per block; the grid is ceil(n / block).
bytes_per_element : float, optional
    Bytes moved per element (bytes = bytes_per_element * n); default: the bytes of the array arguments.
repeat, warmup : int
    Timed launches per size, and untimed launches before them.
peak : float, optional
    The peak to compare against, in GB/s; default: xcuda.peak_bandwidth() (measured once per session).
plot : bool
    Show the plot (matplotlib) with the result's table; needs matplotlib.
progress : bool
    A progress bar (in place) for sweeps of more than 4 sizes or longer than 1 s.

Returns
-------
BenchResult
    sizes, grids, nbytes, median_ms, bandwidth_gbs, peak_gbs, theoretical_gbs; .plot() gives the Figure.

Other Parameters
----------------
_timer : callable, optional
    Test hook: called as _timer(grid, block, *args, repeat=, warmup=, nbytes=) instead of kernel.time;
    it returns an object with median_ms and nbytes (as KernelTiming). Lets the sweep run without a GPU.)");
    }
}
