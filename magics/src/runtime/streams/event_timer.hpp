#pragma once
// Times work queued on a stream with a pair of CUDA events: each sample brackets one run of the work,
// and the wait for it is interruptible. What %cuda_timeit, Kernel.time, xcuda.bench and the peak
// bandwidth probe measure, so they all measure the same way.
//
// Holds no Python state: callers release the GIL around time(). One timer per measurement.

#include <functional>
#include <vector>

#include <cuda.h>

#include "cuda_event.hpp"

namespace xcuda
{
    struct timing_summary
    {
        std::vector<double> samples_ms;
        double median_ms = 0;
        double min_ms = 0;
        double max_ms = 0;

        static timing_summary of(std::vector<double> samples_ms);
    };

    class event_timer
    {
    public:
        // Two timing events on the session's current device.
        explicit event_timer(cuda_session& session);

        // Runs `work` warmup times untimed, then repeat times, each between two event records on
        // stream, waiting for each; returns the milliseconds of each timed run.
        std::vector<double> time(CUstream stream, const std::function<void()>& work, int repeat, int warmup);

    private:
        cuda_event m_start;
        cuda_event m_end;
    };
}
