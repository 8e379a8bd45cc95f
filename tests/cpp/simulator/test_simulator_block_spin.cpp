// Warps of one block that sync without a barrier (magics/src/simulator/warp_block_spin.cpp,
// reserved_shared.hpp): cooperative groups' tiles of several warps keep their scratch in the block's
// reserved shared memory (%reserved_smem_offset_1) and sync by atomics and polls; a poll that never sees
// a change is a block that can never complete.

#include "simulated.hpp"

TEST(simulator_block_spin, a_tile_of_two_warps_reduces_through_the_reserved_shared_memory)
{
    simulated sim(R"(
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void tile_sums(const int* in, int* out)
{
    __shared__ cg::block_tile_memory<256> scratch;
    auto block = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<64>(block);
    int sum = cg::reduce(tile, in[threadIdx.x], cg::plus<int>());
    if (tile.thread_rank() == 0) out[tile.meta_group_rank()] = sum;
}
)", {"-std=c++17"});
    std::vector<int> in(256), out(4, -1);
    std::iota(in.begin(), in.end(), 1);
    sim.launch("tile_sums", {1, 1, 1}, {256, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    for (int t = 0; t < 4; ++t)
    {
        int expected = 0;
        for (int i = t * 64; i < (t + 1) * 64; ++i) expected += in[i];
        EXPECT_EQ(out[t], expected) << t;
    }
}

TEST(simulator_block_spin, a_warp_polling_a_flag_another_warp_sets_waits_for_it)
{
    simulated sim(R"(
extern "C" __global__ void handoff(int* out)
{
    __shared__ int flag;
    if (threadIdx.x == 0) { flag = 0; }
    __syncthreads();
    if (threadIdx.x == 0) {  // warp 0 waits for warp 1's value: the simulator runs warp 0 first
        int seen;
        while ((seen = *(volatile int*)&flag) == 0) {}
        out[0] = seen;
    }
    if (threadIdx.x == 32) atomicExch(&flag, 42);
}
extern "C" __global__ void forever(int* out)
{
    __shared__ int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x == 0) { while (*(volatile int*)&flag == 0) {} }
    out[threadIdx.x] = 1;
}
)");
    std::vector<int> out(64);
    sim.launch("handoff", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out[0], 42);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("forever", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("a barrier that can never complete in block (0,0,0)"), std::string::npos) << message;
    EXPECT_NE(message.find("(a poll of memory no warp of the block changes)"), std::string::npos) << message;
}
