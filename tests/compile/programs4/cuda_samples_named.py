"""The six CUDA samples issue 46 names: reduction, shfl_scan, globalToShmemAsyncCopy, fp16ScalarProduct,
cudaTensorCoreGemm, jacobiCudaGraphs (NVIDIA/cuda-samples, BSD-3-Clause).

Each source is written for these tests after the sample's .cu file (the same kernels, signatures, constants,
launch shapes and device APIs: cooperative groups, `cuda::pipeline`, `cuda::barrier`, `half2`, `wmma`), not
copied from it; the host code each sample's main() runs becomes `run(ns)`, as a notebook user writes it.
"""
import os

import numpy as np

from program import Program, cdiv, xcuda

# ---- reduction ------------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu
# (BSD-3-Clause): SharedMemory<T>, reduce0 .. reduce7, cg_reduce and multi_warp_cg_reduce, launched as
# reduction.cpp's getNumBlocksAndThreads chooses (maxThreads 256, maxBlocks 64) on ints (its default type).
REDUCTION = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <stdio.h>

namespace cg = cooperative_groups;

// Dynamically sized shared memory of any type (extern arrays of a template type would clash).
template <class T> struct SharedMemory {
  __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
  __device__ inline operator const T *() const { extern __shared__ int __smem[]; return (T *)__smem; }
};

template <> struct SharedMemory<double> {
  __device__ inline operator double *() { extern __shared__ double __smem_d[]; return (double *)__smem_d; }
  __device__ inline operator const double *() const { extern __shared__ double __smem_d[]; return (double *)__smem_d; }
};

template <class T> __device__ __forceinline__ T warpReduceSum(unsigned int mask, T mySum) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) mySum += __shfl_down_sync(mask, mySum, offset);
  return mySum;
}

#if __CUDA_ARCH__ >= 800
// Ampere's redux.sync adds a warp's ints in one instruction.
template <> __device__ __forceinline__ int warpReduceSum<int>(unsigned int mask, int mySum) {
  mySum = __reduce_add_sync(mask, mySum);
  return mySum;
}
#endif

// Interleaved addressing with the modulo operator: divergent warps.
template <class T> __global__ void reduce0(T *g_idata, T *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// Contiguous threads, strided shared-memory indices: bank conflicts.
template <class T> __global__ void reduce1(T *g_idata, T *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    int index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] += sdata[index + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// Sequential addressing: no divergence, no bank conflicts.
template <class T> __global__ void reduce2(T *g_idata, T *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// n/2 threads: the first addition while loading from global memory.
template <class T> __global__ void reduce3(T *g_idata, T *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  T mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockDim.x < n) mySum += g_idata[i + blockDim.x];
  sdata[tid] = mySum;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = mySum;
}

// The last warp by shuffles of a 32-thread tile.
template <class T, unsigned int blockSize> __global__ void reduce4(T *g_idata, T *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  T mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockSize < n) mySum += g_idata[i + blockSize];
  sdata[tid] = mySum;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
    cg::sync(cta);
  }
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  if (cta.thread_rank() < 32) {
    if (blockSize >= 64) mySum += sdata[tid + 32];
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) mySum += tile32.shfl_down(mySum, offset);
  }
  if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
}

// Completely unrolled on the template block size.
template <class T, unsigned int blockSize> __global__ void reduce5(T *g_idata, T *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
  T mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockSize < n) mySum += g_idata[i + blockSize];
  sdata[tid] = mySum;
  cg::sync(cta);
  if ((blockSize >= 512) && (tid < 256)) sdata[tid] = mySum = mySum + sdata[tid + 256];
  cg::sync(cta);
  if ((blockSize >= 256) && (tid < 128)) sdata[tid] = mySum = mySum + sdata[tid + 128];
  cg::sync(cta);
  if ((blockSize >= 128) && (tid < 64)) sdata[tid] = mySum = mySum + sdata[tid + 64];
  cg::sync(cta);
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  if (cta.thread_rank() < 32) {
    if (blockSize >= 64) mySum += sdata[tid + 32];
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) mySum += tile32.shfl_down(mySum, offset);
  }
  if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
}

// Several elements per thread by a grid-stride loop (Brent's theorem).
template <class T, unsigned int blockSize, bool nIsPow2> __global__ void reduce6(T *g_idata, T *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int gridSize = blockSize * gridDim.x;
  T mySum = 0;
  if (nIsPow2) {
    unsigned int i = blockIdx.x * blockSize * 2 + threadIdx.x;
    gridSize = gridSize << 1;
    while (i < n) {
      mySum += g_idata[i];
      if ((i + blockSize) < n) mySum += g_idata[i + blockSize];
      i += gridSize;
    }
  } else {
    unsigned int i = blockIdx.x * blockSize + threadIdx.x;
    while (i < n) { mySum += g_idata[i]; i += gridSize; }
  }
  sdata[tid] = mySum;
  cg::sync(cta);
  if ((blockSize >= 512) && (tid < 256)) sdata[tid] = mySum = mySum + sdata[tid + 256];
  cg::sync(cta);
  if ((blockSize >= 256) && (tid < 128)) sdata[tid] = mySum = mySum + sdata[tid + 128];
  cg::sync(cta);
  if ((blockSize >= 128) && (tid < 64)) sdata[tid] = mySum = mySum + sdata[tid + 64];
  cg::sync(cta);
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  if (cta.thread_rank() < 32) {
    if (blockSize >= 64) mySum += sdata[tid + 32];
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) mySum += tile32.shfl_down(mySum, offset);
  }
  if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
}

// Warp sums first, then one warp adds the warps' sums: one __syncthreads.
template <typename T, unsigned int blockSize, bool nIsPow2>
__global__ void reduce7(const T *__restrict__ g_idata, T *__restrict__ g_odata, unsigned int n) {
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int gridSize = blockSize * gridDim.x;
  unsigned int maskLength = (blockSize & 31);
  maskLength = (maskLength > 0) ? (32 - maskLength) : maskLength;
  const unsigned int mask = (0xffffffff) >> maskLength;
  T mySum = 0;
  if (nIsPow2) {
    unsigned int i = blockIdx.x * blockSize * 2 + threadIdx.x;
    gridSize = gridSize << 1;
    while (i < n) {
      mySum += g_idata[i];
      if ((i + blockSize) < n) mySum += g_idata[i + blockSize];
      i += gridSize;
    }
  } else {
    unsigned int i = blockIdx.x * blockSize + threadIdx.x;
    while (i < n) { mySum += g_idata[i]; i += gridSize; }
  }
  mySum = warpReduceSum<T>(mask, mySum);
  if ((tid % warpSize) == 0) sdata[tid / warpSize] = mySum;
  __syncthreads();
  const unsigned int shmem_extent = (blockSize / warpSize) > 0 ? (blockSize / warpSize) : 1;
  const unsigned int ballot_result = __ballot_sync(mask, tid < shmem_extent);
  if (tid < shmem_extent) {
    mySum = sdata[tid];
    mySum = warpReduceSum<T>(ballot_result, mySum);
  }
  if (tid == 0) g_odata[blockIdx.x] = mySum;
}

template <typename T, typename Group> __device__ T cg_reduce_n(T in, Group &threads) {
  return cg::reduce(threads, in, cg::plus<T>());
}

