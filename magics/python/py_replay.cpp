// One launch seen from inside, without the session at risk: %cuda_profile (Nsight Compute) and
// %cuda_sanitize (compute-sanitizer) make the launch again in a child process, xcuda-replay, from a
// bundle written here (runtime/replay_bundle.hpp), and read what the tools report.
//
// Why a replay in a child rather than CUPTI's range profiler in this process: a profiler replays the
// kernel many times and a sanitizer instruments it, and either may end in a fault, which since CUDA 12
// makes the driver refuse every later call of the process. In a child the launch may fault, hang or
// be killed (an interrupt) and the session keeps every buffer. The same bundle serves both tools
// (compute-sanitizer cannot attach to a running process anyway), and ncu brings its sections, rules
// and source counters. The session is only read: the bytes of the buffers the pointers point into,
// after the work queued on the launch's stream.
//
// The steps, for kernel[grid, block](args):
//   1. the tool is found (tool_finder: ToolNotFoundError says where it looked), then the GPU
//      (CudaUnavailableError);
//   2. the arguments are bound as for a launch (same checks, same packing) in replay mode: each
//      pointer argument's extent is recorded and numpy arrays stay on the host;
//   3. the bundle: the module compiled for the device with line information, the argument bytes, one
//      region per device allocation range (aliasing kept), their bytes copied out of the session;
//   4. the tool runs xcuda-replay on it (tool_process: interruptible, the child's process group
//      killed on an interrupt), then its reports are read (ncu_report / sanitizer_report);
//   5. the bundle folder is removed (keep=True keeps it, and the result says where).

#include "byte_io.hpp"
#include "py_common.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "code_listing.hpp"
#include "cuda_module.hpp"
#include "disassembler.hpp"
#include "launch_profile.hpp"
#include "ncu_report.hpp"
#include "replay_bundle.hpp"
#include "sanitizer_report.hpp"
#include "tool_finder.hpp"
#include "tool_process.hpp"

namespace xcuda::python
{
    namespace
    {
        // The interrupt check of the tools' waits: Ctrl-C in the notebook (the GIL is taken to ask).
        bool interrupt_requested()
        {
            py::gil_scoped_acquire acquire;
            if (PyErr_CheckSignals() != 0)
            {
                PyErr_Clear();
                return true;
            }
            return false;
        }

        std::string own_folder()
        {
            Dl_info info;
            if (dladdr(reinterpret_cast<void*>(&own_folder), &info) && info.dli_fname)
            {
                std::string path = info.dli_fname;
                std::size_t slash = path.rfind('/');
                return slash == std::string::npos ? "." : path.substr(0, slash);
            }
            return ".";
        }

        // xcuda-replay, built and installed next to this module.
        std::string replay_program()
        {
            std::string path = own_folder() + "/xcuda-replay";
            if (::access(path.c_str(), X_OK) != 0)
            {
                throw tool_not_found_error("xcuda-replay, the program that makes a launch again for ncu and "
                                           "compute-sanitizer, is not next to the xcuda module (looked for " +
                                           path + "); rebuild or reinstall xcuda");
            }
            return path;
        }

        bool exists(const std::string& path)
        {
            struct stat st;
            return ::stat(path.c_str(), &st) == 0;
        }

        // The bundle's folder, removed at the end unless kept.
        struct bundle_folder
        {
            std::string path;
            bool keep = false;
            ~bundle_folder()
            {
                if (!keep)
                {
                    replay_bundle::remove_folder(path);
                }
            }
        };

        // A new file readable by this user only (O_EXCL: a file planted under the name is refused).
        void write_private(const std::string& path, const std::string& text)
        {
            int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            int why = errno;
            bool written = fd >= 0 && byte_io::write_all(fd, text.data(), text.size(), &why);
            if (fd >= 0)
            {
                ::close(fd);
            }
            if (!written)
            {
                throw tool_error("could not write " + path + ": " + std::strerror(why));
            }
        }

