#include "bandwidth_probe.hpp"

#include <algorithm>
#include <memory>

#include "cuda_driver.hpp"
#include "device_buffer.hpp"
#include "errors.hpp"
#include "event_timer.hpp"
#include "text.hpp"

namespace xcuda
{
    double bandwidth_probe::measure(bool refresh)
    {
        m_session.make_current();
        int ordinal = m_session.device_ordinal();
        std::size_t index = static_cast<std::size_t>(ordinal);
        if (m_by_device.size() <= index)
        {
            m_by_device.resize(index + 1);
        }
        measured& kept = m_by_device[index];
        if (!refresh && kept.gbs > 0 && kept.generation == m_session.generation())
        {
            return kept.gbs;
        }
        std::size_t free_bytes = m_session.memory_info(ordinal).first;
        constexpr std::size_t mib = std::size_t(1) << 20;
        std::size_t bytes = std::min<std::size_t>(512 * mib, free_bytes / 4) / mib * mib;
        if (bytes < 16 * mib)
        {
            throw usage_error("measuring the peak bandwidth needs two buffers of 16 MiB, and only " +
                              text::bytes(static_cast<double>(free_bytes)) +
                              " of device memory are free: free some, or pass peak= (GB/s)");
        }
        std::shared_ptr<device_buffer> source = device_buffer::allocate(m_session, bytes);
        std::shared_ptr<device_buffer> target = device_buffer::allocate(m_session, bytes);
        source->set_label("peak bandwidth probe (source)");
        target->set_label("peak bandwidth probe (target)");
        CUdeviceptr from = source->pointer();
        CUdeviceptr to = target->pointer();
        CUstream stream = m_session.stream();
        const cuda_driver& driver = cuda_driver::get();
        event_timer timer(m_session);
        std::vector<double> samples = timer.time(
            stream, [&] { check(driver.cuMemcpyDtoDAsync(to, from, bytes, stream), "cuMemcpyDtoDAsync"); }, 10, 2);
        double fastest_ms = *std::min_element(samples.begin(), samples.end());
        kept.gbs = 2.0 * static_cast<double>(bytes) / (fastest_ms * 1e-3) / 1e9;
        kept.generation = m_session.generation();
        return kept.gbs;
    }
}
