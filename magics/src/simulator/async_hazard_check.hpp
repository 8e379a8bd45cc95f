#pragma once
// Accesses of a cp.async's destination before the copy has been waited for (docs/simulator.md, "Asynchronous
// copies and mbarriers"). The simulator lands a cp.async at the issuing thread's wait (cp.async.wait_group,
// wait_all, cp.async.mbarrier.arrive), so such an access always sees (or is overwritten by) the copy at that
// fixed point, where a GPU may land the copy at any time between issue and wait: a pipeline that waits for too few
// stages passes here in silence and fails on a GPU. This plugin makes that visible: at issue the destination's
// bytes are marked pending (the cp.async and its thread), at the landing they are cleared, and a load, store or
// atomic of a pending byte by any thread of the block, or another cp.async into it, fails the launch naming both
// threads, both instructions and lines, and the block.
//
// Subscribes to nothing where the launch's program has no cp.async, so its default-on costs those kernels
// nothing; where it has, an access costs one test while no copy is pending. One per executor (check_plugin).

#include <cstdint>
#include <vector>

#include "check_plugin.hpp"

namespace xcuda::sim
{
    class async_hazard_check : public launch_check
    {
    public:
        explicit async_hazard_check(const launch_context& launch);
        unsigned events() const noexcept override;
        void block_begin(const block_state& block) override;
        void shared_access(const block_state& block, const memory_access& access) override;
        void copy_issued(const block_state& block, const memory_access& copy) override;
        void copy_landed(const block_state& block, const memory_access& copy) override;

    private:
        struct pending_copy
        {
            std::uint32_t thread = 0;  // the linear thread id in the block
            const instruction* at = nullptr;
            unsigned bytes = 0;  // still pending: at 0 the record is free for the next copy
        };
        [[noreturn]] void hazard(const block_state& block, std::uint64_t offset, const pending_copy& copy,
                                 const memory_access& access) const;

        bool m_has_copies = false;               // the program has a cp.async
        std::vector<std::uint32_t> m_owner;      // per shared byte: 1 + the index in m_copies of its pending copy, 0: none
        std::vector<pending_copy> m_copies;      // the copies with bytes pending, and free records
        std::vector<std::uint32_t> m_free;       // indexes of free records in m_copies
        std::size_t m_pending = 0;               // bytes pending
    };
}
