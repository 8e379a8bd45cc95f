#pragma once

#include <cstddef>
#include <cstdint>

namespace xcuda::sim
{
    // The block's reserved shared memory, which PTX names %reserved_smem_offset_begin/_end/_cap and
    // %reserved_smem_offset_0/_1. An sm_80+ GPU reserves 1 KiB of each block's shared memory for the
    // system; cooperative groups keep the scratch of tiles wider than a warp there (cooperative_groups/
    // details/memory.h reads %reserved_smem_offset_1 and may use 288 bytes). The simulator places the
    // region after the block's own shared memory, and only for a program that reads one of these
    // registers, so that every other program's shared window ends where its variables end and an
    // overrun past them still faults.
    struct reserved_shared
    {
        static constexpr std::size_t bytes = 1024;
        static constexpr std::size_t second = 512;  // %reserved_smem_offset_1: the second half

        // Where the region starts after `user` bytes of static and dynamic shared memory.
        static std::size_t begin(std::size_t user) { return (user + 15) / 16 * 16; }
    };
}
