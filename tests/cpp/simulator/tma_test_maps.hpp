#pragma once
// A tiled tensor map's 128 bytes made as the shim's cuTensorMapEncodeTiled makes them (tensor_map_descriptor::write),
// for the simulator's TMA tests (test_simulator_tma.cpp, test_simulator_tma_clusters.cpp).

#include <gtest/gtest.h>

#include <cstdint>

#include "tensor_map_descriptor.hpp"

namespace xcuda_tests
{
    using xcuda::sim::tensor_map_descriptor;

    struct tma_map_bytes
    {
        alignas(64) std::uint8_t bytes[128];
    };

    const unsigned k_tma_float32 = 7, k_tma_float16 = 6;

    // A tiled map over rows x cols elements of `size` bytes at `base`, rows `pitch` bytes apart.
    inline tma_map_bytes tiled_map(const void* base, unsigned data_type, std::uint64_t rows, std::uint64_t cols, std::uint64_t pitch,
                    unsigned box_rows, unsigned box_cols, unsigned swizzle = 0, unsigned oob = 0)
    {
        tensor_map_descriptor d;
        d.data_type = static_cast<std::uint8_t>(data_type);
        d.rank = 2;
        d.address = reinterpret_cast<std::uintptr_t>(base);
        d.dims[0] = cols;
        d.dims[1] = rows;
        d.strides[0] = tensor_map_descriptor::element_bytes(data_type);
        d.strides[1] = pitch;
        d.box[0] = box_cols;
        d.box[1] = box_rows;
        d.swizzle = static_cast<std::uint8_t>(swizzle);
        d.oob_fill = static_cast<std::uint8_t>(oob);
        EXPECT_EQ(d.check(), "");
        tma_map_bytes m;
        d.write(m.bytes);
        return m;
    }
}
