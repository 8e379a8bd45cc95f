"""Kernels whose results are exact in PTX (integers, IEEE operations with a stated rounding), run on
whatever device this process has, their outputs saved with numpy:

    python3 tests/simulator/exact_kernels.py OUT.npz      # XCUDA_DEVICE=simulator for the simulator

tests/simulator/test_exact_results.py runs it on the simulator and, where a GPU is, on the GPU, and
compares the bytes. The inputs are the same in every process (a fixed seed). Inputs that would make a
NaN are left out: a NaN's payload is not specified the same way by every operation, and the simulator
computes with the host's IEEE arithmetic, which does not make the GPU's canonical NaN (docs/simulator.md).
"""
import sys

import numpy as np

import xcuda

SOURCE = r"""
extern "C" __global__ void integers(const unsigned* a, const unsigned* b, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i] | 1u;          // y odd: never zero
    int sx = (int)x, sy = (int)y;
    unsigned* o = out + 16 * i;
    o[0] = x + y; o[1] = x - y; o[2] = x * y; o[3] = __umulhi(x, y);
    o[4] = (unsigned)__mulhi(sx, sy); o[5] = x / y; o[6] = x % y; o[7] = (unsigned)(sx / sy);
    o[8] = (unsigned)(sx % sy); o[9] = x << (y & 31); o[10] = x >> (y & 31); o[11] = (unsigned)(sx >> (y & 31));
    o[12] = (x & y) ^ (~x | y); o[13] = __popc(x) | __clz(y) << 8 | __ffs(x) << 16;
    o[14] = __brev(x) ^ __funnelshift_l(x, y, y & 31); o[15] = (unsigned)min(sx, sy) + max(x, y);
}

extern "C" __global__ void wide(const unsigned long long* a, const unsigned long long* b, unsigned long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long x = a[i], y = b[i] | 1ull;
    long long sx = (long long)x, sy = (long long)y;
    unsigned long long* o = out + 8 * i;
    o[0] = x * y; o[1] = __umul64hi(x, y); o[2] = (unsigned long long)__mul64hi(sx, sy); o[3] = x / y;
    o[4] = (unsigned long long)(sx % sy); o[5] = x >> (y & 63); o[6] = (unsigned long long)(sx >> (y & 63));
    o[7] = __popcll(x) + __clzll(y) * 100ull + (unsigned long long)__brevll(x);
}

extern "C" __global__ void histogram(const unsigned* a, unsigned* bins, unsigned long long* total, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    {
        atomicAdd(&bins[a[i] % 61], 1u);
        atomicAdd(total, (unsigned long long)a[i]);
    }
}

extern "C" __global__ void floats(const float* a, const float* b, const float* c, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i], z = c[i];
    float* o = out + 8 * i;
    o[0] = __fadd_rn(x, y); o[1] = __fmul_rn(x, y); o[2] = __fmaf_rn(x, y, z); o[3] = x / y;  // div.rn
    o[4] = sqrtf(fabsf(x)); o[5] = __fsub_rn(x, z); o[6] = __frcp_rn(y); o[7] = __fdiv_rn(z, y);
}

extern "C" __global__ void doubles(const double* a, const double* b, const double* c, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = a[i], y = b[i], z = c[i];
    double* o = out + 6 * i;
    o[0] = __dadd_rn(x, y); o[1] = __dmul_rn(x, y); o[2] = __fma_rn(x, y, z); o[3] = x / y;
    o[4] = sqrt(fabs(x)); o[5] = __drcp_rn(y);
}

extern "C" __global__ void conversions(const float* a, const double* d, int* out, float* f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i] * 1000.0f;  // exact: a power of ten times a float is rounded once, the same everywhere
    int* o = out + 6 * i;
    o[0] = __float2int_rn(x); o[1] = __float2int_rz(x); o[2] = __float2int_rd(x); o[3] = __float2int_ru(x);
    o[4] = (int)__float2uint_rn(fabsf(x)); o[5] = __double2int_rn(d[i] * 1e6);
    float* g = f + 4 * i;
    g[0] = __double2float_rn(d[i]); g[1] = __double2float_rz(d[i]); g[2] = __int2float_rn(o[5] * 977);
    g[3] = __ll2float_rn((long long)o[5] * 1000003ll);
}
"""

