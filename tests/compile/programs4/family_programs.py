"""Issue 45's own families ("Done when": every program the issue names compiles as pasted): the kernels of
siboehm's SGEMM tutorial series, llm.c's fp32 GPT-2 kernels, a minimal flash attention, the CUDA samples'
single-pass cooperative-groups reduction, CUB's block primitives beyond BlockReduce, and two PMPP textbook
kernels. (The CUDA samples on textures, the Programming Guide's TMA example, cub::BlockReduce, the samples'
reduction/shfl_scan/tensor-core programs and the Guide's cluster histogram have tests of their own.)

Each source is written for these tests in the shape of the public file named in its provenance comment: the
same includes (cuBLAS, PyTorch, POSIX and cooperative-groups headers among them), macros, host helpers, host
variables and launchers beside the kernels, kernel signatures, template parameters and launch shapes. The
cell takes it as nvcc takes the file: no edits, no flags; a template kernel that the original instantiates in
its host launcher (set aside with the rest of the host code) is named with --instantiate. Sizes are small
enough for the PTX simulator on two shared cores and said where shrunk. `run(ns)` makes the launches the host
code would and returns (name, got, expected) triples checked against numpy.
"""
from pathlib import Path

import numpy as np

from round3_programs import Program

# The folder laid out like karpathy/llm.c (llmc/*.h, llmc/*.cuh, the .cu files): a cell's quoted includes are
# found from it when it is the working directory.
LLMC_REPO = Path(__file__).resolve().parent / "llmc_repo"


def _xcuda():
    import xcuda

    return xcuda


