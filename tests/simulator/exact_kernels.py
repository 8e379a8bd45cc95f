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

    return dict(a32=u32(), b32=u32(), a64=u64(), b64=u64(), fa=finite(np.float32), fb=finite(np.float32),
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
    return out


if __name__ == "__main__":
    results = run()
    np.savez(sys.argv[1], **results)
    print("device:", next(line.split(None, 1)[1] for line in str(xcuda.info()).splitlines()
                          if line.strip().startswith("name")))
    print("saved", ", ".join(f"{k} ({v.nbytes} bytes)" for k, v in results.items()))
