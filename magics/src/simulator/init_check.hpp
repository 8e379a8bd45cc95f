#pragma once
// Reads of uninitialised memory (docs/simulator.md, "Checks"), compute-sanitizer's initcheck:
//  - shared: a load (or atomic) of a byte of the block's shared memory that no thread of the block has written
//    (a GPU's shared memory starts undefined; the simulator's starts zeroed, so such a read would see 0 here and
//    whatever was left there on a GPU). One flag per shared byte, cleared at every block. The report waits for the
//    block's next barrier (or its end): a read that another warp's write follows in the same barrier interval is a
//    race, which the race check reports at that write, naming both threads.
//  - global: a load (or atomic) of a byte of a device allocation that nothing has written since it was allocated:
//    no copy, memset or kernel store (written_memory, kept by the shim across launches; this plugin marks the
//    kernel's stores and atomics in it).
// The launch fails naming the thread and block, the variable or allocation (and the kernel argument it came in as),
// the instruction and its line. One per executor (check_plugin); the global part's marks are shared (thread-safe).

#include <cstdint>
#include <string>
#include <vector>

#include "check_plugin.hpp"
#include "written_memory.hpp"

namespace xcuda::sim
{
    class init_check : public launch_check
    {
    public:
        explicit init_check(const launch_context& launch);
        unsigned events() const noexcept override;
        void block_begin(const block_state& block) override;
        void shared_access(const block_state& block, const memory_access& access) override;
        void global_access(const block_state& block, const memory_access& access) override;
        void synchronised(const block_state& block, sync_scope scope, unsigned warp) override;
        void block_end(const block_state& block) override;

    private:
        [[noreturn]] void uninitialised(const block_state& block, const memory_access& access, const std::string& what) const;
        void report_pending(const block_state& block) const;  // the shared read kept for the next barrier, if any

        bool m_shared;
        written_memory* m_written;                // the global part's (nullptr: off)
        written_memory::region* m_region = nullptr;  // the last allocation hit
        std::vector<std::uint8_t> m_written_shared;  // 1: the byte has been written in this block
        bool m_pending = false;                      // a shared read of an unwritten byte, reported at the next barrier
        memory_access m_pending_access;
        unsigned m_pending_byte = 0;                 // which byte of that access
    };
}
