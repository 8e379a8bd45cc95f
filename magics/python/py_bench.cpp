// xcuda.bench, xcuda.BenchResult and xcuda.peak_bandwidth. The sweep, its checks and its table are the
// core's (frontend/bench_sweep, bench_result); here the Python arguments are read, make_args and the
// timer called for each size (Kernel.time, so a sweep measures what %cuda_timeit measures), and the plot
// made by xcuda/plots.py: a matplotlib Figure without pyplot (no global figure list, no backend, nothing
// shown twice by an inline backend), shown in a BenchResult's HTML as a PNG. The progress bar is drawn by
// xcuda/progress.py; this file imports neither IPython nor matplotlib.
//
// Test hooks: bench(..., _timer=f) times with f(grid, block, *args, repeat=, warmup=, nbytes=) instead
// of kernel.time, and %cuda_bench calls xcuda.bench looked up at call time; with them the sweep, the
// table, the plot, the progress bar and the magic are tested on machines without a GPU.
//
// Threading: everything holds the GIL except the peak probe's copies and event waits.

#include "py_common.hpp"

#include "bench_sweep.hpp"
#include "progress_meter.hpp"

namespace xcuda::python
{
    namespace
    {
        // GB/s of the device-to-device copy ceiling (runtime/bandwidth_probe), measured once a session.
        double measured_peak_gbs(notebook_session& notebook, bool refresh)
        {
            refuse_while_capturing(notebook.session, "xcuda.peak_bandwidth()", "it times copies with CUDA events; call it outside the "
                                   "`with xcuda.graph()` block");
            bandwidth_probe& probe = notebook.probe;
            py::gil_scoped_release release;
            return probe.measure(refresh);
        }

        // The progress bar of a sweep: what it says and when is the core's (progress_meter); xcuda/progress.py
        // draws it (a notebook's display, a terminal's line, or nowhere: then open_progress gives None).
        class progress_bar
        {
        public:
            progress_bar(bool enabled, std::string label, std::size_t total) : m_meter(std::move(label), total)
            {
                m_view = py::module_::import("xcuda.progress").attr("open_progress")(enabled);
            }

            // After size number `done` (1-based), n, has been timed.
            void step(std::size_t done, long long n)
            {
                std::optional<std::string> text;
                if (!m_view.is_none() && (text = m_meter.step(done, n)))
                    show(*text, done);
            }

            // The last state, or why the sweep stopped. Only where the bar was shown.
            void finish(const std::string& stopped, std::size_t done)
            {
                std::optional<std::string> text = m_meter.finish(stopped, done);
                if (!text)
                    return;
                show(*text, done);
                m_view.attr("end")();
            }

        private:
            void show(const std::string& text, std::size_t done)
            {
                m_view.attr("show")(text, m_meter.html(text, done), m_meter.overwrite(text));
                m_meter.mark_shown();
            }

            progress_meter m_meter;
            py::object m_view;  // an xcuda.progress.Progress, or None
        };

        // Achieved GB/s against n, with the peaks as lines (xcuda/plots.py).
        py::object plot(const bench_result& r, py::object ax)
        {
            return py::module_::import("xcuda.plots")
                .attr("bandwidth_sweep")(r.sizes, r.bandwidth_gbs, r.peak_gbs, r.peak_source, r.theoretical_gbs, r.kernel,
                                         r.block, r.device, py::arg("ax") = ax);
        }

        std::string html(const bench_result& r)
        {
            if (r.show_plot && r.png_base64.empty())
            {
                r.png_base64 = py::module_::import("xcuda.plots").attr("png_base64")(plot(r, py::none()), 100).cast<std::string>();
            }
            return r.html(r.show_plot ? r.png_base64 : "");
        }

        // The Python name of the exception being handled ("KeyboardInterrupt", "ValueError"), for the bar.
        std::string exception_name()
        {
            try
            {
                throw;
            }
            catch (py::error_already_set& e)
            {
                return py::str(e.type().attr("__name__")).cast<std::string>();
            }
            catch (const argument_type_error&)
            {
                return "TypeError";
            }
            catch (const argument_value_error&)
            {
                return "ValueError";
            }
            catch (...)
            {
                return "error";
            }
        }

        std::vector<long long> sizes_from(py::handle object)
        {
            if (py::isinstance<py::str>(object) || py::isinstance<py::bytes>(object) || !py::hasattr(object, "__iter__"))
            {
                bench_sweep::refuse_sizes(type_name(object));
            }
            std::vector<long long> sizes;
            for (py::handle item : object)
            {
                PyObject* index = PyNumber_Index(item.ptr());
                if (!index)
                {
                    PyErr_Clear();
                    bench_sweep::refuse_size(str_of(py::repr(item)), type_name(item), PyFloat_Check(item.ptr()));
                }
                long long n = py::reinterpret_steal<py::int_>(index).cast<long long>();
                bench_sweep::check_size(n, sizes.size());
                sizes.push_back(n);
            }
            bench_sweep::check_not_empty(sizes);
            return sizes;
        }

