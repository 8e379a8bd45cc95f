// A warp that polls memory another warp of its block will write (issue 46: the 24-program list). Cooperative
// groups' tiles wider than a warp (cg::tiled_partition<64>, cg::reduce over them) sync through a barrier
// word in reserved shared memory: each warp ORs its bit in with atom.or, and the warps not last poll the
// word with ld.acquire until the last one clears their bits. The simulator runs a block's warps one after
// another, each until a barrier, so a warp polling forever would keep the others from ever arriving.
// A strong load (ld.acquire/.relaxed/.volatile) of the block's shared memory that reads, at the same
// instruction and the same address,
// the same value as this warp's last strong load is a poll that has seen nothing change: the warp yields,
// and the block's other warps run before it polls again. A data loop over volatile memory reads another
// address each time and never yields. A yield that sees what the warp's last yield saw is no news: the
// block executor reports a block whose warps only spin without news as one that can never complete.
// Cooperative launches keep their own poll (warp_grid_sync.cpp: the other blocks run on other threads).
// Such warps order their shared-memory accesses by release and acquire, not by a barrier: an atom or red
// with .release or .acq_rel starts a new interval of the race check (docs/simulator.md, "Shared-memory
// races"), as a barrier does. That is coarser than the memory model (it orders every warp's earlier
// accesses, not only the releasing warp's), so a race across such an atomic goes unreported.

#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    bool warp_interpreter::block_spin(const instruction& in, std::uint32_t active)
    {
        const unsigned lane = static_cast<unsigned>(__builtin_ctz(active));
        const operand& d = in.operands[0];
        const std::int32_t reg = d.what == operand::kind::vector ? d.regs[0] : d.reg;
        const std::uint64_t value = reg >= 0 ? m_registers[static_cast<std::size_t>(reg) * 32 + lane] : 0;
        const operand& a = in.operands[1];
        const std::uint64_t where =
            (a.reg >= 0 ? m_registers[static_cast<std::size_t>(a.reg) * 32 + lane] : 0) + a.value +
            (a.symbol >= 0 ? static_cast<std::uint64_t>(a.symbol) << 48 : 0);
        const auto shared = reinterpret_cast<std::uintptr_t>(m_block.shared);
        if (in.space != state_space::shared &&
            !(in.space == state_space::generic && where >= shared && where < shared + m_block.shared_bytes))
        {
            return false;  // global memory: another block or the host may change it (a launch's own poll runs on)
        }
        const bool again = &in == m_poll.at && where == m_poll.where && value == m_poll.value;
        m_poll = {&in, where, value};
        if (!again)
        {
            return false;
        }
        if (&in != m_poll_yielded.at || where != m_poll_yielded.where || value != m_poll_yielded.value)
        {
            ++m_block.mbarrier_changes;  // news since this warp last yielded: the block is not hopeless yet
        }
        m_poll_yielded = m_poll;
        m_poll = {};  // after the yield, the next poll reads afresh
        return true;
    }
}