# ---- 1. the SGEMM tutorial's kernels 1-6 ---------------------------------------------------------------
# Provenance: the shape of siboehm/SGEMM_CUDA (MIT), src/kernels/1_naive.cuh .. 6_kernel_vectorize.cuh and
# the launchers in src/runner.cu: each .cuh includes <cublas_v2.h> and <cuda_runtime.h> beside <cstdio>,
# <cassert>, <algorithm>, defines CEIL_DIV, and its kernels take (M, N, K, alpha, A, B, beta, C); the
# block-tiling kernels are templates on BM, BN, BK, TM, TN with assert(... == blockDim.x) and
# __launch_bounds__. The tutorial's 128 .. 4096 square matrices: M = N = 128, K = 32 here, the smallest its
# launchers run correctly: for M or N under 128 runner.cu takes BM = BN = 64 for kernels 5 and 6, and kernel 6
# then loads only half of each A tile (64 threads x 4 floats of its 64 x 8), wrong on a GPU as well.
SGEMM = r"""
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A,
                            const float *B, float beta, float *C) {
  const uint x = blockIdx.x * blockDim.x + threadIdx.x;
  const uint y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < M && y < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[x * K + i] * B[i * N + y];
    }
    C[x * N + y] = alpha * tmp + beta * C[x * N + y];
  }
}

template <const uint BLOCKSIZE>
__global__ void sgemm_global_mem_coalesce(int M, int N, int K, float alpha,
                                          const float *A, const float *B,
                                          float beta, float *C) {
  const int cRow = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
  const int cCol = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);
  if (cRow < M && cCol < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[cRow * K + i] * B[i * N + cCol];
    }
    C[cRow * N + cCol] = alpha * tmp + beta * C[cRow * N + cCol];
  }
}

template <const int BLOCKSIZE>
__global__ void sgemm_shared_mem_block(int M, int N, int K, float alpha,
                                       const float *A, const float *B,
                                       float beta, float *C) {
  const uint cRow = blockIdx.x;
  const uint cCol = blockIdx.y;
  __shared__ float As[BLOCKSIZE * BLOCKSIZE];
  __shared__ float Bs[BLOCKSIZE * BLOCKSIZE];
  const uint threadCol = threadIdx.x % BLOCKSIZE;
  const uint threadRow = threadIdx.x / BLOCKSIZE;
  A += cRow * BLOCKSIZE * K;
  B += cCol * BLOCKSIZE;
  C += cRow * BLOCKSIZE * N + cCol * BLOCKSIZE;
  float tmp = 0.0;
  for (int bkIdx = 0; bkIdx < K; bkIdx += BLOCKSIZE) {
    As[threadRow * BLOCKSIZE + threadCol] = A[threadRow * K + threadCol];
    Bs[threadRow * BLOCKSIZE + threadCol] = B[threadRow * N + threadCol];
    __syncthreads();
    A += BLOCKSIZE;
    B += BLOCKSIZE * N;
    for (int dotIdx = 0; dotIdx < BLOCKSIZE; ++dotIdx) {
      tmp += As[threadRow * BLOCKSIZE + dotIdx] * Bs[dotIdx * BLOCKSIZE + threadCol];
    }
    __syncthreads();
  }
  C[threadRow * N + threadCol] = alpha * tmp + beta * C[threadRow * N + threadCol];
}

template <const int BM, const int BN, const int BK, const int TM>
__global__ void sgemm1DBlocktiling(int M, int N, int K, float alpha,
                                   const float *A, const float *B, float beta,
                                   float *C) {
  const uint cRow = blockIdx.y;
  const uint cCol = blockIdx.x;
  const int threadCol = threadIdx.x % BN;
  const int threadRow = threadIdx.x / BN;
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  A += cRow * BM * K;
  B += cCol * BN;
  C += cRow * BM * N + cCol * BN;
  assert(BM * BK == blockDim.x);
  assert(BN * BK == blockDim.x);
  const uint innerColA = threadIdx.x % BK;
  const uint innerRowA = threadIdx.x / BK;
  const uint innerColB = threadIdx.x % BN;
  const uint innerRowB = threadIdx.x / BN;
  float threadResults[TM] = {0.0};
  for (uint bkIdx = 0; bkIdx < K; bkIdx += BK) {
    As[innerRowA * BK + innerColA] = A[innerRowA * K + innerColA];
    Bs[innerRowB * BN + innerColB] = B[innerRowB * N + innerColB];
    __syncthreads();
    A += BK;
    B += BK * N;
    for (uint dotIdx = 0; dotIdx < BK; ++dotIdx) {
      float tmpB = Bs[dotIdx * BN + threadCol];
      for (uint resIdx = 0; resIdx < TM; ++resIdx) {
        threadResults[resIdx] += As[(threadRow * TM + resIdx) * BK + dotIdx] * tmpB;
      }
    }
    __syncthreads();
  }
  for (uint resIdx = 0; resIdx < TM; ++resIdx) {
    C[(threadRow * TM + resIdx) * N + threadCol] =
        alpha * threadResults[resIdx] + beta * C[(threadRow * TM + resIdx) * N + threadCol];
  }
}

template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
    sgemm2DBlocktiling(int M, int N, int K, float alpha, const float *A,
                       const float *B, float beta, float *C) {
  const uint cRow = blockIdx.y;
  const uint cCol = blockIdx.x;
  const uint totalResultsBlocktile = BM * BN;
  const uint numThreadsBlocktile = totalResultsBlocktile / (TM * TN);
  assert(numThreadsBlocktile == blockDim.x);
  const int threadCol = threadIdx.x % (BN / TN);
  const int threadRow = threadIdx.x / (BN / TN);
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  A += cRow * BM * K;
  B += cCol * BN;
  C += cRow * BM * N + cCol * BN;
  const uint innerRowA = threadIdx.x / BK;
  const uint innerColA = threadIdx.x % BK;
  const uint strideA = numThreadsBlocktile / BK;
  const uint innerRowB = threadIdx.x / BN;
  const uint innerColB = threadIdx.x % BN;
  const uint strideB = numThreadsBlocktile / BN;
  float threadResults[TM * TN] = {0.0};
  float regM[TM] = {0.0};
  float regN[TN] = {0.0};
  for (uint bkIdx = 0; bkIdx < K; bkIdx += BK) {
    for (uint loadOffset = 0; loadOffset < BM; loadOffset += strideA) {
      As[(innerRowA + loadOffset) * BK + innerColA] = A[(innerRowA + loadOffset) * K + innerColA];
    }
    for (uint loadOffset = 0; loadOffset < BK; loadOffset += strideB) {
      Bs[(innerRowB + loadOffset) * BN + innerColB] = B[(innerRowB + loadOffset) * N + innerColB];
    }
    __syncthreads();
    A += BK;
    B += BK * N;
    for (uint dotIdx = 0; dotIdx < BK; ++dotIdx) {
      for (uint i = 0; i < TM; ++i) {
        regM[i] = As[(threadRow * TM + i) * BK + dotIdx];
      }
      for (uint i = 0; i < TN; ++i) {
        regN[i] = Bs[dotIdx * BN + threadCol * TN + i];
      }
      for (uint resIdxM = 0; resIdxM < TM; ++resIdxM) {
        for (uint resIdxN = 0; resIdxN < TN; ++resIdxN) {
          threadResults[resIdxM * TN + resIdxN] += regM[resIdxM] * regN[resIdxN];
        }
      }
    }
    __syncthreads();
  }
  for (uint resIdxM = 0; resIdxM < TM; ++resIdxM) {
    for (uint resIdxN = 0; resIdxN < TN; ++resIdxN) {
      C[(threadRow * TM + resIdxM) * N + threadCol * TN + resIdxN] =
          alpha * threadResults[resIdxM * TN + resIdxN] +
          beta * C[(threadRow * TM + resIdxM) * N + threadCol * TN + resIdxN];
    }
  }
}

template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void sgemmVectorize(int M, int N, int K, float alpha, float *A,
                               float *B, float beta, float *C) {
  const uint cRow = blockIdx.y;
  const uint cCol = blockIdx.x;
  const int threadCol = threadIdx.x % (BN / TN);
  const int threadRow = threadIdx.x / (BN / TN);
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  A += cRow * BM * K;
  B += cCol * BN;
  C += cRow * BM * N + cCol * BN;
  const uint innerRowA = threadIdx.x / (BK / 4);
  const uint innerColA = threadIdx.x % (BK / 4);
  const uint innerRowB = threadIdx.x / (BN / 4);
  const uint innerColB = threadIdx.x % (BN / 4);
  float threadResults[TM * TN] = {0.0};
  float regM[TM] = {0.0};
  float regN[TN] = {0.0};
  for (uint bkIdx = 0; bkIdx < K; bkIdx += BK) {
    // transpose A while loading it
    float4 tmp = reinterpret_cast<float4 *>(&A[innerRowA * K + innerColA * 4])[0];
    As[(innerColA * 4 + 0) * BM + innerRowA] = tmp.x;
    As[(innerColA * 4 + 1) * BM + innerRowA] = tmp.y;
    As[(innerColA * 4 + 2) * BM + innerRowA] = tmp.z;
    As[(innerColA * 4 + 3) * BM + innerRowA] = tmp.w;
    reinterpret_cast<float4 *>(&Bs[innerRowB * BN + innerColB * 4])[0] =
        reinterpret_cast<float4 *>(&B[innerRowB * N + innerColB * 4])[0];
    __syncthreads();
    A += BK;
    B += BK * N;
    for (uint dotIdx = 0; dotIdx < BK; ++dotIdx) {
      for (uint i = 0; i < TM; ++i) {
        regM[i] = As[dotIdx * BM + threadRow * TM + i];
      }
      for (uint i = 0; i < TN; ++i) {
        regN[i] = Bs[dotIdx * BN + threadCol * TN + i];
      }
      for (uint resIdxM = 0; resIdxM < TM; ++resIdxM) {
        for (uint resIdxN = 0; resIdxN < TN; ++resIdxN) {
          threadResults[resIdxM * TN + resIdxN] += regM[resIdxM] * regN[resIdxN];
        }
      }
    }
    __syncthreads();
  }
  for (uint resIdxM = 0; resIdxM < TM; resIdxM += 1) {
    for (uint resIdxN = 0; resIdxN < TN; resIdxN += 4) {
      float4 tmp = reinterpret_cast<float4 *>(
          &C[(threadRow * TM + resIdxM) * N + threadCol * TN + resIdxN])[0];
      tmp.x = alpha * threadResults[resIdxM * TN + resIdxN] + beta * tmp.x;
      tmp.y = alpha * threadResults[resIdxM * TN + resIdxN + 1] + beta * tmp.y;
      tmp.z = alpha * threadResults[resIdxM * TN + resIdxN + 2] + beta * tmp.z;
      tmp.w = alpha * threadResults[resIdxM * TN + resIdxN + 3] + beta * tmp.w;
      reinterpret_cast<float4 *>(
          &C[(threadRow * TM + resIdxM) * N + threadCol * TN + resIdxN])[0] = tmp;
    }
  }
}

// the launchers of src/runner.cu: host code, set aside
void run_sgemm_naive(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C) {
  dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
  dim3 blockDim(32, 32);
  sgemm_naive<<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

void runSgemm1DBlocktiling(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C) {
  const uint BM = 64, BN = 64, BK = 8, TM = 8;
  dim3 gridDim(CEIL_DIV(N, BN), CEIL_DIV(M, BM));
  dim3 blockDim((BM * BN) / TM);
  sgemm1DBlocktiling<BM, BN, BK, TM><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}
"""
SGEMM_LINE = ("--instantiate 'sgemm_global_mem_coalesce<32>' --instantiate 'sgemm_shared_mem_block<32>' "
              "--instantiate 'sgemm1DBlocktiling<64, 64, 8, 8>' --instantiate 'sgemm2DBlocktiling<128, 128, 8, 8, 8>' "
              "--instantiate 'sgemmVectorize<128, 128, 8, 8, 8>'")


