"""CUDA programs written the way real ones are, pasted into a notebook cell by cell.

Each program is its header cells (%%cuda_header), its %%cuda cells, and `run(ns)`: the launches its
host code would make, from the namespace the cells bound, returning (name, got, expected) triples
checked against numpy. tests/compile/test_programs.py compiles every program without a GPU (every parameter
typed) and runs them on one.
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Program:
    name: str
    cells: list  # (magic line after %%cuda, source)
    run: object
    headers: list = field(default_factory=list)  # (name, source)


def grid_for(n, block):
    return (n + block - 1) // block


# ---- 1. a block reduction templated on its block size, instantiated explicitly --------------------
REDUCTION = r"""
template <int BLOCK_SIZE>
__global__ void __launch_bounds__(BLOCK_SIZE) block_sum(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float partial[BLOCK_SIZE];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * BLOCK_SIZE + tid;
    partial[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    #pragma unroll
    for (int stride = BLOCK_SIZE / 2; stride > 0; stride >>= 1) {
        if (tid < stride) partial[tid] += partial[tid + stride];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = partial[0];
}

template __global__ void block_sum<128>(const float*, float*, int);
template __global__ void block_sum<256>(const float*, float*, int);
"""


def run_reduction(ns):
    module = ns["reduction"]
    x = np.random.default_rng(1).random(256 * 40 + 17, dtype=np.float32)
    results = []
    for block in (128, 256):
        blocks = grid_for(x.size, block)
        out = np.zeros(blocks, np.float32)
        module[f"block_sum<{block}>"][blocks, block](x, out, x.size)
        padded = np.zeros(blocks * block, np.float32)
        padded[: x.size] = x
        results.append((f"block_sum<{block}>", out, padded.reshape(blocks, block).sum(axis=1)))
    return results


# ---- 2. warp votes and shuffles ------------------------------------------------------------------
WARPS = r"""
#define FULL_MASK 0xffffffffu
#define WARP_SIZE 32

extern "C" __global__ void count_positive(const float* x, unsigned int* warp_counts, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool positive = i < n && x[i] > 0.0f;
    unsigned int votes = __ballot_sync(FULL_MASK, positive);
    if ((threadIdx.x & (WARP_SIZE - 1)) == 0) warp_counts[i / WARP_SIZE] = __popc(votes);
}

__global__ void warp_max(const int* x, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? x[i] : (-2147483647 - 1);
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v = max(v, __shfl_xor_sync(FULL_MASK, v, offset));
    if ((threadIdx.x & (WARP_SIZE - 1)) == 0) out[i / WARP_SIZE] = v;
}
"""


def run_warps(ns):
    rng = np.random.default_rng(2)
    n = 32 * 96
    x = rng.standard_normal(n).astype(np.float32)
    counts = np.zeros(n // 32, np.uint32)
    ns["count_positive"][grid_for(n, 128), 128](x, counts, n)
    ints = rng.integers(-1000, 1000, n, dtype=np.int32)
    maxima = np.zeros(n // 32, np.int32)
    ns["warp_max"][grid_for(n, 256), 256](ints, maxima, n)
    return [("count_positive", counts, (x.reshape(-1, 32) > 0).sum(axis=1)),
            ("warp_max", maxima, ints.reshape(-1, 32).max(axis=1))]


# ---- 3. a 256-bin histogram with shared-memory atomics ---------------------------------------------
HISTOGRAM = r"""
#define NUM_BINS 256

extern "C" __global__ void histogram256(const unsigned char* data, unsigned int* bins, int n)
{
    __shared__ unsigned int local[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}
"""


def run_histogram(ns):
    data = np.random.default_rng(3).integers(0, 256, 1 << 20, dtype=np.uint8)
    bins = np.zeros(256, np.uint32)
    ns["histogram256"][64, 256](data, bins, data.size)
    return [("histogram256", bins, np.bincount(data, minlength=256))]


# ---- 4. a block scan in dynamic shared memory, with a default argument ------------------------------
SCAN = r"""
// Hillis-Steele inclusive scan of each block, double-buffered in 2 * blockDim.x floats.
__global__ void inclusive_scan(const float* in, float* out, int n, float* block_sums = nullptr)
{
    extern __shared__ float temp[];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    int pout = 0, pin = 1;
    temp[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        pout = 1 - pout;
        pin = 1 - pout;
        float v = temp[pin * blockDim.x + tid];
        if (tid >= offset) v += temp[pin * blockDim.x + tid - offset];
        temp[pout * blockDim.x + tid] = v;
        __syncthreads();
    }
    if (i < n) out[i] = temp[pout * blockDim.x + tid];
    if (block_sums != nullptr && tid == blockDim.x - 1) block_sums[blockIdx.x] = temp[pout * blockDim.x + tid];
}
"""


def run_scan(ns):
    block = 256
    x = np.random.default_rng(4).random(block * 12, dtype=np.float32)
    out = np.zeros_like(x)
    scan = ns["inclusive_scan"]
    scan[12, block, None, 2 * block * 4](x, out, x.size)  # block_sums left to its default
    sums = np.zeros(12, np.float32)
    out2 = np.zeros_like(x)
    scan[12, block, None, 2 * block * 4](x, out2, n=x.size, block_sums=sums)
    expected = np.cumsum(x.reshape(12, block), axis=1)
    return [("inclusive_scan", out.reshape(12, block), expected),
            ("inclusive_scan by name", out2.reshape(12, block), expected),
            ("block_sums", sums, expected[:, -1])]


# ---- 5. a transpose through padded shared tiles -----------------------------------------------------
TRANSPOSE = r"""
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_no_bank_conflicts(float* odata, const float* idata, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""


def run_transpose(ns):
    height, width = 70, 100
    a = np.random.default_rng(5).random((height, width), dtype=np.float32)
    out = np.zeros((width, height), np.float32)
    ns["transpose_no_bank_conflicts"][(grid_for(width, 32), grid_for(height, 32)), (32, 8)](out, a, width, height)
    return [("transpose", out, a.T)]


# ---- 6. vector types by value and by pointer --------------------------------------------------------
VECTORS = r"""
extern "C" __global__ void scale_bias4(float4* data, float4 scale, float4 bias, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 v = data[i];
    v.x = v.x * scale.x + bias.x; v.y = v.y * scale.y + bias.y;
    v.z = v.z * scale.z + bias.z; v.w = v.w * scale.w + bias.w;
    data[i] = v;
}

extern "C" __global__ void xor_words(uint4* data, const uint4 mask, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { data[i].x ^= mask.x; data[i].y ^= mask.y; data[i].z ^= mask.z; data[i].w ^= mask.w; }
}

extern "C" __global__ void weighted(const double2* a, double2 w, int2 offset, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i].x * w.x + a[i].y * w.y + offset.x - offset.y;
}
"""


def run_vectors(ns):
    rng = np.random.default_rng(6)
    n = 1000
    f4 = ns["scale_bias4"].parameters[0]["dtype"]
    data = np.zeros(n, f4)
    for c in "xyzw":
        data[c] = rng.random(n, dtype=np.float32)
    before = data.copy()
    scale = np.array((1.0, 2.0, 3.0, 4.0), dtype=f4)  # a 0-d structured value, like make_float4(1, 2, 3, 4)
    ns["scale_bias4"][grid_for(n, 128), 128](data, scale, (0.5, 0.25, 0.0, -1.0), n)
    words = rng.integers(0, 2**32, (n, 4), dtype=np.uint32)
    mask = (0xFFFF0000, 0x0000FFFF, 0xF0F0F0F0, 0x0F0F0F0F)
    flipped = words.copy()
    ns["xor_words"][grid_for(n, 128), 128](flipped, mask, n)
    pairs = rng.random((n, 2))
    out = np.zeros(n)
    ns["weighted"][grid_for(n, 128), 128](pairs, (0.5, 2.0), (7, 3), out, n)
    results = [(f"scale_bias4.{c}", data[c], before[c] * s + b)
               for c, s, b in zip("xyzw", (1, 2, 3, 4), (0.5, 0.25, 0.0, -1.0))]
    return results + [("xor_words", flipped, words ^ np.array(mask, np.uint32)),
                      ("weighted", out, pairs[:, 0] * 0.5 + pairs[:, 1] * 2.0 + 4)]


# ---- 7. cooperative groups: async copy to shared memory, tiled partitions ----------------------------
COOPERATIVE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;

extern "C" __global__ void tile_sum(const float* in, float* total, int n)
{
    extern __shared__ float tile[];
    cg::thread_block block = cg::this_thread_block();
    const int base = blockIdx.x * blockDim.x;
    const int count = min((int)blockDim.x, n - base);
    cg::memcpy_async(block, tile, in + base, sizeof(float) * count);
    cg::wait(block);
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    float v = (int)threadIdx.x < count ? tile[threadIdx.x] : 0.0f;
    for (int offset = warp.size() / 2; offset > 0; offset /= 2) v += warp.shfl_down(v, offset);
    if (warp.thread_rank() == 0) atomicAdd(total, v);
}
"""


def run_cooperative(ns):
    x = np.random.default_rng(7).random(256 * 50 + 100, dtype=np.float32)
    total = np.zeros(1, np.float32)
    ns["tile_sum"][grid_for(x.size, 256), 256, None, 256 * 4](x, total, x.size)
    return [("tile_sum", total, np.array([x.sum(dtype=np.float64)], np.float32))]


# ---- 8. cuda::pipeline with memcpy_async ------------------------------------------------------------
PIPELINE = r"""
#include <cuda/pipeline>
#include <cooperative_groups.h>

extern "C" __global__ void staged_double(const int* in, int* out, int n)
{
    extern __shared__ int stage[];
    auto block = cooperative_groups::this_thread_block();
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 1> state;
    auto pipe = cuda::make_pipeline(block, &state);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    pipe.producer_acquire();
    if (i < n) cuda::memcpy_async(&stage[threadIdx.x], &in[i], sizeof(int), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    if (i < n) out[i] = 2 * stage[threadIdx.x];
    pipe.consumer_release();
}
"""


def run_pipeline(ns):
    x = np.arange(5000, dtype=np.int32)
    out = np.zeros_like(x)
    ns["staged_double"][grid_for(x.size, 128), 128, None, 128 * 4](x, out, x.size)
    return [("staged_double", out, 2 * x)]


# ---- 9. clock_t* timers around a reduction -----------------------------------------------------------
CLOCK = r"""
// Each block finds the minimum of the 2 * blockDim.x inputs and records clock() before and after.
extern "C" __global__ void timed_min(const float* input, float* output, clock_t* timer)
{
    extern __shared__ float shared[];
    const int tid = threadIdx.x;
    const int bid = blockIdx.x;
    if (tid == 0) timer[bid] = clock();
    shared[tid] = input[tid];
    shared[tid + blockDim.x] = input[tid + blockDim.x];
    for (int d = blockDim.x; d > 0; d /= 2) {
        __syncthreads();
        if (tid < d) {
            float f0 = shared[tid];
            float f1 = shared[tid + d];
            if (f1 < f0) shared[tid] = f1;
        }
    }
    if (tid == 0) output[bid] = shared[0];
    __syncthreads();
    if (tid == 0) timer[bid + gridDim.x] = clock();
}
"""


def run_clock(ns):
    blocks, threads = 64, 256
    x = np.random.default_rng(9).random(2 * threads, dtype=np.float32)
    out = np.zeros(blocks, np.float32)
    timer = np.zeros(2 * blocks, np.int64)
    ns["timed_min"][blocks, threads, None, 2 * threads * 4](x, out, timer)
    elapsed = (timer[blocks:] - timer[:blocks]) % 2**32
    return [("timed_min", out, np.full(blocks, x.min(), np.float32)),
            ("clock_t timers advanced", (elapsed > 0) & (elapsed < 2**31), np.ones(blocks, bool))]


# ---- 10. typedefs, a struct and a kernel in a header cell ---------------------------------------------
PARTICLES_HEADER = r"""
#pragma once
typedef unsigned int uint;
typedef float real;

struct SimParams {
    real dt;
    uint count;
    float3 gravity;
};

__global__ void integrate(float3* pos, float3* vel, SimParams params)
{
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= params.count) return;
    vel[i].x += params.gravity.x * params.dt;
    vel[i].y += params.gravity.y * params.dt;
    vel[i].z += params.gravity.z * params.dt;
    pos[i].x += vel[i].x * params.dt;
    pos[i].y += vel[i].y * params.dt;
    pos[i].z += vel[i].z * params.dt;
}
"""

PARTICLES = r"""
#include "particles.cuh"

extern "C" __global__ void count_below(const float3* pos, real floor_y, uint* count, uint n)
{
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && pos[i].y < floor_y) atomicAdd(count, 1u);
}
"""


def run_particles(ns):
    rng = np.random.default_rng(10)
    n = 3000
    pos = rng.random((n, 3), dtype=np.float32)
    vel = rng.standard_normal((n, 3)).astype(np.float32)
    params = np.zeros((), ns["integrate"].parameters[2]["dtype"])
    params["dt"], params["count"], params["gravity"] = 0.1, n, (0.0, -9.8, 0.0)
    p0, v0 = pos.copy(), vel.copy()
    ns["integrate"][grid_for(n, 128), 128](pos, vel, params)
    v1 = v0 + np.float32(0.1) * np.array([0, -9.8, 0], np.float32)
    p1 = p0 + v1 * np.float32(0.1)
    count = np.zeros(1, np.uint32)
    ns["count_below"][grid_for(n, 128), 128](pos, 0.25, count, n)  # uint n from a Python int
    return [("integrate vel", vel, v1), ("integrate pos", pos, p1),
            ("count_below", count, np.array([(pos[:, 1] < 0.25).sum()]))]


# ---- 11. default arguments and arguments by name --------------------------------------------------------
DEFAULTS = r"""
// Sums each row in place into its first element; with partial_sums, also writes the row's sum there.
__global__ void row_sums(int* data, int width, int* partial_sums = NULL)
{
    __shared__ int total;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    int row = blockIdx.x;
    int sum = 0;
    for (int c = threadIdx.x; c < width; c += blockDim.x) sum += data[row * width + c];
    atomicAdd(&total, sum);
    __syncthreads();
    if (threadIdx.x == 0) {
        data[row * width] = total;
        if (partial_sums) partial_sums[row] = total;
    }
}

__global__ void scale_rows(float* x, int width, float factor = 0.5f, unsigned int row_stride = 1u)
{
    int row = blockIdx.x * row_stride;
    for (int c = threadIdx.x; c < width; c += blockDim.x) x[row * width + c] *= factor;
}
"""


def run_defaults(ns):
    rng = np.random.default_rng(11)
    rows, width = 40, 300
    data = rng.integers(-50, 50, (rows, width), dtype=np.int32)
    expected = data.sum(axis=1)
    in_place = data.copy()
    ns["row_sums"][rows, 128](in_place, width)  # partial_sums = NULL
    partial = np.zeros(rows, np.int32)
    ns["row_sums"][rows, 128](data.copy(), width, partial_sums=partial)
    x = rng.random((rows, width), dtype=np.float32)
    halved = x.copy()
    ns["scale_rows"][rows, 64](halved, width)
    doubled = x.copy()
    ns["scale_rows"][rows // 2, 64](doubled, width=width, factor=2.0, row_stride=2)
    every_other = x.copy()
    every_other[::2] *= 2
    return [("row_sums in place", in_place[:, 0], expected), ("row_sums partial_sums", partial, expected),
            ("scale_rows default", halved, x * 0.5), ("scale_rows by name", doubled, every_other)]


# ---- 12. an enum class and a struct passed by value ------------------------------------------------------
CONFIG = r"""
enum class Op : int { Add = 0, Multiply = 1, Clamp = 2 };

struct Config {
    Op op;
    float value;
    int n;
    float lo, hi;
};

__global__ void apply_op(float* x, Config cfg)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= cfg.n) return;
    switch (cfg.op) {
    case Op::Add: x[i] += cfg.value; break;
    case Op::Multiply: x[i] *= cfg.value; break;
    case Op::Clamp: x[i] = fminf(fmaxf(x[i], cfg.lo), cfg.hi); break;
    }
}

enum Mode { MODE_SQUARE, MODE_NEGATE };

__global__ void map_mode(float* x, int n, Mode mode)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = mode == MODE_SQUARE ? x[i] * x[i] : -x[i];
}
"""


def run_config(ns):
    x = np.random.default_rng(12).standard_normal(777).astype(np.float32)
    dtype = ns["apply_op"].parameters[1]["dtype"]
    results = []
    for op, expected in ((0, x + 1.5), (1, x * 1.5), (2, np.clip(x, -0.5, 0.5))):
        y = x.copy()
        cfg = np.array((op, 1.5, x.size, -0.5, 0.5), dtype)
        ns["apply_op"][grid_for(x.size, 128), 128](y, cfg)
        results.append((f"apply_op {op}", y, expected))
    y = x.copy()
    ns["map_mode"][grid_for(x.size, 128), 128](y, x.size, 1)
    return results + [("map_mode", y, -x)]


# ---- 13. a tiled matrix product, tile size from -D ----------------------------------------------------------
MATMUL = r"""
#ifndef TILE
#define TILE 8
#endif

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + threadIdx.x;
        int kb = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"""


def run_matmul(ns):
    rng = np.random.default_rng(13)
    M, N, K = 70, 50, 90
    a = rng.random((M, K), dtype=np.float32)
    b = rng.random((K, N), dtype=np.float32)
    c = np.zeros((M, N), np.float32)
    ns["matmul"][(grid_for(N, 16), grid_for(M, 16)), (16, 16)](a, b, c, M, N, K)
    return [("matmul", c, a @ b)]


PROGRAMS = [
    Program("reduction_template", [("--name reduction", REDUCTION)], run_reduction),
    Program("warp_vote_shuffle", [("", WARPS)], run_warps),
    Program("histogram_shared_atomics", [("", HISTOGRAM)], run_histogram),
    Program("scan_dynamic_shared", [("", SCAN)], run_scan),
    Program("transpose_padded_tiles", [("", TRANSPOSE)], run_transpose),
    Program("vector_types", [("", VECTORS)], run_vectors),
    Program("cooperative_groups", [("", COOPERATIVE)], run_cooperative),
    Program("pipeline_memcpy_async", [("", PIPELINE)], run_pipeline),
    Program("clock_timers", [("", CLOCK)], run_clock),
    Program("header_cell_kernels_typedefs", [("", PARTICLES)], run_particles,
            headers=[("particles.cuh", PARTICLES_HEADER)]),
    Program("default_arguments", [("", DEFAULTS)], run_defaults),
    Program("enum_struct_by_value", [("", CONFIG)], run_config),
    Program("matmul_tile_from_define", [("-DTILE=16", MATMUL)], run_matmul),
]