# The integer families of round 2 (docs/simulator.md, "Arithmetic"): byte dot products, byte permutes, bit
# counts, 128-bit arithmetic through the carry flag (NVRTC needs --device-int128), and the block-wide
# votes and named barriers of bar.red / bar.sync a, b.
FAMILIES = r"""
extern "C" __global__ void bit_families(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i], z = c[i];
    unsigned* o = out + 9 * i;
    o[0] = (unsigned)__dp4a((int)x, (int)y, (int)z); o[1] = __dp4a(x, y, z);
    o[2] = (unsigned)__dp2a_lo((int)x, (int)y, (int)z); o[3] = __dp2a_hi(x, y, z);
    o[4] = __byte_perm(x, y, z & 0x7777u); o[5] = __brev(x); o[6] = __popc(x); o[7] = __clz(y >> (z & 31)); o[8] = __ffs(x & (y | z));
}

extern "C" __global__ void int128(const unsigned long long* a, const unsigned long long* b, unsigned long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned __int128 x = ((unsigned __int128)a[2 * i + 1] << 64) | a[2 * i];
    unsigned __int128 y = ((unsigned __int128)b[2 * i + 1] << 64) | b[2 * i];
    unsigned __int128 r[3] = {x + y, x - y, x * y};
    for (int k = 0; k < 3; ++k)
    {
        out[6 * i + 2 * k] = (unsigned long long)r[k];
        out[6 * i + 2 * k + 1] = (unsigned long long)(r[k] >> 64);
    }
}

// Blocks of 256: the block-wide count/and/or of a predicate, then warps 0-3 and 4-7 exchange halves of
// a shared array through barriers 1 and 2 (128 threads each), odd warps first meeting at barrier 3.
extern "C" __global__ void block_votes(const int* v, int* out)
{
    __shared__ int s[256];
    unsigned t = threadIdx.x, i = blockIdx.x * 256 + t;
    int x = v[i];
    int* o = out + 4 * i;
    o[0] = __syncthreads_count(x > 0);
    o[1] = __syncthreads_and(x > -90);
    o[2] = __syncthreads_or(x == 7);
    if ((t / 32) & 1) asm volatile("bar.sync 3, 128;" ::: "memory");
    s[t] = x;
    if (t < 128) asm volatile("bar.sync 1, 128;" ::: "memory");
    else asm volatile("bar.sync 2, 128;" ::: "memory");
    o[3] = s[t < 128 ? 127 - t : 383 - t];
}
"""

