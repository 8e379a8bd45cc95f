// The PTX simulator (magics/src/simulator), family by family: each test compiles CUDA C++ with NVRTC
// (compute_90: PTX only), runs it in the simulator's core (ptx_parser -> block_executor) on host
// buffers, and compares with values computed here on the host.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "simulated.hpp"


// ---- (a) ld/st param and global, mov, cvt, integer and float arithmetic, setp/selp, branches ----

TEST(simulator_basics, saxpy_matches_the_host_fma)
{
    simulated sim(R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; })");
    const std::size_t n = 1000;  // not a multiple of the block: the last block diverges at the bound
    std::vector<float> x(n), y(n), out(n + 24, -1.0f);
    for (std::size_t i = 0; i < n; ++i)
    {
        x[i] = 0.37f * static_cast<float>(i) - 11.0f;
        y[i] = 1.0f / static_cast<float>(i + 3);
    }
    sim.launch("saxpy", {4, 1, 1}, {256, 1, 1}, 0, 2.5f, sim.buffer(x), sim.buffer(y), sim.buffer(out), n);
    for (std::size_t i = 0; i < n; ++i)
    {
        ASSERT_EQ(out[i], std::fma(2.5f, x[i], y[i])) << "element " << i;
    }
    EXPECT_EQ(out[n], -1.0f) << "threads past n must not write";
}

TEST(simulator_basics, integer_arithmetic_of_every_width_matches_the_host)
{
    simulated sim(R"(
extern "C" __global__ void ints(const int* a, const int* b, int* s32, unsigned* u32, long long* s64,
                                unsigned long long* u64, double* f64)
{
    int i = threadIdx.x;
    int x = a[i], y = b[i];
    s32[4 * i + 0] = x * y + (x - y);
    s32[4 * i + 1] = (x >> 3) ^ (y << 5) | (x & 0xff);
    s32[4 * i + 2] = x < y ? x : y * 7;
    s32[4 * i + 3] = (short)x + (signed char)y;
    unsigned ux = x, uy = y;
    u32[2 * i + 0] = (ux >> 7) + ux * uy - (uy << 3);
    u32[2 * i + 1] = ux > uy ? ux - uy : uy % 13u;
    long long lx = x, ly = y;
    s64[i] = lx * ly * 3 + (lx << 33) - (ly >> 2);
    u64[i] = (unsigned long long)ux * 0x100000001ull + (unsigned long long)lx;
    f64[i] = (double)x * 0.5 + (double)uy / 3.0;
})");
    const int n = 64;
    std::vector<int> a(n), b(n), s32(4 * n);
    std::vector<unsigned> u32(2 * n);
    std::vector<long long> s64(n);
    std::vector<unsigned long long> u64(n);
    std::vector<double> f64(n);
    for (int i = 0; i < n; ++i)
    {
        a[i] = i * 7919 - 200000 + (i % 3) * 1000000007;
        // Wrapping on purpose (values near INT_MAX), in unsigned arithmetic: signed overflow is UB (UBSan).
        b[i] = static_cast<int>(static_cast<unsigned>(-i * 104729 + 12345) + (i % 5 == 0 ? 2147483000u : 0u));
    }
    sim.launch("ints", {1, 1, 1}, {static_cast<unsigned>(n), 1, 1}, 0, sim.buffer(a), sim.buffer(b), sim.buffer(s32),
               sim.buffer(u32), sim.buffer(s64), sim.buffer(u64), sim.buffer(f64));
    for (int i = 0; i < n; ++i)
    {
        int x = a[i], y = b[i];
        unsigned ux = x, uy = y;
        long long lx = x, ly = y;
        EXPECT_EQ(s32[4 * i + 0], static_cast<int>(ux * uy + (ux - uy))) << i;
        EXPECT_EQ(s32[4 * i + 1], (x >> 3) ^ static_cast<int>(uy << 5) | (x & 0xff)) << i;
        EXPECT_EQ(s32[4 * i + 2], x < y ? x : static_cast<int>(uy * 7)) << i;
        EXPECT_EQ(s32[4 * i + 3], static_cast<short>(x) + static_cast<signed char>(y)) << i;
        EXPECT_EQ(u32[2 * i + 0], (ux >> 7) + ux * uy - (uy << 3)) << i;
        EXPECT_EQ(u32[2 * i + 1], ux > uy ? ux - uy : uy % 13u) << i;
        EXPECT_EQ(s64[i], static_cast<long long>(static_cast<unsigned long long>(lx) * static_cast<unsigned long long>(ly) * 3 +
                                                 (static_cast<unsigned long long>(lx) << 33) - static_cast<unsigned long long>(ly >> 2)))
            << i;
        EXPECT_EQ(u64[i], static_cast<unsigned long long>(ux) * 0x100000001ull + static_cast<unsigned long long>(lx)) << i;
        EXPECT_EQ(f64[i], static_cast<double>(x) * 0.5 + static_cast<double>(uy) / 3.0) << i;
    }
}

TEST(simulator_basics, a_per_thread_array_indexed_at_run_time_lives_in_local_memory)
{
    simulated sim(R"(
extern "C" __global__ void local_array(const int* pick, int* out)
{
    int table[16];
    for (int k = 0; k < 16; ++k) table[k] = k * k + threadIdx.x;
    out[threadIdx.x] = table[pick[threadIdx.x] & 15] + table[(pick[threadIdx.x] >> 4) & 15];
})");
    EXPECT_NE(sim.ptx.find("__local_depot"), std::string::npos) << "the test needs local memory";
    std::vector<int> pick(64), out(64);
    for (int i = 0; i < 64; ++i)
    {
        pick[i] = (i * 37) % 256;
    }
    sim.launch("local_array", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(pick), sim.buffer(out));
    for (int i = 0; i < 64; ++i)
    {
        int a = pick[i] & 15, b = (pick[i] >> 4) & 15;
        EXPECT_EQ(out[i], a * a + i + b * b + i) << i;
    }
}

