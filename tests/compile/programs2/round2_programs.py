"""A second set of CUDA programs (issue 25): each stresses one runtime feature of round 2, written in the
shape of a well-known public program and called as that program's host code calls it.

The sources are written for these tests in the style of the programs named in each provenance comment
(the same algorithm, constants, launch shapes and host calls: cudaMemcpyToSymbol of a constant filter,
cudaLaunchCooperativeKernel, cudaFuncSetAttribute for more than 48 KiB of shared memory, a pointer plus
an offset, cudaMemcpyFromSymbol of a __device__ counter, a struct in constant memory); they are not
copies of those files. Each program is its %%cuda cells and `run(ns)`: the launches its host code would
make, returning (name, got, expected) triples checked against numpy. tests/compile/test_programs2.py
compiles every program without a GPU (every parameter and every module variable typed), runs them on a
GPU, and on the PTX simulator in CI where it can run them (`simulator=False` says it cannot, and why).
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Program:
    name: str
    cells: list  # (magic line after %%cuda, source)
    run: object
    variables: dict = field(default_factory=dict)  # module variable -> (dtype, shape) the reader must give
    simulator: object = True  # True, or why the PTX simulator cannot run it
    headers: list = field(default_factory=list)


# ---- 1. separable convolution with the filter in constant memory -----------------------------------
# Provenance: the shape of NVIDIA/cuda-samples, Samples/2_Concepts_and_Techniques/convolutionSeparable
# (convolutionSeparable.cu, convolutionSeparable_common.h; BSD-3-Clause): a KERNEL_RADIUS 8 filter in
# `__constant__ float c_Kernel[KERNEL_LENGTH]` set by cudaMemcpyToSymbol, a rows pass of 16x4 threads
# computing 8 results each with one halo step, a columns pass of 16x8 threads, and the host's grid
# (imageW / (8 * 16), imageH / 4) and (imageW / 16, imageH / (8 * 8)). Written for this test.
CONVOLUTION = r"""
#define KERNEL_RADIUS 8
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)

__constant__ float c_Kernel[KERNEL_LENGTH];

#define ROWS_BLOCKDIM_X 16
#define ROWS_BLOCKDIM_Y 4
#define ROWS_RESULT_STEPS 8
#define ROWS_HALO_STEPS 1