def run_sgemm(ns):
    xcuda = _xcuda()
    m, n, k = 128, 128, 32
    alpha, beta = np.float32(0.5), np.float32(3.0)
    rng = np.random.default_rng(45)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    expected = alpha * (a.astype(np.float64) @ b) + beta * c0
    d_a, d_b = xcuda.to_device(a), xcuda.to_device(b)
    launches = [  # the launch shapes of runner.cu
        ("sgemm_naive", (m // 32, n // 32), (32, 32)),
        ("sgemm_global_mem_coalesce<32>", (m // 32, n // 32), 32 * 32),
        ("sgemm_shared_mem_block<32>", (m // 32, n // 32), 32 * 32),
        ("sgemm1DBlocktiling<64, 64, 8, 8>", (n // 64, m // 64), 64 * 64 // 8),
        ("sgemm2DBlocktiling<128, 128, 8, 8, 8>", (n // 128, m // 128), 128 * 128 // 64),
        ("sgemmVectorize<128, 128, 8, 8, 8>", (n // 128, m // 128), 128 * 128 // 64),
    ]
    found = []
    for name, grid, block in launches:
        d_c = xcuda.to_device(c0)
        ns["sgemm"][name][grid, block](m, n, k, alpha, d_a, d_b, beta, d_c)
        found.append((name, d_c.copy_to_host(), expected))
    return found


# ---- 2. a minimal flash attention forward pass ----------------------------------------------------------
# Provenance: the shape of tspeterkim/flash-attention-minimal (Apache-2.0), flash.cu: <torch/types.h>,
# <cuda.h> and <cuda_runtime.h> included, forward_kernel's tiles of Q, K, V and S in dynamic shared memory
# with the online-softmax row max and sum kept in l and m, and the PyTorch host function
# `torch::Tensor forward(torch::Tensor Q, ...)` that launches it with Bc = Br = 32, a (B, nh) grid and
# 3 * Bc * d + Bc * Br floats of shared memory. Its benchmark's B 16, nh 12, N 64, d 64: B 1, nh 2, d 16 here.
FLASH = r"""
#include <torch/types.h>
#include <cuda.h>
#include <cuda_runtime.h>

__global__
void forward_kernel(const float* Q, const float* K, const float* V, const int N, const int d,
                    const int Tc, const int Tr, const int Bc, const int Br, const float softmax_scale,
                    float* l, float *m, float* O) {
    int tx = threadIdx.x;
    int bx = blockIdx.x; int by = blockIdx.y;  // batch and head index

    // the batch's and head's offsets into Q, K, V, O and into l, m
    int qkv_offset = (bx * gridDim.y * N * d) + (by * N * d);
    int lm_offset = (bx * gridDim.y * N) + (by * N);

    extern __shared__ float sram[];
    int tile_size = Bc * d;
    float* Qi = sram;
    float* Kj = &sram[tile_size];
    float* Vj = &sram[tile_size * 2];
    float* S = &sram[tile_size * 3];

    for (int j = 0; j < Tc; j++) {
        for (int x = 0; x < d; x++) {
            Kj[(tx * d) + x] = K[qkv_offset + (tile_size * j) + (tx * d) + x];
            Vj[(tx * d) + x] = V[qkv_offset + (tile_size * j) + (tx * d) + x];
        }
        __syncthreads();

        for (int i = 0; i < Tr; i++)  {
            for (int x = 0; x < d; x++) {
                Qi[(tx * d) + x] = Q[qkv_offset + (tile_size * i) + (tx * d) + x];
            }
            float row_m_prev = m[lm_offset + (Br * i) + tx];
            float row_l_prev = l[lm_offset + (Br * i) + tx];

            // S = Q K^T scaled, and its row maximum
            float row_m = -INFINITY;
            for (int y = 0; y < Bc; y++) {
                float sum = 0;
                for (int x = 0; x < d; x++) {
                    sum += Qi[(tx * d) + x] * Kj[(y * d) + x];
                }
                sum *= softmax_scale;
                S[(Bc * tx) + y] = sum;
                if (sum > row_m)
                    row_m = sum;
            }

            // P = exp(S - row_m) and its row sum
            float row_l = 0;
            for (int y = 0; y < Bc; y++) {
                S[(Bc * tx) + y] = __expf(S[(Bc * tx) + y] - row_m);
                row_l += S[(Bc * tx) + y];
            }

            float row_m_new = max(row_m_prev, row_m);
            float row_l_new = (__expf(row_m_prev - row_m_new) * row_l_prev) + (__expf(row_m - row_m_new) * row_l);

            for (int x = 0; x < d; x++) {
                float pv = 0;
                for (int y = 0; y < Bc; y++) {
                    pv += S[(Bc * tx) + y] * Vj[(y * d) + x];
                }
                O[qkv_offset + (tile_size * i) + (tx * d) + x] = (1 / row_l_new) \
                    * ((row_l_prev * __expf(row_m_prev - row_m_new) * O[qkv_offset + (tile_size * i) + (tx * d) + x]) \
                    + (__expf(row_m - row_m_new) * pv));
            }
            m[lm_offset + (Br * i) + tx] = row_m_new;
            l[lm_offset + (Br * i) + tx] = row_l_new;
        }
        __syncthreads();
    }
}

torch::Tensor forward(torch::Tensor Q, torch::Tensor K, torch::Tensor V) {
    const int Bc = 32; const int Br = 32;
    const int B = Q.size(0); const int nh = Q.size(1);
    const int N = Q.size(2); const int d = Q.size(3);
    const int Tc = ceil((float) N / Bc); const int Tr = ceil((float) N / Br);
    const float softmax_scale = 1.0 / sqrt(d);

    auto O = torch::zeros_like(Q);
    auto l = torch::zeros({B, nh, N});
    auto m = torch::full({B, nh, N}, -INFINITY);
    torch::Device device(torch::kCUDA);
    l = l.to(device); m = m.to(device);

    const int sram_size = (3 * Bc * d * sizeof(float)) + (Bc * Br * sizeof(float));
    dim3 grid_dim(B, nh);
    dim3 block_dim(Bc);
    forward_kernel<<<grid_dim, block_dim, sram_size>>>(
        Q.data_ptr<float>(), K.data_ptr<float>(), V.data_ptr<float>(),
        N, d, Tc, Tr, Bc, Br, softmax_scale,
        l.data_ptr<float>(), m.data_ptr<float>(), O.data_ptr<float>()
    );
    return O;
}
"""


def run_flash(ns):
    xcuda = _xcuda()
    batch, nh, n, d = 1, 2, 64, 16
    bc = br = 32
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((batch, nh, n, d)).astype(np.float32) for _ in range(3))
    scale = np.float32(1.0 / np.sqrt(d))
    d_o = xcuda.zeros((batch, nh, n, d), np.float32)
    d_l = xcuda.zeros((batch, nh, n), np.float32)
    d_m = xcuda.to_device(np.full((batch, nh, n), -np.inf, np.float32))
    sram = (3 * bc * d + bc * br) * 4
    kernel = ns["forward_kernel"].configure((batch, nh), bc, shared_mem=sram)
    kernel(xcuda.to_device(q), xcuda.to_device(k), xcuda.to_device(v), n, d, n // bc, n // br, bc, br, scale,
           d_l, d_m, d_o)
    s = (q.astype(np.float64) @ np.swapaxes(k, -1, -2)) * float(scale)  # no mask: the kernel has none
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    expected = (p / p.sum(axis=-1, keepdims=True)) @ v
    return [("O = softmax(Q K^T / sqrt(d)) V", d_o.copy_to_host(), expected),
            ("m, the row maxima", d_m.copy_to_host(), s.max(axis=-1))]


# ---- 3. llm.c's fp32 GPT-2 kernels ------------------------------------------------------------------------
# Provenance: the shape of karpathy/llm.c (MIT), train_gpt2_fp32.cu, its top through the kernel launchers:
# the includes (<unistd.h>, <cublas_v2.h>, <cooperative_groups.h>, <cooperative_groups/reduce.h> among them),
# CEIL_DIV, the cudaCheck/cublasCheck host helpers and macros, the host variables `cublas_compute_type` and
# `cublas_handle`, `namespace cg = cooperative_groups`, and the kernels encoder_forward_kernel3 (float4),
# layernorm_forward_kernel3 (one warp per row, cg::reduce, __ldcs/__stcs), softmax_forward_kernel5 (online
# softmax, cg::reduce with cg::greater and cg::plus), residual_forward_kernel and gelu_forward_kernel (M_PI),
# with launchers as the file has them, and its three "llmc/..." includes (utils, tokenizer, data loader: host
# code in headers, with POSIX <sys/stat.h>, <dirent.h>, <glob.h>), by relative path: the file lies in
# llmc_repo/ beside llmc/ (written after the published headers, shortened; llmc_repo/LICENSE), and the tests
# run with llmc_repo as the working directory, as a notebook beside the repo would.
# GPT-2 small's B 4, T 1024, C 768, NH 12: B 2, T 32, C 64, NH 2 here.
LLMC = (LLMC_REPO / "train_gpt2_fp32.cu").read_text()


def run_llmc(ns):
    xcuda = _xcuda()
    batch, t, c, nh, vocab = 2, 32, 64, 2, 50
    rng = np.random.default_rng(2)
    found = []
    # encoder: token plus position embeddings, float4 at a time (the launcher's 512 threads a block)
    tokens = rng.integers(0, vocab, (batch, t), dtype=np.int32)
    wte = rng.standard_normal((vocab, c)).astype(np.float32)
    wpe = rng.standard_normal((t, c)).astype(np.float32)
    float4 = ns["encoder_forward_kernel3"].parameters[0]["dtype"]  # float4* out: arrays of the struct
    n = batch * t * c
    d_out = xcuda.zeros(n // 4, float4)
    ns["encoder_forward_kernel3"][-(-n // 4 // 512), 512](d_out, xcuda.to_device(tokens),
                                                         xcuda.to_device(wte.view(float4).ravel()),
                                                         xcuda.to_device(wpe.view(float4).ravel()), batch, t, c)
    found.append(("encoder_forward_kernel3", d_out.copy_to_host().view(np.float32).reshape(batch, t, c),
                  wte[tokens] + wpe[None]))
    # layernorm: one warp per row, 512 threads a block
    x = rng.standard_normal((batch, t, c)).astype(np.float32)
    weight, bias = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    d_ln, d_mean, d_rstd = (xcuda.zeros(shape, np.float32) for shape in ((batch, t, c), batch * t, batch * t))
    ns["layernorm_forward_kernel3"][-(-batch * t * 32 // 512), 512](
        d_ln, d_mean, d_rstd, xcuda.to_device(x), xcuda.to_device(weight), xcuda.to_device(bias), batch * t, c)
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=-1), x64.var(axis=-1)
    rstd = 1 / np.sqrt(var + 1e-5)
    found += [("layernorm mean", d_mean.copy_to_host(), mean.ravel()),
              ("layernorm rstd", d_rstd.copy_to_host(), rstd.ravel()),
              ("layernorm_forward_kernel3", d_ln.copy_to_host(),
               (x64 - mean[..., None]) * rstd[..., None] * weight + bias)]
    # causal softmax over (B * NH, T, T) pre-attention scores, softmax_block_size 256 as the launcher has it
    preatt = rng.standard_normal((batch * nh, t, t)).astype(np.float32)
    scale = np.float32(1.0 / np.sqrt(c // nh))
    d_att = xcuda.zeros((batch * nh, t, t), np.float32)
    ns["softmax_forward_kernel5"][-(-batch * nh * t * 32 // 256), 256](d_att, scale, xcuda.to_device(preatt),
                                                                       batch * nh, t)
    causal = np.tril(np.ones((t, t), bool))
    z = np.where(causal, preatt.astype(np.float64) * float(scale), -np.inf)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    found.append(("softmax_forward_kernel5", d_att.copy_to_host(), e / e.sum(axis=-1, keepdims=True)))
    # residual and GELU (tanh approximation)
    d_res = xcuda.zeros(n, np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    ns["residual_forward_kernel"][-(-n // 256), 256](d_res, xcuda.to_device(x.ravel()), xcuda.to_device(y), n)
    found.append(("residual_forward_kernel", d_res.copy_to_host(), x.ravel() + y))
    d_gelu = xcuda.zeros(n, np.float32)
    ns["gelu_forward_kernel"][-(-n // 128), 128](d_gelu, xcuda.to_device(y), n)
    y64 = y.astype(np.float64)
    found.append(("gelu_forward_kernel", d_gelu.copy_to_host(),
                  0.5 * y64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (y64 + 0.044715 * y64 ** 3)))))
    return found


# ---- 4. the CUDA samples' single-pass multi-block reduction with cooperative groups -------------------------
# Provenance: the shape of NVIDIA/cuda-samples (BSD-3-Clause), Samples/2_Concepts_and_Techniques/
# reductionMultiBlockCG/reductionMultiBlockCG.cu: <cooperative_groups.h> and <cooperative_groups/reduce.h>,
# `namespace cg`, reduceBlock's cg::reduce over a 32-thread tile into double shared memory, the extern "C"
# kernel's grid-stride sum, cg::sync(grid) and thread 0's sum of the blocks' partials, and the host wrapper
# that launches it with cudaLaunchCooperativeKernel and threads * sizeof(double) bytes of shared memory. The
# sample's helper_cuda.h / helper_functions.h (its Common folder) are left out, as its getLastCudaError with
# them; its 2^25 elements: 2^14 here, 4 blocks of 128 threads.
REDUCTION_CG = r"""
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

#include <cuda_runtime.h>

const char *sSDKsample = "reductionMultiBlockCG";

#include <cuda_runtime_api.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

__device__ void reduceBlock(double *sdata, const cg::thread_block &cta) {
  const unsigned int tid = cta.thread_rank();
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);

  sdata[tid] = cg::reduce(tile32, sdata[tid], cg::plus<double>());
  cg::sync(cta);

  double beta = 0.0;
  if (cta.thread_rank() == 0) {
    beta = 0;
    for (int i = 0; i < blockDim.x; i += tile32.size()) {
      beta += sdata[i];
    }
    sdata[0] = beta;
  }
  cg::sync(cta);
}

extern "C" __global__ void reduceSinglePassMultiBlockCG(const float *g_idata,
                                                        float *g_odata,
                                                        unsigned int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::grid_group grid = cg::this_grid();

  extern double __shared__ sdata[];

  sdata[block.thread_rank()] = 0;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) {
    sdata[block.thread_rank()] += g_idata[i];
  }
  cg::sync(block);

  reduceBlock(sdata, block);
  if (block.thread_rank() == 0) {
    g_odata[blockIdx.x] = sdata[0];
  }
  cg::sync(grid);

  if (grid.thread_rank() == 0) {
    for (int block = 1; block < gridDim.x; block++) {
      g_odata[0] += g_odata[block];
    }
  }
}

void call_reduceSinglePassMultiBlockCG(int size, int threads, int numBlocks,
                                       float *d_idata, float *d_odata) {
  int smemSize = threads * sizeof(double);
  void *kernelArgs[] = {
      (void *)&d_idata, (void *)&d_odata, (void *)&size,
  };
  dim3 dimBlock(threads, 1, 1);
  dim3 dimGrid(numBlocks, 1, 1);
  cudaLaunchCooperativeKernel((void *)reduceSinglePassMultiBlockCG, dimGrid,
                              dimBlock, kernelArgs, smemSize, NULL);
}

template <class T>
T reduceCPU(T *data, int size) {
  T sum = data[0];
  T c = (T)0.0;
  for (int i = 1; i < size; i++) {
    T y = data[i] - c;
    T t = sum + y;
    c = (t - sum) - y;
    sum = t;
  }
  return sum;
}
"""


def run_reduction_cg(ns):
    xcuda = _xcuda()
    size, threads, blocks = 1 << 14, 128, 4
    rng = np.random.default_rng(11)
    h_idata = ((rng.integers(0, 1 << 15, size) & 0xFF) / np.float32(2 ** 31 - 1)).astype(np.float32)
    d_odata = xcuda.zeros(blocks, np.float32)
    kernel = ns["reduceSinglePassMultiBlockCG"]
    kernel[blocks, threads, None, threads * 8](xcuda.to_device(h_idata), d_odata, size)
    partial = h_idata.astype(np.float64).reshape(-1, blocks * threads)  # each thread strides the grid
    per_block = partial.sum(axis=0).reshape(blocks, threads).sum(axis=1)
    return [("the grid's sum", d_odata.copy_to_host()[:1], [h_idata.astype(np.float64).sum()]),
            ("each block's partial", d_odata.copy_to_host()[1:], per_block[1:])]


# ---- 5. CUB's block primitives: BlockLoad, BlockStore, BlockScan, BlockRadixSort, WarpReduce -------------
# Provenance: the shape of NVIDIA/cub (BSD-3-Clause), examples/block/example_block_scan.cu and
# example_block_radix_sort.cu: `#define CUB_STDERR` before the cub headers, `using namespace cub`, the host
# globals g_verbose and g_timing_iterations, BlockPrefixSumKernel templated on BLOCK_THREADS,
# ITEMS_PER_THREAD and a BlockScanAlgorithm (BlockLoad and BlockStore with WARP_TRANSPOSE, a TempStorage union,
# clock() timing into a clock_t*), BlockSortKernel with __launch_bounds__, SortBlockedToStriped and
# StoreDirectStriped, and a host Initialize with std::sort; the WarpReduce kernel is the shape of
# cub/warp/warp_reduce.cuh's documented example (four warps of 32, one sum each). The examples include
# <iostream> and the test folder's test_util.h for their host code: host-only, left out here (a cell refuses
# <iostream> saying why). The examples' 1024 x 1 .. 128 x 16 tiles: 128 threads x 4 items here.
CUB_BLOCKS = r"""
// Ensure printing of CUDA runtime errors to console (define before including cub.h)
#define CUB_STDERR

#include <stdio.h>
#include <algorithm>

#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/warp/warp_reduce.cuh>

using namespace cub;

bool g_verbose = false;
int g_timing_iterations = 100;

template <
    int                     BLOCK_THREADS,
    int                     ITEMS_PER_THREAD,
    BlockScanAlgorithm      ALGORITHM>
__global__ void BlockPrefixSumKernel(
    int         *d_in,          // Tile of input
    int         *d_out,         // Tile of output
    clock_t     *d_elapsed)     // Elapsed cycle count of block scan
{
    typedef BlockLoad<int, BLOCK_THREADS, ITEMS_PER_THREAD, BLOCK_LOAD_WARP_TRANSPOSE> BlockLoadT;
    typedef BlockStore<int, BLOCK_THREADS, ITEMS_PER_THREAD, BLOCK_STORE_WARP_TRANSPOSE> BlockStoreT;
    typedef BlockScan<int, BLOCK_THREADS, ALGORITHM> BlockScanT;

    __shared__ union TempStorage
    {
        typename BlockLoadT::TempStorage    load;
        typename BlockStoreT::TempStorage   store;
        typename BlockScanT::TempStorage    scan;
    } temp_storage;

    int data[ITEMS_PER_THREAD];
    BlockLoadT(temp_storage.load).Load(d_in, data);
    __syncthreads();

    clock_t start = clock();
    int aggregate;
    BlockScanT(temp_storage.scan).ExclusiveSum(data, data, aggregate);
    clock_t stop = clock();
    __syncthreads();

    BlockStoreT(temp_storage.store).Store(d_out, data);
    if (threadIdx.x == 0)
    {
        *d_elapsed = (start > stop) ? start - stop : stop - start;
        d_out[BLOCK_THREADS * ITEMS_PER_THREAD] = aggregate;
    }
}

template <
    typename    Key,
    int         BLOCK_THREADS,
    int         ITEMS_PER_THREAD>
__launch_bounds__ (BLOCK_THREADS)
__global__ void BlockSortKernel(
    Key         *d_in,          // Tile of input
    Key         *d_out,         // Tile of output
    clock_t     *d_elapsed)     // Elapsed cycle count of block scan
{
    enum { TILE_SIZE = BLOCK_THREADS * ITEMS_PER_THREAD };
    typedef BlockLoad<Key, BLOCK_THREADS, ITEMS_PER_THREAD, BLOCK_LOAD_WARP_TRANSPOSE> BlockLoadT;
    typedef BlockRadixSort<Key, BLOCK_THREADS, ITEMS_PER_THREAD> BlockRadixSortT;

    __shared__ union TempStorage
    {
        typename BlockLoadT::TempStorage        load;
        typename BlockRadixSortT::TempStorage   sort;
    } temp_storage;

    Key items[ITEMS_PER_THREAD];
    int block_offset = blockIdx.x * TILE_SIZE;
    BlockLoadT(temp_storage.load).Load(d_in + block_offset, items);
    __syncthreads();

    clock_t start = clock();
    BlockRadixSortT(temp_storage.sort).SortBlockedToStriped(items);
    clock_t stop = clock();

    StoreDirectStriped<BLOCK_THREADS>(threadIdx.x, d_out + block_offset, items);
    if (threadIdx.x == 0)
    {
        d_elapsed[blockIdx.x] = (start > stop) ? start - stop : stop - start;
    }
}

// four warps of 32 threads, each warp's sum by its first lane
__global__ void ExampleWarpReduceKernel(const int *d_in, int *d_out)
{
    typedef cub::WarpReduce<int> WarpReduce;
    __shared__ typename WarpReduce::TempStorage temp_storage[4];
    int warp_id = threadIdx.x / 32;
    int thread_data = d_in[blockIdx.x * blockDim.x + threadIdx.x];
    int aggregate = WarpReduce(temp_storage[warp_id]).Sum(thread_data);
    if (threadIdx.x % 32 == 0)
        d_out[blockIdx.x * 4 + warp_id] = aggregate;
}

template <typename Key>
void Initialize(Key *h_in, Key *h_reference, int num_items, int tile_size)
{
    for (int i = 0; i < num_items; ++i)
    {
        h_in[i] = (Key) rand();
        h_reference[i] = h_in[i];
    }
    std::sort(h_reference, h_reference + tile_size);
}
"""
CUB_LINE = ("--name cub_blocks --instantiate 'BlockPrefixSumKernel<128, 4, BLOCK_SCAN_RAKING>' "
            "--instantiate 'BlockPrefixSumKernel<128, 4, BLOCK_SCAN_WARP_SCANS>' "
            "--instantiate 'BlockSortKernel<unsigned int, 128, 4>' --instantiate 'BlockSortKernel<float, 128, 4>'")


def run_cub_blocks(ns):
    xcuda = _xcuda()
    module = ns["cub_blocks"]
    threads, items = 128, 4
    tile = threads * items
    rng = np.random.default_rng(5)
    found = []
    h_in = rng.integers(-50, 50, tile, dtype=np.int32)
    expected = np.concatenate([[0], np.cumsum(h_in)]).astype(np.int32)  # the exclusive sums, then the total
    for algorithm in ("BLOCK_SCAN_RAKING", "BLOCK_SCAN_WARP_SCANS"):
        name = f"BlockPrefixSumKernel<128, 4, {algorithm}>"
        d_out = xcuda.zeros(tile + 1, np.int32)
        d_elapsed = xcuda.zeros(1, module[name].parameters[2]["dtype"])
        module[name][1, threads](xcuda.to_device(h_in), d_out, d_elapsed)
        found.append((name, d_out.copy_to_host(), expected))
    blocks = 2
    for key, values in (("unsigned int", rng.integers(0, 2 ** 32, blocks * tile, dtype=np.uint32)),
                        ("float", rng.standard_normal(blocks * tile).astype(np.float32))):
        name = f"BlockSortKernel<{key}, 128, 4>"
        d_out = xcuda.zeros(blocks * tile, values.dtype)
        d_elapsed = xcuda.zeros(blocks, module[name].parameters[2]["dtype"])
        module[name][blocks, threads](xcuda.to_device(values), d_out, d_elapsed)
        found.append((name, d_out.copy_to_host(), np.sort(values.reshape(blocks, tile), axis=1).ravel()))
    h_warps = rng.integers(-1000, 1000, 2 * 128, dtype=np.int32)
    d_sums = xcuda.zeros(8, np.int32)
    module.ExampleWarpReduceKernel[2, 128](xcuda.to_device(h_warps), d_sums)
    found.append(("ExampleWarpReduceKernel", d_sums.copy_to_host(), h_warps.reshape(8, 32).sum(axis=1)))
    return found


# ---- 6. two PMPP textbook kernels: the tiled matrix multiplication and the Kogge-Stone scan ---------------
# Provenance: the shape of Hwu, Kirk and El Hajj, "Programming Massively Parallel Processors" (4th ed.):
# Fig. 5.9's (and 5.13's, with boundary checks) tiled MatrixMulKernel on square Width x Width matrices with
# #define TILE_WIDTH 16, Mds/Nds tiles, bx/by/tx/ty, and Fig. 11.3's Kogge_Stone_scan_kernel (an inclusive
# scan of one SECTION_SIZE section per block in XY, the barrier between the read and the write of each step),
# with the section's last value written to S as the hierarchical scan of Fig. 11.9 does. Width 48 (not a
# multiple of TILE_WIDTH, for the boundary checks); SECTION_SIZE 256, 3 sections.
PMPP = r"""
#define TILE_WIDTH 16
#define SECTION_SIZE 256

__global__ void MatrixMulKernel(float* M, float* N, float* P, int Width) {
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];

    int bx = blockIdx.x;  int by = blockIdx.y;
    int tx = threadIdx.x; int ty = threadIdx.y;

    // Identify the row and column of the P element to work on
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    // Loop over the M and N tiles required to compute P element
    float Pvalue = 0;
    for (int ph = 0; ph < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++ph) {
        // Collaborative loading of M and N tiles into shared memory
        if ((Row < Width) && (ph * TILE_WIDTH + tx) < Width)
            Mds[ty][tx] = M[Row * Width + ph * TILE_WIDTH + tx];
        else Mds[ty][tx] = 0.0f;
        if ((ph * TILE_WIDTH + ty) < Width && Col < Width)
            Nds[ty][tx] = N[(ph * TILE_WIDTH + ty) * Width + Col];
        else Nds[ty][tx] = 0.0f;
        __syncthreads();

        for (int k = 0; k < TILE_WIDTH; ++k) {
            Pvalue += Mds[ty][k] * Nds[k][tx];
        }
        __syncthreads();
    }
    if ((Row < Width) && (Col < Width))
        P[Row * Width + Col] = Pvalue;
}

__global__ void Kogge_Stone_scan_kernel(float *X, float *Y, float *S, unsigned int N) {
    __shared__ float XY[SECTION_SIZE];
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        XY[threadIdx.x] = X[i];
    } else {
        XY[threadIdx.x] = 0.0f;
    }
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        __syncthreads();
        float temp;
        if (threadIdx.x >= stride)
            temp = XY[threadIdx.x] + XY[threadIdx.x - stride];
        __syncthreads();
        if (threadIdx.x >= stride)
            XY[threadIdx.x] = temp;
    }
    if (i < N) {
        Y[i] = XY[threadIdx.x];
    }
    if (threadIdx.x == blockDim.x - 1) {
        S[blockIdx.x] = XY[SECTION_SIZE - 1];
    }
}
"""


def run_pmpp(ns):
    xcuda = _xcuda()
    width = 48
    rng = np.random.default_rng(17)
    m = rng.uniform(-1, 1, (width, width)).astype(np.float32)
    n = rng.uniform(-1, 1, (width, width)).astype(np.float32)
    d_p = xcuda.zeros((width, width), np.float32)
    tiles = -(-width // 16)
    ns["MatrixMulKernel"][(tiles, tiles), (16, 16)](xcuda.to_device(m), xcuda.to_device(n), d_p, width)
    section, sections = 256, 3
    count = section * sections - 40  # the last section is partial
    x = rng.integers(-8, 8, count).astype(np.float32)  # small integers: every partial sum exact in float
    d_y, d_s = xcuda.zeros(count, np.float32), xcuda.zeros(sections, np.float32)
    ns["Kogge_Stone_scan_kernel"][sections, section](xcuda.to_device(x), d_y, d_s, count)
    padded = np.concatenate([x, np.zeros(section * sections - count, np.float32)]).reshape(sections, section)
    scanned = np.cumsum(padded, axis=1)
    return [("MatrixMulKernel", d_p.copy_to_host(), m.astype(np.float64) @ n),
            ("Kogge_Stone_scan_kernel", d_y.copy_to_host(), scanned.ravel()[:count]),
            ("the sections' sums", d_s.copy_to_host(), scanned[:, -1])]


PROGRAMS = [
    Program("sgemm_tutorial_kernels_1_to_6", [("--name sgemm " + SGEMM_LINE, SGEMM)], run_sgemm,
            "siboehm/SGEMM_CUDA src/kernels/1..6 and src/runner.cu (MIT)", {"rtol": 1e-4, "atol": 1e-4}),
    Program("flash_attention_minimal_forward", [("", FLASH)], run_flash,
            "tspeterkim/flash-attention-minimal flash.cu (Apache-2.0)", {"rtol": 1e-4, "atol": 1e-5}),
    Program("llmc_gpt2_fp32_kernels", [("", LLMC)], run_llmc, "karpathy/llm.c train_gpt2_fp32.cu (MIT)",
            {"rtol": 1e-4, "atol": 1e-5}),
    Program("reduction_multi_block_cooperative_groups", [("", REDUCTION_CG)], run_reduction_cg,
            "NVIDIA/cuda-samples reductionMultiBlockCG.cu (BSD-3-Clause)", {"rtol": 1e-5, "atol": 0.0}),
    Program("cub_block_load_store_scan_radix_sort_warp_reduce", [(CUB_LINE, CUB_BLOCKS)], run_cub_blocks,
            "NVIDIA/cub examples/block/example_block_scan.cu, example_block_radix_sort.cu (BSD-3-Clause)"),
    Program("pmpp_tiled_matmul_and_kogge_stone_scan", [("", PMPP)], run_pmpp,
            "Programming Massively Parallel Processors, 4th ed., Figs. 5.13 and 11.3", {"rtol": 1e-5, "atol": 1e-5}),
]