TEST(simulator_basics, bit_instructions_match_the_host)
{
    simulated sim(R"(
extern "C" __global__ void bit_ops(const unsigned* in, unsigned* out)
{
    unsigned x = in[threadIdx.x], y = in[63 - threadIdx.x];
    unsigned* o = out + 8 * threadIdx.x;
    o[0] = __popc(x) + (__clz(y) << 8) + (__ffs(x) << 16);
    o[1] = __brev(x);
    o[2] = __byte_perm(x, y, 0x7531);
    unsigned field, sfield, inserted;
    asm("bfe.u32 %0, %1, 5, 9;" : "=r"(field) : "r"(x));
    asm("bfe.s32 %0, %1, 20, 12;" : "=r"(sfield) : "r"(x));
    asm("bfi.b32 %0, %1, %2, 8, 12;" : "=r"(inserted) : "r"(y), "r"(x));
    o[3] = field;
    o[4] = sfield;
    o[5] = inserted;
    o[6] = __funnelshift_l(x, y, threadIdx.x) ^ __umulhi(x, y);
    o[7] = __popcll(((unsigned long long)x << 32) | y) + __clzll((unsigned long long)y);
})");
    std::vector<unsigned> in(64), out(8 * 64);
    for (unsigned i = 0; i < 64; ++i)
    {
        in[i] = i == 0 ? 0u : (i * 2654435761u) ^ (i << 27);
    }
    sim.launch("bit_ops", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    for (unsigned i = 0; i < 64; ++i)
    {
        unsigned x = in[i], y = in[63 - i];
        const unsigned* o = out.data() + 8 * i;
        unsigned clz = y == 0 ? 32 : static_cast<unsigned>(__builtin_clz(y));
        EXPECT_EQ(o[0], static_cast<unsigned>(__builtin_popcount(x)) + (clz << 8) + (static_cast<unsigned>(__builtin_ffs(static_cast<int>(x))) << 16)) << i;
        unsigned reversed = 0;
        for (unsigned k = 0; k < 32; ++k)
        {
            reversed |= ((x >> k) & 1u) << (31 - k);
        }
        EXPECT_EQ(o[1], reversed) << i;
        unsigned long long bytes = (static_cast<unsigned long long>(y) << 32) | x;
        unsigned perm = 0;
        for (unsigned k = 0; k < 4; ++k)
        {
            perm |= static_cast<unsigned>((bytes >> (8 * ((0x7531u >> (4 * k)) & 7))) & 0xff) << (8 * k);
        }
        EXPECT_EQ(o[2], perm) << i;
        EXPECT_EQ(o[3], (x >> 5) & 0x1ffu) << i;
        EXPECT_EQ(static_cast<int>(o[4]), static_cast<int>(x) >> 20) << i;  // bits 20..31, sign-extended
        EXPECT_EQ(o[5], (x & ~(0xfffu << 8)) | ((y & 0xfffu) << 8)) << i;
        unsigned shift = i & 31;
        unsigned funnel = shift == 0 ? y : (y << shift) | (x >> (32 - shift));
        EXPECT_EQ(o[6], funnel ^ static_cast<unsigned>((static_cast<unsigned long long>(x) * y) >> 32)) << i;
        unsigned clzll = y == 0 ? 64 : 32 + static_cast<unsigned>(__builtin_clz(y));
        EXPECT_EQ(o[7], static_cast<unsigned>(__builtin_popcount(x) + __builtin_popcount(y)) + clzll) << i;
    }
}

TEST(simulator_basics, initialised_constant_and_device_variables_are_read_and_written)
{
    simulated sim(R"(
__constant__ float weights[5] = {0.5f, -1.25f, 2.0f, 3.5f, -0.75f};
__constant__ double scale = 1.5;
__device__ int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
__device__ unsigned long long counter;
__device__ short small[3] = {-2, 7, -300};
extern "C" __global__ void variables(float* out, int* out_int)
{
    int i = threadIdx.x;
    out[i] = weights[i % 5] * (float)scale + small[i % 3];
    out_int[i] = table[(i * 3) % 8];
    atomicAdd(&counter, (unsigned long long)i);
    __syncthreads();
    if (i == 0) out_int[64] = (int)counter;
})");
    std::vector<float> out(64);
    std::vector<int> out_int(65);
    sim.launch("variables", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), sim.buffer(out_int));
    const float weights[5] = {0.5f, -1.25f, 2.0f, 3.5f, -0.75f};
    const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
    const short small[3] = {-2, 7, -300};
    for (int i = 0; i < 64; ++i)
    {
        EXPECT_EQ(out[i], weights[i % 5] * 1.5f + small[i % 3]) << i;
        EXPECT_EQ(out_int[i], table[(i * 3) % 8]) << i;
    }
    EXPECT_EQ(out_int[64], 63 * 64 / 2);
}