# Asynchronous copies and their barriers (docs/simulator.md, "Asynchronous copies and mbarriers"): tiled
# matrix products in the shapes of the CUDA sample globalToShmemAsyncCopy (16x16 tiles), one per way of
# copying a tile: the pipeline primitives, cuda::pipeline of four stages with float4 chunks, cuda::barrier
# with float4 chunks (a bulk copy on sm_90) and with words (cp.async tracked by the barrier),
# cooperative_groups::memcpy_async; a producer/consumer ring of cuda::barrier, and producer and consumer
# roles of a block's cuda::pipeline. Inputs are small
# integers, so every product and sum is exact in float32 and numpy's matmul is the reference.
ASYNC = r"""#include <cuda_pipeline.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;
#define T 16

extern "C" __global__ void primitives(float* c, const float* a, const float* b, int n)
{
    __shared__ float as[T][T], bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float sum = 0;
    for (int k0 = 0; k0 < n; k0 += T)
    {
        __pipeline_memcpy_async(&as[ty][tx], &a[row * n + k0 + tx], sizeof(float));
        __pipeline_memcpy_async(&bs[ty][tx], &b[(k0 + ty) * n + col], sizeof(float));
        __pipeline_commit();
        __pipeline_wait_prior(0);
        __syncthreads();
        for (int k = 0; k < T; ++k) sum += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    c[row * n + col] = sum;
}

extern "C" __global__ void staged(float* c, const float* a, const float* b, int n)
{
    constexpr int stages = 4;
    __shared__ alignas(16) float as[stages][T][T];
    __shared__ alignas(16) float bs[stages][T][T];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    auto pipe = cuda::make_pipeline();
    const auto chunk = cuda::aligned_size_t<16>(16);
    float sum = 0;
    int tiles = n / T, fetched = 0;
    for (int t = 0; t < tiles; ++t)
    {
        for (; fetched < t + stages; ++fetched)  // a batch every time, empty past the end: the waits count batches
        {
            pipe.producer_acquire();
            if (fetched < tiles && tx * 4 < T)
            {
                int s = fetched % stages, k0 = fetched * T;
                cuda::memcpy_async(&as[s][ty][tx * 4], &a[row * n + k0 + tx * 4], chunk, pipe);
                cuda::memcpy_async(&bs[s][ty][tx * 4], &b[(k0 + ty) * n + blockIdx.x * T + tx * 4], chunk, pipe);
            }
            pipe.producer_commit();
        }
        cuda::pipeline_consumer_wait_prior<stages - 1>(pipe);
        __syncthreads();
        int s = t % stages;
        for (int k = 0; k < T; ++k) sum += as[s][ty][k] * bs[s][k][tx];
        __syncthreads();
        pipe.consumer_release();
    }
    c[row * n + col] = sum;
}

extern "C" __global__ void with_barrier(float* c, const float* a, const float* b, int n)
{
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ alignas(16) float as[T][T], bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    if (tx == 0 && ty == 0) init(&bar, T * T);
    __syncthreads();
    float sum = 0;
    for (int k0 = 0; k0 < n; k0 += T)
    {
        if (tx * 4 < T)
        {
            cuda::memcpy_async(reinterpret_cast<float4*>(&as[ty][tx * 4]), reinterpret_cast<const float4*>(&a[row * n + k0 + tx * 4]), sizeof(float4), bar);
            cuda::memcpy_async(reinterpret_cast<float4*>(&bs[ty][tx * 4]), reinterpret_cast<const float4*>(&b[(k0 + ty) * n + blockIdx.x * T + tx * 4]), sizeof(float4), bar);
        }
        bar.arrive_and_wait();
        for (int k = 0; k < T; ++k) sum += as[ty][k] * bs[k][tx];
        bar.arrive_and_wait();
    }
    c[row * n + col] = sum;
}

extern "C" __global__ void barrier_words(float* c, const float* a, const float* b, int n)
{
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ float as[T][T], bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    if (tx == 0 && ty == 0) init(&bar, T * T);
    __syncthreads();
    float sum = 0;
    for (int k0 = 0; k0 < n; k0 += T)
    {
        cuda::memcpy_async(&as[ty][tx], &a[row * n + k0 + tx], sizeof(float), bar);
        cuda::memcpy_async(&bs[ty][tx], &b[(k0 + ty) * n + col], sizeof(float), bar);
        bar.arrive_and_wait();
        for (int k = 0; k < T; ++k) sum += as[ty][k] * bs[k][tx];
        bar.arrive_and_wait();
    }
    c[row * n + col] = sum;
}

extern "C" __global__ void group_copy(float* c, const float* a, const float* b, int n)
{
    __shared__ alignas(16) float as[T][T], bs[T][T];
    auto block = cg::this_thread_block();
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float sum = 0;
    for (int k0 = 0; k0 < n; k0 += T)
    {
        for (int r = 0; r < T; ++r)
        {
            cg::memcpy_async(block, &as[r][0], &a[(blockIdx.y * T + r) * n + k0], sizeof(float) * T);
            cg::memcpy_async(block, &bs[r][0], &b[(k0 + r) * n + blockIdx.x * T], sizeof(float) * T);
        }
        cg::wait(block);
        for (int k = 0; k < T; ++k) sum += as[ty][k] * bs[k][tx];
        block.sync();
    }
    c[row * n + col] = sum;
}

// A producer warp hands rounds of 64 values to three consumer warps through two pairs of cuda::barrier
// (full/empty, double buffered): the producer arrives with a token and waits on it, the consumers
// arrive_and_wait; out[t] sums what thread t read.
extern "C" __global__ void ring(const float* in, float* out, int rounds)
{
#pragma nv_diag_suppress static_var_with_dynamic_init
    using barrier = cuda::barrier<cuda::thread_scope_block>;
    __shared__ barrier full[2], empty[2];
    __shared__ float buffer[2][64];
    if (threadIdx.x == 0)
        for (int s = 0; s < 2; ++s) { init(&full[s], blockDim.x); init(&empty[s], blockDim.x); }
    __syncthreads();
    float sum = 0;
    for (int r = 0; r < rounds; ++r)
    {
        int s = r % 2;
        if (r >= 2) empty[s].arrive_and_wait();
        if (threadIdx.x < 32)
        {
            buffer[s][threadIdx.x] = in[r * 64 + threadIdx.x];
            buffer[s][32 + threadIdx.x] = in[r * 64 + 32 + threadIdx.x] * 2.0f;
            barrier::arrival_token t = full[s].arrive();
            full[s].wait(std::move(t));
        }
        else
        {
            full[s].arrive_and_wait();
            sum += buffer[s][(threadIdx.x - 32) % 64] + buffer[s][(threadIdx.x * 5) % 64];
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// globalToShmemAsyncCopy's MultiStageSharedState shape: a cuda::pipeline of the block (its shared state holds
// mbarriers), warp 0 the producer copying rounds of 32 values, warps 1..3 consumers summing them.
extern "C" __global__ void roles(const float* in, float* out, int rounds)
{
    constexpr int stages = 2;
    __shared__ float stage[stages][32];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
    auto block = cg::this_thread_block();
    const auto role = threadIdx.x < 32 ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer;
    auto pipe = cuda::make_pipeline(block, &state, role);
    float sum = 0;
    for (int r = 0; r < rounds; ++r)
    {
        if (role == cuda::pipeline_role::producer)
        {
            pipe.producer_acquire();
            cuda::memcpy_async(&stage[r % stages][threadIdx.x], &in[r * 32 + threadIdx.x], sizeof(float), pipe);
            pipe.producer_commit();
        }
        else
        {
            pipe.consumer_wait();
            sum += stage[r % stages][threadIdx.x % 32];
            pipe.consumer_release();
        }
    }
    out[threadIdx.x] = sum;
}
"""

