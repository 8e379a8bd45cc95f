"""Kernels of the float families of round 2 (docs/simulator.md, "Arithmetic"): half precision (cuda_fp16.h,
cuda_bf16.h), 8-bit floats (cuda_fp8.h), every rounding of cvt, the directed roundings of f32/f64 arithmetic, and libdevice's math
functions. Run on whatever device this process has, the outputs saved with numpy:

    python3 tests/simulator/float_kernels.py OUT.npz      # XCUDA_DEVICE=simulator for the simulator

tests/simulator/test_float_families.py checks the simulator's outputs against exact references
(float_reference.py) and, where a GPU is, compares them with the GPU's. The inputs are the same in every
process (a fixed seed); none is a NaN (a NaN's payload is not claimed, docs/simulator.md).
"""
import sys

import numpy as np

import xcuda

# The two types' own functions under one name each, so that one template tests both.
PREAMBLE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
template <class T> __device__ T __ushort_as_half_or_bf16(unsigned short);
template <> __device__ __half __ushort_as_half_or_bf16<__half>(unsigned short v) { return __ushort_as_half(v); }
template <> __device__ __nv_bfloat16 __ushort_as_half_or_bf16<__nv_bfloat16>(unsigned short v) { return __ushort_as_bfloat16(v); }
__device__ unsigned short bits_of(__half h) { return __half_as_ushort(h); }
__device__ unsigned short bits_of(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__device__ __half2 make_pair2(__half a, __half b) { return __halves2half2(a, b); }
__device__ __nv_bfloat162 make_pair2(__nv_bfloat16 a, __nv_bfloat16 b) { return __halves2bfloat162(a, b); }
__device__ __half __low2half_any(__half2 h) { return __low2half(h); }
__device__ __half __high2half_any(__half2 h) { return __high2half(h); }
__device__ __nv_bfloat16 __low2half_any(__nv_bfloat162 h) { return __low2bfloat16(h); }
__device__ __nv_bfloat16 __high2half_any(__nv_bfloat162 h) { return __high2bfloat16(h); }
"""

SOURCE = PREAMBLE + r"""
// Scalar and paired arithmetic of __half and __nv_bfloat16 (the same code for both: T, T2).
template <class T, class T2>
__device__ void arithmetic(const unsigned short* a, const unsigned short* b, const unsigned short* c, unsigned short* o, int i)
{
    T x = __ushort_as_half_or_bf16<T>(a[i]), y = __ushort_as_half_or_bf16<T>(b[i]), z = __ushort_as_half_or_bf16<T>(c[i]);
    T r[8] = {__hadd(x, y), __hsub(x, y), __hmul(x, y), __hfma(x, y, z), __hneg(x), __habs(x), __hmin(x, y), __hmax(x, y)};
    for (int k = 0; k < 8; ++k) o[12 * i + k] = bits_of(r[k]);
    // a pair: (x, z) with (y, x), the halves independent
    T2 p = make_pair2(x, z), q = make_pair2(y, x), s = make_pair2(z, y);
    T2 sum = __hadd2(p, q), product = __hmul2(p, q), fused = __hfma2(p, q, s);
    o[12 * i + 8] = bits_of(__low2half_any(sum)) ^ bits_of(__high2half_any(sum));
    o[12 * i + 9] = bits_of(__low2half_any(product)) ^ bits_of(__high2half_any(product));
    o[12 * i + 10] = bits_of(__low2half_any(fused)) ^ bits_of(__high2half_any(fused));
    o[12 * i + 11] = (__hlt(x, y) ? 1 : 0) | (__hge(x, z) ? 2 : 0) | (__heq(y, z) ? 4 : 0) | (__hne(x, y) ? 8 : 0);
}
extern "C" __global__ void half_arithmetic(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                           unsigned short* o, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) arithmetic<__half, __half2>(a, b, c, o, i);
}

extern "C" __global__ void bf16_arithmetic(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                           unsigned short* o, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) arithmetic<__nv_bfloat16, __nv_bfloat162>(a, b, c, o, i);
}