TEST(simulator_basics, lop3_testp_and_tanh_from_inline_ptx_match_the_host)
{
    simulated sim(R"(
extern "C" __global__ void misc(const unsigned* in, const float* f, unsigned* out, float* tanh_out)
{
    int i = threadIdx.x;
    unsigned a = in[i], b = in[(i + 1) & 31], c = in[(i + 7) & 31], r, finite, normal, nan;
    asm("lop3.b32 %0, %1, %2, %3, 0xe8;" : "=r"(r) : "r"(a), "r"(b), "r"(c));   // majority(a, b, c)
    asm("{ .reg .pred p; testp.finite.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(finite) : "f"(f[i]));
    asm("{ .reg .pred p; testp.normal.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(normal) : "f"(f[i]));
    asm("{ .reg .pred p; testp.notanumber.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(nan) : "f"(f[i]));
    out[i] = r;
    out[32 + i] = finite | normal << 1 | nan << 2;
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(f[i]));
    tanh_out[i] = t;
})");
    std::vector<unsigned> in(32), out(64);
    std::vector<float> f(32), tanh_out(32);
    const float specials[] = {0.0f, 1e-40f, INFINITY, -INFINITY, NAN, 3.0f, -0.5f, 1e38f};
    for (unsigned i = 0; i < 32; ++i)
    {
        in[i] = i * 2654435761u;
        f[i] = i < 8 ? specials[i] : (static_cast<float>(i) - 16.0f) * 0.37f;
    }
    sim.launch("misc", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(f), sim.buffer(out), sim.buffer(tanh_out));
    for (unsigned i = 0; i < 32; ++i)
    {
        unsigned a = in[i], b = in[(i + 1) & 31], c = in[(i + 7) & 31];
        EXPECT_EQ(out[i], (a & b) | (a & c) | (b & c)) << i;
        unsigned expected = (std::isfinite(f[i]) ? 1u : 0u) | (std::fpclassify(f[i]) == FP_NORMAL ? 2u : 0u) |
                            (std::isnan(f[i]) ? 4u : 0u);
        EXPECT_EQ(out[32 + i], expected) << i;
        if (!std::isnan(f[i]))
        {
            EXPECT_NEAR(tanh_out[i], std::tanh(f[i]), 1e-3) << i;  // tanh.approx: the hardware's error is ~2^-11
        }
    }
}

// ---- (b) special registers, multi-dimensional grids ----

TEST(simulator_special_registers, every_thread_of_a_3d_grid_sees_its_own_ids)
{
    simulated sim(R"(
extern "C" __global__ void ids(unsigned* out)
{
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned i = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
    unsigned lane, warp;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%warpid;" : "=r"(warp));
    out[i] = (threadIdx.x | threadIdx.y << 4 | threadIdx.z << 8 | blockIdx.x << 12 | blockIdx.y << 16 | blockIdx.z << 20
              | blockDim.x << 24) ^ (gridDim.x + gridDim.y * 3 + gridDim.z * 5 + blockDim.y * 7 + blockDim.z * 11);
    out[4096 + i] = lane | warp << 8;
})");
    std::vector<unsigned> out(8192, 0xdeadbeef);
    const unsigned gx = 3, gy = 2, gz = 2, bx = 5, by = 4, bz = 3;  // 60 threads a block: two warps, one partial
    sim.launch("ids", {gx, gy, gz}, {bx, by, bz}, 0, sim.buffer(out));
    for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
            for (unsigned x = 0; x < gx; ++x)
                for (unsigned tz = 0; tz < bz; ++tz)
                    for (unsigned ty = 0; ty < by; ++ty)
                        for (unsigned tx = 0; tx < bx; ++tx)
                        {
                            unsigned block = x + gx * (y + gy * z);
                            unsigned thread = tx + bx * (ty + by * tz);
                            unsigned i = block * bx * by * bz + thread;
                            unsigned expected = (tx | ty << 4 | tz << 8 | x << 12 | y << 16 | z << 20 | bx << 24) ^
                                                (gx + gy * 3 + gz * 5 + by * 7 + bz * 11);
                            ASSERT_EQ(out[i], expected) << "thread " << thread << " of block " << block;
                            ASSERT_EQ(out[4096 + i], (thread % 32) | (thread / 32) << 8);
                        }
}

// ---- (c) shared memory (static and dynamic) and bar.sync ----

TEST(simulator_shared_memory, a_block_reduction_with_static_and_dynamic_shared_memory_sums_each_block)
{
    simulated sim(R"(
extern "C" __global__ void block_sum(const float* in, float* out, int n)
{
    __shared__ float partial[256];
    extern __shared__ float staged[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    staged[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    partial[t] = staged[blockDim.x - 1 - t];
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1)
    {
        if (t < k) partial[t] += partial[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
})");
    const int n = 1000, block = 256, grid = 4;
    std::vector<float> in(n), out(grid);
    for (int i = 0; i < n; ++i)
    {
        in[i] = static_cast<float>(i % 17);  // small integers: every order of additions is exact
    }
    sim.launch("block_sum", {grid, 1, 1}, {block, 1, 1}, block * sizeof(float), sim.buffer(in), sim.buffer(out), n);
    for (int b = 0; b < grid; ++b)
    {
        float expected = 0;
        for (int i = b * block; i < std::min(n, (b + 1) * block); ++i)
        {
            expected += in[i];
        }
        EXPECT_EQ(out[b], expected) << "block " << b;
    }
}

TEST(simulator_shared_memory, threads_that_returned_early_do_not_hold_up_a_barrier)
{
    simulated sim(R"(
extern "C" __global__ void early(int* out)
{
    if (threadIdx.x >= 40) return;
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x * 3;
    __syncthreads();
    out[threadIdx.x] = s[39 - threadIdx.x];
})");
    std::vector<int> out(64, -1);
    sim.launch("early", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out));
    for (int t = 0; t < 64; ++t)
    {
        EXPECT_EQ(out[t], t < 40 ? (39 - t) * 3 : -1) << t;
    }
}

TEST(simulator_shared_memory, a_barrier_inside_a_branch_some_threads_skip_is_reported_as_divergence)
{
    simulated sim(R"(
extern "C" __global__ void bad(int* out)
{ if (threadIdx.x < 16) { __syncthreads(); } out[threadIdx.x] = 1; })");
    std::vector<int> out(64);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("bad", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("barrier divergence in block (0,0,0), warp 0"), std::string::npos) << message;
    EXPECT_NE(message.find("(thread (0,0,0) first) reached 'bar.sync"), std::string::npos) << message;
    EXPECT_NE(message.find(", but lanes 0xffff0000 (thread (16,0,0) first) of the warp"), std::string::npos) << message;
}

// The double-buffered shape of a public SGEMM tutorial (issue 51): each half of a 64-thread block calls
// __syncthreads() on its own side of a branch. NVIDIA GPUs complete one barrier with both halves (200 of 200
// launches on an H100 gave this result); the simulator does too, and warns once naming both lines.
const char* k_two_sides = R"(
extern "C" __global__ void two_sides(const float* in, float* out, int steps)
{
    __shared__ float buffer[2][64];
    int t = threadIdx.x;
    buffer[0][t] = in[t];
    __syncthreads();
    for (int k = 0; k < steps; ++k)
    {
        int now = k & 1;
        if (t < 32) { buffer[now ^ 1][t] = buffer[now][63 - t] + 1.0f; __syncthreads(); }
        else { buffer[now ^ 1][t] = buffer[now][63 - t] * 2.0f; __syncthreads(); }
    }
    out[t] = buffer[steps & 1][t];
})";

TEST(simulator_shared_memory, warps_at_different_syncthreads_complete_one_barrier_together_with_one_warning)
{
    simulated sim(k_two_sides);
    std::vector<float> in(64), out(64), expected(64);
    std::iota(in.begin(), in.end(), 0.0f);
    const int steps = 5;
    std::vector<float> now = in;
    for (int k = 0; k < steps; ++k)
    {
        std::vector<float> next(64);
        for (int t = 0; t < 64; ++t)
        {
            next[t] = t < 32 ? now[63 - t] + 1.0f : now[63 - t] * 2.0f;
        }
        now = next;
    }
    sim.launch("two_sides", {2, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out), steps);
    EXPECT_EQ(out, now);
    ASSERT_EQ(sim.warnings.messages.size(), 1u) << "one warning for the pair of instructions, not one per block or step";
    const std::string& warning = sim.warnings.messages[0];
    EXPECT_NE(warning.find("met at different __syncthreads(): warp 0 (threads (0,0,0) to (31,0,0)) waits at 'bar.sync 0'"),
              std::string::npos) << warning;
    EXPECT_NE(warning.find("line 11 of"), std::string::npos) << warning;
    EXPECT_NE(warning.find("; warp 1 (threads (32,0,0) to (63,0,0)) at another barrier, 'bar.sync 0'"), std::string::npos)
        << warning;
    EXPECT_NE(warning.find("line 12 of"), std::string::npos) << warning;
    EXPECT_NE(warning.find("NVIDIA GPUs complete one barrier with both"), std::string::npos) << warning;
}

TEST(simulator_shared_memory, in_strict_mode_warps_at_different_syncthreads_are_reported_as_divergence)
{
    simulated sim(k_two_sides);
    sim.strict_barriers = true;
    std::vector<float> in(64), out(64);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("two_sides", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out), 3); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("barrier divergence in block (0,0,0): warp 0 (threads (0,0,0) to (31,0,0)) waits at 'bar.sync"),
              std::string::npos) << message;
    EXPECT_NE(message.find("line 11 of"), std::string::npos) << message;
    EXPECT_NE(message.find("; warp 1 (threads (32,0,0) to (63,0,0)) at another barrier, 'bar.sync"), std::string::npos) << message;
    EXPECT_NE(message.find("line 12 of"), std::string::npos) << message;
    EXPECT_NE(message.find("XCUDA_SIM_STRICT_BARRIERS=1"), std::string::npos) << message;
}

const char* k_racy = R"(
extern "C" __global__ void racy(int* out, int sync)
{
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    if (sync) __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
})";

