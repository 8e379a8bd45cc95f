// xcuda.LaunchProfile and xcuda.SanitizerReport: what %cuda_profile and %cuda_sanitize show, as
// HTML in notebooks (tables, the roofline plot) and as text elsewhere; and xcuda.find_tool.
//
// Both can also be read from recorded tool output (LaunchProfile.from_ncu, SanitizerReport.
// from_output), which is how the parsing and the views are tested on machines without a GPU.
// The plot is a matplotlib Figure made without pyplot, as BenchResult's is.

#include "py_common.hpp"

#include "profile_result.hpp"
#include "sanitizer_result.hpp"
#include "launch_replayer.hpp"

namespace xcuda::python
{
    namespace
    {
        // The roofline, or each unit's percent of peak (xcuda/plots.py).
        py::object plot(const profile_result& result, py::object ax)
        {
            const launch_profile& p = result.profile;
            profile_result::roofline_figures f = result.roofline();
            return py::module_::import("xcuda.plots")
                .attr("roofline")(p.kernel, p.bound(), p.arithmetic_intensity(), p.flops_per_second(), f.peak_flops_per_second,
                                  p.peak_dram_bytes_per_second, f.fp64, f.percents, py::arg("ax") = ax);
        }

        // The plot is made once, as a PNG inside the HTML; without matplotlib the tables say it all.
        std::string profile_html(const profile_result& result)
        {
            if (result.show_plot && result.png_base64.empty())
            {
                try
                {
                    result.png_base64 = py::module_::import("xcuda.plots").attr("png_base64")(plot(result, py::none()), 90)
                                            .cast<std::string>();
                }
                catch (py::error_already_set& e)
                {
                    if (!e.matches(PyExc_ImportError))
                    {
                        throw;
                    }
                }
            }
            return result.html(result.show_plot ? result.png_base64 : "");
        }

        py::dict line_dict(const launch_profile& p)
        {
            py::dict d;
            for (const line_figures& f : p.lines)
            {
                py::dict stalls;
                for (const auto& stall : f.stalls)
                {
                    stalls[py::str(stall.first)] = stall.second;
                }
                auto [reason, share] = f.top_stall();
                d[py::int_(p.cell.editor_line(f.line))] = py::dict(py::arg("executed") = f.executed, py::arg("samples") = f.samples,
                                               py::arg("stalls") = stalls,
                                               py::arg("top_stall") = reason.empty() ? py::object(py::none()) : py::object(py::str(reason)),
                                               py::arg("top_stall_share") = share);
            }
            return d;
        }

        py::list finding_list(const sanitizer_result& report)
        {
            py::list findings;
            for (const sanitizer_finding& f : report.report.findings)
            {
                py::list locations;
                for (const sanitizer_location& l : f.locations)
                {
                    locations.append(py::dict(py::arg("function") = l.function, py::arg("offset") = l.offset,
                                              py::arg("file") = l.file,
                                              py::arg("line") = l.file == report.report.cell_file
                                                                    ? report.report.lines.editor_line(l.line)
                                                                    : l.line,
                                              py::arg("access") = l.access, py::arg("thread") = l.thread,
                                              py::arg("hazards") = l.hazards));
                }
                findings.append(py::dict(py::arg("title") = f.title, py::arg("kind") = f.kind,
                                         py::arg("kernel") = sanitizer_result::kernel_of(f),
                                         py::arg("line") = report.cell_line_of(f), py::arg("thread") = f.thread,
                                         py::arg("block") = f.block, py::arg("locations") = locations,
                                         py::arg("details") = f.details));
            }
            return findings;
        }
    }

    profile_options profile_options_from(py::dict keywords)
    {
        profile_options options;
        for (auto item : keywords)
        {
            std::string key = item.first.cast<std::string>();
            options.set(key, py::cast<bool>(item.second));
        }
        return options;
    }

    sanitize_options sanitize_options_from(py::dict keywords, const char* takes)
    {
        sanitize_options options;
        for (auto item : keywords)
        {
            std::string key = item.first.cast<std::string>();
            sanitize_options::check_keyword(key, takes);
            if (key == "tool")
                options.tool = item.second.cast<std::string>();
            else
                options.keep = item.second.cast<bool>();
        }
        return options;
    }