        // What the replay and the tools printed that says what went wrong: xcuda-replay's own lines,
        // the tools' errors.
        std::string failure_lines(const std::string& output)
        {
            std::string lines;
            for (const std::string& line : text::split_lines(output))
            {
                if (line.rfind("xcuda-replay:", 0) == 0 || line.rfind("==ERROR==", 0) == 0 ||
                    line.rfind("compute-sanitizer:", 0) == 0 || line.find("ERR_NVGPUCTRPERM") != std::string::npos)
                {
                    lines += "\n  " + line;
                }
            }
            return lines;
        }

        [[noreturn]] void replay_failed(const std::string& tool, const tool_process::outcome& run)
        {
            std::string said = failure_lines(run.output);
            if (run.output.find("ERR_NVGPUCTRPERM") != std::string::npos)
            {
                throw tool_error("ncu may not read the GPU's performance counters as this user (ERR_NVGPUCTRPERM): "
                                 "the driver restricts them to administrators. Run the kernel as root, or load "
                                 "the nvidia module with NVreg_RestrictProfilingToAdminUsers=0 (see "
                                 "https://developer.nvidia.com/ERR_NVGPUCTRPERM)." + said);
            }
            if (run.output.find("xcuda-replay:") != std::string::npos && run.output.find(" failed: ") != std::string::npos)
            {
                throw tool_error("the launch failed when " + tool + " made it again in a child process; the session "
                                 "was not touched. %cuda_sanitize finds out-of-bounds accesses and races." + said);
            }
            std::string tail = run.output.size() > 3000 ? run.output.substr(run.output.size() - 3000) : run.output;
            throw tool_error(tool + " failed (exit status " + std::to_string(run.status) + ")" +
                             (said.empty() ? ":\n" + tail : ":" + said));
        }

        // The replay of one launch, written to a private folder.
        struct prepared_replay
        {
            bundle_folder folder;
            std::string cubin;
            std::string symbol;
            std::string source;
            std::string description;
        };

        // With need_gpu false and no GPU (replay_bundle on a machine without one), the bundle is for
        // device 0 and the module's inspection arch; only numpy arguments can be captured then.
        void prepare(prepared_replay& replay, cuda_kernel& kernel, const launch_dims& dims, py::handle stream_object,
                     py::args args, bool need_gpu = true)
        {
            cuda_session& session = process_session();
            bool gpu = need_gpu || session.try_ensure();
            if (gpu)
            {
                session.ensure();  // CudaUnavailableError without a GPU, before any work
            }
            CUstream stream = gpu ? stream_from_object(stream_object) : nullptr;
            launch_call call(kernel, dims, stream);
            call.record_for_replay();
            call_objects objects;
            bind_argument_tuple(call, args, objects);
            replay_bundle bundle;
            {
                py::gil_scoped_release release;
                bundle = replay_bundle::from_call(call, gpu);
                replay.folder.path = replay_bundle::make_folder();
                bundle.write(replay.folder.path);
            }
            replay.cubin = bundle.cubin;
            replay.symbol = bundle.symbol;
            replay.source = kernel.module()->source();
            replay.description = bundle.describe();
            // The cell's text beside the report, for ncu's source page (--resolve-source-file).
            write_private(replay.folder.path + "/cell", replay.source);
        }

        tool_process::outcome run_tool(const std::vector<std::string>& argv, const std::string& folder,
                                       const std::string& log)
        {
            py::gil_scoped_release release;
            return tool_process::run(argv, folder, folder + "/" + log, &interrupt_requested);
        }

        // The sections of a default profile: the figures of the table, the roofline's counts, and the
        // source counters and warp states of the per-line figures.
        const std::vector<std::string>& default_sections()
        {
            static const std::vector<std::string> sections{"SpeedOfLight", "SpeedOfLight_RooflineChart", "LaunchStats",
                                                           "Occupancy", "SourceCounters", "WarpStateStats"};
            return sections;
        }