// Conversions with every rounding: float and double to half and bfloat16, half to integers, integers to
// half, float and double; and the packing of two floats into a pair.
extern "C" __global__ void conversions(const float* f, const double* d, const int* k, const long long* w,
                                       unsigned short* h, int* ints, float* floats, double* doubles, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = f[i];
    unsigned short* o = h + 16 * i;
    o[0] = __half_as_ushort(__float2half_rn(x)); o[1] = __half_as_ushort(__float2half_rz(x));
    o[2] = __half_as_ushort(__float2half_rd(x)); o[3] = __half_as_ushort(__float2half_ru(x));
    o[4] = __bfloat16_as_ushort(__float2bfloat16_rn(x)); o[5] = __bfloat16_as_ushort(__float2bfloat16_rz(x));
    o[6] = __bfloat16_as_ushort(__float2bfloat16_rd(x)); o[7] = __bfloat16_as_ushort(__float2bfloat16_ru(x));
    o[8] = __half_as_ushort(__double2half(d[i])); o[9] = __bfloat16_as_ushort(__double2bfloat16(d[i]));
    o[10] = __half_as_ushort(__int2half_rn(k[i])); o[11] = __half_as_ushort(__int2half_rz(k[i]));
    o[12] = __half_as_ushort(__int2half_rd(k[i])); o[13] = __half_as_ushort(__int2half_ru(k[i]));
    __nv_bfloat162 pair = __floats2bfloat162_rn(x, f[n - 1 - i]);
    o[14] = __bfloat16_as_ushort(__low2bfloat16(pair)); o[15] = __bfloat16_as_ushort(__high2bfloat16(pair));
    __half hx = __float2half_rn(x * 0.001f);
    int* t = ints + 8 * i;
    t[0] = __half2int_rn(hx); t[1] = __half2int_rz(hx); t[2] = __half2int_rd(hx); t[3] = __half2int_ru(hx);
    __nv_bfloat16 bx = __float2bfloat16_rn(x);
    t[4] = __bfloat162int_rn(bx); t[5] = __bfloat162int_rz(bx); t[6] = __bfloat162int_rd(bx); t[7] = __bfloat162int_ru(bx);
    float* g = floats + 10 * i;
    g[0] = __half2float(hx); g[1] = __bfloat162float(bx);
    g[2] = __int2float_rz(k[i]); g[3] = __int2float_rd(k[i]); g[4] = __int2float_ru(k[i]);
    g[5] = __ll2float_rz(w[i]); g[6] = __ll2float_rd(w[i]); g[7] = __ll2float_ru(w[i]);
    g[8] = __uint2float_rd((unsigned)k[i]); g[9] = __ull2float_ru((unsigned long long)w[i]);
    double* e = doubles + 3 * i;
    e[0] = __ll2double_rz(w[i]); e[1] = __ll2double_rd(w[i]); e[2] = __ll2double_ru(w[i]);
}

// The 8-bit floats of cuda_fp8.h: pairs of floats and of halves to e4m3x2 / e5m2x2 (round to nearest, saturated
// to the largest finite value), and e4m3x2 back to a pair of halves.
extern "C" __global__ void fp8(const float* f, unsigned char* o, float* back, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = f[i], y = f[n - 1 - i];
    __nv_fp8x2_e4m3 p(make_float2(x, y));
    __nv_fp8x2_e5m2 q(make_float2(x, y));
    __nv_fp8x2_e4m3 r(__floats2half2_rn(x, y));
    unsigned char* b = o + 6 * i;
    b[0] = p.__x & 0xff; b[1] = p.__x >> 8; b[2] = q.__x & 0xff; b[3] = q.__x >> 8; b[4] = r.__x & 0xff; b[5] = r.__x >> 8;
    __half2 h(__nv_cvt_fp8x2_to_halfraw2(p.__x, __NV_E4M3));
    back[2 * i] = __low2float(h); back[2 * i + 1] = __high2float(h);
}