// cg::reduce over 32-thread tiles after a shared-memory tree.
template <class T> __global__ void cg_reduce(T *g_idata, T *g_odata, unsigned int n) {
  T *sdata = SharedMemory<T>();
  cg::thread_block cta = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cta);
  unsigned int ctaSize = cta.size();
  unsigned int numCtas = gridDim.x;
  unsigned int threadRank = cta.thread_rank();
  unsigned int threadIndex = (blockIdx.x * ctaSize) + threadRank;
  T threadVal = 0;
  {
    unsigned int i = threadIndex;
    unsigned int indexStride = (numCtas * ctaSize);
    while (i < n) { threadVal += g_idata[i]; i += indexStride; }
    sdata[threadRank] = threadVal;
  }
  {
    unsigned int ctaSteps = tile.meta_group_size();
    unsigned int ctaIndex = ctaSize >> 1;
    while (ctaIndex >= 32) {
      cta.sync();
      if (threadRank < ctaIndex) {
        threadVal += sdata[threadRank + ctaIndex];
        sdata[threadRank] = threadVal;
      }
      ctaSteps >>= 1;
      ctaIndex >>= 1;
    }
  }
  {
    cta.sync();
    if (tile.meta_group_rank() == 0) threadVal = cg_reduce_n(threadVal, tile);
  }
  if (threadRank == 0) g_odata[blockIdx.x] = threadVal;
}

// Tiles of several warps: their scratch lives in block_tile_memory.
template <class T, size_t BlockSize, size_t MultiWarpGroupSize>
__global__ void multi_warp_cg_reduce(T *g_idata, T *g_odata, unsigned int n) {
  T *sdata = SharedMemory<T>();
  __shared__ cg::block_tile_memory<BlockSize> scratch;
  auto cta = cg::this_thread_block(scratch);
  auto multiWarpTile = cg::tiled_partition<MultiWarpGroupSize>(cta);
  unsigned int gridSize = BlockSize * gridDim.x;
  T threadVal = 0;
  int nIsPow2 = !(n & n - 1);
  if (nIsPow2) {
    unsigned int i = blockIdx.x * BlockSize * 2 + threadIdx.x;
    gridSize = gridSize << 1;
    while (i < n) {
      threadVal += g_idata[i];
      if ((i + BlockSize) < n) threadVal += g_idata[i + blockDim.x];
      i += gridSize;
    }
  } else {
    unsigned int i = blockIdx.x * BlockSize + threadIdx.x;
    while (i < n) { threadVal += g_idata[i]; i += gridSize; }
  }
  threadVal = cg_reduce_n(threadVal, multiWarpTile);
  if (multiWarpTile.thread_rank() == 0) sdata[multiWarpTile.meta_group_rank()] = threadVal;
  cg::sync(cta);
  if (threadIdx.x == 0) {
    threadVal = 0;
    for (int i = 0; i < multiWarpTile.meta_group_size(); i++) threadVal += sdata[i];
    g_odata[blockIdx.x] = threadVal;
  }
}
"""

REDUCTION_INSTANCES = ["reduce0<int>", "reduce1<int>", "reduce2<int>", "reduce3<int>", "reduce4<int, 256>",
                       "reduce5<int, 256>", "reduce6<int, 256, true>", "reduce6<int, 256, false>",
                       "reduce7<int, 256, true>", "reduce7<int, 256, false>", "cg_reduce<int>",
                       "multi_warp_cg_reduce<int, 256, 64>"]


def next_pow2(x):
    return 1 << (int(x) - 1).bit_length()


def blocks_and_threads(which, n, max_blocks=64, max_threads=256):
    """reduction.cpp's getNumBlocksAndThreads."""
    if which < 3:
        threads = next_pow2(n) if n < max_threads else max_threads
        blocks = cdiv(n, threads)
    else:
        threads = next_pow2(cdiv(n, 2)) if n < max_threads * 2 else max_threads
        blocks = cdiv(n, threads * 2)
    if which >= 6:
        blocks = min(max_blocks, blocks)
    return blocks, threads


def run_reduction(ns):
    m = ns["reduction"]
    found = []
    for n in (1 << 16, (1 << 16) - 37):  # a power of two, and not
        h_idata = (np.random.default_rng(n).integers(0, 1 << 31, n, dtype=np.int64) & 0xFF).astype(np.int32)
        d_idata = xcuda().to_device(h_idata)
        for which, name in enumerate(REDUCTION_INSTANCES):
            pow2 = n & (n - 1) == 0
            if ("true" in name and not pow2) or ("false" in name and pow2):
                continue
            number = 8 if name.startswith("cg_") else 9 if name.startswith("multi") else int(name[6])
            blocks, threads = blocks_and_threads(number, n)
            shared = (2 if threads <= 32 else 1) * threads * 4
            d_odata = xcuda().zeros(blocks, np.int32)
            m[name][blocks, threads, None, shared](d_idata, d_odata, n)
            partial = d_odata.copy_to_host()
            if number < 3:
                expected = np.zeros(blocks * threads, np.int64)
                expected[:n] = h_idata
                found.append((f"{name} n={n} per block", partial, expected.reshape(blocks, threads).sum(axis=1)))
            found.append((f"{name} n={n}", np.int64(partial.astype(np.int64).sum()), np.int64(h_idata.sum())))
    return found


# ---- shfl_scan --------------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/shfl_scan/shfl_scan.cu and
# shfl_integral_image.cuh (BSD-3-Clause): shfl_scan_test and uniform_add on 65536 ints in blocks of 256
# (the partial sums scanned by a second shfl_scan_test), and shfl_intimage_rows: one 1920-pixel row of
# bytes per block of 120 threads, 16 pixels (a uint4) each. The sample's image is 1920 x 1080 of ones: here
# 64 rows of random bytes (the rows are independent; 64 keep CI's time short).
SHFL_SCAN = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void shfl_scan_test(int *data, int width, int *partial_sums = NULL) {
  extern __shared__ int sums[];
  int id = ((blockIdx.x * blockDim.x) + threadIdx.x);
  int lane_id = id % warpSize;
  int warp_id = threadIdx.x / warpSize;  // the warp of this thread in its block
  int value = data[id];

  // An inclusive scan of each warp by shuffles up.
#pragma unroll
  for (int i = 1; i <= width; i *= 2) {
    unsigned int mask = 0xffffffff;
    int n = __shfl_up_sync(mask, value, i, width);
    if (lane_id >= i) value += n;
  }
  if (threadIdx.x % warpSize == warpSize - 1) sums[warp_id] = value;
  __syncthreads();

  // The first warp scans the warps' sums.
  if (warp_id == 0 && lane_id < (blockDim.x / warpSize)) {
    int warp_sum = sums[lane_id];
    int mask = (1 << (blockDim.x / warpSize)) - 1;
    for (int i = 1; i <= (blockDim.x / warpSize); i *= 2) {
      int n = __shfl_up_sync(mask, warp_sum, i, (blockDim.x / warpSize));
      if (lane_id >= i) warp_sum += n;
    }
    sums[lane_id] = warp_sum;
  }
  __syncthreads();

  int blockSum = 0;
  if (warp_id > 0) blockSum = sums[warp_id - 1];
  value += blockSum;
  data[id] = value;
  if (partial_sums != NULL && threadIdx.x == blockDim.x - 1) partial_sums[blockIdx.x] = value;
}

