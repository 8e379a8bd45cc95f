// warp_interpreter's copies into a cluster (docs/simulator.md, "TMA multicast and remote mbarriers"): a TMA or bulk
// copy's .multicast::cluster lands the same bytes in the shared memory of each block its ctaMask names, at the
// destination's offset, and completes them on each one's mbarrier at the mbarrier's offset, as PTX says; a copy whose
// destination is another block's (a .shared::cluster address from mapa) lands there and completes on that block's
// mbarrier, which must be in the same block. The blocks of a cluster run on one host thread (block_clusters.cpp), so
// another block's window is plain host memory here; its own check plugins see the writes (as remote accesses).

#include "warp_interpreter.hpp"

#include <cstring>

#include "warp_values.hpp"

namespace xcuda::sim
{
    // A ctaMask: 16 bits, each naming a block rank of the cluster; checked against the cluster's size.
    std::uint16_t warp_interpreter::cta_mask(const instruction& in, const operand& o, unsigned lane)
    {
        source s = fetch(o, 3);
        const std::uint64_t mask = s.p[s.stride * lane] & 0xffffu;
        const unsigned size = m_block.cluster ? m_block.cluster->size : 1;
        if (mask == 0)
        {
            fault(in, lane, "multicasts with a ctaMask of 0, which names no block of its cluster");
        }
        if (mask >> size)
        {
            const unsigned outside = static_cast<unsigned>(__builtin_ctzll(mask >> size)) + size;
            fault(in, lane, "multicasts with a ctaMask of " + hex(mask) + ", which names block rank " + std::to_string(outside) +
                                ", outside its cluster of " + std::to_string(size) + (size == 1 ? " block" : " blocks") +
                                " (ranks 0 to " + std::to_string(size - 1) + (m_launch.explicit_cluster ? ")" : "; launch it with cluster=...)"));
        }
        return static_cast<std::uint16_t>(mask);
    }

    // The blocks a copy lands in, as a mask of ranks: the ctaMask's (operand `mask_operand`), else the destination's
    // block, which must hold the mbarrier too (PTX: the same CTA).
    std::uint16_t warp_interpreter::destinations(const instruction& in, unsigned lane, const shared_place& to,
                                                 const shared_place& bar, int mask_operand)
    {
        if (mask_operand >= 0)
        {
            return cta_mask(in, in.operands[mask_operand], lane);
        }
        if (to.block != bar.block)
        {
            fault(in, lane, "copies into the shared memory of block rank " + std::to_string(to.rank) +
                                " of its cluster and completes on an mbarrier of block rank " + std::to_string(bar.rank) +
                                " (PTX: the destination and its mbarrier are in the same CTA)");
        }
        return static_cast<std::uint16_t>(1u << to.rank);
    }

    block_state& warp_interpreter::cluster_member(unsigned rank)
    {
        return m_block.cluster ? *m_block.cluster->blocks[rank] : m_block;
    }

    // `bytes` bytes written at `at` of the target's window (its checks see them: the race check of the executing
    // block, or the target's plugins as a remote access). Fails where the target has exited.
    void warp_interpreter::land_shared(const instruction& in, unsigned lane, block_state& target, std::uint32_t at, unsigned bytes,
                                       const void* from)
    {
        if (&target != &m_block)
        {
            const unsigned rank = target.cluster_rank;
            if (m_block.cluster->exited[rank])
            {
                fault(in, lane, "copies into the shared memory of block rank " + std::to_string(rank) +
                                    " of its cluster, which has exited (a cluster.sync() before the end keeps it)");
            }
            if (target.shared_checks)
            {
                check_remote_shared(target, in, at, bytes, lane, true);
            }
        }
        else if (m_block.shared_checks)
        {
            check_shared(in, at, bytes, lane, true);
        }
        std::memmove(target.shared + at, from, bytes);
    }

    // `bytes` transaction bytes complete on the mbarrier at offset `bar` of block `rank` of the cluster.
    void warp_interpreter::complete_bytes(const instruction& in, unsigned lane, unsigned rank, std::uint32_t bar, std::uint64_t bytes)
    {
        block_state& target = cluster_member(rank);
        auto& word = *reinterpret_cast<std::uint64_t*>(target.shared + bar);
        mbarrier_change(in, lane, word, 0, 0, -static_cast<std::int64_t>(bytes), &target);
    }
}
