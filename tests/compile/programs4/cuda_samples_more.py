"""Eight more CUDA samples of the 24-program list (NVIDIA/cuda-samples, BSD-3-Clause): vectorAdd, matrixMul,
simpleVoteIntrinsics, histogram (histogram256), scalarProd, warpAggregatedAtomicsCG, threadFenceReduction and
MC_EstimatePiInlineP (cuRAND's device API).

Each source is written for these tests after the sample's .cu files (the same kernels, signatures,
constants and launch shapes), not copied from them; `run(ns)` is the host code of the sample's main().
"""
import numpy as np

from curand_reference import xorwow_uniform
from program import Program, cdiv, xcuda

# ---- vectorAdd -------------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/0_Introduction/vectorAdd/vectorAdd.cu: 50000 floats, 256 threads
# a block, rand() / RAND_MAX inputs; as published.
VECTOR_ADD = r"""
#include <stdio.h>
#include <cuda_runtime.h>

__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < numElements) C[i] = A[i] + B[i] + 0.0f;
}
"""


def run_vector_add(ns):
    n = 50000
    rng = np.random.default_rng(11)
    h_A, h_B = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    d_A, d_B, d_C = xcuda().to_device(h_A), xcuda().to_device(h_B), xcuda().empty(n, np.float32)
    threads = 256
    ns["vectorAdd"][cdiv(n, threads), threads](d_A, d_B, d_C, n)
    return [("C = A + B", d_C.copy_to_host(), h_A + h_B)]


# ---- matrixMul -------------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/0_Introduction/matrixMul/matrixMul.cu: MatrixMulCUDA<BLOCK_SIZE>
# with 32 x 32 tiles in shared memory, A 320 x 320 and B 320 rows x 640 columns as published; the sample fills
# them with 1.0 and 0.01 and checks every element against 3.2: here random inputs against numpy (a constant
# matrix would hide an index wrong in the tiles).
MATRIX_MUL = r"""
#include <stdio.h>
#include <assert.h>
#include <cuda_runtime.h>

template <int BLOCK_SIZE> __global__ void MatrixMulCUDA(float *C, float *A, float *B, int wA, int wB) {
  int bx = blockIdx.x, by = blockIdx.y;
  int tx = threadIdx.x, ty = threadIdx.y;
  int aBegin = wA * BLOCK_SIZE * by;  // the first tile of A this block reads
  int aEnd = aBegin + wA - 1;
  int aStep = BLOCK_SIZE;
  int bBegin = BLOCK_SIZE * bx;
  int bStep = BLOCK_SIZE * wB;
  float Csub = 0;
  for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    As[ty][tx] = A[a + wA * ty + tx];
    Bs[ty][tx] = B[b + wB * ty + tx];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
  C[c + wB * ty + tx] = Csub;
}

template __global__ void MatrixMulCUDA<16>(float *C, float *A, float *B, int wA, int wB);
template __global__ void MatrixMulCUDA<32>(float *C, float *A, float *B, int wA, int wB);
"""