        py::object bench(notebook_session& notebook, py::object kernel, py::object sizes_object, py::object make_args, int block,
                         py::object bytes_per_element, int repeat, int warmup, py::object peak, bool plot,
                         bool progress, py::object timer)
        {
            refuse_while_capturing(notebook.session, "xcuda.bench", "it times launches with CUDA events; run it outside the `with "
                                   "xcuda.graph()` block");
            // Everything that can be checked before any GPU work is, so a mistake costs no sweep.
            py::module_ xcuda_module = py::module_::import("xcuda");
            bench_sweep::check_kernel(py::isinstance(kernel, xcuda_module.attr("Launcher")),
                                      py::isinstance(kernel, xcuda_module.attr("Kernel")), type_name(kernel));
            std::vector<long long> sizes = sizes_from(sizes_object);
            bench_sweep::check_make_args(PyCallable_Check(make_args.ptr()), type_name(make_args));
            bench_sweep::settings chosen{block, std::nullopt, repeat, warmup, std::nullopt, plot, "", ""};
            auto number = [](py::object value, std::optional<double>& into, std::string& written) {
                into = value.is_none() ? std::nullopt : std::optional<double>(value.cast<double>());
                written = value.is_none() ? "" : str_of(value);
            };
            number(bytes_per_element, chosen.bytes_per_element, chosen.bytes_per_element_written);
            number(peak, chosen.peak, chosen.peak_written);
            bench_sweep::check(chosen);
            if (plot)
            {
                if (!py::module_::import("xcuda.plots").attr("matplotlib_available")().cast<bool>())
                {
                    PyErr_SetString(PyExc_ImportError, bench_sweep::matplotlib_missing());
                    throw py::error_already_set();
                }
            }
            std::string name = kernel.attr("name").cast<std::string>();
            // CudaUnavailableError here without a GPU, when the peak is to be measured.
            bench_sweep sweep(name, sizes, chosen, [&notebook] { return measured_peak_gbs(notebook, false); });
            if (timer.is_none())
            {
                timer = kernel.attr("time");
            }
            std::size_t parameters = kernel.attr("is_template").cast<bool>() ? 0 : py::len(kernel.attr("parameters"));
            progress_bar bar(progress, name, sizes.size());
            auto time_size = [&](long long n, long long grid, std::optional<long long> nbytes) {
                py::object made = make_args(n);
                py::tuple args = py::isinstance<py::tuple>(made)  ? py::reinterpret_borrow<py::tuple>(made)
                                 : py::isinstance<py::list>(made) ? py::tuple(made)
                                                                  : py::make_tuple(made);
                bench_sweep::check_argument_count(n, args.size(), parameters,
                                                  [&] { return kernel.attr("signature").cast<std::string>(); });
                py::object timing = timer(*(py::make_tuple(grid, block) + args), py::arg("repeat") = repeat,
                                          py::arg("warmup") = warmup, py::arg("nbytes") = nbytes);
                double median = timing.attr("median_ms").cast<double>();
                return bench_sweep::timing{median, timing.attr("nbytes").cast<std::optional<double>>()};
            };
            auto after_size = [&](std::size_t done, long long n) {
                if (PyErr_CheckSignals() != 0)
                {
                    throw py::error_already_set();
                }
                bar.step(done, n);
            };
            try
            {
                sweep.run(time_size, after_size);
            }
            catch (...)
            {
                bar.finish(exception_name() + " at n = " + std::to_string(sweep.stopped_at()), sweep.done());
                throw;
            }
            bar.finish("", sweep.done());
            return py::cast(sweep.finish(notebook.session));
        }
    }

    void register_bench(py::module_& m, notebook_session& notebook)
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
            .def("plot", &plot, py::arg("ax") = py::none(),
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
            .def("_repr_html_", &html);

        m.def("peak_bandwidth", [&notebook](bool refresh) { return measured_peak_gbs(notebook, refresh); },
              py::arg("refresh") = false,
              R"(The device's measured peak memory bandwidth in GB/s.

A device-to-device copy between two buffers of up to 512 MiB, timed with CUDA events (the fastest of 10
after 2 untimed copies), counting bytes read plus bytes written. Measured once per session and
device; refresh=True measures again. Raises CudaUnavailableError without a driver or GPU.)");

        m.def("bench",
              [&notebook](py::object kernel, py::object sizes, py::object make_args, int block, py::object bytes_per_element,
                          int repeat, int warmup, py::object peak, bool plot, bool progress, py::object timer) {
                  return bench(notebook, kernel, sizes, make_args, block, bytes_per_element, repeat, warmup, peak, plot,
                               progress, timer);
              },
              py::arg("kernel"), py::arg("sizes"), py::arg("make_args"), py::kw_only(),
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