__global__ void uniform_add(int *data, int *partial_sums, int len) {
  __shared__ int buf;
  int id = ((blockIdx.x * blockDim.x) + threadIdx.x);
  if (id > len) return;
  if (threadIdx.x == 0) buf = partial_sums[blockIdx.x];
  __syncthreads();
  data[id] += buf;
}

__device__ uchar4 uint_to_uchar4(const unsigned int in) {
  return make_uchar4((in & 0x000000ff) >> 0, (in & 0x0000ff00) >> 8, (in & 0x00ff0000) >> 16, (in & 0xff000000) >> 24);
}

struct packed_result { uint4 x, y, z, w; };

// The prefix sums of 16 bytes per thread across a block of warps.
__device__ packed_result get_prefix_sum(const uint4 &data, const cg::thread_block &cta) {
  const auto tile = cg::tiled_partition<32>(cta);
  __shared__ unsigned int sums[128];
  const unsigned int lane_id = tile.thread_rank();
  const unsigned int warp_id = tile.meta_group_rank();
  unsigned int result[16] = {};
  {
    const uchar4 a = uint_to_uchar4(data.x), b = uint_to_uchar4(data.y);
    const uchar4 c = uint_to_uchar4(data.z), d = uint_to_uchar4(data.w);
    result[0] = a.x; result[1] = a.x + a.y; result[2] = a.x + a.y + a.z; result[3] = a.x + a.y + a.z + a.w;
    result[4] = b.x; result[5] = b.x + b.y; result[6] = b.x + b.y + b.z; result[7] = b.x + b.y + b.z + b.w;
    result[8] = c.x; result[9] = c.x + c.y; result[10] = c.x + c.y + c.z; result[11] = c.x + c.y + c.z + c.w;
    result[12] = d.x; result[13] = d.x + d.y; result[14] = d.x + d.y + d.z; result[15] = d.x + d.y + d.z + d.w;
  }
#pragma unroll
  for (unsigned int i = 4; i <= 7; i++) result[i] += result[3];
#pragma unroll
  for (unsigned int i = 8; i <= 11; i++) result[i] += result[7];
#pragma unroll
  for (unsigned int i = 12; i <= 15; i++) result[i] += result[11];
  unsigned int sum = result[15];
#pragma unroll
  for (unsigned int i = 1; i < 32; i *= 2) {
    const unsigned int n = tile.shfl_up(sum, i);
    if (lane_id >= i) {
#pragma unroll
      for (unsigned int j = 0; j < 16; j++) result[j] += n;
      sum += n;
    }
  }
  if (tile.thread_rank() == (tile.size() - 1)) sums[warp_id] = result[15];
  __syncthreads();
  if (warp_id == 0) {
    unsigned int warp_sum = sums[lane_id];
#pragma unroll
    for (unsigned int i = 1; i <= 16; i *= 2) {
      const unsigned int n = tile.shfl_up(warp_sum, i);
      if (lane_id >= i) warp_sum += n;
    }
    sums[lane_id] = warp_sum;
  }
  __syncthreads();
  if (warp_id > 0) {
    const unsigned int blockSum = sums[warp_id - 1];
#pragma unroll
    for (unsigned int i = 0; i < 16; i++) result[i] += blockSum;
  }
  packed_result out;
  memcpy(&out, result, sizeof(out));
  return out;
}

// One image row per block: 120 threads of 16 bytes each make a 1920-pixel row.
__global__ void shfl_intimage_rows(const uint4 *img, uint4 *integral_image) {
  const auto cta = cg::this_thread_block();
  const auto tile = cg::tiled_partition<32>(cta);
  const unsigned int id = threadIdx.x;
  const uint4 *scanline = &img[blockIdx.x * 120];
  packed_result result = get_prefix_sum(scanline[id], cta);

  // Four uint4 of results per thread (16 consecutive pixels): in four rounds of shuffles across each quad
  // of threads, lane l takes vector l of lane l ^ k, so that a quad's stores fill its 256 bytes together.
  const unsigned int idMask = id & 3;
  uint4 *out = &integral_image[blockIdx.x * 480 + (id & ~3u) * 4];
  const uint4 r[4] = {result.x, result.y, result.z, result.w};
#pragma unroll
  for (unsigned int k = 0; k < 4; k++) {
    const uint4 mine = r[idMask ^ k];
    uint4 got;
    got.x = tile.shfl_xor(mine.x, k);
    got.y = tile.shfl_xor(mine.y, k);
    got.z = tile.shfl_xor(mine.z, k);
    got.w = tile.shfl_xor(mine.w, k);
    out[(idMask ^ k) * 4 + idMask] = got;
  }
}
"""


def run_shfl_scan(ns):
    m = ns["shfl_scan"]
    n_elements, block_size = 65536, 256
    h_data = np.random.default_rng(3).integers(0, 16, n_elements).astype(np.int32)
    grid_size = n_elements // block_size
    shmem_sz = block_size // 32 * 4
    n_partial_sums = n_elements // block_size
    partial_size = n_partial_sums * 4
    d_data = xcuda().to_device(h_data)
    d_partial_sums = xcuda().zeros(n_partial_sums, np.int32)
    m.shfl_scan_test[grid_size, block_size, None, shmem_sz](d_data, 32, d_partial_sums)
    p_block_size = min(n_partial_sums, block_size)
    p_grid_size = cdiv(n_partial_sums, p_block_size)
    m.shfl_scan_test[p_grid_size, p_block_size, None, partial_size](d_partial_sums, 32)
    m.uniform_add[grid_size - 1, block_size](d_data[block_size:], d_partial_sums, n_elements)
    found = [("shfl_scan", d_data.copy_to_host(), np.cumsum(h_data).astype(np.int32))]

    width, height = 1920, 64
    image = np.random.default_rng(4).integers(0, 256, (height, width)).astype(np.uint8)
    d_image = xcuda().to_device(image.view(np.uint32).reshape(height, width // 16, 4))
    d_integral = xcuda().zeros((height, width // 4, 4), np.uint32)
    m.shfl_intimage_rows[height, width // 16](d_image, d_integral)
    found.append(("shfl_intimage_rows", d_integral.copy_to_host().reshape(height, width),
                  np.cumsum(image.astype(np.uint32), axis=1)))
    return found



# ---- fp16ScalarProduct ------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/0_Introduction/fp16ScalarProduct/fp16ScalarProduct.cu
# (BSD-3-Clause): the native-operator and intrinsic kernels on half2, 128 blocks of 128 threads over
# 128 * 128 * 16 pairs of rand() % 4 and rand() % 2, as published. The loop's start, threadIdx.x +
# blockDim.x + blockIdx.x, is the sample's own (so its first 128 pairs are never read); numpy does the
# same, in float16, in the kernels' order.
FP16_SCALAR_PRODUCT = r"""
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include "cuda_fp16.h"

#define NUM_OF_BLOCKS 128
#define NUM_OF_THREADS 128

__forceinline__ __device__ void reduceInShared_intrinsics(half2 *const v) {
  if (threadIdx.x < 64) v[threadIdx.x] = __hadd2(v[threadIdx.x], v[threadIdx.x + 64]);
  __syncthreads();
  if (threadIdx.x < 32) v[threadIdx.x] = __hadd2(v[threadIdx.x], v[threadIdx.x + 32]);
  __syncthreads();
  if (threadIdx.x < 16) v[threadIdx.x] = __hadd2(v[threadIdx.x], v[threadIdx.x + 16]);
  __syncthreads();
  if (threadIdx.x < 8) v[threadIdx.x] = __hadd2(v[threadIdx.x], v[threadIdx.x + 8]);
  __syncthreads();
  if (threadIdx.x < 4) v[threadIdx.x] = __hadd2(v[threadIdx.x], v[threadIdx.x + 4]);
  __syncthreads();
  if (threadIdx.x < 2) v[threadIdx.x] = __hadd2(v[threadIdx.x], v[threadIdx.x + 2]);
  __syncthreads();
  if (threadIdx.x < 1) v[threadIdx.x] = __hadd2(v[threadIdx.x], v[threadIdx.x + 1]);
  __syncthreads();
}

