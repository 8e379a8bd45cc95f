// The PTX simulator's thread-block clusters (block_clusters.cpp, warp_cluster_operations.cpp): a cluster's blocks run
// together on one host thread, so barrier.cluster waits for the other blocks and distributed shared memory (mapa,
// .shared::cluster, generic addresses into another block's window) reads and writes their windows. Checked against
// host references: the CUDA Programming Guide's distributed-shared-memory histogram, a cluster reduction, the cluster
// special registers on a 3-D grid, a ring exchange through split arrive/wait, the .shared::cluster instructions,
// isspacep; and the faults and hangs a GPU would not report clearly. The kernels: tests/cpp/fixtures/cluster_kernels.cu.

#include <gtest/gtest.h>

#include <vector>

#include "simulated.hpp"

namespace
{
    std::string cluster_kernels()
    {
        return xcuda_tests::fixture("cluster_kernels.cu");  // shared with tests/runtime/test_launch_attributes.py
    }

    std::vector<int> histogram_of(const std::vector<int>& values, int nbins)
    {
        std::vector<int> bins(static_cast<std::size_t>(nbins), 0);
        for (int v : values)
        {
            ++bins[static_cast<std::size_t>(std::min(std::max(v, 0), nbins - 1))];
        }
        return bins;
    }

