#pragma once
// The race check between warps (docs/simulator.md, "Shared-memory races"), racecheck's rule at PTX level: two
// accesses of one byte of a block's shared memory, at least one a write, by threads of different warps, with no
// barrier between them, are a race; the launch fails naming both. Atomics never race.
//
// Each shared byte has a record (shared_shadow.hpp, shared with warp_race_check) of its last write and of up to
// two reads of two different warps, each stamped with the barrier interval (m_epoch, which grows at every barrier release, every mbarrier phase that
// completes and every block); an access compares with the records of the same interval. Lanes of one warp are the
// warp_race_check's. One per executor (check_plugin).

#include <cstdint>

#include "check_plugin.hpp"
#include "shared_shadow.hpp"

namespace xcuda::sim
{
    class race_check : public launch_check
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
        [[noreturn]] void race(const block_state& block, std::uint64_t offset, const shared_access_record& earlier,
                               bool earlier_wrote, const memory_access& access) const;

        shared_shadow<shared_access_record> m_shadow;  // other_read: a reader of another warp than read's
        std::uint32_t m_epoch = 1;
    };
}