__forceinline__ __device__ void reduceInShared_native(half2 *const v) {
  if (threadIdx.x < 64) v[threadIdx.x] = v[threadIdx.x] + v[threadIdx.x + 64];
  __syncthreads();
  if (threadIdx.x < 32) v[threadIdx.x] = v[threadIdx.x] + v[threadIdx.x + 32];
  __syncthreads();
  if (threadIdx.x < 16) v[threadIdx.x] = v[threadIdx.x] + v[threadIdx.x + 16];
  __syncthreads();
  if (threadIdx.x < 8) v[threadIdx.x] = v[threadIdx.x] + v[threadIdx.x + 8];
  __syncthreads();
  if (threadIdx.x < 4) v[threadIdx.x] = v[threadIdx.x] + v[threadIdx.x + 4];
  __syncthreads();
  if (threadIdx.x < 2) v[threadIdx.x] = v[threadIdx.x] + v[threadIdx.x + 2];
  __syncthreads();
  if (threadIdx.x < 1) v[threadIdx.x] = v[threadIdx.x] + v[threadIdx.x + 1];
  __syncthreads();
}

__global__ void scalarProductKernel_intrinsics(half2 const *const a, half2 const *const b, float *const results,
                                               size_t const size) {
  const int stride = gridDim.x * blockDim.x;
  __shared__ half2 shArray[NUM_OF_THREADS];
  shArray[threadIdx.x] = __float2half2_rn(0.f);
  half2 value = __float2half2_rn(0.f);
  for (int i = threadIdx.x + blockDim.x + blockIdx.x; i < size; i += stride) value = __hfma2(a[i], b[i], value);
  shArray[threadIdx.x] = value;
  __syncthreads();
  reduceInShared_intrinsics(shArray);
  if (threadIdx.x == 0) {
    half2 result = shArray[0];
    float f_result = __low2float(result) + __high2float(result);
    results[blockIdx.x] = f_result;
  }
}

__global__ void scalarProductKernel_native(half2 const *const a, half2 const *const b, float *const results,
                                           size_t const size) {
  const int stride = gridDim.x * blockDim.x;
  __shared__ half2 shArray[NUM_OF_THREADS];
  half2 value(0.f, 0.f);
  shArray[threadIdx.x] = value;
  for (int i = threadIdx.x + blockDim.x + blockIdx.x; i < size; i += stride) value = a[i] * b[i] + value;
  shArray[threadIdx.x] = value;
  __syncthreads();
  reduceInShared_native(shArray);
  if (threadIdx.x == 0) {
    half2 result = shArray[0];
    float f_result = (float)result.y + (float)result.x;
    results[blockIdx.x] = f_result;
  }
}
"""


def fp16_reference(a, b, blocks, threads):
    """The kernels' arithmetic in numpy's float16: a fused multiply-add per pair (exact here: small
    integers), then the shared-memory tree, then low + high in float."""
    size = a.shape[0]
    stride = blocks * threads
    value = np.zeros((blocks, threads, 2), np.float16)
    for block in range(blocks):
        for t in range(threads):
            idx = np.arange(t + threads + block, size, stride)
            acc = np.zeros(2, np.float16)
            for i in idx:
                acc = (a[i].astype(np.float32) * b[i].astype(np.float32) + acc.astype(np.float32)).astype(np.float16)
            value[block, t] = acc
    width = threads
    while width > 1:
        width //= 2
        value[:, :width] = (value[:, :width].astype(np.float32) + value[:, width:2 * width].astype(np.float32)).astype(np.float16)
    return value[:, 0, 0].astype(np.float32) + value[:, 0, 1].astype(np.float32)


def run_fp16_scalar_product(ns):
    blocks = threads = 128
    size = blocks * threads * 16
    rng = np.random.default_rng(5)
    vec = []
    for _ in range(2):
        pairs = np.empty((size, 2), np.float16)
        pairs[:, 0] = rng.integers(0, 4, size)
        pairs[:, 1] = rng.integers(0, 2, size)
        vec.append(pairs)
    dev = [xcuda().to_device(v) for v in vec]
    expected = fp16_reference(vec[0], vec[1], blocks, threads)
    found = []
    for name in ("scalarProductKernel_native", "scalarProductKernel_intrinsics"):
        d_results = xcuda().zeros(blocks, np.float32)
        ns[name][blocks, threads](dev[0], dev[1], d_results, size)
        results = d_results.copy_to_host()
        found.append((name, results, expected))
        found.append((name + " summed on the host", np.float32(results.sum(dtype=np.float32)),
                      np.float32(expected.sum(dtype=np.float32))))
    return found


# ---- globalToShmemAsyncCopy --------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/3_CUDA_Features/globalToShmemAsyncCopy/globalToShmemAsyncCopy.cu
# (BSD-3-Clause): the matrix multiply of 16 x 16 tiles with the tiles brought to shared memory by
# cuda::memcpy_async through a four-stage cuda::pipeline (MultiStageLargeChunk), through a cuda::barrier
# (LargeChunkAWBarrier), through cooperative_groups::memcpy_async (SingleStage), and by plain loads
# (Naive). The sample's matrices are 640 x 640: here 128 x 128 and 128 x 192 (each kernel reads every
# tile of A and B as there; smaller keeps CI's time short).
ASYNC_COPY = r"""
#include <assert.h>
#include <stdio.h>
#include <cuda/pipeline>
#if __CUDA_ARCH__ >= 700
#include <cuda/barrier>
#endif
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>

namespace cg = cooperative_groups;

// Multi-stage: up to four tiles of A and B in flight while the block computes on the oldest.
template <int BLOCK_SIZE>
__global__ void MatrixMulAsyncCopyMultiStageLargeChunk(float *__restrict__ C, const float *__restrict__ A,
                                                       const float *__restrict__ B, int wA, int wB) {
  constexpr size_t maxPipelineStages = 4;
  __shared__ alignas(alignof(float4)) float As[maxPipelineStages][BLOCK_SIZE][BLOCK_SIZE];
  __shared__ alignas(alignof(float4)) float Bs[maxPipelineStages][BLOCK_SIZE][BLOCK_SIZE];
  float Csub = 0.0;
  const int aBegin = wA * (BLOCK_SIZE)*blockIdx.y;
  const int aEnd = aBegin + wA - 1;
  int aStep = BLOCK_SIZE;
  const int bBegin = BLOCK_SIZE * blockIdx.x;
  int bStep = BLOCK_SIZE * wB;
  const int t4x = threadIdx.x * 4;  // a float4 per thread of the first quarter of each row
  const auto shape4 = cuda::aligned_size_t<alignof(float4)>(sizeof(float4));
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  for (int a = aBegin, b = bBegin, i = 0, aStage = aBegin, bStage = bBegin, iStage = 0; a <= aEnd;
       a += aStep, b += bStep, ++i) {
    for (; aStage <= a + aStep * maxPipelineStages; aStage += aStep, bStage += bStep, ++iStage) {
      pipe.producer_acquire();
      if (aStage <= aEnd && t4x < BLOCK_SIZE) {
        const int j = iStage % maxPipelineStages;
        cuda::memcpy_async(&As[j][threadIdx.y][t4x], &A[aStage + wA * threadIdx.y + t4x], shape4, pipe);
        cuda::memcpy_async(&Bs[j][threadIdx.y][t4x], &B[bStage + wB * threadIdx.y + t4x], shape4, pipe);
      }
      pipe.producer_commit();
    }
    pipe.consumer_wait();
    __syncthreads();
    const int j = i % maxPipelineStages;
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[j][threadIdx.y][k] * Bs[j][k][threadIdx.x];
    pipe.consumer_release();
    __syncthreads();
  }
  int c = wB * BLOCK_SIZE * blockIdx.y + BLOCK_SIZE * blockIdx.x;
  C[c + wB * threadIdx.y + threadIdx.x] = Csub;
}

