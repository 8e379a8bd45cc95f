#pragma once
// The device heap of a simulated context: what a kernel's malloc/free (NVRTC's calls of the extern functions
// `malloc` and `free`) allocate from. One arena of host memory, sized like cudaLimitMallocHeapSize (8 MiB
// unless cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE) says otherwise), made at the first malloc; blocks of it are
// 16-byte aligned, given first fit, each followed by 16 bytes no block uses (a red zone). Every access of a kernel that falls in the arena is checked against
// the blocks alive then (warp_interpreter::translate), so an overrun of a malloc'd block, or a use after its
// free, is an illegal address naming the block. A malloc the arena cannot hold returns null, as on a GPU.
//
// Thread safety: every member takes the object's mutex (the blocks of a launch run on several host threads,
// and each may call malloc). The heap outlives launches: memory malloc'd by one kernel may be freed by another.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace xcuda::sim
{
    class device_heap
    {
    public:
        static constexpr std::size_t default_bytes = 8u << 20;  // cudaLimitMallocHeapSize's default

        explicit device_heap(std::size_t bytes = default_bytes) : m_bytes(bytes) {}

        // The limit; set_bytes refuses (false) while a block is alive, since the arena cannot move under it.
        std::size_t bytes() const;
        bool set_bytes(std::size_t bytes);

        // A block of `bytes` (16-byte aligned), or 0 when the arena has no room (malloc's null).
        std::uint64_t allocate(std::size_t bytes);
        // Frees the block starting at address; false when no alive block starts there (free(nullptr) is the
        // caller's to skip).
        bool release(std::uint64_t address);

        // Whether address falls in the arena at all; and the alive block that holds [address, address + bytes)
        // wholly, as a host pointer, or nullptr.
        bool in_arena(std::uint64_t address) const;
        std::uint8_t* find(std::uint64_t address, std::size_t bytes) const;
        // For an access in the arena that find() refused: "4 bytes past the end of the block malloc gave at
        // 0x... (64 bytes)", "in a block freed by free()", ...
        std::string describe(std::uint64_t address, std::size_t bytes) const;

    private:
        struct free_deleter
        {
            void operator()(std::uint8_t* p) const;
        };
        mutable std::mutex m_mutex;
        std::size_t m_bytes;
        std::unique_ptr<std::uint8_t, free_deleter> m_arena;
        std::map<std::uint64_t, std::size_t> m_alive;  // offset -> bytes asked for
        std::map<std::uint64_t, std::size_t> m_freed;  // offset -> bytes, blocks freed (for messages) until reused
    };
}
