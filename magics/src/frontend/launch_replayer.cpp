#include "launch_replayer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_io.hpp"
#include "code_listing.hpp"
#include "disassembler.hpp"
#include "errors.hpp"
#include "ncu_report.hpp"
#include "replay_bundle.hpp"
#include "text.hpp"
#include "tool_finder.hpp"

namespace xcuda
{
    namespace
    {
        bool exists(const std::string& path)
        {
            struct stat st;
            return ::stat(path.c_str(), &st) == 0;
        }

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

        bool launch_failed(const std::string& output)
        {
            return output.find("xcuda-replay:") != std::string::npos && output.find(" failed: ") != std::string::npos;
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

        // --clock-control none: ncu locks the clocks to base by default, which measured SAXPY's DRAM
        // throughput 27% under the copy ceiling of the same GPU at its own clocks (H200, ncu 2025.3);
        // the launch is profiled as it runs in the session.
        std::vector<std::string> ncu_base(const std::string& ncu, const std::string& report)
        {
            return {ncu, "--target-processes", "all", "--clock-control", "none", "--import-source", "no", "-f", "-o", report};
        }
    }

    std::string launch_replayer::own_folder()
    {
        Dl_info info;
        if (dladdr(reinterpret_cast<void*>(&launch_replayer::own_folder), &info) && info.dli_fname)
        {
            std::string path = info.dli_fname;
            std::size_t slash = path.rfind('/');
            return slash == std::string::npos ? "." : path.substr(0, slash);
        }
        return ".";
    }

    std::string launch_replayer::find_tool(const std::string& name)
    {
        if (name != "ncu" && name != "compute-sanitizer")
        {
            throw argument_value_error("find_tool knows 'ncu' and 'compute-sanitizer', not '" + name + "'");
        }
        return tool_finder::require(name, name == "ncu" ? "%cuda_profile" : "%cuda_sanitize");
    }

    launch_replayer::tools launch_replayer::tools_for(const std::string& tool, const std::string& purpose,
                                                      const std::string& program_folder)
    {
        tools found;
        found.tool = tool_finder::require(tool, purpose);
        found.replay = program_folder + "/xcuda-replay";
        if (::access(found.replay.c_str(), X_OK) != 0)
        {
            throw tool_not_found_error("xcuda-replay, the program that makes a launch again for ncu and "
                                       "compute-sanitizer, is not next to the xcuda module (looked for " +
                                       found.replay + "); rebuild or reinstall xcuda");
        }
        return found;
    }

    void launch_replayer::check_sanitizer_tool(const std::string& tool)
    {
        static const std::vector<std::string> known{"memcheck", "racecheck", "initcheck", "synccheck"};
        if (std::find(known.begin(), known.end(), tool) == known.end())
        {
            throw usage_error("compute-sanitizer has no tool '" + tool +
                              "' here; choose memcheck (out-of-bounds and misaligned accesses), racecheck (shared-memory "
                              "races), initcheck (reads of uninitialised device memory) or synccheck (misused barriers)");
        }
    }

    launch_replayer::launch_replayer(const launch_call& call, bool on_gpu, const std::string& source, bool keep)
        : m_keep(keep), m_source(source), m_lines(call.kernel().module()->lines())
    {
        replay_bundle bundle = replay_bundle::from_call(call, on_gpu);
        m_folder = replay_bundle::make_folder();
        try
        {
            bundle.write(m_folder);
            // The cell's text beside the report, for ncu's source page (--resolve-source-file).
            write_private(m_folder + "/cell", m_source);
        }
        catch (...)
        {
            if (!m_keep)
            {
                replay_bundle::remove_folder(m_folder);
            }
            throw;
        }
        m_cubin = bundle.cubin;
        m_symbol = bundle.symbol;
        m_description = bundle.describe();
    }

    launch_replayer::~launch_replayer()
    {
        if (!m_keep)
        {
            replay_bundle::remove_folder(m_folder);
        }
    }

    std::vector<std::string> launch_replayer::ncu_arguments(const tools& programs, const std::string& report,
                                                            const std::string& folder, bool full)
    {
        std::vector<std::string> argv = ncu_base(programs.tool, report);
        if (full)
        {
            argv.insert(argv.end(), {"--set", "full"});
        }
        else
        {
            for (const std::string& section : default_sections())
            {
                argv.push_back("--section");
                argv.push_back(section);
            }
            argv.push_back("--metrics");
            argv.push_back(extra_metrics);
        }
        argv.push_back(programs.replay);
        argv.push_back(folder);
        return argv;
    }

    std::string launch_replayer::failure_lines(const std::string& output)
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