def run_matrix_mul(ns):
    block = 32
    hA, wA, wB = 5 * 2 * block, 5 * 2 * block, 5 * 4 * block
    rng = np.random.default_rng(12)
    h_A, h_B = rng.random((hA, wA), dtype=np.float32), rng.random((wA, wB), dtype=np.float32)
    d_A, d_B = xcuda().to_device(h_A), xcuda().to_device(h_B)
    d_C = xcuda().zeros((hA, wB), np.float32)
    ns["matrixMul"]["MatrixMulCUDA<32>"][(wB // block, hA // block), (block, block)](d_C, d_A, d_B, wA, wB)
    return [("C = A @ B", d_C.copy_to_host(), h_A.astype(np.float64) @ h_B.astype(np.float64))]


# ---- simpleVoteIntrinsics -------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/0_Introduction/simpleVoteIntrinsics (simpleVote_kernel.cuh):
# VoteAnyKernel1, VoteAllKernel2 over a pattern of four warps (none set, one set, all but one set, all set),
# and VoteAnyKernel3's three bools per thread; 128 threads in one block, as published.
SIMPLE_VOTE = r"""
#ifndef SIMPLEVOTE_KERNEL_CU
#define SIMPLEVOTE_KERNEL_CU

__global__ void VoteAnyKernel1(unsigned int *input, unsigned int *result, int size) {
  int tx = threadIdx.x;
  int mask = 0xffffffff;
  result[tx] = __any_sync(mask, input[tx]);
}

__global__ void VoteAllKernel2(unsigned int *input, unsigned int *result, int size) {
  int tx = threadIdx.x;
  int mask = 0xffffffff;
  result[tx] = __all_sync(mask, input[tx]);
}

// Three votes per thread: any thread of the warp past 1.5 warps, all threads of the warp past it.
__global__ void VoteAnyKernel3(bool *info, int warp_size) {
  int tx = threadIdx.x;
  unsigned int mask = 0xffffffff;
  bool *offs = info + (tx * 3);
  *offs = __any_sync(mask, (tx >= (warp_size * 3) / 2));
  *(offs + 1) = (tx >= (warp_size * 3) / 2 ? true : false);
  if (__all_sync(mask, (tx >= (warp_size * 3) / 2))) *(offs + 2) = true;
}
#endif
"""


def run_simple_vote(ns):
    warp, groups = 32, 4
    size = warp * groups
    pattern = np.zeros(size, np.uint32)  # genVoteTestPattern's four warps
    pattern[warp + warp // 2] = 1
    pattern[2 * warp: 3 * warp] = 1
    pattern[2 * warp + 5] = 0
    pattern[3 * warp:] = 1
    d_input = xcuda().to_device(pattern)
    found = []
    for name, vote in (("VoteAnyKernel1", np.any), ("VoteAllKernel2", np.all)):
        d_result = xcuda().zeros(size, np.uint32)
        ns[name][1, size](d_input, d_result, size)
        expected = np.repeat([int(vote(pattern[w * warp:(w + 1) * warp])) for w in range(groups)], warp)
        found.append((name, d_result.copy_to_host(), expected.astype(np.uint32)))
    threads = warp * 3
    d_info = xcuda().zeros(threads * 3, np.bool_)
    ns["VoteAnyKernel3"][1, threads](d_info, warp)
    tx = np.arange(threads)
    past = tx >= warp * 3 // 2
    warp_any = np.repeat([past[w * warp:(w + 1) * warp].any() for w in range(3)], warp)
    warp_all = np.repeat([past[w * warp:(w + 1) * warp].all() for w in range(3)], warp)
    found.append(("VoteAnyKernel3", d_info.copy_to_host().reshape(threads, 3), np.stack([warp_any, past, warp_all], axis=1)))
    return found


# ---- histogram256 ------------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/histogram/histogram256.cu: a sub-
# histogram per warp in shared memory (shared atomics), 240 partial histograms of blocks of 192 threads,
# merged by mergeHistogram256Kernel (256 blocks of 256 threads). The sample's 64 MiB of bytes: 1 MiB here.
HISTOGRAM256 = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

typedef unsigned int uint;
typedef unsigned char uchar;

#define HISTOGRAM256_BIN_COUNT 256
#define LOG2_WARP_SIZE 5U
#define WARP_SIZE (1U << LOG2_WARP_SIZE)
#define SHARED_MEMORY_BANKS 16
#define HISTOGRAM256_THREADBLOCK_SIZE (6 * SHARED_MEMORY_BANKS * 2)
#define WARP_COUNT (HISTOGRAM256_THREADBLOCK_SIZE / WARP_SIZE)
#define HISTOGRAM256_THREADBLOCK_MEMORY (WARP_COUNT * HISTOGRAM256_BIN_COUNT)
#define PARTIAL_HISTOGRAM256_COUNT 240
#define MERGE_THREADBLOCK_SIZE 256
#define UMUL(a, b) ((a) * (b))

inline __device__ void addByte(uint *s_WarpHist, uint data) { atomicAdd(s_WarpHist + data, 1); }

inline __device__ void addWord(uint *s_WarpHist, uint data) {
  addByte(s_WarpHist, (data >> 0) & 0xFFU);
  addByte(s_WarpHist, (data >> 8) & 0xFFU);
  addByte(s_WarpHist, (data >> 16) & 0xFFU);
  addByte(s_WarpHist, (data >> 24) & 0xFFU);
}

__global__ void histogram256Kernel(uint *d_PartialHistograms, uint *d_Data, uint dataCount) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ uint s_Hist[HISTOGRAM256_THREADBLOCK_MEMORY];  // one sub-histogram per warp
  uint *s_WarpHist = s_Hist + (threadIdx.x >> LOG2_WARP_SIZE) * HISTOGRAM256_BIN_COUNT;
#pragma unroll
  for (uint i = 0; i < (HISTOGRAM256_THREADBLOCK_MEMORY / HISTOGRAM256_THREADBLOCK_SIZE); i++)
    s_Hist[threadIdx.x + i * HISTOGRAM256_THREADBLOCK_SIZE] = 0;
  cg::sync(cta);
  for (uint pos = UMUL(blockIdx.x, blockDim.x) + threadIdx.x; pos < dataCount; pos += UMUL(blockDim.x, gridDim.x)) {
    uint data = d_Data[pos];
    addWord(s_WarpHist, data);
  }
  cg::sync(cta);
  for (uint bin = threadIdx.x; bin < HISTOGRAM256_BIN_COUNT; bin += HISTOGRAM256_THREADBLOCK_SIZE) {
    uint sum = 0;
    for (uint i = 0; i < WARP_COUNT; i++) sum += s_Hist[bin + i * HISTOGRAM256_BIN_COUNT];
    d_PartialHistograms[blockIdx.x * HISTOGRAM256_BIN_COUNT + bin] = sum;
  }
}

// A block per bin adds that bin of every partial histogram.
__global__ void mergeHistogram256Kernel(uint *d_Histogram, uint *d_PartialHistograms, uint histogramCount) {
  cg::thread_block cta = cg::this_thread_block();
  uint sum = 0;
  for (uint i = threadIdx.x; i < histogramCount; i += MERGE_THREADBLOCK_SIZE)
    sum += d_PartialHistograms[blockIdx.x + i * HISTOGRAM256_BIN_COUNT];
  __shared__ uint data[MERGE_THREADBLOCK_SIZE];
  data[threadIdx.x] = sum;
  for (uint stride = MERGE_THREADBLOCK_SIZE / 2; stride > 0; stride >>= 1) {
    cg::sync(cta);
    if (threadIdx.x < stride) data[threadIdx.x] += data[threadIdx.x + stride];
  }
  if (threadIdx.x == 0) d_Histogram[blockIdx.x] = data[0];
}
"""


def run_histogram256(ns):
    byte_count = 1 << 20
    h_data = np.random.default_rng(13).integers(0, 256, byte_count).astype(np.uint8)
    d_data = xcuda().to_device(h_data.view(np.uint32))
    d_partial = xcuda().zeros(240 * 256, np.uint32)
    d_histogram = xcuda().zeros(256, np.uint32)
    ns["histogram256Kernel"][240, 192](d_partial, d_data, byte_count // 4)
    ns["mergeHistogram256Kernel"][256, 256](d_histogram, d_partial, 240)
    return [("histogram256", d_histogram.copy_to_host(), np.bincount(h_data, minlength=256).astype(np.uint32))]


# ---- scalarProd --------------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/scalarProd/scalarProd_kernel.cuh:
# 256 vector pairs of 4096 floats, ACCUM_N 1024 partial sums per vector in shared memory, 128 blocks of
# 256 threads; as published.
SCALAR_PROD = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define IMUL(a, b) __mul24(a, b)
#define ACCUM_N 1024

__global__ void scalarProdGPU(float *d_C, float *d_A, float *d_B, int vectorN, int elementN) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ float accumResult[ACCUM_N];
  for (int vec = blockIdx.x; vec < vectorN; vec += gridDim.x) {
    int vectorBase = IMUL(elementN, vec);
    int vectorEnd = vectorBase + elementN;
    // Each accumulator adds the elements ACCUM_N apart: coalesced reads.
    for (int iAccum = threadIdx.x; iAccum < ACCUM_N; iAccum += blockDim.x) {
      float sum = 0;
      for (int pos = vectorBase + iAccum; pos < vectorEnd; pos += ACCUM_N) sum += d_A[pos] * d_B[pos];
      accumResult[iAccum] = sum;
    }
    for (int stride = ACCUM_N / 2; stride > 0; stride >>= 1) {
      cg::sync(cta);
      for (int iAccum = threadIdx.x; iAccum < stride; iAccum += blockDim.x)
        accumResult[iAccum] += accumResult[stride + iAccum];
    }
    cg::sync(cta);
    if (threadIdx.x == 0) d_C[vec] = accumResult[0];
  }
}
"""


def run_scalar_prod(ns):
    vector_n, element_n = 256, 4096
    rng = np.random.default_rng(14)
    h_A = rng.uniform(0.0, 1.0, (vector_n, element_n)).astype(np.float32)
    h_B = rng.uniform(0.0, 1.0, (vector_n, element_n)).astype(np.float32)
    d_A, d_B, d_C = xcuda().to_device(h_A), xcuda().to_device(h_B), xcuda().zeros(vector_n, np.float32)
    ns["scalarProdGPU"][128, 256](d_C, d_A, d_B, vector_n, element_n)
    return [("scalarProd", d_C.copy_to_host(), (h_A.astype(np.float64) * h_B).sum(axis=1))]


# ---- warpAggregatedAtomicsCG -----------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/3_CUDA_Features/warpAggregatedAtomicsCG/warpAggregatedAtomicsCG.cu:
# filter_arr (one atomicAdd per coalesced group: cg::coalesced_threads, shfl of the base) and mapToBuckets
# (cg::labeled_partition by bucket, one atomicAdd per label), 512 threads a block. The sample's
# 10,000,000 elements: 2^16 here.
WARP_AGGREGATED = r"""
#include <stdio.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

#define NUM_THREADS_PER_BLOCK 512

__device__ int atomicAggInc(int *counter) {
  cg::coalesced_group active = cg::coalesced_threads();
  int res = 0;
  if (active.thread_rank() == 0) res = atomicAdd(counter, active.size());  // one atomic for the group
  res = active.shfl(res, 0);
  return res + active.thread_rank();
}

__global__ void filter_arr(int *dst, int *nres, const int *src, int n) {
  int id = threadIdx.x + blockIdx.x * blockDim.x;
  for (int i = id; i < n; i += gridDim.x * blockDim.x) {
    if (src[i] > 0) dst[atomicAggInc(nres)] = src[i];
  }
}

#if __CUDA_ARCH__ >= 700
// One atomic per group of threads with the same bucket.
__device__ int atomicAggIncMulti(const int bucket, int *counter) {
  cg::coalesced_group active = cg::coalesced_threads();
  auto labeledGroup = cg::labeled_partition(active, bucket);
  int res = 0;
  if (labeledGroup.thread_rank() == 0) res = atomicAdd(&counter[bucket], labeledGroup.size());
  res = labeledGroup.shfl(res, 0);
  return res + labeledGroup.thread_rank();
}
#endif

__global__ void mapToBuckets(const int *srcArr, int *indicesBuckets, int *bucketCounters, const int srcSize,
                             const int numOfBuckets) {
#if __CUDA_ARCH__ >= 700
  cg::grid_group grid = cg::this_grid();
  for (int i = grid.thread_rank(); i < srcSize; i += grid.size()) {
    const int bucket = srcArr[i];
    if (bucket < numOfBuckets) indicesBuckets[atomicAggIncMulti(bucket, bucketCounters)] = i;
  }
#endif
}
"""


def run_warp_aggregated(ns):
    n = 1 << 16
    rng = np.random.default_rng(15)
    h_data = rng.integers(0, 2, n).astype(np.int32)  # the sample's rand() % 2: about half positive
    d_data = xcuda().to_device(h_data)
    d_result = xcuda().zeros(n, np.int32)
    d_nres = xcuda().zeros(1, np.int32)
    ns["filter_arr"][cdiv(n, 512), 512](d_result, d_nres, d_data, n)
    count = int(d_nres.copy_to_host()[0])
    found = [("filter_arr count", np.int64(count), np.int64(np.count_nonzero(h_data > 0))),
             ("filter_arr values", np.sort(d_result.copy_to_host()[:count]), np.sort(h_data[h_data > 0]))]
    buckets = 7
    h_src = rng.integers(0, buckets, n).astype(np.int32)
    d_src = xcuda().to_device(h_src)
    d_indices = xcuda().zeros(n * buckets, np.int32)
    d_counters = xcuda().to_device((np.arange(buckets) * n).astype(np.int32))  # bucket b fills from b * n
    ns["mapToBuckets"][n // 512, 512](d_src, d_indices, d_counters, n, buckets)
    counters = d_counters.copy_to_host() - np.arange(buckets) * n
    indices = d_indices.copy_to_host().reshape(buckets, n)
    found.append(("mapToBuckets counters", counters, np.bincount(h_src, minlength=buckets)))
    for b in range(buckets):
        found.append((f"mapToBuckets bucket {b}", np.sort(indices[b, :counters[b]]), np.flatnonzero(h_src == b)))
    return found


# ---- threadFenceReduction ----------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/threadFenceReduction
# (threadFenceReduction_kernel.cuh): reduceSinglePass, a sum in one launch: each block writes its partial
# sum, __threadfence(), atomicInc on a __device__ retirementCount, and the last block to retire adds the
# partials and resets the counter. 2^20 floats in 64 blocks of 256 threads; as published.
THREAD_FENCE_REDUCTION = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <unsigned int blockSize>
__device__ void reduceBlock(volatile float *sdata, float mySum, const unsigned int tid, cg::thread_block cta) {
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  sdata[tid] = mySum;
  cg::sync(tile32);
  const int VEC = 32;
  const int vid = tid & (VEC - 1);
  float beta = mySum;
  float temp;
  for (int i = VEC / 2; i > 0; i >>= 1) {
    if (vid < i) {
      temp = sdata[tid + i];
      beta += temp;
      sdata[tid] = beta;
    }
    cg::sync(tile32);
  }
  cg::sync(cta);
  if (cta.thread_rank() == 0) {
    beta = 0;
    for (int i = 0; i < blockDim.x; i += VEC) beta += sdata[i];
    sdata[0] = beta;
  }
  cg::sync(cta);
}

template <unsigned int blockSize, bool nIsPow2>
__device__ void reduceBlocks(const float *g_idata, float *g_odata, unsigned int n, cg::thread_block cta) {
  extern __shared__ float sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
  unsigned int gridSize = blockSize * 2 * gridDim.x;
  float mySum = 0;
  while (i < n) {
    mySum += g_idata[i];
    if (nIsPow2 || i + blockSize < n) mySum += g_idata[i + blockSize];
    i += gridSize;
  }
  reduceBlock<blockSize>(sdata, mySum, tid, cta);
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

__device__ unsigned int retirementCount = 0;

template <unsigned int blockSize, bool nIsPow2>
__global__ void reduceSinglePass(const float *g_idata, float *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  reduceBlocks<blockSize, nIsPow2>(g_idata, g_odata, n, cta);
  if (gridDim.x > 1) {
    const unsigned int tid = threadIdx.x;
    __shared__ bool amLast;
    extern float __shared__ smem[];
    if (tid == 0) {
      __threadfence();  // the partial sum is visible to the last block before the ticket is
      unsigned int ticket = atomicInc(&retirementCount, gridDim.x);
      amLast = (ticket == gridDim.x - 1);
    }
    cg::sync(cta);
    if (amLast) {
      int i = tid;
      float mySum = 0;
      while (i < gridDim.x) {
        mySum += g_odata[i];
        i += blockSize;
      }
      reduceBlock<blockSize>(smem, mySum, tid, cta);
      if (tid == 0) {
        g_odata[0] = smem[0];
        retirementCount = 0;  // ready for the next launch
      }
    }
  }
}

template __global__ void reduceSinglePass<256, true>(const float *, float *, unsigned int);
template __global__ void reduceSinglePass<256, false>(const float *, float *, unsigned int);
"""


def run_thread_fence_reduction(ns):
    found = []
    for n, name in ((1 << 20, "reduceSinglePass<256, true>"), ((1 << 20) - 1001, "reduceSinglePass<256, false>")):
        h_idata = (np.random.default_rng(n).integers(0, 256, n) / 256.0).astype(np.float32)  # the sample's (rand() & 0xFF) / RAND_MAX
        d_idata, d_odata = xcuda().to_device(h_idata), xcuda().zeros(64, np.float32)
        for launch in range(2):  # the second launch sees the counter the first reset
            ns["threadfence"][name][64, 256, None, 256 * 4](d_idata, d_odata, n)
            found.append((f"{name} launch {launch + 1}", d_odata.copy_to_host()[0], h_idata.astype(np.float64).sum()))
        found.append((f"{name} retirementCount reset", ns["threadfence"].get_global("retirementCount").copy_to_host(),
                      np.zeros((), np.uint32)))
    return found


# ---- MC_EstimatePiInlineP ------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/MC_EstimatePiInlineP/src/piestimator.cu:
# initRNG (curand_init(seed, tid, 0): XORWOW, one subsequence per thread) and computeValue<float> (points
# from curand_uniform, counted inside the quarter circle, a shared-memory sum per block), seed 1234, blocks
# of 128 threads. The sample's 100,000 simulations: 2^14 simulations over 2^12 threads here (its
# per-thread loop runs 4 times); numpy draws the same numbers (curand_reference.py).
MC_PI = r"""
#include <cooperative_groups.h>
#include <curand_kernel.h>

namespace cg = cooperative_groups;

__global__ void initRNG(curandState *const rngStates, const unsigned int seed) {
  unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
  curand_init(seed, tid, 0, &rngStates[tid]);  // one subsequence per thread
}

__device__ unsigned int reduce_sum(unsigned int in, cg::thread_block cta) {
  extern __shared__ unsigned int sdata[];
  unsigned int ltid = threadIdx.x;
  sdata[ltid] = in;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (ltid < s) sdata[ltid] += sdata[ltid + s];
    cg::sync(cta);
  }
  return sdata[0];
}

__device__ inline void getPoint(float &x, float &y, curandState &state) {
  x = curand_uniform(&state);
  y = curand_uniform(&state);
}

__device__ inline void getPoint(double &x, double &y, curandState &state) {
  x = curand_uniform_double(&state);
  y = curand_uniform_double(&state);
}

template <typename Real>
__global__ void computeValue(unsigned int *const results, curandState *const rngStates, const unsigned int numSims) {
  cg::thread_block cta = cg::this_thread_block();
  unsigned int bid = blockIdx.x;
  unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int step = gridDim.x * blockDim.x;
  curandState localState = rngStates[tid];  // a copy in registers for the loop
  unsigned int pointsInside = 0;
  for (unsigned int i = tid; i < numSims; i += step) {
    Real x, y;
    getPoint(x, y, localState);
    Real l2norm2 = x * x + y * y;
    if (l2norm2 < static_cast<Real>(1)) pointsInside++;
  }
  pointsInside = reduce_sum(pointsInside, cta);
  if (threadIdx.x == 0) results[bid] = pointsInside;
}

template __global__ void computeValue<float>(unsigned int *const, curandState *const, const unsigned int);
"""


def run_mc_pi(ns):
    num_sims, block, grid, seed = 1 << 14, 128, 32, 1234
    threads = block * grid
    m = ns["piestimator"]
    state_dtype = np.dtype((np.void, 48))  # sizeof(curandState)
    d_states = xcuda().zeros(threads * state_dtype.itemsize, np.uint8)
    m.initRNG[grid, block](xcuda().Pointer(d_states.ptr), seed)
    d_results = xcuda().zeros(grid, np.uint32)
    m["computeValue<float>"][grid, block, None, block * 4](d_results, xcuda().Pointer(d_states.ptr), num_sims)
    per_thread = cdiv(num_sims, threads)
    u = xorwow_uniform(seed, threads, 2 * per_thread)  # (threads, draws) as float32
    x, y = u[:, 0::2].astype(np.float64), u[:, 1::2].astype(np.float64)
    # x * x + y * y in float with one rounding of y * y and a fused multiply-add (as NVRTC contracts it)
    inside = (x * x + (y * y).astype(np.float32).astype(np.float64)).astype(np.float32) < 1.0
    sims = np.arange(threads)[:, None] + threads * np.arange(per_thread)[None, :] < num_sims
    expected = (inside & sims).sum(axis=1).reshape(grid, block).sum(axis=1).astype(np.uint32)
    results = d_results.copy_to_host()
    return [("points inside per block", results, expected),
            ("pi", np.float64(4.0 * results.sum() / num_sims), np.float64(4.0 * expected.sum() / num_sims))]


MORE_SAMPLES = [
    Program("cuda_samples_vectorAdd", [("", VECTOR_ADD)], run_vector_add,
            "NVIDIA/cuda-samples Samples/0_Introduction/vectorAdd (BSD-3-Clause)", "CUDA samples"),
    Program("cuda_samples_matrixMul", [("--name matrixMul", MATRIX_MUL)], run_matrix_mul,
            "NVIDIA/cuda-samples Samples/0_Introduction/matrixMul (BSD-3-Clause)", "CUDA samples", tolerance={"rtol": 1e-5}),
    Program("cuda_samples_simpleVoteIntrinsics", [("", SIMPLE_VOTE)], run_simple_vote,
            "NVIDIA/cuda-samples Samples/0_Introduction/simpleVoteIntrinsics (BSD-3-Clause)", "CUDA samples"),
    Program("cuda_samples_histogram256", [("", HISTOGRAM256)], run_histogram256,
            "NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/histogram (BSD-3-Clause)", "CUDA samples",
            shrunk="1 MiB of bytes (the sample's 64 MiB)"),
    Program("cuda_samples_scalarProd", [("", SCALAR_PROD)], run_scalar_prod,
            "NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/scalarProd (BSD-3-Clause)", "CUDA samples",
            tolerance={"rtol": 1e-5}),
    Program("cuda_samples_warpAggregatedAtomicsCG", [("", WARP_AGGREGATED)], run_warp_aggregated,
            "NVIDIA/cuda-samples Samples/3_CUDA_Features/warpAggregatedAtomicsCG (BSD-3-Clause)", "CUDA samples",
            shrunk="2^16 elements (the sample's 10,000,000)"),
    Program("cuda_samples_threadFenceReduction", [("--name threadfence", THREAD_FENCE_REDUCTION)],
            run_thread_fence_reduction,
            "NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/threadFenceReduction (BSD-3-Clause)", "CUDA samples",
            tolerance={"rtol": 1e-6}),
    Program("curand_MC_EstimatePiInlineP", [("--name piestimator", MC_PI)], run_mc_pi,
            "NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/MC_EstimatePiInlineP (BSD-3-Clause)",
            "cuRAND Monte Carlo", shrunk="2^14 simulations on 4096 threads (the sample's 100,000)",
            opaque=("curandState",)),
]
