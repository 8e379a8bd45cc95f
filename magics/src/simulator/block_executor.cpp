#include "block_executor.hpp"

#include <cstring>

namespace xcuda::sim
{
    block_executor::block_executor(launch_context& launch) : m_launch(launch) {}

    void block_executor::run_grid()
    {
        const ptx_program& program = *m_launch.program;
        m_threads = m_launch.block[0] * m_launch.block[1] * m_launch.block[2];
        if (m_threads == 0 || m_threads > 1024 || m_launch.block[2] > 64)
        {
            throw sim_error(sim_error::kind::launch_failed,
                            "kernel '" + m_launch.kernel + "': a block of " + std::to_string(m_launch.block[0]) + "x" +
                                std::to_string(m_launch.block[1]) + "x" + std::to_string(m_launch.block[2]) +
                                " threads; the simulated device takes 1 to 1024 threads per block (z at most 64)");
        }
        const ptx_function& entry = program.functions[static_cast<std::size_t>(m_launch.entry)];
        if (entry.max_threads && m_threads > entry.max_threads)
        {
            throw sim_error(sim_error::kind::launch_failed,
                            "kernel '" + m_launch.kernel + "': a block of " + std::to_string(m_threads) +
                                " threads, over its __launch_bounds__ (.maxntid) of " + std::to_string(entry.max_threads));
        }
        std::size_t shared = program.static_shared_bytes;
        if (m_launch.dynamic_shared)
        {
            shared = (shared + program.dynamic_shared_align - 1) / program.dynamic_shared_align * program.dynamic_shared_align +
                     m_launch.dynamic_shared;
        }
        if (shared > 232448)
        {
            throw sim_error(sim_error::kind::launch_failed, "kernel '" + m_launch.kernel + "' needs " + std::to_string(shared) +
                                                                " bytes of shared memory per block; the simulated device has 232448");
        }
        m_shared.assign(shared, 0);
        m_block.shared = m_shared.data();
        m_block.shared_bytes = shared;
        m_shadow.assign(m_launch.race_check ? shared : 0, shared_shadow{});
        m_block.shadow = m_shadow.empty() ? nullptr : m_shadow.data();
        m_block.epoch = 1;
        unsigned warps = (m_threads + 31) / 32;
        m_warps.clear();
        for (unsigned w = 0; w < warps; ++w)
        {
            m_warps.push_back(std::make_unique<warp_interpreter>(m_launch, m_block, w));
        }
        for (unsigned z = 0; z < m_launch.grid[2]; ++z)
        {
            for (unsigned y = 0; y < m_launch.grid[1]; ++y)
            {
                for (unsigned x = 0; x < m_launch.grid[0]; ++x)
                {
                    run_block(x, y, z);
                }
            }
        }
    }

    void block_executor::run_block(unsigned x, unsigned y, unsigned z)
    {
        m_block.ctaid[0] = x;
        m_block.ctaid[1] = y;
        m_block.ctaid[2] = z;
        std::memset(m_shared.data(), 0, m_shared.size());
        std::vector<bool> done(m_warps.size(), false);
        for (std::size_t w = 0; w < m_warps.size(); ++w)
        {
            unsigned first = static_cast<unsigned>(w) * 32;
            m_warps[w]->reset(std::min(32u, m_threads - first));
        }
        std::size_t remaining = m_warps.size();
        ++m_block.epoch;  // a new block: nothing of the last one's accesses races with this one's
        while (remaining > 0)
        {
            // Every warp not done runs to its next barrier (or its end); then all waiting ones go on.
            const warp_interpreter* first = nullptr;  // the first warp waiting at a barrier, and its index
            std::size_t first_index = 0;
            for (std::size_t w = 0; w < m_warps.size(); ++w)
            {
                if (done[w])
                {
                    continue;
                }
                if (m_warps[w]->run() == warp_interpreter::status::exited)
                {
                    done[w] = true;
                    --remaining;
                }
                else if (!first)
                {
                    first = m_warps[w].get();
                    first_index = w;
                }
                else if (m_warps[w]->waiting_at() != first->waiting_at())
                {
                    const warp_interpreter& other = *m_warps[w];
                    throw sim_error(sim_error::kind::barrier_divergence,
                                    "kernel '" + m_launch.kernel + "': barrier divergence in block (" + std::to_string(x) +
                                        "," + std::to_string(y) + "," + std::to_string(z) + "): warp " + std::to_string(first_index) +
                                        " waits at " + first->where(*first->waiting_at()) + " but warp " +
                                        std::to_string(w) + " at another barrier, " + other.where(*other.waiting_at()) +
                                        " (__syncthreads() in both sides of a branch that the block's threads take "
                                        "differently)");
                }
            }
            ++m_block.epoch;  // the barrier releases: a new interval for the race check
        }
    }
}
