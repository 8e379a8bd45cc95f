#include "event_timer.hpp"

#include <algorithm>

#include "errors.hpp"

namespace xcuda
{
    timing_summary timing_summary::of(std::vector<double> samples_ms)
    {
        timing_summary summary;
        summary.samples_ms = std::move(samples_ms);
        if (summary.samples_ms.empty())
        {
            return summary;
        }
        std::vector<double> sorted = summary.samples_ms;
        std::sort(sorted.begin(), sorted.end());
        std::size_t n = sorted.size();
        summary.median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        summary.min_ms = sorted.front();
        summary.max_ms = sorted.back();
        return summary;
    }

    event_timer::event_timer(cuda_session& session)
        : m_start(session, true)
        , m_end(session, true)
    {
    }

    std::vector<double> event_timer::time(CUstream stream, const std::function<void()>& work, int repeat, int warmup)
    {
        if (repeat < 1 || warmup < 0)
        {
            throw usage_error("repeat must be at least 1 and warmup at least 0");
        }
        for (int i = 0; i < warmup; ++i)
        {
            work();
        }
        std::vector<double> samples;
        samples.reserve(static_cast<std::size_t>(repeat));
        for (int i = 0; i < repeat; ++i)
        {
            m_start.record(stream);
            work();
            m_end.record(stream);
            samples.push_back(m_start.elapsed_ms(m_end));
        }
        return samples;
    }
}