    tool_error launch_replayer::failure(const std::string& tool, const tool_process::outcome& run)
    {
        std::string said = failure_lines(run.output);
        if (run.output.find("ERR_NVGPUCTRPERM") != std::string::npos)
        {
            return tool_error("ncu may not read the GPU's performance counters as this user (ERR_NVGPUCTRPERM): "
                              "the driver restricts them to administrators. Run the kernel as root, or load "
                              "the nvidia module with NVreg_RestrictProfilingToAdminUsers=0 (see "
                              "https://developer.nvidia.com/ERR_NVGPUCTRPERM)." + said);
        }
        if (launch_failed(run.output))
        {
            return tool_error("the launch failed when " + tool + " made it again in a child process; the session "
                              "was not touched. %cuda_sanitize finds out-of-bounds accesses and races." + said);
        }
        std::string tail = run.output.size() > 3000 ? run.output.substr(run.output.size() - 3000) : run.output;
        return tool_error(tool + " failed (exit status " + std::to_string(run.status) + ")" +
                          (said.empty() ? ":\n" + tail : ":" + said));
    }

    bool launch_replayer::sanitizer_reported(const std::string& output)
    {
        bool reported = output.find("========= COMPUTE-SANITIZER") != std::string::npos &&
                        output.find("SUMMARY:") != std::string::npos;
        // xcuda-replay: 1 a bad bundle, 2 no GPU; 3 the launch failed, which the report explains.
        bool replay_problem = output.find("xcuda-replay: no GPU") != std::string::npos ||
                              output.find("xcuda-replay: the replay bundle") != std::string::npos;
        return reported && !replay_problem;
    }

    profile_result launch_replayer::profile(const tools& programs, const profile_options& options,
                                            const tool_process::interrupt_check& interrupted) const
    {
        const std::string& folder = m_folder;
        std::string report = folder + "/profile";
        auto run_tool = [&](const std::vector<std::string>& argv, const std::string& log) {
            return tool_process::run(argv, folder, folder + "/" + log, interrupted);
        };
        tool_process::outcome run = run_tool(ncu_arguments(programs, report, folder, options.full), "ncu.log");
        std::string log = run.output;
        if (!exists(report + ".ncu-rep") && !options.full && !ncu_report::errors(run.output).empty() &&
            run.output.find("xcuda-replay:") == std::string::npos)
        {
            // An ncu that knows a section or metric by another name refuses the whole run: the full
            // set, which every ncu has, instead.
            std::vector<std::string> second = ncu_base(programs.tool, report);
            second.insert(second.end(), {"--set", "full", programs.replay, folder});
            run = run_tool(second, "ncu-full.log");
            log += run.output;
        }
        if (!exists(report + ".ncu-rep") || launch_failed(run.output))
        {
            throw failure("ncu", run);
        }
        auto page = [&](std::vector<std::string> how, const std::string& name) {
            std::vector<std::string> import{programs.tool, "--import", report + ".ncu-rep", "--csv"};
            import.insert(import.end(), how.begin(), how.end());
            tool_process::outcome out = run_tool(import, name);
            if (out.status != 0)
            {
                throw tool_error("ncu could not read its own report (exit status " + std::to_string(out.status) +
                                 "):" + failure_lines(out.output) + "\n" + out.output.substr(0, 2000));
            }
            return out.output;
        };
        profile_result result;
        result.profile = launch_profile::from_pages(page({"--page", "raw"}, "raw.csv"), page({"--page", "details"}, "details.csv"));
        result.profile.cell = m_lines;
        result.source = m_source;
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
                    ncu_source sass = ncu_report::parse_source(page({"--page", "source", "--print-source", "sass"}, "sass.csv"));
                    std::string listing = disassembler::disassemble(m_cubin, true);
                    result.profile.attach_source(sass, code_listing::from_sass(listing).only(m_symbol));
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
        return result;
    }

    sanitizer_result launch_replayer::sanitize(const tools& programs, const std::string& tool,
                                               const tool_process::interrupt_check& interrupted) const
    {
        // No --leak-check: after a fault the replay cannot free its buffers (the driver refuses every
        // call), and they would be reported as leaks of the user's kernel.
        std::vector<std::string> argv{programs.tool, "--tool", tool, "--show-backtrace", "no", "--target-processes",
                                      "application-only", programs.replay, m_folder};
        tool_process::outcome run = tool_process::run(argv, m_folder, m_folder + "/sanitizer.log", interrupted);
        if (!sanitizer_reported(run.output))
        {
            throw failure("compute-sanitizer", run);
        }
        sanitizer_result result;
        result.report = sanitizer_report::parse(run.output, tool);
        result.report.lines = m_lines;
        result.source = m_source;
        result.output = run.output;
        result.status = run.status;
        result.launch = m_description;
        if (m_keep)
        {
            result.folder = m_folder;
        }
        return result;
    }
}
