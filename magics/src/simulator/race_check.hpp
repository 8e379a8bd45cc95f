#pragma once
// The race check between warps (docs/simulator.md, "Shared-memory races"), racecheck's rule at PTX level: two
// accesses of one byte of a block's shared memory, at least one a write, by threads of different warps, with no
// barrier between them, are a race; the launch fails naming both. Atomics never race.
//
// Each shared byte has a record (shared_shadow) of its last write and of up to two reads of two different warps,
// each stamped with the barrier interval (m_epoch, which grows at every barrier release, every mbarrier phase that
// completes and every block); an access compares with the records of the same interval. Lanes of one warp are the
// warp_race_check's. One per executor (check_plugin).

#include <cstdint>
#include <vector>

#include "check_plugin.hpp"

namespace xcuda::sim
{
    struct launch_context;

    class race_check : public check_plugin
    {
    public:
        explicit race_check(const launch_context& launch);
        unsigned events() const noexcept override { return shared_accesses | synchronisations | blocks; }
        void block_begin(const block_state& block) override;
        void shared_access(const block_state& block, const memory_access& access) override;
        void synchronised(const block_state& block, sync_scope scope, unsigned warp) override;

    private:
        struct shared_access_record
        {
            std::uint32_t epoch = 0;
            std::uint32_t thread = 0;  // the linear thread id in the block
            const instruction* at = nullptr;
        };
        struct shared_shadow
        {
            shared_access_record write, read, other_read;  // other_read: a reader of another warp than read's
        };
        [[noreturn]] void race(const block_state& block, std::uint64_t offset, const shared_access_record& earlier,
                               bool earlier_wrote, const memory_access& access) const;

        const launch_context& m_launch;
        std::vector<shared_shadow> m_shadow;  // one per shared byte
        std::uint32_t m_epoch = 1;
    };
}