N = 4096
TILED_N = 64
RING_ROUNDS = 7
BLOCK = 128


def inputs():
    rng = np.random.default_rng(24)
    u32 = lambda: rng.integers(0, 2 ** 32, N, dtype=np.uint64).astype(np.uint32)  # noqa: E731
    u64 = lambda: rng.integers(0, 2 ** 63, N, dtype=np.uint64) * 2 + rng.integers(0, 2, N, dtype=np.uint64)  # noqa: E731

    def finite(dtype):
        # Ordinary values, tiny and huge ones (subnormal results, overflow to infinity), exact halves.
        v = rng.standard_normal(N).astype(dtype) * dtype(1000)
        v[::7] = rng.uniform(-1, 1, len(v[::7])).astype(dtype) * np.finfo(dtype).tiny * dtype(8)
        v[::11] = np.finfo(dtype).max / dtype(3) * np.sign(rng.standard_normal(len(v[::11]))).astype(dtype)
        v[::13] = (rng.integers(-2000, 2000, len(v[::13])) + 0.5).astype(dtype)
        v[v == 0] = dtype(1.5)
        return v

    votes = rng.integers(-100, 100, N).astype(np.int32)
    votes[256:512] = np.abs(votes[256:512]) + 1   # block 1: every value positive
    votes[512:768][votes[512:768] == 7] = 8       # block 2: no 7
    votes[1024 + 77] = 7                          # block 4: one 7
    v = dict(a32=u32(), b32=u32(), c32=u32(), a64=u64(), b64=u64(), votes=votes, fa=finite(np.float32), fb=finite(np.float32),
             fc=finite(np.float32), da=finite(np.float64), db=finite(np.float64), dc=finite(np.float64))
    # drawn last, so that the inputs above stay what they were
    v.update(ta=rng.integers(-8, 9, (TILED_N, TILED_N)).astype(np.float32),
             tb=rng.integers(-8, 9, (TILED_N, TILED_N)).astype(np.float32),
             ring=rng.integers(-50, 50, RING_ROUNDS * 64).astype(np.float32))
    return v


