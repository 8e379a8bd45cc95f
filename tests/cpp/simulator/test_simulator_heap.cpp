// The PTX simulator's device malloc/free (device_heap.cpp, warp_heap_operations.cpp): blocks from one arena
// of the context, kept across launches, each access checked against the block it falls in, null when the
// arena is full, and safe from the pool's host threads at once. Each test compiles CUDA C++ with NVRTC and
// runs it in the simulator's core on host buffers.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "simulated.hpp"

namespace
{
    const char* const heap_kernels = R"(
extern "C" __global__ void make(unsigned long long* blocks, int count)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int* p = (int*)malloc(count * sizeof(int));
    blocks[t] = (unsigned long long)p;
    if (p) for (int k = 0; k < count; ++k) p[k] = t * 1000 + k;
}
extern "C" __global__ void take(const unsigned long long* blocks, int count, int* sums)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int* p = (int*)blocks[t];
    int sum = 0;
    for (int k = 0; k < count; ++k) sum += p[k];
    sums[t] = sum;
    free(p);
}
extern "C" __global__ void overrun(int count)
{
    int* p = (int*)malloc(count * sizeof(int));
    p[count + threadIdx.x] = 1;
}
extern "C" __global__ void after_free(int* out)
{
    int* p = (int*)malloc(64);
    free(p);
    out[threadIdx.x] = p[threadIdx.x];
}
extern "C" __global__ void bad_free(int* out) { free(out + threadIdx.x); }
)";
}

TEST(simulator_device_heap, blocks_malloc_gives_in_one_launch_are_read_and_freed_in_the_next)
{
    simulated sim(heap_kernels);
    ASSERT_NE(sim.ptx.find("malloc"), std::string::npos);
    const int threads = 2 * 96, count = 10;
    std::vector<unsigned long long> blocks(threads);
    std::vector<int> sums(threads, -1);
    sim.threads = 4;  // blocks on four host threads, each calling malloc at once
    sim.launch("make", {2, 1, 1}, {96, 1, 1}, 0, sim.buffer(blocks), count);
    std::set<unsigned long long> distinct(blocks.begin(), blocks.end());
    EXPECT_EQ(distinct.size(), static_cast<std::size_t>(threads));
    std::vector<unsigned long long> sorted(blocks);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i)
    {
        EXPECT_NE(sorted[i], 0u);
        EXPECT_EQ(sorted[i] % 16, 0u) << "malloc's blocks are 16-byte aligned";
        if (i > 0)
        {
            EXPECT_GE(sorted[i] - sorted[i - 1], count * sizeof(int)) << "two blocks overlap";
        }
    }
    sim.launch("take", {2, 1, 1}, {96, 1, 1}, 0, sim.buffer(blocks, "blocks"), count, sim.buffer(sums));
    for (int t = 0; t < threads; ++t)
    {
        EXPECT_EQ(sums[static_cast<std::size_t>(t)], t * 1000 * count + count * (count - 1) / 2) << "thread " << t;
    }
    // Every block was freed: the whole arena is there again, for one block of all of it (less its red zone).
    EXPECT_NE(sim.heap.allocate(device_heap::default_bytes - 16), 0u);
}

TEST(simulator_device_heap, a_full_heap_gives_null_as_a_gpus_does)
{
    simulated sim(heap_kernels);
    ASSERT_TRUE(sim.heap.set_bytes(4096));
    std::vector<unsigned long long> blocks(64);
    sim.launch("make", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(blocks), 100);  // 400 bytes, 432 with alignment and red zone
    long given = std::count_if(blocks.begin(), blocks.end(), [](unsigned long long b) { return b != 0; });
    EXPECT_EQ(given, 4096 / 432);
    EXPECT_TRUE(std::all_of(blocks.begin() + given, blocks.end(), [](unsigned long long b) { return b == 0; }));
    EXPECT_FALSE(sim.heap.set_bytes(1 << 20)) << "resized under blocks that are alive";
}

TEST(simulator_device_heap, an_overrun_a_use_after_free_and_a_bad_free_name_the_block)
{
    simulated sim(heap_kernels);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("overrun", {1, 1, 1}, {4, 1, 1}, 0, 16); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("thread (0,0,0) of block (0,0,0): writes 4 bytes at generic address 0x"), std::string::npos) << message;
    EXPECT_NE(message.find("0 bytes past the end of the block of 64 bytes malloc gave at 0x"), std::string::npos) << message;
    std::vector<int> out(32);
    message = error_of([&] { sim.launch("after_free", {1, 1, 1}, {4, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("that free() released (a use after free)"), std::string::npos) << message;
    message = error_of([&] { sim.launch("bad_free", {1, 1, 1}, {4, 1, 1}, 0, sim.buffer(out, "out")); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("an address device malloc did not give"), std::string::npos) << message;
}
