// The PTX simulator's cooperative launches (block_executor::run_grid, warp_grid_sync.cpp): every block of the
// grid at once on a host thread of its own, so that cooperative_groups::this_grid().sync() (NVRTC's counter in
// the grid's workspace, polled with ld.acquire) completes; a block that fails stops the others, a sync that not
// every block reaches is reported, and a grid sync without a cooperative launch traps as on a GPU.

#include <gtest/gtest.h>

#include <vector>

#include "simulated.hpp"

namespace
{
    const char* const grid_kernels = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// Phases of a 1-D smoothing: each writes its values, the grid syncs, each reads its neighbours' (written by
// other blocks), three times over.
extern "C" __global__ void smooth(float* a, float* b, int n)
{
    cg::grid_group grid = cg::this_grid();
    int i = grid.thread_rank();
    for (int step = 0; step < 3; ++step)
    {
        if (i < n) b[i] = a[(i + n - 1) % n] + 2.0f * a[i] + a[(i + 1) % n];
        grid.sync();
        if (i < n) a[i] = b[i];
        grid.sync();
    }
}
extern "C" __global__ void faulting(float* a, int n)
{
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == 3 && threadIdx.x == 5) a[n + 100] = 1.0f;
    grid.sync();
    a[grid.thread_rank() % n] = 2.0f;
}
extern "C" __global__ void skipping(float* a, int n)
{
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == 2) return;
    grid.sync();
    a[grid.thread_rank() % n] = 2.0f;
}
)";
}

TEST(simulator_grid_sync, a_cooperative_grid_syncs_between_phases_and_reads_what_other_blocks_wrote)
{
    simulated sim(grid_kernels);
    sim.cooperative = true;
    const int n = 8 * 256;
    std::vector<float> a(n), b(n, 0.0f);
    for (int i = 0; i < n; ++i)
    {
        a[static_cast<std::size_t>(i)] = static_cast<float>(i % 17);
    }
    std::vector<float> expected = a, next(n);
    for (int step = 0; step < 3; ++step)  // small integers times 4^3: exact in float
    {
        for (int i = 0; i < n; ++i)
        {
            next[static_cast<std::size_t>(i)] = expected[static_cast<std::size_t>((i + n - 1) % n)] +
                                                2.0f * expected[static_cast<std::size_t>(i)] +
                                                expected[static_cast<std::size_t>((i + 1) % n)];
        }
        expected = next;
    }
    sim.launch("smooth", {8, 1, 1}, {256, 1, 1}, 0, sim.buffer(a), sim.buffer(b), n);
    for (int i = 0; i < n; ++i)
    {
        ASSERT_EQ(a[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)]) << "element " << i;
    }
}

TEST(simulator_grid_sync, a_fault_in_one_block_stops_the_blocks_waiting_for_it_and_is_the_error)
{
    simulated sim(grid_kernels);
    sim.cooperative = true;
    std::vector<float> a(256);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("faulting", {8, 1, 1}, {64, 1, 1}, 0, sim.buffer(a), 256); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("thread (5,0,0) of block (3,0,0): writes 4 bytes"), std::string::npos) << message;
}

TEST(simulator_grid_sync, a_grid_sync_that_a_block_skips_is_reported_instead_of_hanging)
{
    simulated sim(grid_kernels);
    sim.cooperative = true;
    std::vector<float> a(256);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("skipping", {4, 1, 1}, {32, 1, 1}, 0, sim.buffer(a), 256); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("a grid-wide sync that can never complete"), std::string::npos) << message;
    EXPECT_NE(message.find("1 blocks of the cooperative launch have finished, the others poll too"), std::string::npos) << message;
}

TEST(simulator_grid_sync, a_grid_sync_in_a_launch_that_is_not_cooperative_traps_as_on_a_gpu)
{
    simulated sim(grid_kernels);
    std::vector<float> a(256), b(256);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("smooth", {2, 1, 1}, {128, 1, 1}, 0, sim.buffer(a), sim.buffer(b), 256); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_instruction);
    EXPECT_NE(message.find("executed trap"), std::string::npos) << message;
}
