#pragma once
// What Kernel.time and Launcher.time measured: the launches' times (CUDA events, milliseconds), the
// bytes they move when known, and the line its repr prints. A value: made once per measurement, read
// by one thread.

#include <optional>
#include <string>
#include <vector>

#include "event_timer.hpp"
#include "launch_call.hpp"

namespace xcuda
{
    struct kernel_timing
    {
        std::string kernel;
        std::vector<double> samples_ms;
        double median_ms = 0;
        double min_ms = 0;
        double max_ms = 0;
        std::optional<double> nbytes;  // bytes counted for the bandwidth figure, when known
        bool simulated = false;        // measured on the PTX simulator (XCUDA_DEVICE=simulator)

        // The samples of summary, for kernel; nbytes as given.
        static kernel_timing of(const std::string& kernel, timing_summary summary, std::optional<double> nbytes,
                                bool simulated);
        // Runs call repeat times after warmup untimed launches and times each; makes no Python call (the
        // binding releases the GIL around it). nbytes: as given, or by default the bytes of the call's
        // array arguments (none when it has none).
        static kernel_timing measure(launch_call& call, int repeat, int warmup, std::optional<double> nbytes);
        // nbytes / median time in GB/s (1e9 bytes per second); none without nbytes or a time.
        std::optional<double> bandwidth_gbs() const;
        // "saxpy: median 1.50 us (min 1.20, max 2.00) over 100 launches; 12.0 GB/s for 0.0 MB"
        std::string text() const;
    };
}