__global__ void convolutionRowsKernel(float *d_Dst, float *d_Src, int imageW, int imageH, int pitch)
{
    __shared__ float tile[ROWS_BLOCKDIM_Y][(ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X];
    const int x0 = (blockIdx.x * ROWS_RESULT_STEPS - ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X + threadIdx.x;
    const int y = blockIdx.y * ROWS_BLOCKDIM_Y + threadIdx.y;
    const float *src = d_Src + y * pitch;
    for (int step = 0; step < ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS; ++step)
    {
        int x = x0 + step * ROWS_BLOCKDIM_X;
        tile[threadIdx.y][threadIdx.x + step * ROWS_BLOCKDIM_X] = (x >= 0 && x < imageW) ? src[x] : 0.0f;
    }
    __syncthreads();
    for (int step = ROWS_HALO_STEPS; step < ROWS_HALO_STEPS + ROWS_RESULT_STEPS; ++step)
    {
        float sum = 0.0f;
        #pragma unroll
        for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; ++j)
            sum += c_Kernel[KERNEL_RADIUS - j] * tile[threadIdx.y][threadIdx.x + step * ROWS_BLOCKDIM_X + j];
        d_Dst[y * pitch + x0 + step * ROWS_BLOCKDIM_X] = sum;
    }
}

#define COLUMNS_BLOCKDIM_X 16
#define COLUMNS_BLOCKDIM_Y 8
#define COLUMNS_RESULT_STEPS 8
#define COLUMNS_HALO_STEPS 1

__global__ void convolutionColumnsKernel(float *d_Dst, float *d_Src, int imageW, int imageH, int pitch)
{
    __shared__ float tile[COLUMNS_BLOCKDIM_X][(COLUMNS_RESULT_STEPS + 2 * COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y + 1];
    const int x = blockIdx.x * COLUMNS_BLOCKDIM_X + threadIdx.x;
    const int y0 = (blockIdx.y * COLUMNS_RESULT_STEPS - COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y + threadIdx.y;
    for (int step = 0; step < COLUMNS_RESULT_STEPS + 2 * COLUMNS_HALO_STEPS; ++step)
    {
        int y = y0 + step * COLUMNS_BLOCKDIM_Y;
        tile[threadIdx.x][threadIdx.y + step * COLUMNS_BLOCKDIM_Y] = (y >= 0 && y < imageH) ? d_Src[y * pitch + x] : 0.0f;
    }
    __syncthreads();
    for (int step = COLUMNS_HALO_STEPS; step < COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS; ++step)
    {
        float sum = 0.0f;
        #pragma unroll
        for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; ++j)
            sum += c_Kernel[KERNEL_RADIUS - j] * tile[threadIdx.x][threadIdx.y + step * COLUMNS_BLOCKDIM_Y + j];
        d_Dst[(y0 + step * COLUMNS_BLOCKDIM_Y) * pitch + x] = sum;
    }
}
"""


def convolve_rows(image, taps):
    radius = taps.size // 2
    padded = np.pad(image.astype(np.float64), ((0, 0), (radius, radius)))
    return sum(taps[radius - j] * padded[:, radius + j: radius + j + image.shape[1]] for j in range(-radius, radius + 1))


def convolve_columns(image, taps):
    return convolve_rows(image.T, taps).T


def run_convolution(ns):
    m = ns["conv"]
    image_w, image_h = 256, 128
    rng = np.random.default_rng(11)
    h_kernel = rng.random(17).astype(np.float32)
    h_kernel /= h_kernel.sum()
    h_input = rng.random((image_h, image_w)).astype(np.float32)
    m.get_global("c_Kernel").set(h_kernel)  # setConvolutionKernel: cudaMemcpyToSymbol(c_Kernel, h_Kernel, ...)
    import xcuda
    d_input = xcuda.to_device(h_input)
    d_buffer = xcuda.zeros((image_h, image_w), np.float32)
    d_output = xcuda.zeros((image_h, image_w), np.float32)
    m.convolutionRowsKernel[(image_w // (8 * 16), image_h // 4), (16, 4)](d_buffer, d_input, image_w, image_h, image_w)
    m.convolutionColumnsKernel[(image_w // 16, image_h // (8 * 8)), (16, 8)](d_output, d_buffer, image_w, image_h,
                                                                            image_w)
    rows = convolve_rows(h_input, h_kernel.astype(np.float64))
    return [("rows", d_buffer.copy_to_host(), rows),
            ("columns", d_output.copy_to_host(), convolve_columns(rows, h_kernel.astype(np.float64))),
            ("c_Kernel read back", m.globals.c_Kernel.get(), h_kernel)]


# ---- 2. a reduction of the whole grid with cooperative groups ---------------------------------------
# Provenance: the shape of NVIDIA/cuda-samples, Samples/2_Concepts_and_Techniques/reductionMultiBlockCG
# (BSD-3-Clause): each block reduces a grid-stride slice into g_odata[blockIdx.x], grid.sync(), then
# block 0 reduces the partial sums; the host sizes the grid with
# cudaOccupancyMaxActiveBlocksPerMultiprocessor x the SM count and calls cudaLaunchCooperativeKernel.
# Written for this test.
GRID_REDUCTION = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ void reduceBlock(double *sdata, const cg::thread_block &cta)
{
    const unsigned int tid = cta.thread_rank();
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    double beta = sdata[tid];
    cg::sync(cta);  // every value read before the warps' sums overwrite the first slots
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2)
        beta += tile32.shfl_down(beta, offset);
    if (tile32.thread_rank() == 0) sdata[tid / 32] = beta;
    cg::sync(cta);
    if (tid < 32)
    {
        double v = tid < cta.size() / 32 ? sdata[tid] : 0.0;
        for (int offset = 16; offset > 0; offset /= 2) v += tile32.shfl_down(v, offset);
        if (tid == 0) sdata[0] = v;
    }
    cg::sync(cta);
}

extern "C" __global__ void reduceSinglePassMultiBlockCG(const float *g_idata, float *g_odata, unsigned int n)
{
    cg::thread_block block = cg::this_thread_block();
    cg::grid_group grid = cg::this_grid();
    extern double __shared__ sdata[];
    sdata[block.thread_rank()] = 0;
    for (unsigned int i = grid.thread_rank(); i < n; i += grid.size())
        sdata[block.thread_rank()] += g_idata[i];
    cg::sync(block);
    reduceBlock(sdata, block);
    if (block.thread_rank() == 0) g_odata[blockIdx.x] = sdata[0];
    cg::sync(grid);
    if (grid.thread_rank() == 0)
    {
        for (int b = 1; b < gridDim.x; b++) g_odata[0] += g_odata[b];
    }
}
"""


def run_grid_reduction(ns):
    import xcuda
    k = ns["reduceSinglePassMultiBlockCG"]
    threads = 256
    smem = threads * 8
    blocks = min(k.max_cooperative_blocks(threads, smem), 128)  # numBlocksPerSm x multiProcessorCount
    n = 1 << 20  # sums of small integers below 2 ** 24: exact in float32 in any order
    h_idata = (np.random.default_rng(12).integers(0, 16, n)).astype(np.float32)
    d_odata = xcuda.zeros(blocks, np.float32)
    k[blocks, threads, None, smem](h_idata, d_odata, n)  # cudaLaunchCooperativeKernel(...)
    return [("grid sum", d_odata.copy_to_host()[:1], np.array([h_idata.sum(dtype=np.float64)], np.float32)),
            ("launched cooperatively", np.array(k.cooperative), np.array(True))]


# ---- 3. more than 48 KiB of dynamic shared memory --------------------------------------------------
# Provenance: the pattern of the "opt-in" shared memory of the CUDA Programming Guide (section "Shared
# Memory", cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)) as used by
# per-block privatized histograms such as NVIDIA/cuda-samples, Samples/2_Concepts_and_Techniques/histogram
# (BSD-3-Clause): 16384 32-bit bins, 64 KiB, per block, merged with global atomics. Written for this test.
BIG_HISTOGRAM = r"""
#define BIN_COUNT 16384

extern "C" __global__ void histogram16k(unsigned int *d_Histogram, const unsigned short *d_Data, unsigned int n)
{
    extern __shared__ unsigned int s_Hist[];
    for (unsigned int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x) s_Hist[b] = 0;
    __syncthreads();
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&s_Hist[d_Data[i] >> 2], 1u);
    __syncthreads();
    for (unsigned int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x)
        if (s_Hist[b]) atomicAdd(&d_Histogram[b], s_Hist[b]);
}
"""


def run_big_histogram(ns):
    import xcuda
    k = ns["histogram16k"]
    n = 1 << 18
    data = np.random.default_rng(13).integers(0, 65536, n).astype(np.uint16)
    hist = xcuda.zeros(16384, np.uint32)
    smem = 16384 * 4  # cudaFuncSetAttribute(histogram16k, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536)
    k[8, 512, None, smem](hist, data, n)
    return [("histogram", hist.copy_to_host(), np.bincount(data >> 2, minlength=16384).astype(np.uint32))]


# ---- 4. a pointer plus an offset --------------------------------------------------------------------
# Provenance: the host pattern of code written for cuda.core / PyCUDA (for example cuda-python's
# cuda_core/examples, Apache-2.0, and PyCUDA's examples, MIT) that launches one kernel per segment of a
# buffer on `base_address + offset`, and of C++ host code passing `d_data + offset`; the kernel is an
# in-place segmented inclusive scan in shared memory (the Blelloch/Hillis-Steele shape of GPU Gems 3,
# ch. 39). Written for this test.
SEGMENTS = r"""
#define SEGMENT 512

extern "C" __global__ void scanSegment(float *d_data, int count)
{
    __shared__ float s[SEGMENT];
    int t = threadIdx.x;
    s[t] = t < count ? d_data[t] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < SEGMENT; offset <<= 1)
    {
        float v = t >= offset ? s[t - offset] : 0.0f;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    if (t < count) d_data[t] = s[t];
}
"""


def run_segments(ns):
    import xcuda
    k = ns["scanSegment"]
    lengths = [512, 300, 512, 7]
    values = np.random.default_rng(14).integers(0, 5, sum(lengths)).astype(np.float32)
    d_data = xcuda.to_device(values)
    expected = values.copy()
    offset = 0
    for i, length in enumerate(lengths):
        if i % 2 == 0:
            k[1, 512](xcuda.Pointer(d_data.ptr + offset * 4), length)  # d_data + offset, as a raw address
        else:
            k[1, 512](d_data[offset:offset + length], length)          # the same as an offset view
        expected[offset:offset + length] = np.cumsum(values[offset:offset + length])
        offset += length
    return [("segmented scan", d_data.copy_to_host(), expected)]


# ---- 5. a __device__ counter read back with cudaMemcpyFromSymbol ------------------------------------
# Provenance: the stream-compaction pattern of NVIDIA's "CUDA Pro Tip: Optimized Filtering with
# Warp-Aggregated Atomics" (developer.nvidia.com blog, 2014; its code is in NVIDIA-developer-blog/code-samples,
# BSD-3-Clause): a global counter bumped once per warp with __ballot_sync/__popc, here a
# `__device__ unsigned int d_count` that the host zeroes with cudaMemcpyToSymbol and reads with
# cudaMemcpyFromSymbol. Written for this test.
FILTER = r"""
__device__ unsigned int d_count;

__device__ unsigned int atomicAggInc(unsigned int *ctr)
{
    unsigned int active = __activemask();
    int leader = __ffs(active) - 1;
    int lane = threadIdx.x & 31;
    unsigned int base;
    if (lane == leader) base = atomicAdd(ctr, __popc(active));
    base = __shfl_sync(active, base, leader);
    return base + __popc(active & ((1u << lane) - 1));
}

extern "C" __global__ void filter_k(int *dst, const int *src, int n)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n && src[i] > 0) dst[atomicAggInc(&d_count)] = src[i];
}
"""


def run_filter(ns):
    import xcuda
    m = ns["filtering"]
    n = 100_000
    src = np.random.default_rng(15).integers(-50, 50, n).astype(np.int32)
    dst = xcuda.zeros(n, np.int32)
    m.globals.d_count = 0                        # cudaMemcpyToSymbol(d_count, &zero, sizeof(int))
    m.filter_k[(n + 255) // 256, 256](dst, src, n)
    count = int(m.get_global("d_count").get())  # cudaMemcpyFromSymbol(&count, d_count, sizeof(int))
    kept = np.sort(dst.copy_to_host()[:count])  # the order of warps is not fixed: compare as sets
    return [("count", np.array(count), np.array(np.count_nonzero(src > 0))),
            ("kept values", kept, np.sort(src[src > 0]))]


# ---- 6. a struct of parameters in constant memory ----------------------------------------------------
# Provenance: the shape of NVIDIA/cuda-samples, Samples/5_Domain_Specific/particles (particles_kernel.cuh,
# particleSystem_cuda.cu; BSD-3-Clause): `__constant__ SimParams params;` set once with
# cudaMemcpyToSymbol(params, hostParams, sizeof(SimParams)) and read by an integration kernel that
# applies gravity, damping and bouncing off the box. Written for this test.
PARTICLES = r"""
struct SimParams
{
    float3 gravity;
    float globalDamping;
    float particleRadius;
    unsigned int numBodies;
    float boundaryDamping;
};

__constant__ SimParams params;

extern "C" __global__ void integrateSystem(float4 *pos, float4 *vel, float deltaTime)
{
    unsigned int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= params.numBodies) return;
    float4 p = pos[index], v = vel[index];
    v.x += params.gravity.x * deltaTime;
    v.y += params.gravity.y * deltaTime;
    v.z += params.gravity.z * deltaTime;
    v.x *= params.globalDamping; v.y *= params.globalDamping; v.z *= params.globalDamping;
    p.x += v.x * deltaTime; p.y += v.y * deltaTime; p.z += v.z * deltaTime;
    if (p.y < -1.0f + params.particleRadius)
    {
        p.y = -1.0f + params.particleRadius;
        v.y *= params.boundaryDamping;
    }
    pos[index] = p;
    vel[index] = v;
}
"""


def run_particles(ns):
    import xcuda
    m = ns["particles"]
    n = 3000
    host = np.zeros((), m.get_global("params").dtype)
    host["gravity"] = (0.0, -0.0003, 0.0)
    host["globalDamping"], host["particleRadius"] = 1.0, 1.0 / 64
    host["numBodies"], host["boundaryDamping"] = n - 100, -0.5  # the last 100 are not simulated
    m.get_global("params").set(host)  # cudaMemcpyToSymbol(params, hostParams, sizeof(SimParams))
    rng = np.random.default_rng(16)
    pos = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    vel = rng.uniform(-0.01, 0.01, (n, 4)).astype(np.float32)
    d_pos, d_vel = xcuda.to_device(pos), xcuda.to_device(vel)
    dt = np.float32(0.5)
    m.integrateSystem[(n + 255) // 256, 256](d_pos, d_vel, dt)
    p, v = pos.astype(np.float64), vel.astype(np.float64)
    live = slice(0, n - 100)
    g = np.array([0.0, -0.0003, 0.0])
    v[live, :3] += g * 0.5
    p[live, :3] += v[live, :3] * 0.5
    low = (p[:, 1] < -1 + 1 / 64) & (np.arange(n) < n - 100)
    p[low, 1] = -1 + 1 / 64
    v[low, 1] *= -0.5
    return [("positions", d_pos.copy_to_host(), p), ("velocities", d_vel.copy_to_host(), v)]


PROGRAMS = [
    Program("convolution_separable_constant_filter", [("--name conv", CONVOLUTION)], run_convolution,
            variables={"c_Kernel": ("float32", (17,))}),
    Program("reduction_multi_block_cooperative", [("", GRID_REDUCTION)], run_grid_reduction,
            simulator="a grid-wide sync needs every block resident at once; the simulator runs a few at a time"),
    Program("histogram_64kib_dynamic_shared", [("", BIG_HISTOGRAM)], run_big_histogram),
    Program("segmented_scan_pointer_plus_offset", [("", SEGMENTS)], run_segments),
    Program("filter_device_counter", [("--name filtering", FILTER)], run_filter,
            variables={"d_count": ("uint32", ())}),
    Program("particles_constant_struct", [("--name particles", PARTICLES)], run_particles,
            variables={"params": (None, ())}),
]
