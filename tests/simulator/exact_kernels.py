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

N = 4096
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
    return dict(a32=u32(), b32=u32(), c32=u32(), a64=u64(), b64=u64(), votes=votes, fa=finite(np.float32), fb=finite(np.float32),
                fc=finite(np.float32), da=finite(np.float64), db=finite(np.float64), dc=finite(np.float64))


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
    return out


if __name__ == "__main__":
    from kernel_runs import save

    save(run(), sys.argv[1])
