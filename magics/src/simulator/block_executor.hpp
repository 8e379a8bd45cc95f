#pragma once
// The blocks of a launch, each with its warps and its shared memory window (see the end for threads).
//
// A block's warps run in turn, each until it reaches a bar.sync or exits (warp_interpreter::run); when
// every warp that has not exited waits at the barrier, they all go on. So bar.sync orders shared
// memory exactly as __syncthreads() does, and warps that have exited do not hold a barrier up, as on
// hardware. A warp that arrives at a barrier with only some of its live lanes is barrier divergence
// (warp_interpreter reports it); warps waiting at different bar.sync instructions of one barrier complete
// it together, as NVIDIA GPUs do, with a warning (an error in strict mode: different_barriers). Each barrier release
// is announced to the launch's check plugins (sim_checker: the race checks start a new interval there). A warp
// whose mbarrier wait fails yields (warp_interpreter::status::yielded) and runs again after the others; a
// round in which warps only spin and no mbarrier changes can never end, and is reported like a barrier that
// can never complete.
// Blocks run on a pool of launch_context::threads host threads (XCUDA_SIM_THREADS), each with an
// executor of its own; sequentially on the calling thread with a pool of one, for a kernel that calls
// printf (its lines keep the block order) and for a trace. A launch whose cancel flag is set stops taking
// blocks (and the warps of a running one stop at their next checkpoint) with sim_error(interrupted).
//
// Thread-block clusters (block_clusters.cpp; and kernels with cluster instructions, each block a cluster of one):
// the executor keeps one block_executor per rank of the cluster, each with its own shared window and warps, and
// runs them together on its host thread in passes: each block's warps run to their next stop (begin_block,
// run_round), then the cluster barrier's phase completes when every lane of the cluster not exited has arrived
// (cluster_state.hpp). A pass that changes nothing (no barrier released, no warp ended, no arrival, no phase) can
// never end: on a GPU the cluster would hang, and the launch fails naming what each block waits for. The pool then
// takes whole clusters (units) instead of blocks.
//
// Not thread-safe: one executor runs one launch (and its pool).

#include <memory>
#include <vector>

#include "sim_checker.hpp"
#include "cluster_state.hpp"
#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    class block_executor
    {
    public:
        // `cluster`: the cluster this executor is rank `rank` of (another executor's, block_clusters.cpp), else nullptr.
        explicit block_executor(launch_context& launch, cluster_state* cluster = nullptr, unsigned rank = 0);
        ~block_executor();

        // Checks the launch configuration, then runs every block; throws sim_error.
        void run_grid();

    private:
        // What one round of the block's warps did: the block ended; a barrier released; a warp ended; a warp yielded.
        struct round
        {
            bool finished = false;
            bool released = false;
            bool exited = false;
            bool yielded = false;
        };

        void prepare();  // checks the configuration, makes the shared window and the warps (in clusters: prepare_cluster)
        void run_block(unsigned x, unsigned y, unsigned z);
        void begin_block(unsigned x, unsigned y, unsigned z);  // the block's warps at its start, its shared memory zeroed
        round run_round();  // every warp not done and not waiting runs to its next stop, then barriers release
        // The launch's units: its blocks, or its clusters when it runs in clusters; run_unit runs one.
        unsigned long long units() const;
        void run_unit(unsigned long long unit);
        // Releases every barrier whose arrivals are complete (clearing `waiting` for its warps); false when none.
        bool release_barriers(std::vector<bool>& waiting, std::size_t remaining);
        // No barrier can complete and no warp can run: throws, naming each waiting warp and its barrier.
        // Warps `first` and `other` wait at different bar.sync instructions of one barrier: a warning, or strict mode's error.
        void different_barriers(std::size_t first, std::size_t other) const;
        [[noreturn]] void never_completes(const std::vector<bool>& waiting, std::size_t remaining) const;
        std::string waits(const std::vector<bool>& waiting) const;  // what each waiting warp waits for, for messages
        std::string block_name() const;  // "block (x,y,z)", for messages
        void run_parallel(unsigned pool, unsigned long long blocks);
        // The launch's cancel flag (launch_context::cancel), looked at between blocks; the count of blocks done.
        bool cancelled() const noexcept;
        void stop_if_cancelled() const;
        void count_block() noexcept;

        launch_context& m_launch;
        block_state m_block;
        std::vector<std::uint8_t> m_shared;
        std::unique_ptr<sim_checker> m_checks;  // this executor's check plugins (the launch's check_options)
        std::vector<std::unique_ptr<warp_interpreter>> m_warps;
        unsigned m_threads = 0;
        std::vector<bool> m_done, m_waiting;  // by warp, in the block that runs (begin_block, run_round)
        std::size_t m_remaining = 0;          // warps not done
        // block_clusters.cpp: the launch runs in clusters (prepare_cluster makes a block_executor per rank).
        static bool uses_clusters(const ptx_program& program);  // a cluster instruction anywhere in the module
        void prepare_cluster();
        void run_cluster(unsigned long long cluster);  // x fastest, as blocks are numbered
        bool complete_cluster_phase();
        std::uint64_t mbarrier_changes() const;  // of every block of the cluster, so far
        [[noreturn]] void cluster_never_completes() const;
        bool m_clustered = false;
        cluster_state m_cluster;
        std::vector<std::unique_ptr<block_executor>> m_cluster_blocks;  // by rank
    };
}
