"""One of the six CUDA samples issue 46 names, from the samples' 0_Introduction: fp16ScalarProduct
(NVIDIA/cuda-samples, BSD-3-Clause).

The source is written for these tests after the sample's .cu file (the same kernels, signatures, constants,
launch shape and `half2` intrinsics), not copied from it; the host code its main() runs becomes `run(ns)`, as a
notebook user writes it.
"""
import numpy as np

from program import Program, xcuda

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


INTRODUCTION_SAMPLES = [
    Program("cuda_samples_fp16ScalarProduct", [("", FP16_SCALAR_PRODUCT)], run_fp16_scalar_product,
            "NVIDIA/cuda-samples Samples/0_Introduction/fp16ScalarProduct (BSD-3-Clause)", "CUDA samples"),
]