        // Metrics asked for by name besides the sections': what the table and the roofline read.
        const char* extra_metrics =
            "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__bytes.sum,"
            "dram__bytes.sum.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,"
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,"
            "sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,"
            "sm__maximum_warps_per_active_cycle_pct,launch__registers_per_thread,launch__shared_mem_per_block_static,"
            "launch__shared_mem_per_block_dynamic,sm__cycles_elapsed.avg.per_second,"
            "sm__sass_thread_inst_executed_op_fadd_pred_on.sum,sm__sass_thread_inst_executed_op_fmul_pred_on.sum,"
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__sass_thread_inst_executed_op_dadd_pred_on.sum,"
            "sm__sass_thread_inst_executed_op_dmul_pred_on.sum,sm__sass_thread_inst_executed_op_dfma_pred_on.sum,"
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained,"
            "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained";
    }

    py::object profile_launch(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                              py::handle stream_object, py::args args, const profile_options& options)
    {
        std::string ncu = tool_finder::require("ncu", "%cuda_profile (kernel.profile)");
        std::string replay_path = replay_program();
        prepared_replay replay;
        replay.folder.keep = options.keep;
        prepare(replay, *kernel, dims, stream_object, args);
        const std::string& folder = replay.folder.path;
        std::string report = folder + "/profile";

        // --clock-control none: ncu locks the clocks to base by default, which measured SAXPY's DRAM
        // throughput 27% under the copy ceiling of the same GPU at its own clocks (H200, ncu 2025.3);
        // the launch is profiled as it runs in the session.
        std::vector<std::string> argv{ncu, "--target-processes", "all", "--clock-control", "none",
                                      "--import-source", "no", "-f", "-o", report};
        std::vector<std::string> chosen;
        if (options.full)
        {
            chosen = {"--set", "full"};
        }
        else
        {
            for (const std::string& section : default_sections())
            {
                chosen.push_back("--section");
                chosen.push_back(section);
            }
            chosen.push_back("--metrics");
            chosen.push_back(extra_metrics);
        }
        std::vector<std::string> first = argv;
        first.insert(first.end(), chosen.begin(), chosen.end());
        first.push_back(replay_path);
        first.push_back(folder);
        tool_process::outcome run = run_tool(first, folder, "ncu.log");
        std::string log = run.output;
        if (!exists(report + ".ncu-rep") && !options.full && !ncu_report::errors(run.output).empty() &&
            run.output.find("xcuda-replay:") == std::string::npos)
        {
            // An ncu that knows a section or metric by another name refuses the whole run: the full
            // set, which every ncu has, instead.
            std::vector<std::string> second = argv;
            second.insert(second.end(), {"--set", "full", replay_path, folder});
            run = run_tool(second, folder, "ncu-full.log");
            log += run.output;
        }
        if (!exists(report + ".ncu-rep"))
        {
            replay_failed("ncu", run);
        }
        if (run.output.find("xcuda-replay:") != std::string::npos && run.output.find(" failed: ") != std::string::npos)
        {
            replay_failed("ncu", run);
        }
        auto page = [&](std::vector<std::string> how, const std::string& name) {
            std::vector<std::string> import{ncu, "--import", report + ".ncu-rep", "--csv"};
            import.insert(import.end(), how.begin(), how.end());
            tool_process::outcome out = run_tool(import, folder, name);
            if (out.status != 0)
            {
                throw tool_error("ncu could not read its own report (exit status " + std::to_string(out.status) +
                                 "):" + failure_lines(out.output) + "\n" + out.output.substr(0, 2000));
            }
            return out.output;
        };
        profile_result result;
        result.profile = launch_profile::from_pages(page({"--page", "raw"}, "raw.csv"), page({"--page", "details"}, "details.csv"));
        result.source = replay.source;
        result.kernel = kernel;
        result.ncu_log = log;
        if (options.source)
        {
            // ncu's own line mapping, with the cell's text found beside the report; else its SASS matched to
            // the CUBIN's line information (nvdisasm). Neither failing fails the profile: the figures of the
            // table stand without them, and lines_note says why they are missing.
            std::string why;
            try
            {
                ncu_source lines = ncu_report::parse_source(page({"--page", "source", "--print-source", "cuda,sass",
                                                                  "--resolve-source-file", folder + "/cell"},
                                                                 "source.csv"));
                if (lines.has_lines && !lines.instructions.empty())
                {
                    result.profile.attach_source(lines, code_listing());
                }
                else
                {
                    why = "ncu did not map the SASS to the cell's lines";
                }
            }
            catch (const tool_error& e)
            {
                why = std::string("ncu's CUDA source page: ") + e.what();
            }
            if (!why.empty())
            {
                try
                {
                    ncu_source sass =
                        ncu_report::parse_source(page({"--page", "source", "--print-source", "sass"}, "sass.csv"));
                    std::string listing;
                    {
                        py::gil_scoped_release release;
                        listing = disassembler::disassemble(replay.cubin, true);
                    }
                    result.profile.attach_source(sass, code_listing::from_sass(listing).only(replay.symbol));
                }
                catch (const error& e)
                {
                    result.profile.lines_note = "no per-line figures: " + why + ", and matching its SASS here failed: " +
                                                e.what();
                }
            }
        }
        else
        {
            result.profile.lines_note = "source-level figures were not asked for";
        }
        if (options.keep)
        {
            result.folder = folder;
        }
        return py::cast(std::move(result));
    }

