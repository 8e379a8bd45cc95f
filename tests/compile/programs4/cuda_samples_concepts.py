"""Two of the six CUDA samples issue 46 names, from the samples' 2_Concepts_and_Techniques: reduction and
shfl_scan (NVIDIA/cuda-samples, BSD-3-Clause).

Each source is written for these tests after the sample's .cu file (the same kernels, signatures, constants,
launch shapes and device APIs: cooperative groups, warp shuffles, redux.sync), not copied from it; the host code
each sample's main() runs becomes `run(ns)`, as a notebook user writes it.
"""
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


CONCEPTS_SAMPLES = [
    Program("cuda_samples_reduction", [("--name reduction " + " ".join(f"--instantiate '{i}'" for i in REDUCTION_INSTANCES),
                                        REDUCTION)], run_reduction,
            "NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/reduction (BSD-3-Clause)", "CUDA samples",
            shrunk="2^16 ints (the sample's default is 2^24): each of the 12 kernels runs twice"),
    Program("cuda_samples_shfl_scan", [("--name shfl_scan", SHFL_SCAN)], run_shfl_scan,
            "NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/shfl_scan (BSD-3-Clause)", "CUDA samples",
            shrunk="the integral image's rows: 64 of the sample's 1080"),
]