// One stage, the copies counted by an arrive-wait barrier.
template <int BLOCK_SIZE>
__global__ void MatrixMulAsyncCopyLargeChunkAWBarrier(float *__restrict__ C, const float *__restrict__ A,
                                                      const float *__restrict__ B, int wA, int wB) {
#if __CUDA_ARCH__ >= 700
#pragma diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ alignas(alignof(float4)) float As[BLOCK_SIZE][BLOCK_SIZE];
  __shared__ alignas(alignof(float4)) float Bs[BLOCK_SIZE][BLOCK_SIZE];
  if (threadIdx.x == 0 && threadIdx.y == 0) init(&bar, blockDim.x * blockDim.y);
  __syncthreads();
  int aBegin = wA * BLOCK_SIZE * blockIdx.y;
  int aEnd = aBegin + wA - 1;
  int aStep = BLOCK_SIZE;
  int bBegin = BLOCK_SIZE * blockIdx.x;
  int bStep = BLOCK_SIZE * wB;
  float Csub = 0.0;
  const int t4x = threadIdx.x * 4;
  for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
    if (t4x < BLOCK_SIZE) {
      float4 *const A4s = reinterpret_cast<float4 *>(&As[threadIdx.y][t4x]);
      float4 *const B4s = reinterpret_cast<float4 *>(&Bs[threadIdx.y][t4x]);
      const float4 *const A4 = reinterpret_cast<const float4 *>(&A[a + wA * threadIdx.y + t4x]);
      const float4 *const B4 = reinterpret_cast<const float4 *>(&B[b + wB * threadIdx.y + t4x]);
      cuda::memcpy_async(A4s, A4, sizeof(float4), bar);
      cuda::memcpy_async(B4s, B4, sizeof(float4), bar);
    }
    bar.arrive_and_wait();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    bar.arrive_and_wait();
  }
  int c = wB * BLOCK_SIZE * blockIdx.y + BLOCK_SIZE * blockIdx.x;
  C[c + wB * threadIdx.y + threadIdx.x] = Csub;
#endif
}

// One stage, the block's copies made together by cooperative_groups::memcpy_async.
template <int BLOCK_SIZE>
__global__ void MatrixMulAsyncCopySingleStage(float *C, const float *A, const float *B, int wA, int wB) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
  __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
  int aBegin = wA * BLOCK_SIZE * blockIdx.y;
  int aEnd = aBegin + wA - 1;
  int aStep = BLOCK_SIZE;
  int bBegin = BLOCK_SIZE * blockIdx.x;
  int bStep = BLOCK_SIZE * wB;
  float Csub = 0.0;
  for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
    for (int row = 0; row < BLOCK_SIZE; ++row) {  // a row of each tile per call, all the block's threads
      cg::memcpy_async(cta, &As[row][0], &A[a + wA * row], sizeof(float) * BLOCK_SIZE);
      cg::memcpy_async(cta, &Bs[row][0], &B[b + wB * row], sizeof(float) * BLOCK_SIZE);
    }
    cg::wait(cta);
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    cg::sync(cta);
  }
  int c = wB * BLOCK_SIZE * blockIdx.y + BLOCK_SIZE * blockIdx.x;
  C[c + wB * threadIdx.y + threadIdx.x] = Csub;
}

