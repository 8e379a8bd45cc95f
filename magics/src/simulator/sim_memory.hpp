#pragma once
// The simulated device's memory: host allocations recorded as ranges, so that every access of a
// kernel can be checked against the allocation it falls in, and an access outside all of them named
// (which allocation is nearest, and how far before or past it the access is).
//
// Device allocations (cuMemAlloc), pinned host memory, registered host ranges and a module's .global
// and .const variables are all ranges here. Thread safety: every member takes the object's mutex, except
// find() which the interpreter calls on its hot path: it is safe while no add/remove runs, which holds
// because the shim runs launches and memory calls under one lock.

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace xcuda::sim
{
    // "0x7f12...": an address or a value in messages.
    std::string hex(std::uint64_t value);

    class sim_memory
    {
    public:
        struct allocation
        {
            std::uintptr_t start = 0;
            std::size_t bytes = 0;
            std::string name;  // "device allocation", "pinned host memory", "__device__ variable table"
        };

        void add(std::uintptr_t start, std::size_t bytes, std::string name);
        // Forgets the range starting at start; false when there is none.
        bool remove(std::uintptr_t start);
        // The range that holds [address, address + bytes) wholly, or nullptr.
        const allocation* find(std::uintptr_t address, std::size_t bytes) const;
        // The range that holds address (any byte of it), or nullptr.
        const allocation* containing(std::uintptr_t address) const;
        // "4 bytes past the end of device allocation 0x... (1024 bytes)" / "not in or near any allocation".
        std::string describe(std::uintptr_t address, std::size_t bytes) const;

    private:
        std::map<std::uintptr_t, allocation> m_ranges;
        mutable std::recursive_mutex m_mutex;
    };
}
