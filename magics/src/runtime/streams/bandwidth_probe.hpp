#pragma once
// The device's measured memory bandwidth: the GB/s of a device-to-device copy, counting bytes read
// and written, over the fastest of 10 copies after 2 untimed ones (a peak, and steadier than the
// median, which varied by 8% between runs on an H200), between two buffers of up to 512 MiB each:
// several times any L2 cache, so the copy runs at DRAM speed. The ceiling %cuda_bench plots against.
//
// Measured once per device and session generation, and kept. Holds no Python state: callers release
// the GIL around measure().

#include <cstdint>
#include <vector>

#include "cuda_session.hpp"

namespace xcuda
{
    class bandwidth_probe
    {
    public:
        explicit bandwidth_probe(cuda_session& session) : m_session(session) {}

        // GB/s on the current device; refresh measures again. Raises usage_error when less than two
        // buffers of 16 MiB fit in the device's free memory.
        double measure(bool refresh = false);

    private:
        struct measured
        {
            std::uint64_t generation = 0;
            double gbs = 0;
        };
        cuda_session& m_session;
        std::vector<measured> m_by_device;
    };
}