// Plain loads into shared memory, for comparison.
template <int BLOCK_SIZE>
__global__ void MatrixMulNaive(float *C, float *A, float *B, int wA, int wB) {
  __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
  __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
  int aBegin = wA * BLOCK_SIZE * blockIdx.y;
  int aEnd = aBegin + wA - 1;
  int aStep = BLOCK_SIZE;
  int bBegin = BLOCK_SIZE * blockIdx.x;
  int bStep = BLOCK_SIZE * wB;
  float Csub = 0;
  for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
    As[threadIdx.y][threadIdx.x] = A[a + wA * threadIdx.y + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[b + wB * threadIdx.y + threadIdx.x];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  int c = wB * BLOCK_SIZE * blockIdx.y + BLOCK_SIZE * blockIdx.x;
  C[c + wB * threadIdx.y + threadIdx.x] = Csub;
}
"""

ASYNC_COPY_INSTANCES = ["MatrixMulAsyncCopyMultiStageLargeChunk<16>", "MatrixMulAsyncCopyLargeChunkAWBarrier<16>",
                        "MatrixMulAsyncCopySingleStage<16>", "MatrixMulNaive<16>"]


def run_async_copy(ns):
    m = ns["async_copy"]
    block_size = 16
    hA, wA, wB = 128, 128, 192
    rng = np.random.default_rng(6)
    h_A = rng.random((hA, wA), dtype=np.float32)
    h_B = rng.random((wA, wB), dtype=np.float32)
    d_A, d_B = xcuda().to_device(h_A), xcuda().to_device(h_B)
    expected = h_A.astype(np.float64) @ h_B.astype(np.float64)
    found = []
    for name in ASYNC_COPY_INSTANCES:
        d_C = xcuda().zeros((hA, wB), np.float32)
        # The large-chunk kernels copy a float4 per thread: blocks of (BLOCK_SIZE / 4, BLOCK_SIZE) would do,
        # and the sample launches them with BLOCK_SIZE x BLOCK_SIZE as the others.
        def launch():
            m[name][(wB // block_size, hA // block_size), (block_size, block_size)](d_C, d_A, d_B, wA, wB)

        if name.startswith("MatrixMulAsyncCopyMultiStageLargeChunk"):
            # The published sample's hazard: its producer loop (aStage <= a + aStep * maxPipelineStages) keeps five
            # stages in flight in four buffers, so stage i+4's copy into buffer i % 4 is pending while the block
            # computes on that buffer (and while stage i's copy into it is). A GPU lands the copy whenever it
            # likes (an H200 gave wrong products on these random matrices); the simulator lands it at the wait,
            # and its async-copy check (docs/simulator.md) reports the access. So: on the simulator the report is
            # the expected result; on a GPU the kernel runs and its product, which depends on timing, is not
            # compared.
            if os.environ.get("XCUDA_DEVICE") == "simulator":
                try:
                    launch()
                    message = ""
                except xcuda().CudaError as error:
                    message = str(error)
                found.append((name + ": the cp.async hazard reported",
                              "a cp.async hazard in block" in message and "has not waited for" in message, True))
            else:
                launch()
                xcuda().synchronize()
            continue
        launch()
        found.append((name, d_C.copy_to_host(), expected))
    return found


# ---- cudaTensorCoreGemm ----------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/3_CUDA_Features/cudaTensorCoreGemm/cudaTensorCoreGemm.cu
# (BSD-3-Clause): D = alpha * A * B + beta * C with half A (row major) and B (column major) and float C and
# D, by compute_gemm (8 warps, 128 x 128 tiles of the block staged through 64 KiB of dynamic shared memory,
# CHUNK_K 4) and by simple_wmma_gemm (one 16 x 16 tile per warp), alpha 1.1 and beta 1.2, the inputs
# rand() % 3. The sample's M_TILES = N_TILES = K_TILES = 256 (4096 x 4096): here 16 (256 x 256).
TENSOR_CORE_GEMM = r"""
#include <assert.h>
#include <cuda.h>
#include <mma.h>
#include <stdio.h>

#define WARP_SIZE 32
#define M 16
#define N 16
#define K 16
#define WMMA_M 16
#define WMMA_N 16
#define WMMA_K 16

// The sample's 256 tiles each way make 4096 x 4096 matrices; 16 make 256 x 256 here.
#define M_TILES 16
#define N_TILES 16
#define K_TILES 16

#define M_GLOBAL (M * M_TILES)
#define N_GLOBAL (N * N_TILES)
#define K_GLOBAL (K * K_TILES)

#define C_LAYOUT wmma::mem_row_major

#define WARPS_PER_BLOCK 8
#define THREADS_PER_BLOCK (WARP_SIZE * WARPS_PER_BLOCK)

#define CHUNK_K 4  // 64 KiB of shared memory per block
#define CHUNK_LINE_BYTES (CHUNK_K * K * sizeof(half))
#define WARP_COPY_BYTES (WARP_SIZE * sizeof(int4))
#define CHUNK_COPY_LINES_PER_WARP (WARP_COPY_BYTES / CHUNK_LINE_BYTES)
#define CHUNK_COPY_LINE_LANES (WARP_SIZE / CHUNK_COPY_LINES_PER_WARP)

#define BLOCK_ROW_WARPS 2
#define BLOCK_COL_WARPS 4
#define WARP_ROW_TILES 4
#define WARP_COL_TILES 2
#define BLOCK_ROW_TILES (WARP_ROW_TILES * BLOCK_ROW_WARPS)
#define BLOCK_COL_TILES (WARP_COL_TILES * BLOCK_COL_WARPS)

#define GLOBAL_MEM_STRIDE N_GLOBAL
#define SHMEM_STRIDE (N * BLOCK_ROW_TILES)
#define SHMEM_OFFSET (N * WARP_ROW_TILES)

// Rows of A and B in shared memory are skewed by 16 halves (32 bytes) against bank conflicts.
#define SKEW_HALF 16

using namespace nvcuda;

__global__ void compute_gemm(const half *A, const half *B, const float *C, float *D, float alpha, float beta) {
  extern __shared__ half shmem[][CHUNK_K * K + SKEW_HALF];
  const unsigned int warpId = threadIdx.x / WARP_SIZE;
  const unsigned int laneId = threadIdx.x % WARP_SIZE;
  const size_t shmem_idx_b_off = BLOCK_COL_TILES * M;  // where B's rows start in shared memory
  // The C and D tiles this warp computes, and the rows of the block's tile this warp streams.
  float *shmem_warp_tile_ptr = (float *)&shmem[0][0] + (warpId / 2) * SHMEM_STRIDE * K * 2 + (warpId % 2) * SHMEM_OFFSET;
  float *shmem_warp_stream_ptr = (float *)&shmem[0][0] + warpId * SHMEM_STRIDE * K;
  beta /= alpha;  // D = alpha * (A * B + beta / alpha * C): one scaling of the accumulators at the end

  for (unsigned int block_pos = blockIdx.x;; block_pos += gridDim.x) {
    const unsigned int block_tile_i = ((block_pos * BLOCK_ROW_TILES) / N_TILES) * (BLOCK_COL_TILES);
    const unsigned int block_tile_j = (block_pos * BLOCK_COL_TILES) % N_TILES;
    if (block_tile_i >= M_TILES) break;  // every tile done

    // This warp's 16 rows of the block's C tile, to shared memory.
    const size_t gmem_idx = (block_tile_i + warpId) * M * GLOBAL_MEM_STRIDE + block_tile_j * N;
    const float *src_gmem_warp_stream_ptr = &C[gmem_idx];
#pragma unroll
    for (int i = 0; i < K; i++) {
      typedef int4 copy_t;
      *((copy_t *)(shmem_warp_stream_ptr + SHMEM_STRIDE * i) + laneId) =
          *((copy_t *)(src_gmem_warp_stream_ptr + GLOBAL_MEM_STRIDE * i) + laneId);
    }
    __syncthreads();

    wmma::fragment<wmma::accumulator, M, N, K, float> c[WARP_COL_TILES][WARP_ROW_TILES];
#pragma unroll
    for (int i = 0; i < WARP_COL_TILES; i++) {
#pragma unroll
      for (int j = 0; j < WARP_ROW_TILES; j++) {
        const float *tile_ptr = shmem_warp_tile_ptr + i * SHMEM_STRIDE * K + j * N;
        wmma::load_matrix_sync(c[i][j], tile_ptr, SHMEM_STRIDE, C_LAYOUT);
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < WARP_COL_TILES; i++) {
#pragma unroll
      for (int j = 0; j < WARP_ROW_TILES; j++) {
#pragma unroll
        for (int t = 0; t < c[i][j].num_elements; t++) c[i][j].x[t] *= beta;
      }
    }

    // Warps 0-3 copy A's rows, warps 4-7 B's columns.
    const half *warp_ptr = (warpId < 4) ? (&A[block_tile_i * M * K_GLOBAL] + M * K_GLOBAL * (warpId % 4) * 2)
                                        : (&B[block_tile_j * N * K_GLOBAL] + N * K_GLOBAL * (warpId % 4) * 2);
#pragma unroll
    for (int tile_k = 0; tile_k < K_TILES; tile_k += CHUNK_K) {
      size_t shmem_idx = warpId < (WARPS_PER_BLOCK / 2) ? (M * (warpId % (WARPS_PER_BLOCK / 2)) * 2)
                                                        : (N * (warpId % (WARPS_PER_BLOCK / 2)) * 2 + shmem_idx_b_off);
      int4 *lane_ptr = (int4 *)(warp_ptr + tile_k * K + (laneId / CHUNK_COPY_LINE_LANES) * K_GLOBAL) +
                       (laneId % CHUNK_COPY_LINE_LANES);
      shmem_idx += laneId / CHUNK_COPY_LINE_LANES;
#pragma unroll
      for (int i = 0; i < ((WARP_SIZE / 2) / CHUNK_COPY_LINES_PER_WARP) * 2; i++) {
        *((int4 *)&shmem[shmem_idx][0] + (laneId % CHUNK_COPY_LINE_LANES)) = *lane_ptr;
        lane_ptr = (int4 *)((half *)lane_ptr + K_GLOBAL * CHUNK_COPY_LINES_PER_WARP);
        shmem_idx += CHUNK_COPY_LINES_PER_WARP;
      }
      __syncthreads();

#pragma unroll
      for (int k_step = 0; k_step < CHUNK_K; k_step++) {
        wmma::fragment<wmma::matrix_a, M, N, K, half, wmma::row_major> a[WARP_COL_TILES];
        wmma::fragment<wmma::matrix_b, M, N, K, half, wmma::col_major> b[WARP_ROW_TILES];
#pragma unroll
        for (int i = 0; i < WARP_COL_TILES; i++) {
          size_t shmem_idx_a = (warpId / 2) * M * 2 + (i * M);
          const half *tile_ptr = &shmem[shmem_idx_a][k_step * K];
          wmma::load_matrix_sync(a[i], tile_ptr, K * CHUNK_K + SKEW_HALF);
#pragma unroll
          for (int j = 0; j < WARP_ROW_TILES; j++) {
            if (i == 0) {  // B's fragments once per k step, reused by every row of tiles
              size_t shmem_idx_b = shmem_idx_b_off + (WARP_ROW_TILES * N) * (warpId % 2) + (j * N);
              const half *tile_ptr = &shmem[shmem_idx_b][k_step * K];
              wmma::load_matrix_sync(b[j], tile_ptr, K * CHUNK_K + SKEW_HALF);
            }
            wmma::mma_sync(c[i][j], a[i], b[j], c[i][j]);
          }
        }
      }
      __syncthreads();
    }

    // The D tiles through shared memory to global memory.
#pragma unroll
    for (int i = 0; i < WARP_COL_TILES; i++) {
#pragma unroll
      for (int j = 0; j < WARP_ROW_TILES; j++) {
#pragma unroll
        for (int t = 0; t < c[i][j].num_elements; t++) c[i][j].x[t] *= alpha;
        float *tile_ptr = shmem_warp_tile_ptr + i * SHMEM_STRIDE * K + j * N;
        wmma::store_matrix_sync(tile_ptr, c[i][j], SHMEM_STRIDE, C_LAYOUT);
      }
    }
    __syncthreads();
    float *dst_gmem_warp_stream_ptr = &D[gmem_idx];
#pragma unroll
    for (int i = 0; i < K; i++) {
      *((int4 *)(dst_gmem_warp_stream_ptr + GLOBAL_MEM_STRIDE * i) + laneId) =
          *((int4 *)(shmem_warp_stream_ptr + SHMEM_STRIDE * i) + laneId);
    }
    __syncthreads();
  }
}

// One 16 x 16 tile of D per warp, straight from global memory.
__global__ void simple_wmma_gemm(half *a, half *b, float *c, float *d, int m_ld, int n_ld, int k_ld, float alpha,
                                 float beta) {
  int lda = k_ld;
  int ldb = k_ld;
  int ldc = n_ld;
  int warpM = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
  int warpN = (blockIdx.y * blockDim.y + threadIdx.y);
  wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> a_frag;
  wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::col_major> b_frag;
  wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> acc_frag;
  wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> c_frag;
  wmma::fill_fragment(acc_frag, 0.0f);
  for (int i = 0; i < k_ld; i += WMMA_K) {
    int aCol = i;
    int aRow = warpM * WMMA_M;
    int bCol = warpN * N;
    int bRow = i;
    if (aRow < m_ld && aCol < k_ld && bRow < k_ld && bCol < n_ld) {
      wmma::load_matrix_sync(a_frag, a + aCol + aRow * lda, lda);
      wmma::load_matrix_sync(b_frag, b + bRow + bCol * ldb, ldb);
      wmma::mma_sync(acc_frag, a_frag, b_frag, acc_frag);
    }
  }
  int cCol = warpN * WMMA_N;
  int cRow = warpM * WMMA_M;
  if (cRow < m_ld && cCol < n_ld) {
    wmma::load_matrix_sync(c_frag, c + cCol + cRow * ldc, ldc, wmma::mem_row_major);
    for (int i = 0; i < c_frag.num_elements; i++) c_frag.x[i] = alpha * acc_frag.x[i] + beta * c_frag.x[i];
    wmma::store_matrix_sync(d + cCol + cRow * ldc, c_frag, ldc, wmma::mem_row_major);
  }
}
"""


def run_tensor_core_gemm(ns):
    size = 16 * 16
    rng = np.random.default_rng(7)
    A = rng.integers(0, 3, (size, size)).astype(np.float16)   # M x K, row major
    Bt = rng.integers(0, 3, (size, size)).astype(np.float16)  # B column major: N x K
    C = rng.integers(0, 3, (size, size)).astype(np.float32)
    alpha, beta = np.float32(1.1), np.float32(1.2)
    d_A, d_B, d_C = xcuda().to_device(A), xcuda().to_device(Bt), xcuda().to_device(C)
    expected = float(alpha) * (A.astype(np.float64) @ Bt.astype(np.float64).T) + float(beta) * C
    found = []
    shmem = max(2 * (8 * 16) * (4 * 16 + 16) * 2, 16 * 8 * 16 * 8 * 4)  # the sample's SHMEM_SZ: 64 KiB
    d_D = xcuda().zeros((size, size), np.float32)
    ns["compute_gemm"][4, 256, None, shmem](d_A, d_B, d_C, d_D, alpha, beta)
    found.append(("compute_gemm", d_D.copy_to_host(), expected))
    d_D = xcuda().zeros((size, size), np.float32)
    block = (128, 4)
    grid = (cdiv(size, 16 * block[0] // 32), cdiv(size, 16 * block[1]))
    ns["simple_wmma_gemm"][grid, block](d_A, d_B, d_C, d_D, size, size, size, alpha, beta)
    found.append(("simple_wmma_gemm", d_D.copy_to_host(), expected))
    return found


# ---- jacobiCudaGraphs --------------------------------------------------------------------------------
# Provenance: NVIDIA/cuda-samples Samples/3_CUDA_Features/jacobiCudaGraphs/jacobi.cu and jacobi.h
# (BSD-3-Clause): JacobiMethod (a warp per row, shuffles, double atomicAdd in shared and global memory)
# and finalError, the system A = ones + N_ROWS on the diagonal, b = 2 * N_ROWS (its solution is all ones),
# conv_threshold 1e-2, and the sample's graph: memset of the sum, the Jacobi kernel, a copy of the sum to
# the host, replayed with the kernel node's arguments swapped every other iteration (as
# cudaGraphExecKernelNodeSetParams does there). jacobi.h's N_ROWS is 512: here 128 (a header cell, as a
# notebook user pastes jacobi.h), which converges in fewer iterations.
JACOBI_H = r"""
#ifndef JACOBI_H
#define JACOBI_H
#define N_ROWS 128
#endif
"""

JACOBI = r"""
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include "jacobi.h"

namespace cg = cooperative_groups;

#define ROWS_PER_CTA 8

static __global__ void JacobiMethod(const float *A, const double *b, const float conv_threshold, double *x,
                                    double *x_new, double *sum) {
  cg::thread_block cta = cg::this_thread_block();
  __shared__ double x_shared[N_ROWS];
  __shared__ double b_shared[ROWS_PER_CTA + 1];
  for (int i = threadIdx.x; i < N_ROWS; i += blockDim.x) x_shared[i] = x[i];
  if (threadIdx.x < ROWS_PER_CTA) {
    int k = threadIdx.x;
    for (int i = k + (blockIdx.x * ROWS_PER_CTA); (k < ROWS_PER_CTA) && (i < N_ROWS);
         k += ROWS_PER_CTA, i += ROWS_PER_CTA) {
      b_shared[i % (ROWS_PER_CTA + 1)] = b[i];
    }
  }
  cg::sync(cta);
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  for (int k = 0, i = blockIdx.x * ROWS_PER_CTA; (k < ROWS_PER_CTA) && (i < N_ROWS); k++, i++) {
    double rowThreadSum = 0.0;
    for (int j = threadIdx.x; j < N_ROWS; j += blockDim.x) rowThreadSum += (A[i * N_ROWS + j] * x_shared[j]);
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) rowThreadSum += tile32.shfl_down(rowThreadSum, offset);
    if (tile32.thread_rank() == 0) atomicAdd(&b_shared[i % (ROWS_PER_CTA + 1)], -rowThreadSum);
  }
  cg::sync(cta);
  if (threadIdx.x < ROWS_PER_CTA) {
    cg::thread_block_tile<ROWS_PER_CTA> tile8 = cg::tiled_partition<ROWS_PER_CTA>(cta);
    double temp_sum = 0.0;
    int k = threadIdx.x;
    for (int i = k + (blockIdx.x * ROWS_PER_CTA); (k < ROWS_PER_CTA) && (i < N_ROWS);
         k += ROWS_PER_CTA, i += ROWS_PER_CTA) {
      double dx = b_shared[i % (ROWS_PER_CTA + 1)];
      dx /= A[i * N_ROWS + i];
      x_new[i] = (x_shared[i] + dx);
      temp_sum += fabs(dx);
    }
    for (int offset = tile8.size() / 2; offset > 0; offset /= 2) temp_sum += tile8.shfl_down(temp_sum, offset);
    if (tile8.thread_rank() == 0) atomicAdd(sum, temp_sum);
  }
}

// The sum of |x - 1| (the known solution is all ones).
static __global__ void finalError(double *x, double *g_sum) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ double warpSum[];
  double sum = 0.0;
  int globalThreadId = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = globalThreadId; i < N_ROWS; i += blockDim.x * gridDim.x) {
    double d = x[i] - 1.0;
    sum += fabs(d);
  }
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  for (int offset = tile32.size() / 2; offset > 0; offset /= 2) sum += tile32.shfl_down(sum, offset);
  if (tile32.thread_rank() == 0) warpSum[threadIdx.x / warpSize] = sum;
  cg::sync(cta);
  double blockSum = 0.0;
  if (threadIdx.x < (blockDim.x / warpSize)) blockSum = warpSum[threadIdx.x];
  if (threadIdx.x < 32) {
    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) blockSum += tile32.shfl_down(blockSum, offset);
    if (tile32.thread_rank() == 0) atomicAdd(g_sum, blockSum);
  }
}
"""


def jacobi_reference(A, b, threshold, max_iter):
    """main.cpp's JacobiMethodCPU: the same iteration in double until the sum of |dx| is below the threshold."""
    x = np.zeros(b.size)
    for k in range(max_iter):
        dx = (b - A.astype(np.float64) @ x) / A.diagonal().astype(np.float64)
        x = x + dx
        if np.abs(dx).sum() <= threshold:
            return x, k + 1
    return x, max_iter


