#pragma once
// A size sweep of one kernel (xcuda.BenchResult): what was timed at each size, the peak it is
// compared with, and its table as text and HTML. Plain data; no lock: one thread fills it (bench_sweep),
// then it is read.

#include <optional>
#include <string>
#include <vector>

#include "table_view.hpp"

namespace xcuda
{
    class bench_result
    {
    public:
        std::string kernel;
        std::optional<std::string> device;  // None when no session ran (a sweep timed by a test's timer)
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
        std::optional<double> theoretical_gbs;   // memory clock x bus width, when a session ran
        double elapsed_s = 0;
        bool show_plot = true;
        mutable std::string png_base64;  // the plot for the HTML, made once by whoever shows it

        std::vector<double> fraction_of_peak() const;
        // "saxpy on NVIDIA H200, block 256, median of 20 launches"
        std::string heading() const;
        // "peak 4021 GB/s measured (device-to-device copy); theoretical 4800 GB/s (memory clock x bus width)"
        std::string peak_text() const;
        text_table table() const;
        std::string text() const;
        // The table and the peak; with png (the plot, base64) as an image after them.
        std::string html(const std::string& png) const;
    };
}
