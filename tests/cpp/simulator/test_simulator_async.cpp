// The PTX simulator's asynchronous copies and their barriers (warp_async_operations.cpp, async_decoder.cpp):
// cp.async with its commit groups and zero fill, cp.async.bulk, and mbarrier as cuda::barrier, cuda::pipeline
// and cooperative_groups::memcpy_async use them. Each test compiles CUDA C++ with NVRTC, runs it in the
// simulator's core on host buffers, and compares with values computed here. The tiled matrix products in the
// shape of the CUDA sample globalToShmemAsyncCopy and a producer/consumer ring of cuda::barrier are
// tests/simulator/exact_kernels.py's (against numpy).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "simulated.hpp"

namespace
{
    std::vector<float> ramp(int count, float scale, int modulo)
    {
        std::vector<float> v(static_cast<std::size_t>(count));
        for (int i = 0; i < count; ++i)
        {
            v[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % modulo) * scale - 1.0f;
        }
        return v;
    }
}

TEST(simulator_async_copies, a_copy_lands_when_its_group_is_waited_for_not_before_and_src_size_fills_zeros)
{
    // Lane l copies 16 bytes with a src-size of 4 * (l % 5) (src-size 0..16: the rest zeros), and with
    // ignore-src set for odd lanes a second copy of zeros. Before the wait the destination still holds
    // what was there (shared memory starts zeroed here, and the kernel wrote -1); wait_group 1 completes the
    // first group only, wait_group 0 the second.
    simulated sim(R"(
extern "C" __global__ void fill(const int* in, int* out)
{
    __shared__ alignas(16) int s[32][4];
    __shared__ alignas(16) int z[32][4];
    int l = threadIdx.x;
    for (int k = 0; k < 4; ++k) { s[l][k] = -1; z[l][k] = -1; }
    unsigned sd = (unsigned)__cvta_generic_to_shared(&s[l][0]), zd = (unsigned)__cvta_generic_to_shared(&z[l][0]);
    int src_size = 4 * (l % 5);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(sd), "l"(in + 4 * l), "r"(src_size) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("{ .reg .pred p; setp.ne.u32 p, %2, 0; cp.async.ca.shared.global [%0], [%1], 16, p; }"
                 :: "r"(zd), "l"(in + 4 * l), "r"(l & 1) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    out[l * 12 + 0] = s[l][0];                                   // before any wait: still -1
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    for (int k = 0; k < 4; ++k) out[l * 12 + 1 + k] = s[l][k];   // the first group has landed
    out[l * 12 + 5] = z[l][0];                                   // the second has not: -1
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    for (int k = 0; k < 4; ++k) out[l * 12 + 6 + k] = z[l][k];
})");
    std::vector<int> in(128), out(32 * 12, 99);
    std::iota(in.begin(), in.end(), 1000);
    sim.checks.async_copy = false;  // the reads before the waits are the point here; the check reports them (test_simulator_async_hazards)
    sim.launch("fill", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    for (int l = 0; l < 32; ++l)
    {
        const int* o = &out[static_cast<std::size_t>(l) * 12];
        EXPECT_EQ(o[0], -1) << "lane " << l << ": the destination changed before the wait";
        for (int k = 0; k < 4; ++k)
        {
            EXPECT_EQ(o[1 + k], k < l % 5 ? 1000 + 4 * l + k : 0) << "lane " << l << ", word " << k;
            EXPECT_EQ(o[6 + k], (l & 1) ? 0 : 1000 + 4 * l + k) << "lane " << l << ", ignore-src word " << k;
        }
        EXPECT_EQ(o[5], -1) << "lane " << l << ": the second group landed at wait_group 1";
    }
}

TEST(simulator_async_copies, a_bulk_copy_completes_its_bytes_on_the_barrier_of_cuda_memcpy_async)
{
    simulated sim(R"(
#include <cuda/barrier>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void bulk(const float* a, float* out)
{
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ alignas(16) float s[256];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(block, s, a + 256 * blockIdx.x, cuda::aligned_size_t<16>(sizeof(float) * 256), bar);
    bar.arrive_and_wait();
    out[256 * blockIdx.x + threadIdx.x] = s[255 - threadIdx.x] * 2.0f;
})", {"-std=c++17"});
    ASSERT_NE(sim.ptx.find("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"), std::string::npos);
    std::vector<float> a = ramp(512, 0.5f, 101), out(512);
    sim.launch("bulk", {2, 1, 1}, {256, 1, 1}, 0, sim.buffer(a), sim.buffer(out));
    for (int b = 0; b < 2; ++b)
    {
        for (int t = 0; t < 256; ++t)
        {
            EXPECT_EQ(out[static_cast<std::size_t>(256 * b + t)], a[static_cast<std::size_t>(256 * b + 255 - t)] * 2.0f) << b << " " << t;
        }
    }
}

TEST(simulator_mbarrier, phases_counts_transaction_bytes_and_drops_read_as_the_ptx_isa_defines_them)
{
    // One thread walks an mbarrier through its phases with inline PTX; each value is what the ISA says:
    // pending_count of a state is the arrivals pending before that arrive, a wait on a state (or a parity)
    // is true once that phase has completed, transaction bytes hold a phase open, arrive_drop lowers the
    // count of the phases after it.
    simulated sim(R"(
__device__ unsigned long long arrive(unsigned bar, unsigned count)
{
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1], %2;" : "=l"(state) : "r"(bar), "r"(count) : "memory");
    return state;
}
__device__ int done_state(unsigned bar, unsigned long long state)
{
    int r;
    asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.b32 %0, 1, 0, p; }" : "=r"(r) : "r"(bar), "l"(state) : "memory");
    return r;
}
__device__ int done_parity(unsigned bar, unsigned parity)
{
    int r;
    asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; selp.b32 %0, 1, 0, p; }" : "=r"(r) : "r"(bar), "r"(parity) : "memory");
    return r;
}
__device__ unsigned pending(unsigned long long state)
{
    unsigned r;
    asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(r) : "l"(state));
    return r;
}
extern "C" __global__ void phases(int* out)
{
    __shared__ unsigned long long storage;
    unsigned bar = (unsigned)__cvta_generic_to_shared(&storage);
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(bar), "r"(3) : "memory");
    unsigned long long first = arrive(bar, 1);
    out[0] = pending(first);                    // 3: pending before the arrive
    out[1] = done_state(bar, first);            // 0: phase 0 still open (2 pending)
    unsigned long long second = arrive(bar, 2); // phase 0 completes
    out[2] = pending(second);                   // 2
    out[3] = done_state(bar, first);            // 1
    out[4] = done_parity(bar, 0);               // 1: phase 0 (even) completed
    out[5] = done_parity(bar, 1);               // 0: phase 1 is open
    asm volatile("mbarrier.expect_tx.shared.b64 [%0], %1;" :: "r"(bar), "r"(100) : "memory");
    unsigned long long third = arrive(bar, 3);  // every arrival is in, 100 bytes are not
    out[6] = done_parity(bar, 1);               // 0
    asm volatile("mbarrier.complete_tx.shared.b64 [%0], %1;" :: "r"(bar), "r"(100) : "memory");
    out[7] = done_parity(bar, 1);               // 1: phase 1 completed
    out[8] = pending(third);                    // 3
    unsigned long long dropped;
    asm volatile("mbarrier.arrive_drop.shared.b64 %0, [%1];" : "=l"(dropped) : "r"(bar) : "memory");
    out[9] = pending(dropped);                  // 3 (phase 2)
    unsigned long long fourth = arrive(bar, 2); // phase 2 completes with the drop and these two
    out[10] = done_state(bar, fourth);          // 1
    unsigned long long fifth = arrive(bar, 1);  // phase 3 expects 2 now
    out[11] = pending(fifth);                   // 2
    out[12] = done_parity(bar, 1);              // 0: phase 3 (odd) open
    asm volatile("mbarrier.inval.shared.b64 [%0];" :: "r"(bar) : "memory");
})");
    std::vector<int> out(13, -1);
    sim.launch("phases", {1, 1, 1}, {1, 1, 1}, 0, sim.buffer(out));
    const int expected[13] = {3, 0, 2, 1, 1, 0, 0, 1, 3, 3, 1, 2, 0};
    for (int k = 0; k < 13; ++k)
    {
        EXPECT_EQ(out[static_cast<std::size_t>(k)], expected[k]) << "out[" << k << "]";
    }
}