    py::object sanitize_launch(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                               py::handle stream_object, py::args args, const std::string& tool, bool keep)
    {
        static const std::vector<std::string> tools{"memcheck", "racecheck", "initcheck", "synccheck"};
        if (std::find(tools.begin(), tools.end(), tool) == tools.end())
        {
            throw usage_error("compute-sanitizer has no tool '" + tool +
                              "' here; choose memcheck (out-of-bounds and misaligned accesses), racecheck (shared-memory "
                              "races), initcheck (reads of uninitialised device memory) or synccheck (misused barriers)");
        }
        std::string sanitizer = tool_finder::require("compute-sanitizer", "%cuda_sanitize (kernel.sanitize)");
        std::string replay_path = replay_program();
        prepared_replay replay;
        replay.folder.keep = keep;
        prepare(replay, *kernel, dims, stream_object, args);
        const std::string& folder = replay.folder.path;
        // No --leak-check: after a fault the replay cannot free its buffers (the driver refuses every
        // call), and they would be reported as leaks of the user's kernel.
        std::vector<std::string> argv{sanitizer, "--tool", tool, "--show-backtrace", "no", "--target-processes",
                                      "application-only"};
        argv.push_back(replay_path);
        argv.push_back(folder);
        tool_process::outcome run = run_tool(argv, folder, "sanitizer.log");
        bool reported = run.output.find("========= COMPUTE-SANITIZER") != std::string::npos &&
                        run.output.find("SUMMARY:") != std::string::npos;
        // xcuda-replay: 1 a bad bundle, 2 no GPU; 3 the launch failed, which the report explains.
        bool replay_problem = run.output.find("xcuda-replay: no GPU") != std::string::npos ||
                              run.output.find("xcuda-replay: the replay bundle") != std::string::npos;
        if (!reported || replay_problem)
        {
            replay_failed("compute-sanitizer", run);
        }
        sanitizer_result result;
        result.report = sanitizer_report::parse(run.output, tool);
        result.source = replay.source;
        result.output = run.output;
        result.status = run.status;
        result.launch = replay.description;
        if (keep)
        {
            result.folder = folder;
        }
        return py::cast(std::move(result));
    }

    py::object replay_bundle_of(const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                                py::handle stream_object, py::args args)
    {
        prepared_replay replay;
        replay.folder.keep = true;
        prepare(replay, *kernel, dims, stream_object, args, false);
        return py::str(replay.folder.path);
    }
}