TEST(simulator_shared_memory, a_read_and_a_write_of_one_shared_word_by_two_warps_without_a_barrier_is_a_race)
{
    simulated sim(k_racy);
    std::vector<int> out(64);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("racy", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), 0); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::shared_race);
    // Warp 0 runs first: thread 31 reads s[32] (line 7) before thread 32, of warp 1, writes it (line 5).
    EXPECT_NE(message.find("a shared-memory race in block (0,0,0) on 'racy::s' (byte 128 of 256), shared address 0x80"),
              std::string::npos) << message;
    EXPECT_NE(message.find("thread (32,0,0) writes it at 'st.shared"), std::string::npos) << message;
    EXPECT_NE(message.find("line 5 of"), std::string::npos) << message;
    EXPECT_NE(message.find("thread (31,0,0) read it at 'ld.shared"), std::string::npos) << message;
    EXPECT_NE(message.find("line 7 of"), std::string::npos) << message;
}

TEST(simulator_shared_memory, a_barrier_between_the_write_and_the_read_is_no_race)
{
    simulated sim(k_racy);
    std::vector<int> out(64);
    sim.launch("racy", {2, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), 1);
    for (int t = 0; t < 64; ++t)
    {
        EXPECT_EQ(out[t], 63 - t) << t;
    }
}

TEST(simulator_shared_memory, lanes_of_one_warp_in_lockstep_and_shared_atomics_are_no_race)
{
    simulated sim(R"(
extern "C" __global__ void mirror(int* out)
{
    __shared__ int s[32];
    s[threadIdx.x] = threadIdx.x;
    out[threadIdx.x] = s[31 - threadIdx.x];
}
extern "C" __global__ void count(int* out)
{
    __shared__ int n;
    atomicAdd(&n, 1);
    __syncthreads();
    out[threadIdx.x] = n;
})");
    // count's n is never set (the simulator's shared memory starts zeroed): the initcheck would report its atomicAdd,
    // and this test is about races.
    sim.checks.init_shared = false;
    std::vector<int> out(64, -1);
    sim.launch("mirror", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out));  // one warp: the store is done for every lane first
    for (int t = 0; t < 32; ++t)
    {
        EXPECT_EQ(out[t], 31 - t) << t;
    }
    sim.launch("count", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out));
    for (int t = 0; t < 64; ++t)
    {
        EXPECT_EQ(out[t], 64) << t;
    }
}

TEST(simulator_shared_memory, with_the_race_check_off_a_racy_kernel_runs_to_its_end)
{
    simulated sim(k_racy);
    sim.checks.race = false;
    sim.checks.init_shared = false;  // warp 0 reads s[63] before warp 1 writes it: shared memory starts zeroed here
    std::vector<int> out(64, -1);
    sim.launch("racy", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), 0);
    EXPECT_EQ(out[0], 0);    // warp 1 has not written s[63] when warp 0 reads it: shared memory starts zeroed
    EXPECT_EQ(out[32], 31);  // s[31] was written by warp 0 before warp 1 reads it
}

// ---- (d) shfl.sync, vote.sync, divergence and reconvergence ----

TEST(simulator_warps, a_warp_scan_with_shfl_up_sums_prefixes)
{
    simulated sim(R"(
extern "C" __global__ void scan(const int* in, int* out)
{
    int v = in[threadIdx.x], lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) { int u = __shfl_up_sync(0xffffffffu, v, o); if (lane >= o) v += u; }
    out[threadIdx.x] = v;
    out[64 + threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 1) + __shfl_down_sync(0xffffffffu, v, 3) * 1000
                           + __shfl_sync(0xffffffffu, v, 5, 8) * 1000000;
})");
    std::vector<int> in(64), out(128);
    for (int i = 0; i < 64; ++i)
    {
        in[i] = (i * 37) % 11 - 3;
    }
    sim.launch("scan", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    std::vector<int> prefix(64);
    for (int w = 0; w < 2; ++w)
    {
        int sum = 0;
        for (int l = 0; l < 32; ++l)
        {
            sum += in[w * 32 + l];
            prefix[w * 32 + l] = sum;
        }
    }
    for (int i = 0; i < 64; ++i)
    {
        int l = i & 31, w = i & ~31;
        EXPECT_EQ(out[i], prefix[i]) << i;
        int down = l + 3 < 32 ? prefix[w + l + 3] : prefix[i];
        int idx = prefix[w + (l & ~7) + 5];
        EXPECT_EQ(out[64 + i], prefix[w + (l ^ 1)] + down * 1000 + idx * 1000000) << i;
    }
}

