// block_executor's thread-block clusters (issue 45 item 4, issue 46 item 1): a cluster's blocks must be resident at
// once (a barrier.cluster.wait waits for the other blocks, and distributed shared memory reads and writes their
// windows), so one executor runs all of them together, as block_executor.hpp says.

#include "block_executor.hpp"

namespace xcuda::sim
{
    namespace
    {
        std::string cluster_dims_text(const unsigned* v, const char* between)
        {
            return std::to_string(v[0]) + between + std::to_string(v[1]) + between + std::to_string(v[2]);
        }
    }

    void block_executor::prepare_cluster()
    {
        launch_context& launch = m_launch;
        const unsigned* c = launch.cluster;
        const std::string kernel = "kernel '" + launch.kernel + "': ";
        for (unsigned axis = 0; axis < 3; ++axis)
        {
            if (c[axis] == 0 || launch.grid[axis] % c[axis] != 0)
            {
                throw sim_error(sim_error::kind::launch_failed,
                                kernel + "a grid of " + cluster_dims_text(launch.grid, "x") + " blocks is not a multiple of its cluster of " +
                                    cluster_dims_text(c, "x") + " blocks (axis " + "xyz"[axis] + ")");
            }
        }
        const unsigned size = c[0] * c[1] * c[2];
        if (size > 16)
        {
            throw sim_error(sim_error::kind::launch_failed, kernel + "a cluster of " + std::to_string(size) +
                                                                " blocks; the simulated device (sm_90) takes at most 16 (8 "
                                                                "without the non-portable cluster size attribute)");
        }
        const std::uint32_t most = launch.program->functions[static_cast<std::size_t>(launch.entry)].max_cluster_rank;
        if (most && size > most)
        {
            throw sim_error(sim_error::kind::launch_failed, kernel + "a cluster of " + std::to_string(size) +
                                                                " blocks, over its __launch_bounds__'s most blocks per "
                                                                "cluster (.maxclusterrank) of " + std::to_string(most));
        }
        if (launch.cooperative && size > 1)
        {
            throw sim_error(sim_error::kind::unsupported,
                            kernel + "a cooperative launch in clusters is not simulated (launch it without one of the two)");
        }
        m_clustered = true;
        std::copy(c, c + 3, m_cluster.dims);
        m_cluster.size = size;
        m_cluster.blocks.resize(size);
        m_cluster.exited.assign(size, false);
        m_cluster_blocks.clear();
        for (unsigned rank = 0; rank < size; ++rank)
        {
            m_cluster_blocks.push_back(std::make_unique<block_executor>(launch, &m_cluster, rank));
            m_cluster_blocks.back()->prepare();
            m_cluster.blocks[rank] = &m_cluster_blocks.back()->m_block;
        }
    }

    bool block_executor::uses_clusters(const ptx_program& program)
    {
        for (const ptx_function& f : program.functions)
        {
            for (const instruction& in : f.code)
            {
                // isspacep needs no cluster of its own: without one its .shared::cluster is the block's window
                if (in.op == opcode::cluster_barrier || (in.op == opcode::cluster_address && in.var != variant::isspacep) ||
                    (in.space == state_space::shared_cluster && in.op != opcode::cluster_address))
                {
                    return true;
                }
            }
        }
        return false;
    }

    // All blocks of the cluster begin, then pass after pass each runs a round, and the cluster barrier's phase
    // completes when it can. A pass that changes nothing can never be followed by one that does.
    void block_executor::run_cluster(unsigned long long cluster)
    {
        const unsigned* d = m_cluster.dims;
        const unsigned long long across = m_launch.grid[0] / d[0], down = m_launch.grid[1] / d[1];
        const unsigned at[3] = {static_cast<unsigned>(cluster % across) * d[0], static_cast<unsigned>(cluster / across % down) * d[1],
                                static_cast<unsigned>(cluster / (across * down)) * d[2]};
        for (unsigned rank = 0; rank < m_cluster.size; ++rank)
        {
            m_cluster.exited[rank] = false;
            m_cluster_blocks[rank]->begin_block(at[0] + rank % d[0], at[1] + rank / d[0] % d[1], at[2] + rank / (d[0] * d[1]));
        }
        m_cluster.phase = 0;  // the warps' begin at phase 0 too (warp_interpreter::reset)
        std::size_t running = m_cluster.size;
        while (running > 0)
        {
            bool progress = false, yielded = false;
            const std::uint64_t arrivals = m_cluster.arrivals;
            // A block's mbarriers may change in another block's round (a remote arrive, a multicast's bytes): the
            // cluster's changes in the whole pass are what a spinning warp may be waiting for.
            const std::uint64_t changes = mbarrier_changes();
            for (unsigned rank = 0; rank < m_cluster.size; ++rank)
            {
                if (m_cluster.exited[rank])
                {
                    continue;
                }
                block_executor& block = *m_cluster_blocks[rank];
                const round r = block.run_round();
                if (r.finished)
                {
                    m_cluster.exited[rank] = true;  // its shared memory is gone for the others (cluster_state.hpp)
                    --running;
                }
                progress = progress || r.finished || r.released || r.exited;
                yielded = yielded || r.yielded;
            }
            progress = progress || (yielded && mbarrier_changes() != changes);
            progress = complete_cluster_phase() || progress || m_cluster.arrivals != arrivals;
            if (running > 0 && !progress)
            {
                cluster_never_completes();
            }
        }
    }

    std::uint64_t block_executor::mbarrier_changes() const
    {
        std::uint64_t changes = 0;
        for (const auto& block : m_cluster_blocks)
        {
            changes += block->m_block.mbarrier_changes;
        }
        return changes;
    }

    // The phase completes when every lane of the cluster that has not exited has arrived in it (and one has).
    bool block_executor::complete_cluster_phase()
    {
        bool arrived = false;
        for (const auto& block : m_cluster_blocks)
        {
            for (const auto& warp : block->m_warps)
            {
                if (warp->live() & ~warp->cluster_arrived())
                {
                    return false;
                }
                arrived = arrived || warp->cluster_arrived() != 0;
            }
        }
        if (!arrived)
        {
            return false;
        }
        ++m_cluster.phase;
        for (const auto& block : m_cluster_blocks)
        {
            if (block->m_block.sync_checks)  // the cluster barrier orders each block's own shared accesses too (race check)
            {
                block->m_block.sync_checks->synchronised(sync_scope::block, 0);
            }
        }
        return true;
    }

    void block_executor::cluster_never_completes() const
    {
        std::string waits;
        unsigned arrived = 0, live = 0;
        for (unsigned rank = 0; rank < m_cluster.size; ++rank)
        {
            const block_executor& block = *m_cluster_blocks[rank];
            for (const auto& warp : block.m_warps)
            {
                arrived += static_cast<unsigned>(__builtin_popcount(warp->cluster_arrived()));
                live += static_cast<unsigned>(__builtin_popcount(warp->live()));
            }
            if (!m_cluster.exited[rank])
            {
                waits += (waits.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + ", " +
                         block.block_name() + ": " + block.waits(block.m_waiting);
            }
        }
        throw sim_error(sim_error::kind::barrier_divergence,
                        "kernel '" + m_launch.kernel + "': a barrier that can never complete in the cluster that begins at " +
                            m_cluster_blocks.front()->block_name() + " (on a GPU the cluster would hang): " + waits +
                            "; " + std::to_string(arrived) + " of the cluster's " + std::to_string(live) +
                            " threads not exited have arrived at its barrier.cluster");
    }
}
