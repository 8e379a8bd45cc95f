"""Tensor-core kernels (wmma, mma.sync with ldmatrix), run on whatever device this process has, their outputs
saved with numpy:

    python3 tests/simulator/tensor_core_kernels.py OUT.npz      # XCUDA_DEVICE=simulator for the simulator

tests/simulator/test_tensor_cores.py runs it on the simulator and, where a GPU is, on the GPU, and checks both
against numpy within a tolerance: f16 products are exact, but the order and precision in which a tensor core
sums them are not specified (docs/simulator.md), so these results are not compared bit for bit.
"""
import sys
from pathlib import Path

import numpy as np

import xcuda

SOURCE = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

// The shape of the CUDA sample cudaTensorCoreGemm's simple_wmma_gemm: each warp one 16x16 tile of
// D = alpha A B + beta C; A row-major (m x k), B column-major (k x n, stored n rows of k), C and D row-major.
extern "C" __global__ void simple_gemm(const unsigned short* a_bits, const unsigned short* b_bits, const float* c, float* d,
                                       int m, int n, int k, float alpha, float beta)
{
    const half* a = (const half*)a_bits;
    const half* b = (const half*)b_bits;
    int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / 32, warp_n = blockIdx.y * blockDim.y + threadIdx.y;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, fc;
    wmma::fill_fragment(acc, 0.0f);
    int row = warp_m * 16, col = warp_n * 16;
    if (row >= m || col >= n) return;
    for (int i = 0; i < k; i += 16)
    {
        wmma::load_matrix_sync(fa, a + row * k + i, k);
        wmma::load_matrix_sync(fb, b + col * k + i, k);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::load_matrix_sync(fc, c + row * n + col, n, wmma::mem_row_major);
    for (int e = 0; e < fc.num_elements; ++e) fc.x[e] = alpha * acc.x[e] + beta * fc.x[e];
    wmma::store_matrix_sync(d + row * n + col, fc, n, wmma::mem_row_major);
}

// The shape of its compute_gemm, reduced: a block of four warps computes a 32x32 tile of D, staging chunks of
// A and B through shared memory with 16-byte copies (rows skewed by 8 halves), the warps' accumulators through
// shared memory on the way out.
#define SKEW 8
extern "C" __global__ void staged_gemm(const unsigned short* a_bits, const unsigned short* b_bits, const float* c, float* d,
                                       int m, int n, int k, float alpha, float beta)
{
    __shared__ alignas(16) half as[32][16 + SKEW];
    __shared__ alignas(16) half bs[32][16 + SKEW];
    __shared__ alignas(16) float out[32][32];
    const half* a = (const half*)a_bits;
    const half* b = (const half*)b_bits;
    int warp = threadIdx.x / 32, tile_row = blockIdx.y * 32, tile_col = blockIdx.x * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int i = 0; i < k; i += 16)
    {
        // 32 rows of A and of B (n-major) times 16 halves: 64 copies of 16 bytes each
        int r = threadIdx.x / 2, part = threadIdx.x % 2;
        if (threadIdx.x < 64)
            *(int4*)&as[r][part * 8] = *(const int4*)&a[(tile_row + r) * k + i + part * 8];
        else
        {
            r -= 32;
            *(int4*)&bs[r][part * 8] = *(const int4*)&b[(tile_col + r) * k + i + part * 8];
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, &as[(warp / 2) * 16][0], 16 + SKEW);
        wmma::load_matrix_sync(fb, &bs[(warp % 2) * 16][0], 16 + SKEW);
        wmma::mma_sync(acc, fa, fb, acc);
        __syncthreads();
    }
    wmma::store_matrix_sync(&out[(warp / 2) * 16][(warp % 2) * 16], acc, 32, wmma::mem_row_major);
    __syncthreads();
    for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x)
    {
        int r = e / 32, q = e % 32, at = (tile_row + r) * n + tile_col + q;
        d[at] = alpha * out[r][q] + beta * c[at];
    }
}