TEST(simulator_mbarrier, misuse_is_reported_naming_the_barrier_problem_instead_of_hanging)
{
    simulated sim(R"(
#include <cuda/barrier>
extern "C" __global__ void uninitialised(int* out)
{
    __shared__ unsigned long long storage;
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"((unsigned)__cvta_generic_to_shared(&storage)) : "memory");
    out[threadIdx.x] = (int)state;
}
extern "C" __global__ void too_many(int* out)
{
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, 16);
    __syncthreads();
    if (threadIdx.x == 3) (void)bar.arrive(20);
    out[threadIdx.x] = 1;
}
extern "C" __global__ void never(int* out)
{
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x + 32);
    __syncthreads();
    bar.arrive_and_wait();
    out[threadIdx.x] = 1;
}
)", {"-std=c++17"});
    std::vector<int> out(64);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("uninitialised", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::launch_failed);
    EXPECT_NE(message.find("an mbarrier that is not initialised"), std::string::npos) << message;
    EXPECT_NE(message.find("thread (0,0,0) of block (0,0,0)"), std::string::npos) << message;
    message = error_of([&] { sim.launch("too_many", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_NE(message.find("20 arrival(s) at an mbarrier whose phase has 16 pending"), std::string::npos) << message;
    EXPECT_NE(message.find("thread (3,0,0)"), std::string::npos) << message;
    message = error_of([&] { sim.launch("never", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("a barrier that can never complete in block (0,0,0)"), std::string::npos) << message;
    EXPECT_NE(message.find("warp 1 (threads (32,0,0) to (63,0,0)) (an mbarrier phase that does not complete) spins at 'mbarrier.try_wait"), std::string::npos) << message;
}
