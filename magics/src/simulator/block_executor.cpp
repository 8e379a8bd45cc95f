#include "block_executor.hpp"

#include "reserved_shared.hpp"

#include <algorithm>
#include <iterator>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

namespace xcuda::sim
{
    block_executor::block_executor(launch_context& launch, cluster_state* cluster, unsigned rank) : m_launch(launch)
    {
        m_block.cluster = cluster;
        m_block.cluster_rank = rank;
    }

    block_executor::~block_executor() = default;

    void block_executor::run_grid()
    {
        prepare();
        const unsigned long long blocks = units();
        const unsigned pool = static_cast<unsigned>(std::min<unsigned long long>(std::max(m_launch.threads, 1u), blocks));
        // printf's lines and a trace keep the sequential order; so does a pool of one. A cooperative launch runs
        // every block at once, each on a host thread (a grid-wide sync waits for all; the shim checks the size).
        const bool ordered = m_launch.trace || (m_launch.printf_output && m_launch.program->find_function("vprintf") >= 0);
        if (m_launch.cooperative)
        {
            run_parallel(static_cast<unsigned>(blocks), blocks);
            return;
        }
        if (pool > 1 && !ordered)
        {
            run_parallel(pool, blocks);
            return;
        }
        for (unsigned long long unit = 0; unit < blocks; ++unit)
        {
            stop_if_cancelled();
            run_unit(unit);
            count_block();
        }
    }

    unsigned long long block_executor::units() const
    {
        const unsigned* c = m_launch.cluster;
        return static_cast<unsigned long long>(m_launch.grid[0] / c[0]) * (m_launch.grid[1] / c[1]) * (m_launch.grid[2] / c[2]);
    }

    // Blocks are numbered x fastest; so are clusters (run_cluster).
    void block_executor::run_unit(unsigned long long unit)
    {
        if (m_clustered)
        {
            run_cluster(unit);
            return;
        }
        const unsigned gx = m_launch.grid[0], gy = m_launch.grid[1];
        run_block(static_cast<unsigned>(unit % gx), static_cast<unsigned>(unit / gx % gy),
                  static_cast<unsigned>(unit / (static_cast<unsigned long long>(gx) * gy)));
    }

    // Blocks are taken in order from one counter by `pool` workers, each with its own executor (shared
    // window, warps, race shadow) and its own copy of the launch's counters, summed at the end. Atomics
    // take one lock (launch_context::atomic_lock). A failure stops the taking of later blocks; the one of
    // the lowest block is reported, as the sequential order would have.
    void block_executor::run_parallel(unsigned pool, unsigned long long blocks)
    {
        std::mutex atomic_lock;
        std::atomic<unsigned long long> next{0};
        std::atomic<unsigned long long> first_failed{std::numeric_limits<unsigned long long>::max()};
        std::atomic<bool> grid_failed{false};             // a cooperative launch's spinning blocks stop on it
        std::atomic<unsigned long long> blocks_done{0}, blocks_stuck{0};
        struct failure
        {
            unsigned long long block;
            sim_error::kind kind;
            std::string message;
        };
        std::mutex failures_lock;
        std::vector<failure> failures;
        std::vector<launch_context> contexts(pool, m_launch);
        std::vector<std::thread> workers;
        for (unsigned i = 0; i < pool; ++i)
        {
            contexts[i].atomic_lock = &atomic_lock;
            contexts[i].grid_failed = &grid_failed;
            contexts[i].blocks_done = &blocks_done;
            contexts[i].blocks_stuck = &blocks_stuck;
            contexts[i].warp_steps = 0;
            contexts[i].next_checkpoint = 0;
            contexts[i].thread_instructions = 0;
            workers.emplace_back([&, i] {
                unsigned long long b = 0;
                auto fail = [&](sim_error::kind kind, std::string message) {
                    std::lock_guard<std::mutex> held(failures_lock);
                    failures.push_back({b, kind, std::move(message)});
                    grid_failed = true;
                    unsigned long long seen = first_failed.load();
                    while (b < seen && !first_failed.compare_exchange_weak(seen, b))
                    {
                    }
                };
                try
                {
                    block_executor worker(contexts[i]);
                    worker.prepare();
                    while (!cancelled() && (b = next.fetch_add(1)) < blocks && b < first_failed.load())
                    {
                        worker.run_unit(b);
                        worker.count_block();
                        ++blocks_done;
                    }
                }
                catch (const launch_cancelled&)
                {
                    // another block of a cooperative launch failed, and this one stopped polling for it
                }
                catch (const sim_error& e)
                {
                    fail(e.what_kind(), e.what());
                }
                catch (const std::exception& e)
                {
                    fail(sim_error::kind::launch_failed, std::string("the simulator failed: ") + e.what());
                }
            });
        }
        for (std::thread& t : workers)
        {
            t.join();
        }
        for (const launch_context& c : contexts)
        {
            m_launch.warp_steps += c.warp_steps;
            m_launch.thread_instructions += c.thread_instructions;
        }
        if (!failures.empty())
        {
            const failure& first = *std::min_element(failures.begin(), failures.end(),
                                                     [](const failure& a, const failure& b) { return a.block < b.block; });
            throw sim_error(first.kind, first.message);
        }
        stop_if_cancelled();  // every worker stopped between blocks
    }

