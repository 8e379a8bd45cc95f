#pragma once
// What the driver says of one device (its attributes, read once per device by device_contexts without
// making a context): name, compute capability, limits of blocks, grids, shared memory and registers, and
// the memory's clock and width. A value: copied freely, read from any thread.

#include <array>
#include <cstddef>
#include <string>

namespace xcuda
{
    struct device_properties
    {
        int ordinal = 0;
        std::string name;
        int cc_major = 0;
        int cc_minor = 0;
        int multiprocessors = 0;
        int warp_size = 32;
        int max_threads_per_block = 0;
        std::array<int, 3> max_block{};
        std::array<int, 3> max_grid{};
        int max_shared_per_block = 0;
        int max_shared_per_block_optin = 0;
        int max_registers_per_block = 0;
        int max_threads_per_sm = 0;
        int max_blocks_per_sm = 0;
        int max_registers_per_sm = 0;
        int max_shared_per_sm = 0;
        int reserved_shared_per_block = 0;
        int memory_clock_khz = 0;
        int memory_bus_width = 0;
        std::size_t total_memory = 0;

        std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
        // GB/s from the memory clock and bus width (double data rate); 0 when the device does not say.
        double theoretical_bandwidth_gbs() const
        {
            return 2.0 * memory_clock_khz * 1e3 * (memory_bus_width / 8.0) / 1e9;
        }
    };
}