def run_jacobi(ns):
    n = 128
    A = np.ones((n, n), np.float32)
    np.fill_diagonal(A, n + 1.0)
    b = np.full(n, 2.0 * n)
    threshold, max_iter = np.float32(1.0e-2), 4 * n * n
    d_A, d_b = xcuda().to_device(A), xcuda().to_device(b)
    d_x, d_x_new = xcuda().zeros(n, np.float64), xcuda().zeros(n, np.float64)
    d_sum, d_zero = xcuda().zeros(1, np.float64), xcuda().zeros(1, np.float64)
    h_sum = xcuda().empty_pinned(1, np.float64)
    jacobi = ns["JacobiMethod"]
    nblocks, nthreads = n // 8 + 2, 256
    with xcuda().graph() as graph:  # memset node, kernel node, copy node
        xcuda().copy(d_sum, d_zero)
        jacobi[nblocks, nthreads](d_A, d_b, threshold, d_x, d_x_new, d_sum)
        d_sum.copy_to_host(out=h_sum)
    iterations = None
    for k in range(max_iter):
        if k & 1:
            graph.update(1, d_A, d_b, threshold, d_x_new, d_x, d_sum)
        else:
            graph.update(1, d_A, d_b, threshold, d_x, d_x_new, d_sum)
        graph.launch()
        xcuda().synchronize()
        if h_sum[0] <= threshold:
            iterations = k + 1
            break
    solution = d_x_new if iterations & 1 else d_x
    d_error = xcuda().zeros(1, np.float64)
    ns["finalError"][n // nthreads + 1, nthreads, None, (nthreads // 32 + 1) * 8](solution, d_error)
    expected_x, expected_iterations = jacobi_reference(A, b, float(threshold), max_iter)
    got_x = solution.copy_to_host()
    return [("iterations", np.int64(iterations), np.int64(expected_iterations)),
            ("x", got_x, expected_x),
            ("finalError", d_error.copy_to_host()[0], np.abs(expected_x - 1.0).sum())]


NAMED_SAMPLES = [
    Program("cuda_samples_reduction", [("--name reduction " + " ".join(f"--instantiate '{i}'" for i in REDUCTION_INSTANCES),
                                        REDUCTION)], run_reduction,
            "NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/reduction (BSD-3-Clause)", "CUDA samples",
            shrunk="2^16 ints (the sample's default is 2^24): each of the 12 kernels runs twice"),
    Program("cuda_samples_shfl_scan", [("--name shfl_scan", SHFL_SCAN)], run_shfl_scan,
            "NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/shfl_scan (BSD-3-Clause)", "CUDA samples",
            shrunk="the integral image's rows: 64 of the sample's 1080"),
    Program("cuda_samples_globalToShmemAsyncCopy", [("--name async_copy " + " ".join(f"--instantiate '{i}'" for i in ASYNC_COPY_INSTANCES),
                                                     ASYNC_COPY)], run_async_copy,
            "NVIDIA/cuda-samples Samples/3_CUDA_Features/globalToShmemAsyncCopy (BSD-3-Clause)", "CUDA samples",
            tolerance={"rtol": 1e-5}, shrunk="128 x 128 times 128 x 192 (the sample's 640 x 640)"),
    Program("cuda_samples_fp16ScalarProduct", [("", FP16_SCALAR_PRODUCT)], run_fp16_scalar_product,
            "NVIDIA/cuda-samples Samples/0_Introduction/fp16ScalarProduct (BSD-3-Clause)", "CUDA samples"),
    Program("cuda_samples_cudaTensorCoreGemm", [("", TENSOR_CORE_GEMM)], run_tensor_core_gemm,
            "NVIDIA/cuda-samples Samples/3_CUDA_Features/cudaTensorCoreGemm (BSD-3-Clause)", "CUDA samples",
            tolerance={"rtol": 1e-6}, shrunk="256 x 256 (M_TILES = N_TILES = K_TILES = 16; the sample's 256)"),
    Program("cuda_samples_jacobiCudaGraphs", [("", JACOBI)], run_jacobi,
            "NVIDIA/cuda-samples Samples/3_CUDA_Features/jacobiCudaGraphs (BSD-3-Clause)", "CUDA samples",
            tolerance={"rtol": 1e-9, "atol": 1e-9}, headers=[("jacobi.h", JACOBI_H)],
            shrunk="N_ROWS 128 in jacobi.h (the sample's 512)"),
]
