#pragma once
// What Nsight Compute measured of one launch, in the figures %cuda_profile shows: duration, DRAM
// throughput (bytes per second and percent of peak), SM throughput, achieved against theoretical
// occupancy, registers and shared memory, a verdict (memory-, compute- or latency-bound, and how far
// from the peak), the numbers a roofline plot needs, ncu's own advice (its rules), and where the time
// goes per source line.
//
// Made from ncu's CSV pages (ncu_report); the per-line figures from the SASS source page matched, by
// address within the function, to the CUBIN's SASS with line information (nvdisasm -g, read by
// code_listing), so they do not depend on ncu finding the cell's source file.
//
// The verdict: "memory" is ncu's Memory Throughput (the busiest of DRAM, L1 and L2 against their
// peaks), "compute" its SM throughput. At 60% of peak or more the busier one bounds the launch (ncu's
// own rule of thumb); below, neither is near its peak and the warps wait on latency.
//
// A value; pure C++, no state, safe to share between threads.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cell_lines.hpp"
#include "code_listing.hpp"
#include "ncu_report.hpp"
#include "table_view.hpp"

namespace xcuda
{
    struct line_figures
    {
        int line = 0;           // source line of the cell; 0: instructions without one
        double executed = 0;    // warp-level instructions executed
        double samples = 0;     // warp stall samples
        std::map<std::string, double> stalls;  // reason ("long_sb") -> samples

        // The reason with the most samples ("" when none), and its share of this line's samples.
        std::pair<std::string, double> top_stall() const;
    };

    class launch_profile
    {
    public:
        std::string kernel;
        std::string device;  // the GPU's name, from ncu

        std::optional<double> duration_ns;
        std::optional<double> dram_bytes;             // read + written
        std::optional<double> dram_bytes_per_second;
        std::optional<double> dram_percent;           // of peak, ncu's
        std::optional<double> memory_percent;         // ncu's Memory Throughput
        std::optional<double> sm_percent;
        std::optional<double> achieved_occupancy;     // percent
        std::optional<double> theoretical_occupancy;  // percent
        std::optional<double> registers;              // per thread
        std::optional<double> static_shared;          // bytes per block
        std::optional<double> dynamic_shared;
        std::optional<double> fp32_flops;             // fadd + fmul + 2 ffma, thread level
        std::optional<double> fp64_flops;
        std::optional<double> peak_fp32_flops_per_second;
        std::optional<double> peak_fp64_flops_per_second;
        std::optional<double> peak_dram_bytes_per_second;

        std::vector<ncu_rule> rules;
        std::map<std::string, ncu_value> metrics;  // every metric of the raw page

        std::vector<line_figures> lines;  // by line; line 0 last when present
        std::string lines_note;           // why there are no per-line figures, when there are none

        // From the outputs of `ncu --import R --csv --page raw` and `--page details`; throws tool_error
        // when either has no table.
        static launch_profile from_pages(const std::string& raw, const std::string& details);

        // Per-line figures from `--page source --print-source sass` and the kernel's own SASS listing
        // with line information (code_listing::from_sass(nvdisasm -c -g).only(symbol)). Sets lines_note
        // instead when they cannot be matched. cell_file: the file name whose lines are the cell's
        // (NVRTC names the program "cell"); another file's lines (a header's) count as line 0.
        void attach_source(const ncu_source& source, const code_listing& kernel_sass,
                           const std::string& cell_file = "cell");

        // "memory", "compute", "latency", or "" when ncu gave neither throughput.
        std::string bound() const;
        // One line: "memory-bound: DRAM at 64% of its peak (3.11 TB/s); compute (SM) at 31%; ..."
        std::string verdict() const;
        // Achieved FLOP/s and arithmetic intensity (FLOP per DRAM byte), when the counts are there.
        std::optional<double> flops_per_second() const;
        std::optional<double> arithmetic_intensity() const;
        // The figures in the units LaunchProfile shows them: microseconds, GB/s (1e9 B/s), GFLOP/s.
        std::optional<double> duration_us() const;
        std::optional<double> dram_gbs() const;
        std::optional<double> peak_dram_gbs() const;
        std::optional<double> gflops() const;

        text_table table() const;
        // The lines that take the most stall samples, most first (line 0 last), as a table.
        text_table lines_table(const std::string& source, std::size_t most = 5) const;
        std::string text(const std::string& source) const;
        std::string html(const std::string& source) const;

        // Per source line, for the lines() view: "41% of stall samples (long scoreboard), 12% of
        // instructions", and the line's share of samples (0..1) for its heat bar.
        // How the editor numbers the cell's lines: the tables show its numbers (`lines` and the notes stay
        // keyed by the cell's source lines, as ncu's source page counts them).
        cell_lines cell;
        std::map<int, std::pair<std::string, double>> line_notes() const;
    };
}
