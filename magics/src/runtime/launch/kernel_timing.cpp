#include "kernel_timing.hpp"

#include <cstdio>

#include "cuda_driver.hpp"
#include "cuda_kernel.hpp"
#include "launch_call.hpp"

namespace xcuda
{
    kernel_timing kernel_timing::of(const std::string& kernel, timing_summary summary, std::optional<double> nbytes,
                                    bool simulated)
    {
        kernel_timing timing;
        timing.kernel = kernel;
        timing.samples_ms = std::move(summary.samples_ms);
        timing.median_ms = summary.median_ms;
        timing.min_ms = summary.min_ms;
        timing.max_ms = summary.max_ms;
        timing.nbytes = nbytes;
        timing.simulated = simulated;
        return timing;
    }

    kernel_timing kernel_timing::measure(launch_call& call, int repeat, int warmup, std::optional<double> nbytes)
    {
        if (!nbytes && call.array_bytes())
        {
            nbytes = static_cast<double>(call.array_bytes());
        }
        return of(call.kernel().signature().name, timing_summary::of(call.time(repeat, warmup)), nbytes,
                  cuda_driver::get().simulated());
    }

    std::optional<double> kernel_timing::bandwidth_gbs() const
    {
        if (!nbytes || median_ms <= 0)
        {
            return std::nullopt;
        }
        return *nbytes / (median_ms * 1e-3) / 1e9;
    }

    std::string kernel_timing::text() const
    {
        char line[256];
        auto us = [](double ms) { return ms * 1e3; };
        std::snprintf(line, sizeof line, "%s: median %.2f us (min %.2f, max %.2f) over %zu launches", kernel.c_str(),
                      us(median_ms), us(min_ms), us(max_ms), samples_ms.size());
        std::string result = line;
        if (simulated)
        {
            // A bandwidth from the simulator's time would read as a GPU's ("0.0 GB/s"): none is given.
            return result + " [simulated: the PTX simulator's time on the CPU, not a GPU's; no bandwidth from it]";
        }
        if (std::optional<double> bandwidth = bandwidth_gbs())
        {
            std::snprintf(line, sizeof line, "; %.1f GB/s for %.1f MB", *bandwidth, *nbytes / 1e6);
            result += line;
        }
        return result;
    }
}