    void register_replay(py::module_& m)
    {
        py::class_<profile_result>(m, "LaunchProfile", R"(One launch measured by Nsight Compute (%cuda_profile, Launcher.profile).

Shown as a table (duration, DRAM throughput, SM throughput, occupancy, registers, shared memory, a
verdict), the lines the time goes to, ncu's advice and a roofline plot; as text elsewhere. Times in
microseconds, throughputs in GB/s and percent of peak; None where ncu did not report a figure.)")
            .def_property_readonly("kernel", [](const profile_result& r) { return r.profile.kernel; })
            .def_property_readonly("device", [](const profile_result& r) { return r.profile.device; })
            .def_property_readonly("duration_us", [](const profile_result& r) { return r.profile.duration_us(); })
            .def_property_readonly("dram_gbs", [](const profile_result& r) { return r.profile.dram_gbs(); },
                                   "DRAM bytes read and written per second, in GB/s.")
            .def_property_readonly("dram_bytes", [](const profile_result& r) { return r.profile.dram_bytes; })
            .def_property_readonly("dram_percent", [](const profile_result& r) { return r.profile.dram_percent; },
                                   "DRAM throughput in percent of the device's peak (ncu's).")
            .def_property_readonly("peak_dram_gbs", [](const profile_result& r) { return r.profile.peak_dram_gbs(); })
            .def_property_readonly("memory_percent", [](const profile_result& r) { return r.profile.memory_percent; },
                                   "ncu's Memory Throughput: the busiest of DRAM, L1 and L2, in percent of its peak.")
            .def_property_readonly("sm_percent", [](const profile_result& r) { return r.profile.sm_percent; })
            .def_property_readonly("achieved_occupancy", [](const profile_result& r) { return r.profile.achieved_occupancy; },
                                   "Percent of the SM's warp slots in use, on average while active.")
            .def_property_readonly("theoretical_occupancy", [](const profile_result& r) { return r.profile.theoretical_occupancy; })
            .def_property_readonly("registers", [](const profile_result& r) { return r.profile.registers; })
            .def_property_readonly("static_shared", [](const profile_result& r) { return r.profile.static_shared; })
            .def_property_readonly("dynamic_shared", [](const profile_result& r) { return r.profile.dynamic_shared; })
            .def_property_readonly("gflops", [](const profile_result& r) { return r.profile.gflops(); },
                                   "Floating-point operations per second (FP32 and FP64), in GFLOP/s.")
            .def_property_readonly("arithmetic_intensity", [](const profile_result& r) { return r.profile.arithmetic_intensity(); },
                                   "FLOP per DRAM byte.")
            .def_property_readonly("bound", [](const profile_result& r) { return r.profile.bound(); },
                                   "'memory', 'compute' or 'latency' ('' when ncu gave no throughput).")
            .def_property_readonly("verdict", [](const profile_result& r) { return r.profile.verdict(); })
            .def_property_readonly("metrics", [](const profile_result& r) { return r.metric_values(); },
                                   "Every metric ncu reported, by name, in base units (ns, byte, byte/s, %).")
            .def_property_readonly("rules", [](const profile_result& r) {
                py::list rules;
                for (const ncu_rule& rule : r.profile.rules)
                {
                    rules.append(py::dict(py::arg("section") = rule.section, py::arg("name") = rule.name,
                                          py::arg("type") = rule.type, py::arg("description") = rule.description,
                                          py::arg("speedup") = rule.speedup));
                }
                return rules;
            }, "ncu's advice: its rules' findings.")
            .def_property_readonly("lines", [](const profile_result& r) { return line_dict(r.profile); },
                                   "Line of the cell as the editor counts it -> {executed, samples, stalls, top_stall, "
                                   "top_stall_share}; line 0 holds instructions without a line of the cell.")
            .def_property_readonly("lines_note", [](const profile_result& r) { return r.profile.lines_note; },
                                   "Why there are no per-line figures, when there are none.")
            .def_property_readonly("folder", [](const profile_result& r) { return r.folder.empty() ? py::object(py::none()) : py::object(py::str(r.folder)); },
                                   "The replay bundle and ncu's report (profile.ncu-rep) when kept (keep=True).")
            .def_property_readonly("ncu_log", [](const profile_result& r) { return r.ncu_log; })
            .def_readwrite("show_plot", &profile_result::show_plot, "Whether the notebook view includes the plot.")
            .def("lines_view",
                 [](const profile_result& r, bool sass) { return kernel_lines(r.profiled_kernel(), sass, r.profile.line_notes()); },
                 py::arg("sass") = false,
                 "The kernel's lines() view with each source line's share of the stall samples and instructions.")
            .def("plot", [](const profile_result& r, py::object ax) { return plot(r, ax); }, py::arg("ax") = py::none(),
                 "A matplotlib Figure: the roofline, or each unit's percent of peak when the FLOP counts are missing.")
            .def("_repr_html_", &profile_html)
            .def("__repr__", &profile_result::text)
            .def_static("from_ncu",
                        &profile_result::from_ncu,
                        py::arg("raw"), py::arg("details"), py::arg("source_page") = std::nullopt, py::arg("sass") = std::nullopt,
                        py::arg("source") = "", py::arg("symbol") = "", py::arg("cell_file") = "cell",
                        py::arg("plot") = true,
                        R"(A LaunchProfile from recorded ncu output: `ncu --csv --page raw` and `--page details`, and
optionally `--page source --print-source cuda,sass` (or `sass`, with the kernel's `nvdisasm -c -g`
output in `sass`). `source` is the kernel's source (for the lines' text), `cell_file` the name its
lines carry in the line information ("cell" for NVRTC's).)");

        py::class_<sanitizer_result>(m, "SanitizerReport", R"(What compute-sanitizer found in one launch (%cuda_sanitize, Launcher.sanitize).

Each finding names its kernel, the cell's line (with its text), and the thread and block; shown as
HTML in notebooks and as text elsewhere. `clean` is True when there is nothing to report.)")
            .def_property_readonly("tool", [](const sanitizer_result& r) { return r.report.tool; })
            .def_property_readonly("clean", [](const sanitizer_result& r) { return r.report.clean(); })
            .def_property_readonly("errors", [](const sanitizer_result& r) { return r.report.errors; },
                                   "The error count of the sanitizer's summary line.")
            .def_property_readonly("warnings", [](const sanitizer_result& r) { return r.report.warnings; })
            .def_property_readonly("summary", [](const sanitizer_result& r) { return r.report.summary; })
            .def_property_readonly("findings", [](const sanitizer_result& r) { return finding_list(r); },
                                   "A list of dicts: title, kind, kernel, line (of the cell, or None), thread, block, "
                                   "locations, details.")
            .def_property_readonly("kernel_findings", [](const sanitizer_result& r) { return r.report.kernel_findings(); },
                                   "Findings in the kernel's code (not the API errors that follow a fault).")
            .def_property_readonly("leaked_bytes", [](const sanitizer_result& r) { return r.report.leaked_bytes; })
            .def_property_readonly("output", [](const sanitizer_result& r) { return r.output; },
                                   "compute-sanitizer's whole output.")
            .def_property_readonly("program_output", [](const sanitizer_result& r) { return r.report.program_output; },
                                   "What the replay printed (the kernel's printf among it).")
            .def_property_readonly("exit_status", [](const sanitizer_result& r) { return r.status; })
            .def_property_readonly("launch", [](const sanitizer_result& r) { return r.launch; })
            .def_property_readonly("folder", [](const sanitizer_result& r) { return r.folder.empty() ? py::object(py::none()) : py::object(py::str(r.folder)); })
            .def("_repr_html_", &sanitizer_result::html)
            .def("__repr__", &sanitizer_result::text)
            .def_static("from_output", &sanitizer_result::from_output,
                        py::arg("output"), py::arg("tool") = "memcheck", py::arg("source") = "",
                        py::arg("cell_file") = "cell",
                        "A SanitizerReport from recorded compute-sanitizer output; `source` is the kernel's source, "
                        "`cell_file` the file name its lines carry (\"cell\" for NVRTC's).");

        m.def("find_tool", &launch_replayer::find_tool,
              py::arg("name"),
              R"(The path of ncu or compute-sanitizer, found as %cuda_profile and %cuda_sanitize find them:
$XCUDA_NCU / $XCUDA_COMPUTE_SANITIZER, the toolkit's bin/ (and nsight-compute-*/, compute-sanitizer/),
PATH, /opt/nvidia/nsight-compute. Raises ToolNotFoundError listing every place looked.)");
    }
}