// The directed roundings of f32 and f64 arithmetic (__fadd_rz ... __drcp_ru).
extern "C" __global__ void rounded(const float* a, const float* b, const float* c, const double* p, const double* q,
                                   const double* r, float* fo, double* do_, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i], z = c[i];
    float* f = fo + 24 * i;
    f[0] = __fadd_rz(x, y); f[1] = __fadd_rd(x, y); f[2] = __fadd_ru(x, y);
    f[3] = __fmul_rz(x, y); f[4] = __fmul_rd(x, y); f[5] = __fmul_ru(x, y);
    f[6] = __fmaf_rz(x, y, z); f[7] = __fmaf_rd(x, y, z); f[8] = __fmaf_ru(x, y, z);
    f[9] = __fdiv_rz(x, y); f[10] = __fdiv_rd(x, y); f[11] = __fdiv_ru(x, y);
    f[12] = __fsqrt_rz(fabsf(x)); f[13] = __fsqrt_rd(fabsf(x)); f[14] = __fsqrt_ru(fabsf(x));
    f[15] = __frcp_rz(y); f[16] = __frcp_rd(y); f[17] = __frcp_ru(y);
    f[18] = __fsub_rz(x, z); f[19] = __fsub_rd(x, z); f[20] = __fsub_ru(x, z);
    f[21] = __fadd_rn(x, z); f[22] = __fmaf_rn(x, y, z); f[23] = __fdiv_rn(x, y);
    double u = p[i], v = q[i], w = r[i];
    double* d = do_ + 18 * i;
    d[0] = __dadd_rz(u, v); d[1] = __dadd_rd(u, v); d[2] = __dadd_ru(u, v);
    d[3] = __dmul_rz(u, v); d[4] = __dmul_rd(u, v); d[5] = __dmul_ru(u, v);
    d[6] = __fma_rz(u, v, w); d[7] = __fma_rd(u, v, w); d[8] = __fma_ru(u, v, w);
    d[9] = __ddiv_rz(u, v); d[10] = __ddiv_rd(u, v); d[11] = __ddiv_ru(u, v);
    d[12] = __dsqrt_rz(fabs(u)); d[13] = __dsqrt_rd(fabs(u)); d[14] = __dsqrt_ru(fabs(u));
    d[15] = __drcp_rz(v); d[16] = __drcp_rd(v); d[17] = __drcp_ru(v);
}