TEST(simulator_warps, divergent_lanes_reconverge_before_a_full_warp_vote)
{
    simulated sim(R"(
extern "C" __global__ void votes(const int* in, unsigned* out)
{
    int lane = threadIdx.x & 31, v = in[threadIdx.x];
    unsigned inside = 0;
    if (lane % 3 == 0) { v = v * 2 + 1; inside = __activemask(); }
    else if (lane % 3 == 1) { v -= 7; inside = __ballot_sync(__activemask(), v > 0); }
    else { for (int k = 0; k < lane; ++k) v += k; }
    // All 32 lanes must be back together here: a full-mask vote and shuffle.
    out[threadIdx.x] = __ballot_sync(0xffffffffu, v & 1);
    out[32 + threadIdx.x] = __any_sync(0xffffffffu, v > 100) | __all_sync(0xffffffffu, v > -1000) << 1;
    out[64 + threadIdx.x] = __shfl_sync(0xffffffffu, v, 31 - lane);
    out[96 + threadIdx.x] = inside;
})");
    std::vector<int> in(32);
    std::vector<unsigned> out(128);
    for (int i = 0; i < 32; ++i)
    {
        in[i] = (i * 29) % 23 - 9;
    }
    sim.launch("votes", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    std::vector<int> v(32);
    unsigned mask0 = 0, mask1 = 0, ballot1 = 0;
    for (int l = 0; l < 32; ++l)
    {
        mask0 |= (l % 3 == 0 ? 1u : 0u) << l;
        mask1 |= (l % 3 == 1 ? 1u : 0u) << l;
    }
    unsigned odd = 0;
    bool any = false, all = true;
    for (int l = 0; l < 32; ++l)
    {
        v[l] = in[l];
        if (l % 3 == 0) v[l] = v[l] * 2 + 1;
        else if (l % 3 == 1) { v[l] -= 7; ballot1 |= (v[l] > 0 ? 1u : 0u) << l; }
        else for (int k = 0; k < l; ++k) v[l] += k;
        odd |= static_cast<unsigned>(v[l] & 1) << l;
        any = any || v[l] > 100;
        all = all && v[l] > -1000;
    }
    for (int l = 0; l < 32; ++l)
    {
        EXPECT_EQ(out[l], odd) << l;
        EXPECT_EQ(out[32 + l], (any ? 1u : 0u) | (all ? 2u : 0u)) << l;
        EXPECT_EQ(static_cast<int>(out[64 + l]), v[31 - l]) << l;
        EXPECT_EQ(out[96 + l], l % 3 == 0 ? mask0 : l % 3 == 1 ? ballot1 : 0u) << l;
    }
}

TEST(simulator_warps, tiles_of_a_warp_shuffle_reduce_and_match_within_their_own_lanes)
{
    simulated sim(R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void tiles(const int* in, int* out)
{
    auto tile = cg::tiled_partition<8>(cg::this_thread_block());
    int v = in[threadIdx.x];
    int sum = v;
    for (int o = tile.size() / 2; o > 0; o /= 2) sum += tile.shfl_down(sum, o);
    out[threadIdx.x] = tile.shfl(sum, 0);                                        // shfl.sync, tile masks
    out[64 + threadIdx.x] = __reduce_add_sync(0xffffffffu, v);                   // redux.sync.add
    out[128 + threadIdx.x] = __reduce_max_sync(tile.meta_group_rank() < 2 ? 0x0000ffffu : 0xffff0000u, v);
    out[192 + threadIdx.x] = __match_any_sync(0xffffffffu, v % 3);               // match.any
    out[256 + threadIdx.x] = tile.ballot(v & 1);                                 // vote.ballot in a tile
})");
    std::vector<int> in(32), out(320);
    for (int i = 0; i < 32; ++i)
    {
        in[i] = (i * 13) % 29 - 7;
    }
    sim.launch("tiles", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    int total = std::accumulate(in.begin(), in.end(), 0);
    for (int l = 0; l < 32; ++l)
    {
        int tile = l / 8, sum = 0, half_max = -1000;
        unsigned same = 0, odd = 0;
        for (int k = 0; k < 8; ++k)
        {
            sum += in[tile * 8 + k];
            odd |= static_cast<unsigned>(in[tile * 8 + k] & 1) << k;
        }
        for (int k = (l < 16 ? 0 : 16); k < (l < 16 ? 16 : 32); ++k)
        {
            half_max = std::max(half_max, in[k]);
        }
        for (int k = 0; k < 32; ++k)
        {
            same |= static_cast<unsigned>(in[k] % 3 == in[l] % 3) << k;
        }
        EXPECT_EQ(out[l], sum) << l;
        EXPECT_EQ(out[64 + l], total) << l;
        EXPECT_EQ(out[128 + l], half_max) << l;
        EXPECT_EQ(static_cast<unsigned>(out[192 + l]), same) << l;
        EXPECT_EQ(static_cast<unsigned>(out[256 + l]), odd) << l;
    }
}

TEST(simulator_warps, a_shuffle_naming_lanes_that_took_the_other_branch_is_refused)
{
    simulated sim(R"(
extern "C" __global__ void bad(int* out)
{ int v = threadIdx.x; if (threadIdx.x < 8) v = __shfl_sync(0xffffffffu, v, 0); out[threadIdx.x] = v; })");
    std::vector<int> out(32);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("bad", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_instruction);
    EXPECT_NE(message.find("thread (0,0,0) of block (0,0,0), warp 0: shfl.sync"), std::string::npos) << message;
    EXPECT_NE(message.find("lanes 0xffffff00 named in the mask are elsewhere (divergent; thread (8,0,0) first)"),
              std::string::npos) << message;
}

// ---- (e) atomics ----

TEST(simulator_atomics, global_and_shared_atomics_combine_every_thread)
{
    simulated sim(R"(
extern "C" __global__ void atomics(const int* in, int* g, unsigned* hist, float* fsum)
{
    __shared__ unsigned local_hist[8];
    int i = blockIdx.x * blockDim.x + threadIdx.x, v = in[i];
    if (threadIdx.x < 8) local_hist[threadIdx.x] = 0;
    __syncthreads();
    atomicAdd(&g[0], v);
    atomicMax(&g[1], v);
    atomicMin(&g[2], v);
    atomicCAS(&g[3], 0, i + 1);          // only the first thread to come sees 0
    atomicExch(&g[4], 77);
    atomicOr(&g[5], 1 << (i % 31));
    atomicAdd(&local_hist[v & 7], 1u);
    atomicAdd(fsum, 0.5f);
    __syncthreads();
    if (threadIdx.x < 8) atomicAdd(&hist[threadIdx.x], local_hist[threadIdx.x]);
})");
    const int n = 512;
    std::vector<int> in(n), g(8, 0);
    std::vector<unsigned> hist(8, 0);
    std::vector<float> fsum(1, 0.0f);
    for (int i = 0; i < n; ++i)
    {
        in[i] = (i * 7411) % 1999 - 1000;
    }
    g[1] = -1000000;
    g[2] = 1000000;
    sim.launch("atomics", {4, 1, 1}, {128, 1, 1}, 0, sim.buffer(in), sim.buffer(g), sim.buffer(hist), sim.buffer(fsum));
    long long sum = 0;
    int mx = -1000000, mn = 1000000, bits = 0;
    std::vector<unsigned> expected_hist(8, 0);
    for (int i = 0; i < n; ++i)
    {
        sum += in[i];
        mx = std::max(mx, in[i]);
        mn = std::min(mn, in[i]);
        bits |= 1 << (i % 31);
        ++expected_hist[in[i] & 7];
    }
    EXPECT_EQ(g[0], sum);
    EXPECT_EQ(g[1], mx);
    EXPECT_EQ(g[2], mn);
    EXPECT_GE(g[3], 1);
    EXPECT_LE(g[3], n);
    EXPECT_EQ(g[4], 77);
    EXPECT_EQ(g[5], bits);
    EXPECT_EQ(hist, expected_hist);
    EXPECT_EQ(fsum[0], 0.5f * n);
}

TEST(simulator_math, half_precision_conversions_round_to_nearest_even_as_the_host_does)
{
    simulated sim(R"(
#include <cuda_fp16.h>
extern "C" __global__ void halves(const float* in, const double* din, unsigned short* bits, float* back, unsigned short* dbits)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half h = __float2half_rn(in[i]);
    bits[i] = __half_as_ushort(h);
    back[i] = __half2float(h);
    dbits[i] = __half_as_ushort(__double2half(din[i]));
})");
    std::vector<float> in;
    std::vector<double> din;
    for (float v : {0.0f, -0.0f, 1.0f, 1.1f, 65504.0f, 65519.0f, 65520.0f, 1e9f, -3.14159f, 5.96046448e-8f, 2.98023224e-8f,
                    2.98023225e-8f, 6.1e-5f, 1.0009765625f + 0.00048828125f, 1.0f + 0.00048828125f, 2049.0f, 2051.0f})
    {
        in.push_back(v);
    }
    for (int k = 0; in.size() < 256; ++k)
    {
        in.push_back(std::ldexp(static_cast<float>((k * 7919) % 4096) / 4096.0f + 0.5f, k % 48 - 30) * (k % 3 ? 1 : -1));
    }
    for (float v : in)
    {
        din.push_back(static_cast<double>(v) * (1.0 + 1e-12));
    }
    std::vector<unsigned short> bits(256), dbits(256);
    std::vector<float> back(256);
    sim.launch("halves", {2, 1, 1}, {128, 1, 1}, 0, sim.buffer(in), sim.buffer(din), sim.buffer(bits), sim.buffer(back),
               sim.buffer(dbits));
    for (std::size_t i = 0; i < in.size(); ++i)
    {
        _Float16 h = static_cast<_Float16>(in[i]);  // GCC's binary16: round to nearest even
        unsigned short expected;
        std::memcpy(&expected, &h, 2);
        EXPECT_EQ(bits[i], expected) << i << ": " << in[i];
        EXPECT_EQ(back[i], static_cast<float>(h)) << i;
        _Float16 hd = static_cast<_Float16>(din[i]);
        std::memcpy(&expected, &hd, 2);
        EXPECT_EQ(dbits[i], expected) << i << ": " << din[i];
    }
}

// ---- (f) division, remainder, min/max/abs/neg, rcp/sqrt, approximate functions ----

TEST(simulator_math, narrowing_a_double_to_float_rounds_toward_zero_down_and_up_as_asked)
{
    simulated sim(R"(
extern "C" __global__ void narrow(const double* in, float* out)
{
    double d = in[threadIdx.x];
    out[4 * threadIdx.x] = __double2float_rn(d); out[4 * threadIdx.x + 1] = __double2float_rz(d);
    out[4 * threadIdx.x + 2] = __double2float_rd(d); out[4 * threadIdx.x + 3] = __double2float_ru(d);
})");
    const float up = std::nextafter(1.0f, 2.0f), max = std::numeric_limits<float>::max();
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<double> in = {1.0 + std::ldexp(1.0, -30), -(1.0 + std::ldexp(1.0, -30)), 1e39, -1e39, 0.75,
                              static_cast<double>(up) - std::ldexp(1.0, -40)};
    std::vector<float> out(4 * in.size());
    sim.launch("narrow", {1, 1, 1}, {static_cast<unsigned>(in.size()), 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    std::vector<std::vector<float>> expected = {{1.0f, 1.0f, 1.0f, up},  {-1.0f, -1.0f, -up, -1.0f},
                                                {inf, max, max, inf},    {-inf, -max, -inf, -max},
                                                {0.75f, 0.75f, 0.75f, 0.75f}, {up, 1.0f, 1.0f, up}};
    for (std::size_t i = 0; i < in.size(); ++i)
    {
        for (int k = 0; k < 4; ++k)
        {
            EXPECT_EQ(out[4 * i + k], expected[i][k]) << "input " << in[i] << ", rounding " << "nzdu"[k];
        }
    }
}

TEST(simulator_math, division_and_the_correctly_rounded_functions_match_the_host)
{
    simulated sim(R"(
extern "C" __global__ void math(const int* a, const int* b, const float* x, int* iout, float* fout, double* dout)
{
    int i = threadIdx.x;
    int p = a[i], q = b[i];
    iout[6 * i + 0] = p / q;
    iout[6 * i + 1] = p % q;
    iout[6 * i + 2] = (unsigned)p / (unsigned)q;
    iout[6 * i + 3] = min(p, q) + max(p, q) * 3;
    iout[6 * i + 4] = abs(p) - (-q);
    iout[6 * i + 5] = (int)x[i] + __float2int_rn(x[i] * 3.0f) * 100 + (int)floorf(x[i]) * 10000;
    float f = x[i];
    fout[4 * i + 0] = f / 3.0f;
    fout[4 * i + 1] = sqrtf(fabsf(f));
    fout[4 * i + 2] = 1.0f / f;
    fout[4 * i + 3] = fminf(f, 0.25f) - fmaxf(-f, 2.0f);
    dout[2 * i + 0] = sqrt((double)fabsf(f)) / 7.0;
    dout[2 * i + 1] = __sinf(f) + __cosf(f) + exp2f(f * 0.1f);
})");
    const int n = 64;
    std::vector<int> a(n), b(n), iout(6 * n);
    std::vector<float> x(n), fout(4 * n);
    std::vector<double> dout(2 * n);
    for (int i = 0; i < n; ++i)
    {
        a[i] = (i * 92821) % 100003 - 50000;
        b[i] = (i % 7 + 1) * (i % 2 ? -1 : 1) * (i + 3);
        x[i] = (static_cast<float>(i) - 31.5f) * 0.731f;
    }
    sim.launch("math", {1, 1, 1}, {n, 1, 1}, 0, sim.buffer(a), sim.buffer(b), sim.buffer(x), sim.buffer(iout),
               sim.buffer(fout), sim.buffer(dout));
    for (int i = 0; i < n; ++i)
    {
        int p = a[i], q = b[i];
        EXPECT_EQ(iout[6 * i + 0], p / q) << i;
        EXPECT_EQ(iout[6 * i + 1], p % q) << i;
        EXPECT_EQ(iout[6 * i + 2], static_cast<int>(static_cast<unsigned>(p) / static_cast<unsigned>(q))) << i;
        EXPECT_EQ(iout[6 * i + 3], std::min(p, q) + std::max(p, q) * 3) << i;
        EXPECT_EQ(iout[6 * i + 4], std::abs(p) + q) << i;
        EXPECT_EQ(iout[6 * i + 5], static_cast<int>(x[i]) + static_cast<int>(std::nearbyint(x[i] * 3.0f)) * 100 +
                                       static_cast<int>(std::floor(x[i])) * 10000) << i;
        float f = x[i];
        EXPECT_EQ(fout[4 * i + 0], f / 3.0f) << i;
        EXPECT_EQ(fout[4 * i + 1], std::sqrt(std::fabs(f))) << i;
        EXPECT_EQ(fout[4 * i + 2], 1.0f / f) << i;
        EXPECT_EQ(fout[4 * i + 3], std::fmin(f, 0.25f) - std::fmax(-f, 2.0f)) << i;
        EXPECT_EQ(dout[2 * i + 0], std::sqrt(static_cast<double>(std::fabs(f))) / 7.0) << i;
        // The approximate functions: within the hardware's documented error, not bit-exact.
        EXPECT_NEAR(dout[2 * i + 1], std::sin(f) + std::cos(f) + std::exp2(f * 0.1f), 1e-3 * (1 + std::exp2(f * 0.1f))) << i;
    }
}

// ---- (g) calls of .func device functions ----

TEST(simulator_calls, noinline_device_functions_are_called_with_their_arguments_and_results)
{
    simulated sim(R"(
__device__ __noinline__ int weigh(int a, int b) { return a * 3 + b; }
__device__ __noinline__ float blend(float x, float y, int k) { return k > 0 ? __fmul_rn(x, y) + (float)weigh(k, 1) : x - y; }
__device__ __noinline__ int depth(int k) { return k <= 0 ? 0 : 1 + depth(k - 1); }
extern "C" __global__ void calls(const float* x, float* out, int* levels)
{
    int i = threadIdx.x;
    out[i] = blend(x[i], 2.0f, i % 4 - 1);      // lanes take both sides inside the callee
    levels[i] = depth(i % 5) + weigh(i, -i);
})");
    std::vector<float> x(40), out(40);
    std::vector<int> levels(40);
    for (int i = 0; i < 40; ++i)
    {
        x[i] = 0.5f * i - 3.0f;
    }
    sim.launch("calls", {1, 1, 1}, {40, 1, 1}, 0, sim.buffer(x), sim.buffer(out), sim.buffer(levels));
    for (int i = 0; i < 40; ++i)
    {
        int k = i % 4 - 1;
        float product = x[i] * 2.0f;  // __fmul_rn: rounded before the addition, never contracted
        EXPECT_EQ(out[i], k > 0 ? product + static_cast<float>(k * 3 + 1) : x[i] - 2.0f) << i;
        EXPECT_EQ(levels[i], i % 5 + 2 * i) << i;
    }
}

TEST(simulator_calls, device_printf_formats_each_threads_line_in_thread_order)
{
    simulated sim(R"(
extern "C" __global__ void hello(const int* x)
{
    int n = printf("t%d x=%d f=%.3f ll=%lld u=%u hex=%08x s=%s c=%c %5.1e%%\n", threadIdx.x, x[threadIdx.x],
                   0.5f * threadIdx.x, -1234567890123ll, 4000000000u, 0xbeef, "str", 'A' + threadIdx.x, 1e10);
    if (n != 9) printf("printf returned %d\n", n);
})");
    std::vector<int> x{3, -4, 5};
    sim.launch("hello", {1, 1, 1}, {3, 1, 1}, 0, sim.buffer(x));
    EXPECT_EQ(sim.printed,
              "t0 x=3 f=0.000 ll=-1234567890123 u=4000000000 hex=0000beef s=str c=A 1.0e+10%\n"
              "t1 x=-4 f=0.500 ll=-1234567890123 u=4000000000 hex=0000beef s=str c=B 1.0e+10%\n"
              "t2 x=5 f=1.000 ll=-1234567890123 u=4000000000 hex=0000beef s=str c=C 1.0e+10%\n");
}

// ---- errors a GPU would not explain ----

TEST(simulator_errors, an_out_of_bounds_write_names_the_thread_the_block_and_the_allocation)
{
    simulated sim(R"(
extern "C" __global__ void overrun(float* out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i <= n) out[i] = 1.0f; })");
    std::vector<float> out(100);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("overrun", {4, 1, 1}, {32, 1, 1}, 0, sim.buffer(out, "out"), 100); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("thread (4,0,0) of block (3,0,0)"), std::string::npos) << message;
    EXPECT_NE(message.find("writes 4 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("0 bytes past the end of out"), std::string::npos) << message;
    EXPECT_NE(message.find("line 3 of"), std::string::npos) << message;  // the source's line of the store
}

TEST(simulator_errors, a_shared_memory_index_past_the_array_names_the_blocks_shared_window)
{
    simulated sim(R"(
extern "C" __global__ void spill(int* out, int k)
{ __shared__ int s[32]; s[threadIdx.x * k] = 1; __syncthreads(); out[threadIdx.x] = s[threadIdx.x]; })");
    std::vector<int> out(32);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("spill", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out), 4); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("thread (8,0,0) of block (0,0,0): writes 4 bytes at shared address 0x80, outside the block's 128 bytes"),
              std::string::npos) << message;
}

TEST(simulator_errors, an_instruction_the_simulator_does_not_implement_is_named_when_it_runs)
{
    simulated sim(R"(
extern "C" __global__ void sleepy(int* out) { asm volatile("pmevent 1;"); out[0] = 1; }
extern "C" __global__ void fine(int* out) { out[0] = 2; })");
    std::vector<int> out(1, 0);
    sim.launch("fine", {1, 1, 1}, {1, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out[0], 2) << "a kernel beside one with an unimplemented instruction still runs";
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("sleepy", {1, 1, 1}, {1, 1, 1}, 0, out.data()); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::unsupported);
    EXPECT_NE(message.find("the instruction 'pmevent' is not implemented by the simulator"), std::string::npos) << message;
    EXPECT_NE(message.find("kernel 'sleepy', thread (0,0,0) of block (0,0,0): "), std::string::npos) << message;
    EXPECT_NE(message.find("line 2"), std::string::npos) << message;
    EXPECT_EQ(out[0], 2) << "nothing after the refused instruction ran";
}

TEST(simulator_errors, a_cubin_is_refused_with_a_message_saying_ptx_is_needed)
{
    std::string elf = std::string("\x7f" "ELF", 4) + std::string(60, '\0');
    std::string message = error_of([&] { ptx_parser::parse(elf); });
    EXPECT_NE(message.find("runs PTX only"), std::string::npos) << message;
}

TEST(simulator_errors, malformed_ptx_is_refused_naming_the_line)
{
    sim_error::kind kind{};
    std::string message = error_of([&] { ptx_parser::parse(".version 9.0\n.target sm_90\n.address_size 64\n.entry k(\n{ ret; }\n"); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::invalid_ptx);
    EXPECT_NE(message.find("PTX line"), std::string::npos) << message;
}

// ---- the PTX NVRTC emits, as a whole ----

TEST(simulator_parser, every_ptx_fixture_of_the_repository_parses_with_every_instruction_implemented)
{
    for (const char* name : {"saxpy.ptx", "saxpy_one_line.ptx", "saxpy_no_line_info.ptx", "block_sum.ptx", "scale_template.ptx",
                             "two_kernels.ptx", "saxpy_div.ptx", "saxpy_div_fast_math.ptx", "header_function.ptx",
                             "noinline_call.ptx"})
    {
        ptx_program program = ptx_parser::parse(xcuda_tests::fixture(name));
        bool any_entry = false;
        for (const ptx_function& f : program.functions)
        {
            any_entry = any_entry || f.entry;
            for (const instruction& in : f.code)
            {
                EXPECT_NE(in.op, opcode::unsupported) << name << ": " << in.text;
            }
        }
        EXPECT_TRUE(any_entry) << name;
    }
}

TEST(simulator_parser, fast_math_and_device_debug_builds_run_and_agree_with_the_host)
{
    const char* source = R"(
extern "C" __global__ void saxpy_div(float a, const float* x, const float* y, float* out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = x[i] / a + y[i]; })";
    const int n = 300;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i)
    {
        x[i] = 0.25f * i - 7.0f;
        y[i] = 3.0f - 0.125f * i;
    }
    for (int variant = 0; variant < 2; ++variant)
    {
        simulated sim(source, variant == 0 ? std::vector<std::string>{} : std::vector<std::string>{"-G"}, variant == 0);
        EXPECT_NE(sim.ptx.find(variant == 0 ? "div.approx.ftz.f32" : ".debug"), std::string::npos) << variant;
        std::vector<float> out(n);
        sim.launch("saxpy_div", {2, 1, 1}, {256, 1, 1}, 0, 3.0f, sim.buffer(x), sim.buffer(y), sim.buffer(out), n);
        for (int i = 0; i < n; ++i)
        {
            float expected = x[i] / 3.0f + y[i];
            if (variant == 1)
            {
                ASSERT_EQ(out[i], expected) << i;  // -G: IEEE division, no contraction
            }
            else
            {
                ASSERT_NEAR(out[i], expected, 4e-7f * (1 + std::fabs(expected))) << i;  // div.approx: 2 ulp
            }
        }
    }
}

