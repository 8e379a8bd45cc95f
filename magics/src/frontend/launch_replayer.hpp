#pragma once
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
//   1. the tool is found (tools_for: ToolNotFoundError says where it looked), then the GPU
//      (the caller's, CudaUnavailableError);
//   2. the arguments are bound as for a launch (same checks, same packing) in replay mode by the
//      caller: each pointer argument's extent is recorded and numpy arrays stay on the host;
//   3. the bundle (the constructor): the module compiled for the device with line information, the
//      argument bytes, one region per device allocation range (aliasing kept), their bytes copied out
//      of the session, and the cell's text beside them;
//   4. the tool runs xcuda-replay on it (tool_process: interruptible, the child's process group
//      killed on an interrupt), then its reports are read (ncu_report / sanitizer_report);
//   5. the bundle folder is removed by the destructor (keep=True keeps it, and the result says where).
//
// Ownership: a launch_replayer owns its folder. Threading: one thread uses one object; nothing here
// touches Python, so the binding releases the GIL around every call and passes an interrupt check
// that takes it to ask.

#include <string>
#include <vector>

#include "cell_lines.hpp"
#include "launch_call.hpp"
#include "profile_result.hpp"
#include "sanitizer_result.hpp"
#include "tool_process.hpp"

namespace xcuda
{
    class launch_replayer
    {
    public:
        // The programs one replay needs: the tool (ncu or compute-sanitizer) and xcuda-replay.
        struct tools
        {
            std::string tool;
            std::string replay;
        };
        // tool ("ncu" or "compute-sanitizer") found for purpose, then xcuda-replay in program_folder;
        // tool_not_found_error naming what is missing.
        static tools tools_for(const std::string& tool, const std::string& purpose, const std::string& program_folder);
        // xcuda.find_tool: ncu or compute-sanitizer found as the magics find them; argument_value_error
        // for another name, tool_not_found_error listing where it looked.
        static std::string find_tool(const std::string& name);
        // The folder of the binary this core is linked into (the xcuda module's), where xcuda-replay is installed.
        static std::string own_folder();
        // usage_error unless tool is one of compute-sanitizer's four.
        static void check_sanitizer_tool(const std::string& tool);

        // Writes the bundle of call (bound with record_for_replay) to a new private folder, with source
        // (the cell's text) beside it for ncu's source page. on_gpu false: device 0 and the module's
        // inspection arch, only host arguments captured.
        launch_replayer(const launch_call& call, bool on_gpu, const std::string& source, bool keep);
        ~launch_replayer();
        launch_replayer(const launch_replayer&) = delete;
        launch_replayer& operator=(const launch_replayer&) = delete;

        const std::string& folder() const noexcept { return m_folder; }
        const std::string& description() const noexcept { return m_description; }

        // ncu on the replay; tool_error when the replay or ncu failed.
        profile_result profile(const tools& programs, const profile_options& options,
                               const tool_process::interrupt_check& interrupted) const;
        // compute-sanitizer's `tool` on the replay; tool_error when the replay could not run.
        sanitizer_result sanitize(const tools& programs, const std::string& tool,
                                  const tool_process::interrupt_check& interrupted) const;

        // ncu's command line for the first run: the default sections and metrics, or --set full.
        static std::vector<std::string> ncu_arguments(const tools& programs, const std::string& report,
                                                      const std::string& folder, bool full);
        // What the replay and the tools printed that says what went wrong: xcuda-replay's own lines,
        // the tools' errors, each on a line of its own indented by two.
        static std::string failure_lines(const std::string& output);
        // The tool_error of a run that failed, in words (counter permissions, a failed launch, or the
        // status and the lines that explain it).
        static tool_error failure(const std::string& tool, const tool_process::outcome& run);
        // Whether a sanitizer run's output is a report of the replay (rather than the replay not running).
        static bool sanitizer_reported(const std::string& output);

    private:
        std::string m_folder;
        bool m_keep;
        std::string m_cubin;
        std::string m_symbol;
        std::string m_source;
        cell_lines m_lines;  // how the findings' and the profile's lines are numbered
        std::string m_description;
    };
}
