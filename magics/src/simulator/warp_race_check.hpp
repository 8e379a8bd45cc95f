#pragma once
// Races between lanes of one warp (docs/simulator.md, "Checks"), racecheck's intra-warp hazards: since Volta the
// lanes of a warp are scheduled independently, so lane A writing a shared byte at one instruction and lane B
// reading or writing it at a later one, with no __syncwarp() (bar.warp.sync) or barrier between, is a hazard even
// where the simulator (which runs a warp's lanes in lockstep) and older GPUs give the expected value. The lanes of
// one execution of an instruction (one `step`) are not compared with each other. Atomics never race.
//
// Each shared byte has a record (shared_shadow.hpp, shared with race_check) of its last write and of up to two reads by different lanes, each stamped with
// the writer's warp's sync interval (m_interval[warp]: grows at the warp's bar.warp.sync, at every block barrier
// and every block). A __syncwarp(mask) of some lanes ends the interval of the whole warp: a hazard between a lane
// in the mask and one outside it can go unreported (a missed report, never a false one). One per executor.

#include <cstdint>
#include <vector>

#include "check_plugin.hpp"
#include "shared_shadow.hpp"

namespace xcuda::sim
{
    class warp_race_check : public launch_check
    {
    public:
        explicit warp_race_check(const launch_context& launch);
        unsigned events() const noexcept override { return shared_accesses | synchronisations | blocks; }
        void block_begin(const block_state& block) override;
        void shared_access(const block_state& block, const memory_access& access) override;
        void synchronised(const block_state& block, sync_scope scope, unsigned warp) override;

    private:
        struct record
        {
            std::uint32_t interval = 0;
            std::uint32_t thread = ~0u;  // the linear thread id in the block; ~0: none
            std::uint64_t step = 0;
            const instruction* at = nullptr;
        };
        [[noreturn]] void race(const block_state& block, std::uint64_t offset, const record& earlier, bool earlier_wrote,
                               const memory_access& access) const;

        shared_shadow<record> m_shadow;  // other_read: a reader of another lane than read's
        std::vector<std::uint32_t> m_interval;  // per warp of the block
        std::uint32_t m_clock = 1;  // the source of new intervals
    };
}