    bool block_executor::cancelled() const noexcept
    {
        return m_launch.cancel && m_launch.cancel->load(std::memory_order_relaxed);
    }

    void block_executor::stop_if_cancelled() const
    {
        if (cancelled())
        {
            throw sim_error(sim_error::kind::interrupted, "kernel '" + m_launch.kernel + "' was interrupted between blocks");
        }
    }

    void block_executor::count_block() noexcept
    {
        if (m_launch.blocks_progress)
        {
            const unsigned* c = m_launch.cluster;
            m_launch.blocks_progress->fetch_add(c[0] * c[1] * c[2], std::memory_order_relaxed);  // a unit's blocks
        }
    }

    void block_executor::prepare()
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
        if (std::string refused = program.refusal(m_launch.entry); !refused.empty())
        {
            throw sim_error(sim_error::kind::unsupported, refused);  // before any block runs
        }
        if (entry.max_threads && m_threads > entry.max_threads)
        {
            throw sim_error(sim_error::kind::launch_failed,
                            "kernel '" + m_launch.kernel + "': a block of " + std::to_string(m_threads) +
                                " threads, over its __launch_bounds__ (.maxntid) of " + std::to_string(entry.max_threads));
        }
        const unsigned* c = m_launch.cluster;
        if (!m_block.cluster && (c[0] * c[1] * c[2] > 1 || uses_clusters(program)))
        {
            prepare_cluster();  // it checks the rest and makes the blocks
            return;
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
        m_block.reserved_shared = 0;
        if (program.uses_reserved_shared)  // the region after the user's bytes (reserved_shared.hpp)
        {
            m_block.reserved_shared = static_cast<std::uint32_t>(reserved_shared::begin(shared));
            shared = m_block.reserved_shared + reserved_shared::bytes;
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
    }

    void block_executor::run_block(unsigned x, unsigned y, unsigned z)
    {
        begin_block(x, y, z);
        unsigned quiet_rounds = 0;  // rounds in a row in which warps only yielded, and nothing they poll changed
        while (true)
        {
            const std::uint64_t changes = m_block.mbarrier_changes;
            const round r = run_round();
            // No barrier released, and no mbarrier changed while warps spin on one: the block would hang.
            if (r.finished)
            {
                return;
            }
            if (!r.released && (!r.yielded || (m_block.mbarrier_changes == changes && ++quiet_rounds > 1)))
            {
                never_completes(m_waiting, m_remaining);  // two rounds without news: a warp may write and then poll
            }
            else if (r.released || m_block.mbarrier_changes != changes)
            {
                quiet_rounds = 0;
            }
        }
    }

    void block_executor::begin_block(unsigned x, unsigned y, unsigned z)
    {
        m_block.ctaid[0] = x;
        m_block.ctaid[1] = y;
        m_block.ctaid[2] = z;
        if (!m_shared.empty())  // a kernel without shared memory: data() may be null, and memset(null) is UB
        {
            std::memset(m_shared.data(), 0, m_shared.size());
        }
        m_done.assign(m_warps.size(), false);
        m_waiting.assign(m_warps.size(), false);
        for (std::size_t w = 0; w < m_warps.size(); ++w)
        {
            unsigned first = static_cast<unsigned>(w) * 32;
            m_warps[w]->reset(std::min(32u, m_threads - first));
        }
        m_remaining = m_warps.size();
        ++m_block.epoch;  // a new block: nothing of the last one's accesses races with this one's
        std::fill(std::begin(m_block.arrivals), std::end(m_block.arrivals), 0u);
    }

    block_executor::round block_executor::run_round()
    {
        // Every warp not done and not waiting runs to its next barrier (or its end, or a failed mbarrier wait).
        round r;
        for (std::size_t w = 0; w < m_warps.size(); ++w)
        {
            if (m_done[w] || m_waiting[w])
            {
                continue;
            }
            warp_interpreter::status status = m_warps[w]->run();
            if (status == warp_interpreter::status::exited)
            {
                m_done[w] = true;
                r.exited = true;
                --m_remaining;
            }
            else
            {
                r.yielded = r.yielded || status == warp_interpreter::status::yielded;
                m_waiting[w] = status == warp_interpreter::status::at_barrier;
            }
        }
        r.finished = m_remaining == 0;
        // Then each barrier whose arrivals are complete releases its warps.
        if (!r.finished && release_barriers(m_waiting, m_remaining))
        {
            ++m_block.epoch;  // a barrier released: a new interval for the race check
            r.released = true;
        }
        return r;
    }

    bool block_executor::release_barriers(std::vector<bool>& waiting, std::size_t remaining)
    {
        // Each barrier (0..15) whose arrivals are complete releases its warps: every warp that has not
        // exited for a barrier without a count (__syncthreads), else the count's threads, counted per warp
        // as the hardware does (bar.sync 1, 64: two warps). bar.red's result goes to every warp released.
        bool released = false;
        unsigned ids = 0;  // the barriers some warp waits at: most launches only ever use barrier 0
        for (std::size_t w = 0; w < m_warps.size(); ++w)
        {
            ids |= waiting[w] ? 1u << m_warps[w]->arrival().id : 0u;
        }
        for (unsigned id = 0; ids >> id; ++id)
        {
            if (!((ids >> id) & 1))
            {
                continue;
            }
            std::size_t arrived = 0, first = 0;
            unsigned count = 0, votes = 0, threads = 0;
            for (std::size_t w = 0; w < m_warps.size(); ++w)
            {
                if (waiting[w] && m_warps[w]->arrival().id == id)
                {
                    const warp_interpreter::barrier_arrival& a = m_warps[w]->arrival();
                    first = arrived++ == 0 ? w : first;
                    count = std::max(count, a.count);
                    votes += a.votes;
                    threads += static_cast<unsigned>(__builtin_popcount(a.lanes));
                }
            }
            if (arrived == 0 || (count ? arrived * 32 + m_block.arrivals[id] < count : arrived < remaining))
            {
                continue;
            }
            m_block.arrivals[id] = 0;  // bar.arrive's threads were counted into this release
            for (std::size_t w = 0; w < m_warps.size(); ++w)
            {
                if (!waiting[w] || m_warps[w]->arrival().id != id)
                {
                    continue;
                }
                const warp_interpreter& one = *m_warps[first];
                const warp_interpreter& other = *m_warps[w];
                if (count == 0 && other.waiting_at() != one.waiting_at())
                {
                    different_barriers(first, w);
                }
                if (other.waiting_at()->var != variant::none)
                {
                    m_warps[w]->finish_reduction(votes, threads);
                }
                waiting[w] = false;
            }
            released = true;
        }
        return released;
    }

    // Warps of the block wait at different bar.sync instructions of barrier 0 (__syncthreads() on both sides of
    // a branch, the double-buffered SGEMM's shape). PTX leaves it undefined; NVIDIA GPUs count the arrivals per
    // barrier, not per instruction, and complete one barrier with both, so the simulator does too and warns once,
    // as compute-sanitizer's synccheck reports it. Strict mode (XCUDA_SIM_STRICT_BARRIERS=1) fails the launch.
    void block_executor::different_barriers(std::size_t first, std::size_t other) const
    {
        const warp_interpreter& one = *m_warps[first];
        const warp_interpreter& two = *m_warps[other];
        // Each place ends at a ';' (or the text's end): a "line N of FILE" runs to the next ',', ';', ')' or
        // newline where base/cell_lines says it in the cell's own lines.
        std::string both = "warp " + std::to_string(first) + " waits at " + one.where(*one.waiting_at()) + "; warp " +
                           std::to_string(other) + " at another barrier, " + two.where(*two.waiting_at()) + ";";
        if (m_launch.strict_barriers)
        {
            throw sim_error(sim_error::kind::barrier_divergence,
                            "kernel '" + m_launch.kernel + "': barrier divergence in " + block_name() + ": " + both +
                                " __syncthreads() in both sides of a branch that the block's threads take differently "
                                "(XCUDA_SIM_STRICT_BARRIERS=1 makes this an error, as compute-sanitizer's synccheck "
                                "reports it)");
        }
        if (m_launch.warnings)
        {
            std::string key = one.where(*one.waiting_at()) + "|" + two.where(*two.waiting_at());
            m_launch.warnings->add(key, "kernel '" + m_launch.kernel + "': warps of " + block_name() +
                                            " met at different __syncthreads(): " + both +
                                            " PTX leaves this undefined (compute-sanitizer's synccheck reports it as "
                                            "barrier divergence); NVIDIA GPUs complete one barrier with both, and so "
                                            "does the simulator (XCUDA_SIM_STRICT_BARRIERS=1 makes it an error)");
        }
    }

    void block_executor::never_completes(const std::vector<bool>& waiting, std::size_t remaining) const
    {
        // No barrier can complete: on a GPU the block would hang. Name what each barrier waits for.
        throw sim_error(sim_error::kind::barrier_divergence,
                        "kernel '" + m_launch.kernel + "': a barrier that can never complete in " + block_name() +
                            " (on a GPU the block would hang): " + waits(waiting) + "; " + std::to_string(remaining) +
                            (remaining == 1 ? " warp has" : " warps have") + " not exited");
    }

    std::string block_executor::waits(const std::vector<bool>& waiting) const
    {
        std::string text;
        for (std::size_t w = 0; w < m_warps.size(); ++w)
        {
            if (waiting[w])
            {
                const warp_interpreter& one = *m_warps[w];
                text += (text.empty() ? "" : "; ") + std::string("warp ") + std::to_string(w) + " at " +
                         one.where(*one.waiting_at()) + " (barrier " + std::to_string(one.arrival().id) +
                         (one.arrival().count ? ", " + std::to_string(one.arrival().count) + " threads" : ", every thread") +
                         (m_block.arrivals[one.arrival().id] ? ", " + std::to_string(m_block.arrivals[one.arrival().id]) +
                                                                   " arrived by bar.arrive"
                                                             : std::string()) +
                         ")";
            }
            else if (m_warps[w]->live() && m_warps[w]->waiting_at())
            {
                const bool cluster = m_warps[w]->waiting_at()->op == opcode::cluster_barrier;
                text += (text.empty() ? "" : "; ") + std::string("warp ") + std::to_string(w) +
                         (cluster ? " waits at " : " spins at ") + m_warps[w]->where(*m_warps[w]->waiting_at()) +
                         (cluster                                              ? " (the cluster barrier)"
                          : m_warps[w]->waiting_at()->op == opcode::mbarrier ? " (an mbarrier phase that does not complete)"
                                                                              : " (a poll of memory no warp of the block changes)");
            }
        }
        return text;
    }

    std::string block_executor::block_name() const
    {
        const unsigned* c = m_block.ctaid;
        return "block (" + std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]) + ")";
    }
}