// The other wmma shapes, one tile each: m32n8k16 and m8n32k16 of f16 (B column-major, C filled with 1), and
// m32n8k16 of u8 with A column-major and B's rows padded to 16 bytes (load_matrix_sync's stride rule).
template <int M, int N, int K>
__device__ void shaped(const unsigned short* a, const unsigned short* b, float* d)
{
    wmma::fragment<wmma::matrix_a, M, N, K, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, M, N, K, float> fc;
    wmma::fill_fragment(fc, 1.0f);
    wmma::load_matrix_sync(fa, (const half*)a, K);
    wmma::load_matrix_sync(fb, (const half*)b, K);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, N, wmma::mem_row_major);
}
extern "C" __global__ void tall(const unsigned short* a, const unsigned short* b, float* d) { shaped<32, 8, 16>(a, b, d); }
extern "C" __global__ void wide(const unsigned short* a, const unsigned short* b, float* d) { shaped<8, 32, 16>(a, b, d); }
extern "C" __global__ void bytes(const unsigned char* a_columns, const unsigned char* b_padded, int* d)
{
    wmma::fragment<wmma::matrix_a, 32, 8, 16, unsigned char, wmma::col_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, unsigned char, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, int> fc;
    wmma::fill_fragment(fc, 0);
    wmma::load_matrix_sync(fa, a_columns, 32);
    wmma::load_matrix_sync(fb, b_padded, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}

// mma.sync m16n8k16 fed by ldmatrix: each warp one 16x8 tile of D = A B; A (m x k) and B (k x n) row-major,
// staged in shared memory; A's fragment by ldmatrix.x4, B's by ldmatrix.x2.trans.
extern "C" __global__ void mma_gemm(const unsigned short* a, const unsigned short* b, float* d, int m, int n, int k)
{
    __shared__ alignas(16) unsigned short as[16][16];
    __shared__ alignas(16) unsigned short bs[16][8];
    unsigned l = threadIdx.x, g = l >> 2, t = l % 4;
    int row = blockIdx.y * 16, col = blockIdx.x * 8;
    float acc[4] = {0, 0, 0, 0};
    for (int i = 0; i < k; i += 16)
    {
        for (int e = l; e < 256; e += 32) as[e / 16][e % 16] = a[(row + e / 16) * k + i + e % 16];
        for (int e = l; e < 128; e += 32) bs[e / 8][e % 8] = b[(i + e / 8) * n + col + e % 8];
        __syncwarp();
        unsigned fa[4], fb[2];
        unsigned a_row = (unsigned)__cvta_generic_to_shared(&as[((l / 8) & 1) * 8 + l % 8][(l / 16) * 8]);
        unsigned b_row = (unsigned)__cvta_generic_to_shared(&bs[l % 16][0]);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(fa[0]), "=r"(fa[1]), "=r"(fa[2]), "=r"(fa[3]) : "r"(a_row));
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(fb[0]), "=r"(fb[1]) : "r"(b_row));
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
        __syncwarp();
    }
    for (int e = 0; e < 4; ++e) d[(row + g + 8 * (e >> 1)) * n + col + t * 2 + (e & 1)] = acc[e];
}
"""

M, N, K = 64, 64, 64
ALPHA, BETA = 1.5, -0.5


def inputs():
    rng = np.random.default_rng(46)
    half = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float16)  # noqa: E731
    small = lambda *shape: rng.integers(-4, 5, shape).astype(np.float16)  # noqa: E731
    return dict(a=half(M, K), b=half(K, N), c=rng.uniform(-1, 1, (M, N)).astype(np.float32), tall_a=small(32, 16),
                tall_b=small(16, 8), wide_a=small(8, 16), wide_b=small(16, 32),
                bytes_a=rng.integers(0, 256, (32, 16)).astype(np.uint8), bytes_b=rng.integers(0, 256, (16, 8)).astype(np.uint8))


def run():
    m = xcuda.compile(SOURCE, name="tensor_core_kernels")
    v = inputs()
    a_bits = v["a"].view(np.uint16)
    b_columns = np.ascontiguousarray(v["b"].T).view(np.uint16)  # column-major B: n rows of k
    out = {}
    out["simple_gemm"] = np.zeros((M, N), np.float32)
    m.simple_gemm[(M // 16 * 32 // 128, N // 16), (128, 1)](a_bits, b_columns, v["c"], out["simple_gemm"], M, N, K,
                                                              np.float32(ALPHA), np.float32(BETA))
    out["staged_gemm"] = np.zeros((M, N), np.float32)
    m.staged_gemm[(N // 32, M // 32), 128](a_bits, b_columns, v["c"], out["staged_gemm"], M, N, K, np.float32(ALPHA),
                                           np.float32(BETA))
    out["mma_gemm"] = np.zeros((M, N), np.float32)
    m.mma_gemm[(N // 8, M // 16), 32](a_bits, v["b"].view(np.uint16), out["mma_gemm"], M, N, K)
    for name in ("tall", "wide"):
        out[name] = np.zeros((v[name + "_a"].shape[0], v[name + "_b"].shape[1]), np.float32)
        getattr(m, name)[1, 32](v[name + "_a"].view(np.uint16), np.ascontiguousarray(v[name + "_b"].T).view(np.uint16),
                                out[name])
    padded = np.zeros((16, 16), np.uint8)
    padded[:, :8] = v["bytes_b"]
    out["bytes"] = np.zeros((32, 8), np.int32)
    m.bytes[1, 32](np.ascontiguousarray(v["bytes_a"].T), padded, out["bytes"])
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from kernel_runs import save

    save(run(), sys.argv[1])