def run():
    m = xcuda.compile(SOURCE, name="exact_kernels")
    v = inputs()
    grid = (N + BLOCK - 1) // BLOCK
    out = {}
    out["integers"] = np.zeros(16 * N, np.uint32)
    m.integers[grid, BLOCK](v["a32"], v["b32"], out["integers"], N)
    out["wide"] = np.zeros(8 * N, np.uint64)
    m.wide[grid, BLOCK](v["a64"], v["b64"], out["wide"], N)
    out["bins"], out["total"] = np.zeros(61, np.uint32), np.zeros(1, np.uint64)
    m.histogram[8, BLOCK](v["a32"], out["bins"], out["total"], N)
    out["floats"] = np.zeros(8 * N, np.float32)
    m.floats[grid, BLOCK](v["fa"], v["fb"], v["fc"], out["floats"], N)
    out["doubles"] = np.zeros(6 * N, np.float64)
    m.doubles[grid, BLOCK](v["da"], v["db"], v["dc"], out["doubles"], N)
    out["conversions"], out["converted"] = np.zeros(6 * N, np.int32), np.zeros(4 * N, np.float32)
    m.conversions[grid, BLOCK](v["fa"], v["da"] / 1e6, out["conversions"], out["converted"], N)
    f = xcuda.compile(FAMILIES, name="exact_families", options=["--device-int128"])
    out["bit_families"] = np.zeros(9 * N, np.uint32)
    f.bit_families[grid, BLOCK](v["a32"], v["b32"], v["c32"], out["bit_families"], N)
    out["int128"] = np.zeros(6 * N, np.uint64)
    f.int128[grid, BLOCK](v["a64"], v["b64"], out["int128"], N // 2)
    out["block_votes"] = np.zeros(4 * N, np.int32)
    f.block_votes[N // 256, 256](v["votes"], out["block_votes"])
    a = xcuda.compile(ASYNC, name="exact_async")
    tiles = (TILED_N // 16, TILED_N // 16)
    for kernel in ("primitives", "staged", "with_barrier", "barrier_words", "group_copy"):
        out["tiled_" + kernel] = np.zeros((TILED_N, TILED_N), np.float32)
        getattr(a, kernel)[tiles, (16, 16)](out["tiled_" + kernel], v["ta"], v["tb"], TILED_N)
    out["ring"] = np.zeros(2 * 128, np.float32)
    a.ring[2, 128](v["ring"], out["ring"], RING_ROUNDS)
    out["roles"] = np.zeros(128, np.float32)
    a.roles[1, 128](v["ring"], out["roles"], RING_ROUNDS * 2)
    return out


if __name__ == "__main__":
    from kernel_runs import save

    save(run(), sys.argv[1])
