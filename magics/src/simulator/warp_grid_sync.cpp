// warp_interpreter's part in a cooperative launch (issue 46: cooperative_groups::this_grid().sync()). NVRTC's
// grid-wide sync is plain PTX: a barrier of the block, then one thread per block adds to a counter in the
// grid's workspace (%envreg1:%envreg2) and polls it with ld.acquire until every block has arrived. The blocks
// of a cooperative launch run at once, each on a host thread (block_executor::run_grid), so the poll ends
// when the others arrive. Each poll here yields the host thread, stops the block when another block failed,
// and reports a sync that can never complete: when every block not finished polls a value that has stopped
// changing (4096 polls of the same value make a block "stuck"; its value changing makes it not), nothing is
// left to change it.

#include <thread>

#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    void warp_interpreter::spin_point(const instruction& in, std::uint32_t active)
    {
        if (m_launch.grid_failed && m_launch.grid_failed->load(std::memory_order_relaxed))
        {
            throw launch_cancelled{};
        }
        const operand& d = in.operands[0];
        const std::int32_t reg = d.what == operand::kind::vector ? d.regs[0] : d.reg;
        const std::uint64_t value = reg >= 0 ? m_registers[static_cast<std::size_t>(reg) * 32 + static_cast<unsigned>(__builtin_ctz(active))] : 0;
        const bool same = &in == m_spin_at && value == m_spin_value;
        m_spins = same ? m_spins + 1 : 0;
        m_spin_at = &in;
        m_spin_value = value;
        if (m_launch.blocks_stuck && m_stuck != (m_spins >= 4096))
        {
            m_stuck = !m_stuck;
            m_stuck ? ++*m_launch.blocks_stuck : --*m_launch.blocks_stuck;
        }
        const unsigned long long blocks =
            static_cast<unsigned long long>(m_launch.grid[0]) * m_launch.grid[1] * m_launch.grid[2];
        if (m_stuck && m_launch.blocks_done && m_launch.blocks_done->load() + m_launch.blocks_stuck->load() >= blocks)
        {
            throw sim_error(sim_error::kind::barrier_divergence,
                            "kernel '" + m_launch.kernel + "', " + thread_name(static_cast<unsigned>(__builtin_ctz(active))) +
                                ": a grid-wide sync that can never complete: this block polls at " + where(in) +
                                ", for a value no block is left to change (" + std::to_string(m_launch.blocks_done->load()) +
                                " blocks of the cooperative launch have finished, the others poll too: a grid.sync() that "
                                "not every block reaches; on a GPU the grid would hang)");
        }
        std::this_thread::yield();  // the blocks the poll waits for run on the other host threads
    }
}
