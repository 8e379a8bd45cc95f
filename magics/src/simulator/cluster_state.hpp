#pragma once
// What the blocks of one thread-block cluster share while they run together (block_clusters.cpp): each block's
// shared window by rank, which have exited, and the cluster barrier's phase.
//
// barrier.cluster: a warp's arrive records its lanes and the phase they arrived in (warp_interpreter); the phase
// completes when every lane of the cluster that has not exited has arrived in it (block_executor::
// complete_cluster_phase), and a wait passes once the phase it arrived in has completed. Exited threads do not hold the
// barrier up, as with bar.sync.
//
// Addresses (warp_cluster_operations.cpp): a block's shared window is one host allocation, so a generic address
// into another block's window (mapa.u64) is that block's host address. A .shared::cluster address is 32 bits:
// below 2^24 an offset in the executing block's own window (a .shared::cta address is a .shared::cluster address
// of its own block, as PTX says), else (rank + 1) << 24 | offset, as mapa.shared::cluster makes it.
//
// Not thread-safe: a cluster's blocks run on one host thread.

#include <cstdint>
#include <vector>

namespace xcuda::sim
{
    struct block_state;

    struct cluster_state
    {
        static constexpr unsigned rank_shift = 24;  // a .shared::cluster address: (rank + 1) << 24 | offset

        unsigned dims[3] = {1, 1, 1};          // blocks per cluster on each axis
        unsigned size = 1;                     // their product
        std::vector<block_state*> blocks;      // by rank
        std::vector<bool> exited;              // by rank: the block has ended (its shared memory is gone)
        std::uint64_t phase = 0;               // barrier.cluster phases completed
        std::uint64_t arrivals = 0;            // barrier.cluster.arrive instructions run: the executor's progress
    };
}
