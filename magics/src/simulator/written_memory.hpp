#pragma once
// Which bytes of the device's allocations have ever been written, for the global initcheck (init_check,
// docs/simulator.md "Checks"): one bit per byte of each allocation made while the check is on. The shim reports
// what writes device memory outside kernels (copies, memsets) and frees it; the check's plugin marks kernel stores
// and atomics, and reports a load of a byte never written.
//
// Untracked memory counts as written: an allocation made while the check was off, pinned or registered host memory,
// a module's variables, the device heap. A launch without the check may write anything, so the shim forgets every
// allocation then (forget_all): the check may miss a read, it never reports a written byte.
//
// Threads: track, forget and forget_all run under the shim's lock, never during a launch. During a launch the
// pool's threads call find, written and copied at once: the bits are atomic words (relaxed: a byte is written by
// one side or the other of a race anyway).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

namespace xcuda::sim
{
    class written_memory
    {
    public:
        struct region
        {
            std::uintptr_t start = 0;
            std::size_t bytes = 0;
            std::unique_ptr<std::atomic<std::uint64_t>[]> bits;  // bit i: byte i has been written
        };

        // A new allocation to watch: none of its bytes written yet.
        void track(std::uintptr_t start, std::size_t bytes);
        void forget(std::uintptr_t start);
        void forget_all();
        bool empty() const noexcept { return m_regions.empty(); }

        // The tracked allocation holding address, or nullptr.
        region* find(std::uintptr_t address);
        // Marks [address, address + bytes) written where it is tracked.
        void written(std::uintptr_t address, std::size_t bytes);
        // A copy of device or host memory to `to`: the bytes copied from tracked bytes are written where those
        // were, the others written.
        void copied(std::uintptr_t to, std::uintptr_t from, std::size_t bytes);

        // Within one region: mark, or the offset of the first byte of [offset, offset + bytes) never written (-1: none).
        static void mark(region& r, std::size_t offset, std::size_t bytes);
        static long long first_unwritten(const region& r, std::size_t offset, std::size_t bytes);

    private:
        std::map<std::uintptr_t, region> m_regions;
    };
}