    std::vector<int> values_for_histogram(int n, int nbins)
    {
        std::vector<int> values(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
        {
            values[static_cast<std::size_t>(i)] = (i * 7919 + i / 3) % (nbins + 10) - 5;  // some below 0, some past the end
        }
        return values;
    }
}

TEST(simulator_clusters, the_programming_guides_distributed_shared_memory_histogram_matches_the_host)
{
    simulated sim(cluster_kernels());
    sim.cluster = {4, 1, 1};
    const int bins_per_block = 32, nbins = 4 * bins_per_block, n = 5000;
    std::vector<int> values = values_for_histogram(n, nbins), bins(static_cast<std::size_t>(nbins), 0);
    sim.launch("clusterHist_kernel", {8, 1, 1}, {128, 1, 1}, bins_per_block * 4, sim.buffer(bins), nbins, bins_per_block,
               sim.buffer(values), static_cast<std::size_t>(n));
    EXPECT_EQ(bins, histogram_of(values, nbins));
}

TEST(simulator_clusters, a_pool_of_host_threads_takes_whole_clusters_and_gives_the_same_histogram)
{
    simulated sim(cluster_kernels());
    sim.cluster = {2, 1, 1};
    sim.threads = 3;
    const int bins_per_block = 16, nbins = 2 * bins_per_block, n = 20000;
    std::vector<int> values = values_for_histogram(n, nbins), bins(static_cast<std::size_t>(nbins), 0);
    sim.launch("clusterHist_kernel", {32, 1, 1}, {64, 1, 1}, bins_per_block * 4, sim.buffer(bins), nbins, bins_per_block,
               sim.buffer(values), static_cast<std::size_t>(n));
    EXPECT_EQ(bins, histogram_of(values, nbins));
}

TEST(simulator_clusters, a_cluster_reduction_reads_every_blocks_shared_total)
{
    simulated sim(cluster_kernels());
    sim.cluster = {4, 1, 1};
    std::vector<int> x(16 * 128), sums(4, -1), expected(4, 0);
    for (std::size_t i = 0; i < x.size(); ++i)
    {
        x[i] = static_cast<int>(i * 37 % 101) - 50;
        expected[i / 512] += x[i];
    }
    sim.launch("cluster_reduce", {16, 1, 1}, {128, 1, 1}, 0, sim.buffer(x), sim.buffer(sums));
    EXPECT_EQ(sums, expected);
}

TEST(simulator_clusters, the_cluster_registers_on_a_three_dimensional_grid_are_the_hardwares)
{
    simulated sim(cluster_kernels());
    const unsigned grid[3] = {4, 2, 2}, dims[3] = {2, 1, 2};
    std::vector<unsigned> out(16 * 12, 0xdeadu);
    auto expected = [&](bool clustered) {
        const unsigned d[3] = {clustered ? dims[0] : 1u, clustered ? dims[1] : 1u, clustered ? dims[2] : 1u};
        std::vector<unsigned> e;
        for (unsigned z = 0; z < grid[2]; ++z)
            for (unsigned y = 0; y < grid[1]; ++y)
                for (unsigned x = 0; x < grid[0]; ++x)
                {
                    const unsigned l[3] = {x % d[0], y % d[1], z % d[2]};
                    const unsigned n[3] = {grid[0] / d[0], grid[1] / d[1], grid[2] / d[2]};
                    std::vector<unsigned> v = {l[0] + d[0] * (l[1] + d[1] * l[2]), d[0] * d[1] * d[2], l[0], l[1], l[2], d[0],
                                               d[2], x / d[0], y / d[1], z / d[2], n[0] * 100 + n[1] * 10 + n[2],
                                               clustered ? 1u : 0u};
                    e.insert(e.end(), v.begin(), v.end());
                }
        return e;
    };
    sim.cluster = {dims[0], dims[1], dims[2]};
    sim.launch("cluster_registers", {grid[0], grid[1], grid[2]}, {64, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out, expected(true));
    // Without a cluster launch each block is a cluster of one, and cluster.sync() is the block's.
    sim.cluster = {1, 1, 1};
    sim.launch("cluster_registers", {grid[0], grid[1], grid[2]}, {64, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out, expected(false));
}

TEST(simulator_clusters, a_split_arrive_and_wait_lets_each_block_read_what_its_neighbour_wrote)
{
    simulated sim(cluster_kernels());
    sim.cluster = {4, 1, 1};
    std::vector<unsigned> out(8, 99), work(8 * 64, 0);
    sim.launch("ring", {8, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), sim.buffer(work));
    EXPECT_EQ(out, (std::vector<unsigned>{3, 0, 1, 2, 3, 0, 1, 2}));
    EXPECT_EQ(work[64 + 5], 16u);
}

TEST(simulator_clusters, the_shared_cluster_instructions_reach_the_next_blocks_memory)
{
    simulated sim(cluster_kernels());
    sim.cluster = {3, 1, 1};
    std::vector<unsigned> out(3 * 4, 0);
    sim.launch("dsmem_instructions", {3, 1, 1}, {32, 1, 1}, 0, sim.buffer(out));
    for (unsigned r = 0; r < 3; ++r)
    {
        const unsigned next = (r + 1) % 3, left = (r + 2) % 3;
        EXPECT_EQ(out[4 * r + 0], next * 10) << "ld of rank " << r;
        EXPECT_EQ(out[4 * r + 1], next * 10) << "atom's old value, rank " << r;
        EXPECT_EQ(out[4 * r + 2], next) << "getctarank, rank " << r;
        // s[0] = r*10 + 5 + 7 (the left neighbour's atom and red), s[1] = the left neighbour's store of r*10 + 1
        EXPECT_EQ(out[4 * r + 3], (r * 10 + 12) * 1000 + r * 10 + 1) << "rank " << r << " (left " << left << ")";
    }
}

TEST(simulator_clusters, a_rank_past_the_cluster_is_a_fault_naming_the_line)
{
    simulated sim(cluster_kernels());
    sim.cluster = {2, 1, 1};
    std::vector<int> out(4, 0);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("wrong_rank", {4, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("block rank 2 of its cluster, which has 2 blocks (ranks 0 to 1)"), std::string::npos) << message;
    EXPECT_NE(message.find("mapa"), std::string::npos) << message;
    EXPECT_NE(message.find(", line "), std::string::npos) << message;
    EXPECT_NE(message.find("block (0,0,0)"), std::string::npos) << message;
}

TEST(simulator_clusters, reading_the_shared_memory_of_a_block_that_has_ended_is_a_fault)
{
    simulated sim(cluster_kernels());
    sim.cluster = {2, 1, 1};
    std::vector<int> out(1, 0);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("reads_an_ended_block", {2, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("block rank 1 of the cluster"), std::string::npos) << message;
    EXPECT_NE(message.find("which has exited"), std::string::npos) << message;
}

TEST(simulator_clusters, a_cluster_barrier_crossed_with_a_block_barrier_is_reported_as_a_hang)
{
    simulated sim(cluster_kernels());
    sim.cluster = {2, 1, 1};
    std::vector<int> out(64, 0);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("crossed_barriers", {2, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("a barrier that can never complete in the cluster"), std::string::npos) << message;
    EXPECT_NE(message.find("(the cluster barrier)"), std::string::npos) << message;
    EXPECT_NE(message.find("barrier 0, every thread"), std::string::npos) << message;
    EXPECT_NE(message.find("64 of the cluster's 128 threads"), std::string::npos) << message;
}

TEST(simulator_clusters, an_aligned_cluster_barrier_reached_by_part_of_a_warp_is_barrier_divergence)
{
    simulated sim(cluster_kernels());
    sim.cluster = {2, 1, 1};
    std::vector<int> out(32, 0);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("divergent_aligned", {2, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("barrier.cluster.arrive.aligned"), std::string::npos) << message;
    EXPECT_NE(message.find("lanes 0xffff0000"), std::string::npos) << message;
}

TEST(simulator_clusters, the_cluster_barrier_orders_shared_memory_for_the_race_check)
{
    simulated sim(cluster_kernels());
    sim.cluster = {2, 1, 1};
    std::vector<int> out(4, 0);
    sim.launch("ordered_by_the_cluster_barrier", {4, 1, 1}, {64, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out, (std::vector<int>{7, 8, 9, 10}));
}

TEST(simulator_clusters, a_grid_that_is_not_a_multiple_of_the_cluster_is_refused)
{
    simulated sim(cluster_kernels());
    sim.cluster = {4, 1, 1};
    std::vector<int> out(64, 0);
    std::string message = error_of([&] { sim.launch("cluster_reduce", {6, 1, 1}, {128, 1, 1}, 0, sim.buffer(out), sim.buffer(out)); });
    EXPECT_NE(message.find("a grid of 6x1x1 blocks is not a multiple of its cluster of 4x1x1 blocks (axis x)"), std::string::npos)
        << message;
}

TEST(simulator_clusters, isspacep_tells_the_blocks_the_clusters_global_and_local_memory_apart)
{
    simulated sim(cluster_kernels());
    sim.cluster = {2, 1, 1};
    std::vector<unsigned> out(2 * 16, 7);
    std::vector<int> g(4, 0);
    sim.launch("spaces", {2, 1, 1}, {32, 1, 1}, 0, sim.buffer(out), sim.buffer(g), 2);
    const std::vector<unsigned> one = {1, 1, 0, 0, /* the next block's */ 0, 1, 0, 0, /* global */ 0, 0, 1, 0,
                                       /* local */ 0, 0, 0, 1};
    EXPECT_EQ(std::vector<unsigned>(out.begin(), out.begin() + 16), one);
    EXPECT_EQ(std::vector<unsigned>(out.begin() + 16, out.end()), one);
}

TEST(simulator_clusters, a_cluster_over_the_kernels_launch_bounds_is_refused)
{
    simulated sim(cluster_kernels());
    std::vector<int> out(4 * 64, -1), expected(4 * 64);
    sim.cluster = {2, 1, 1};
    sim.launch("two_at_most", {4, 1, 1}, {64, 1, 1}, 0, sim.buffer(out));
    for (std::size_t i = 0; i < expected.size(); ++i)
    {
        expected[i] = static_cast<int>(i / 64 % 2);
    }
    EXPECT_EQ(out, expected);
    sim.cluster = {4, 1, 1};
    std::string message = error_of([&] { sim.launch("two_at_most", {4, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); });
    EXPECT_NE(message.find("a cluster of 4 blocks, over its __launch_bounds__'s most blocks per cluster (.maxclusterrank) of 2"),
              std::string::npos)
        << message;
}