TEST(simulator_basics, a_signed_sub_word_load_into_a_64_bit_register_sign_extends_all_of_it)
{
    // NVRTC loads a short parameter widened to long long with ld.param.s16 straight into a .b64 register.
    simulated sim(R"(
extern "C" __global__ void widen(short c, signed char a, long long* out) { out[0] = c; out[1] = a; })");
    std::vector<long long> out(2);
    sim.launch("widen", {1, 1, 1}, {1, 1, 1}, 0, static_cast<short>(-30000), static_cast<signed char>(-100), sim.buffer(out));
    EXPECT_EQ(out[0], -30000);
    EXPECT_EQ(out[1], -100);
    EXPECT_NE(sim.ptx.find("ld.param.s16 \t%rd"), std::string::npos) << sim.ptx;
}

// ---- blocks on a pool of host threads (XCUDA_SIM_THREADS) ----

TEST(simulator_parallel_blocks, global_atomics_from_blocks_on_four_threads_count_every_increment)
{
    simulated sim(R"(
extern "C" __global__ void count(const unsigned* data, unsigned* bins, unsigned long long* total, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    {
        atomicAdd(&bins[data[i] % 7], 1u);
        atomicAdd(total, (unsigned long long)data[i]);
    }
})");
    sim.threads = 4;
    const int n = 200000;
    std::vector<unsigned> data(n), bins(7, 0);
    std::vector<unsigned long long> total(1, 0);
    std::vector<unsigned> expected(7, 0);
    unsigned long long sum = 0;
    for (int i = 0; i < n; ++i)
    {
        data[i] = static_cast<unsigned>(i * 2654435761u);
        expected[data[i] % 7] += 1;
        sum += data[i];
    }
    launch_context done = sim.launch("count", {64, 1, 1}, {128, 1, 1}, 0, sim.buffer(data), sim.buffer(bins),
                                     sim.buffer(total), n);
    EXPECT_EQ(bins, expected);
    EXPECT_EQ(total[0], sum);
    EXPECT_EQ(done.thread_instructions > static_cast<std::uint64_t>(n), true);  // the workers' counts are summed
}