// libdevice's math functions, which use the directed roundings and the approximations inside.
extern "C" __global__ void math(const float* a, const float* b, const double* p, const double* q, float* fo,
                                double* do_, unsigned short* ho, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i], s, c;
    sincosf(x, &s, &c);
    float* f = fo + 8 * i;
    f[0] = expf(x); f[1] = logf(fabsf(x)); f[2] = powf(fabsf(x), y); f[3] = s; f[4] = c; f[5] = erff(x);
    f[6] = exp2f(x); f[7] = tanhf(x);
    double u = p[i], v = q[i], ds, dc;
    sincos(u, &ds, &dc);
    double* d = do_ + 7 * i;
    d[0] = exp(u); d[1] = log(fabs(u)); d[2] = pow(fabs(u), v); d[3] = ds; d[4] = dc; d[5] = erf(u); d[6] = cbrt(u);
    __half h = __float2half_rn(x * 0.25f);
    unsigned short* o = ho + 4 * i;
    o[0] = __half_as_ushort(hexp(h)); o[1] = __half_as_ushort(hlog(__habs(h))); o[2] = __half_as_ushort(hsqrt(__habs(h)));
    o[3] = __half_as_ushort(__hdiv(h, __float2half_rn(y)));
}
"""

N = 2048
BLOCK = 128


def inputs():
    rng = np.random.default_rng(46)

    def halves(dtype_bits):
        # Finite values of every exponent (random bit patterns with the NaN/infinity exponent left out).
        if dtype_bits == "f16":
            v = rng.integers(0, 0x7C00, N).astype(np.uint16)
        else:
            v = rng.integers(0, 0x7F80, N).astype(np.uint16)
        v[::3] = (np.float16 if dtype_bits == "f16" else np.float32)(1)  # overwritten below: ordinary values
        ordinary = rng.standard_normal(len(v[::3])) * 10
        if dtype_bits == "f16":
            v[::3] = ordinary.astype(np.float16).view(np.uint16)
        else:
            v[::3] = (ordinary.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return v | (rng.integers(0, 2, N).astype(np.uint16) << 15)

    def finite(dtype, scale):
        v = (rng.standard_normal(N) * scale).astype(dtype)
        v[::5] = rng.uniform(-1, 1, len(v[::5])).astype(dtype) * np.finfo(dtype).tiny * dtype(4)
        v[::9] = (rng.integers(-70000, 70000, len(v[::9])) + rng.choice([0.5, 0.25, 0.0], len(v[::9]))).astype(dtype)
        v[v == 0] = dtype(1.5)
        return v

    return dict(ha=halves("f16"), hb=halves("f16"), hc=halves("f16"), ba=halves("bf16"), bb=halves("bf16"),
                bc=halves("bf16"), fa=finite(np.float32, 1000), fb=finite(np.float32, 3), fc=finite(np.float32, 1e5),
                da=finite(np.float64, 1e3), db=finite(np.float64, 3), dc=finite(np.float64, 1e9),
                ints=rng.integers(-2 ** 31, 2 ** 31, N).astype(np.int32),
                longs=rng.integers(-2 ** 63, 2 ** 63, N, dtype=np.int64),
                ma=rng.uniform(-20, 20, N).astype(np.float32), mb=rng.uniform(-4, 4, N).astype(np.float32),
                mp=rng.uniform(-30, 30, N), mq=rng.uniform(-5, 5, N))


def run():
    m = xcuda.compile(SOURCE, name="float_kernels")
    v = inputs()
    grid = (N + BLOCK - 1) // BLOCK
    out = {}
    out["half"] = np.zeros(12 * N, np.uint16)
    m.half_arithmetic[grid, BLOCK](v["ha"], v["hb"], v["hc"], out["half"], N)
    out["bf16"] = np.zeros(12 * N, np.uint16)
    m.bf16_arithmetic[grid, BLOCK](v["ba"], v["bb"], v["bc"], out["bf16"], N)
    out["cvt_halves"], out["cvt_ints"] = np.zeros(16 * N, np.uint16), np.zeros(8 * N, np.int32)
    out["cvt_floats"], out["cvt_doubles"] = np.zeros(10 * N, np.float32), np.zeros(3 * N, np.float64)
    m.conversions[grid, BLOCK](v["fa"], v["da"], v["ints"], v["longs"], out["cvt_halves"], out["cvt_ints"],
                               out["cvt_floats"], out["cvt_doubles"], N)
    out["fp8"], out["fp8_back"] = np.zeros(6 * N, np.uint8), np.zeros(2 * N, np.float32)
    m.fp8[grid, BLOCK](v["fa"] * np.float32(0.25), out["fp8"], out["fp8_back"], N)
    out["rounded_f32"], out["rounded_f64"] = np.zeros(24 * N, np.float32), np.zeros(18 * N, np.float64)
    m.rounded[grid, BLOCK](v["fa"], v["fb"], v["fc"], v["da"], v["db"], v["dc"], out["rounded_f32"],
                           out["rounded_f64"], N)
    out["math_f32"], out["math_f64"], out["math_f16"] = np.zeros(8 * N, np.float32), np.zeros(7 * N), np.zeros(4 * N, np.uint16)
    m.math[grid, BLOCK](v["ma"], v["mb"], v["mp"], v["mq"], out["math_f32"], out["math_f64"], out["math_f16"], N)
    return out


if __name__ == "__main__":
    from kernel_runs import save

    save(run(), sys.argv[1])