TEST(simulator_parallel_blocks, the_fault_of_the_lowest_block_is_reported_whichever_thread_ran_it)
{
    simulated sim(R"(
extern "C" __global__ void overrun(float* out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (blockIdx.x >= 37) i += n; out[i] = 1.0f; })");
    sim.threads = 4;
    std::vector<float> out(64 * 32);
    for (int attempt = 0; attempt < 5; ++attempt)
    {
        std::string message = error_of([&] { sim.launch("overrun", {64, 1, 1}, {32, 1, 1}, 0, sim.buffer(out), 64 * 32); });
        EXPECT_NE(message.find("thread (0,0,0) of block (37,0,0)"), std::string::npos) << message;
    }
    for (int b = 0; b < 37; ++b)
    {
        EXPECT_EQ(out[b * 32], 1.0f) << "block " << b << " ran before the failing one";
    }
}

TEST(simulator_parallel_blocks, when_four_blocks_fault_at_once_the_lowest_ones_fault_is_reported)
{
    // Blocks 0..3 each count themselves in and poll (global memory: it runs on) until all four have, so that the four
    // workers hold one block each, then every one of them writes past the array: four failures at once, and the
    // error must be block 0's, as the sequential order reports it. The poll gives up after 2^22 rounds, never hangs.
    simulated sim(R"(
extern "C" __global__ void four_faults(int* count, float* out, int n)
{
    if (threadIdx.x == 0) atomicAdd(count, 1);
    for (int k = 0; k < (1 << 22) && *(volatile int*)count < 4; ++k) {}
    out[n + blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
})");
    sim.threads = 4;
    for (int attempt = 0; attempt < 3; ++attempt)
    {
        std::vector<int> count(1, 0);
        std::vector<float> out(32);
        std::string message = error_of([&] { sim.launch("four_faults", {4, 1, 1}, {32, 1, 1}, 0, sim.buffer(count), sim.buffer(out), 1 << 16); });
        EXPECT_NE(message.find("thread (0,0,0) of block (0,0,0)"), std::string::npos) << message;
        EXPECT_EQ(count[0], 4) << "all four blocks ran";
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(count.data()));
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
    }
}

TEST(simulator_parallel_blocks, each_thread_has_its_own_shared_window_and_race_check)
{
    simulated sim(R"(
extern "C" __global__ void block_sum(const int* in, int* out)
{
    __shared__ int partial[128];
    partial[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
    __syncthreads();
    for (int k = 64; k > 0; k >>= 1) { if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k]; __syncthreads(); }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
extern "C" __global__ void racy(int* out)
{ __shared__ int s[64]; s[threadIdx.x] = blockIdx.x; out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x]; })");
    sim.threads = 3;
    std::vector<int> in(100 * 128), out(100 * 64);
    for (std::size_t i = 0; i < in.size(); ++i)
    {
        in[i] = static_cast<int>(i % 1000);
    }
    sim.launch("block_sum", {100, 1, 1}, {128, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    for (int b = 0; b < 100; ++b)
    {
        int expected = 0;
        for (int t = 0; t < 128; ++t)
        {
            expected += in[b * 128 + t];
        }
        EXPECT_EQ(out[b], expected) << "block " << b;
    }
    std::string message = error_of([&] { sim.launch("racy", {10, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); });
    EXPECT_NE(message.find("a shared-memory race in block (0,0,0)"), std::string::npos) << message;
}
