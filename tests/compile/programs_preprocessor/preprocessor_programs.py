"""A second set of CUDA programs (issue 25, item 8), each stressing the preprocessor reader, class
templates by value or whole programs: the patterns that stopped public code before (a precision header
with #ifdef DOUBLE_PRECISION typedefs, #if on __CUDA_ARCH__ and on the cell's own macros, a Matrix<T> by
value as the CUDA C++ Programming Guide's matrix product passes its Matrix, an nvcc4jupyter-style program
with main()). Provenance: the sessions' tools keep third-party repositories' code out of commits, so
each program is written here after the public pattern it names (see its comment), not pasted from it.

Each program is its header cells, its %%cuda cells (magic line, source) and `run(ns)`: the launches its
host code would make, returning (name, got, expected) triples checked against numpy. The whole program
(WHOLE_PROGRAM) is a %%cuda_program cell with the output it must print.
tests/compile/test_programs_preprocessor.py types every program without a GPU, runs them on one (gpu)
and on the PTX simulator.
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Program:
    name: str
    cells: list  # (magic line after %%cuda, source)
    run: object
    headers: list = field(default_factory=list)  # (name, source)
    # kernel -> [(itemsize, {field: offset}) or a numpy dtype, per parameter (the pointee for pointers)]
    expect: dict = field(default_factory=dict)


# ---- 1. a precision header: #ifdef DOUBLE_PRECISION typedefs, compiled twice -------------------------
# Pattern: the real.h / precision.h headers of CFD and N-body codes (typedef double real under
# DOUBLE_PRECISION, real2/real4 only #ifdef __CUDACC__), included by each kernel file.
REAL_CUH = r"""#ifndef REAL_CUH
#define REAL_CUH

// #define DOUBLE_PRECISION

#ifdef DOUBLE_PRECISION
typedef double real;
#ifdef __CUDACC__
typedef double2 real2;
#endif
#define REAL_FORMAT "%lf"
#else
typedef float real;
#ifdef __CUDACC__
typedef float2 real2;
#endif
#define REAL_FORMAT "%f"
#endif

struct Particle {
    real2 position;
    real2 velocity;
    real mass;
};

#endif // REAL_CUH
"""

PRECISION_SINGLE = r"""#include "real.cuh"

__global__ void drift(Particle* particles, real dt, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        particles[i].position.x += particles[i].velocity.x * dt;
        particles[i].position.y += particles[i].velocity.y * dt;
    }
}
"""

PRECISION_DOUBLE = PRECISION_SINGLE.replace("drift(", "drift_double(")


def particle_layout(real):
    size = np.dtype(real).itemsize
    return (6 * size, {"position": 0, "velocity": 2 * size, "mass": 4 * size})


def run_precision(ns):
    results = []
    for kernel, real in (("drift", np.float32), ("drift_double", np.float64)):
        k = ns[kernel]
        dtype = k.parameters[0]["dtype"]
        n = 1000
        p = np.zeros(n, dtype)
        rng = np.random.default_rng(2)
        for axis in ("x", "y"):
            p["position"][axis] = rng.random(n)
            p["velocity"][axis] = rng.random(n)
        p["mass"] = 1.0
        expected = {axis: p["position"][axis] + p["velocity"][axis] * real(0.5) for axis in ("x", "y")}
        k[(n + 127) // 128, 128](p, 0.5, n)
        for axis in ("x", "y"):
            results.append((f"{kernel}.{axis}", p["position"][axis], expected[axis]))
    return results


# ---- 2. #if on __CUDA_ARCH__, __CUDACC_RTC__ and a -D of the line ----------------------------------
# Pattern: kernels that pick a wider accumulator or an intrinsic path by architecture
# (#if __CUDA_ARCH__ >= 800) and compile one way under NVRTC (#ifdef __CUDACC_RTC__), with an optional
# feature switched on by -D.
ARCH = r"""#if defined(__CUDACC_RTC__)
#define RTC_BUILD 1
#else
#define RTC_BUILD 0
#endif

#if __CUDA_ARCH__ >= 700 && RTC_BUILD
typedef double acc_t;     // exact enough for the checks below
#elif defined(__CUDA_ARCH__)
typedef float acc_t;
#else
typedef long double acc_t; // host compilers only: never seen by NVRTC
#endif

struct SumParams {
    int n;
#ifdef WITH_SCALE
    acc_t scale;
#endif
};

extern "C" __global__ void block_sums(const float* x, acc_t* partial, SumParams params)
{
    __shared__ acc_t cache[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    acc_t v = i < params.n ? (acc_t)x[i] : (acc_t)0;
#ifdef WITH_SCALE
    v *= params.scale;
#endif
    cache[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}
"""


def run_arch(ns):
    k = ns["arch"].block_sums
    x = np.random.default_rng(3).random(256 * 9 + 5).astype(np.float32)
    blocks = (x.size + 255) // 256
    acc = k.parameters[1]["dtype"]
    partial = np.zeros(blocks, acc)
    params = np.zeros((), k.parameters[2]["dtype"])
    params["n"] = x.size
    params["scale"] = 2.0
    k[blocks, 256](x, partial, params)
    padded = np.zeros(blocks * 256, np.float64)
    padded[: x.size] = x
    return [("block_sums", partial, 2.0 * padded.reshape(blocks, 256).sum(axis=1))]


# ---- 3. a config header of macros: #ifndef defaults, #if / #elif on values, extents from macros ------
# Pattern: stencil and filter codes whose tile and radius come from a config header with #ifndef
# defaults that -D can override, and whose parameter struct has arrays sized by those macros.
CONFIG_CUH = r"""#pragma once
#ifndef RADIUS
#define RADIUS 2
#endif
#define TAPS (2 * RADIUS + 1)

#if TAPS > 7
#error "this filter keeps at most 7 taps in its parameter struct"
#elif TAPS >= 5
typedef float weight_t;
#else
typedef double weight_t;
#endif

typedef struct {
    weight_t w[TAPS];
    int n;
} Filter;
"""

STENCIL = r"""#include "config.cuh"

extern "C" __global__ void filter1d(const float* in, float* out, Filter f)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= f.n) return;
    float acc = 0.0f;
    #pragma unroll
    for (int t = -RADIUS; t <= RADIUS; ++t) {
        int j = min(max(i + t, 0), f.n - 1);
        acc += (float)f.w[t + RADIUS] * in[j];
    }
    out[i] = acc;
}
"""


def run_stencil(ns):
    k = ns["stencil"].filter1d
    dtype = k.parameters[2]["dtype"]
    taps = dtype["w"].shape[0]
    radius = taps // 2
    n = 3000
    x = np.random.default_rng(4).random(n).astype(np.float32)
    f = np.zeros((), dtype)
    w = np.arange(1, taps + 1, dtype=np.float64) / taps
    f["w"] = w
    f["n"] = n
    out = np.zeros(n, np.float32)
    k[(n + 255) // 256, 256](x, out, f)
    padded = np.pad(x.astype(np.float64), radius, mode="edge")
    expected = sum(w[t] * padded[t: t + n] for t in range(taps))
    return [("filter1d", out, expected)]


# ---- 4. Matrix<T> by value: the shared-memory matrix product of the CUDA C++ Programming Guide -------
# Pattern: the Guide's "Shared Memory" example passes `Matrix` (width, height, stride, elements) by
# value to MatMulKernel and reads sub-matrices with GetSubMatrix; here Matrix is a class template, as
# codes that multiply float and double matrices write it.
MATMUL = r"""#define BLOCK_SIZE 16

template <typename T>
struct Matrix {
    int width;
    int height;
    int stride;
    T* elements;
};

template <typename T>
__device__ T GetElement(const Matrix<T> A, int row, int col) { return A.elements[row * A.stride + col]; }

template <typename T>
__device__ void SetElement(Matrix<T> A, int row, int col, T value) { A.elements[row * A.stride + col] = value; }

template <typename T>
__device__ Matrix<T> GetSubMatrix(Matrix<T> A, int row, int col)
{
    Matrix<T> Asub;
    Asub.width = BLOCK_SIZE;
    Asub.height = BLOCK_SIZE;
    Asub.stride = A.stride;
    Asub.elements = &A.elements[A.stride * BLOCK_SIZE * row + BLOCK_SIZE * col];
    return Asub;
}

extern "C" __global__ void MatMulKernel(Matrix<float> A, Matrix<float> B, Matrix<float> C)
{
    int blockRow = blockIdx.y, blockCol = blockIdx.x;
    Matrix<float> Csub = GetSubMatrix(C, blockRow, blockCol);
    float Cvalue = 0;
    int row = threadIdx.y, col = threadIdx.x;
    for (int m = 0; m < (A.width / BLOCK_SIZE); ++m) {
        Matrix<float> Asub = GetSubMatrix(A, blockRow, m);
        Matrix<float> Bsub = GetSubMatrix(B, m, blockCol);
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        As[row][col] = GetElement(Asub, row, col);
        Bs[row][col] = GetElement(Bsub, row, col);
        __syncthreads();
        for (int e = 0; e < BLOCK_SIZE; ++e) Cvalue += As[row][e] * Bs[e][col];
        __syncthreads();
    }
    SetElement(Csub, row, col, Cvalue);
}
"""


def run_matmul(ns):
    import xcuda

    k = ns["MatMulKernel"]
    dtype = k.parameters[0]["dtype"]
    size = 48
    rng = np.random.default_rng(5)
    a, b = rng.random((size, size), dtype=np.float32), rng.random((size, size), dtype=np.float32)
    da, db, dc = xcuda.to_device(a), xcuda.to_device(b), xcuda.zeros((size, size), np.float32)

    def matrix(array):
        m = np.zeros((), dtype)
        m["width"] = m["height"] = m["stride"] = size
        m["elements"] = array.ptr
        return m

    k[(size // 16, size // 16), (16, 16)](matrix(da), matrix(db), matrix(dc))
    return [("MatMulKernel", dc.copy_to_host(), a.astype(np.float64) @ b.astype(np.float64))]


# ---- 5. small vectors as class templates with defaults and nesting, by value --------------------------
# Pattern: geometry codes' Vec<T, N> with an array member, and a transform holding two of them.
TRANSFORM = r"""template <typename T, int N = 3>
struct Vec { T v[N]; };

template <typename T>
struct Affine { Vec<T> scale; Vec<T> shift; };

namespace geo {
template <class T> struct Range { T lo, hi; };
}

extern "C" __global__ void apply(const Vec<float>* in, Vec<float>* out, Affine<float> t, geo::Range<float> clamp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int d = 0; d < 3; ++d) {
        float x = in[i].v[d] * t.scale.v[d] + t.shift.v[d];
        out[i].v[d] = fminf(fmaxf(x, clamp.lo), clamp.hi);
    }
}
"""


def run_transform(ns):
    k = ns["apply"]
    vec = k.parameters[0]["dtype"]
    n = 777
    rng = np.random.default_rng(6)
    points = np.zeros(n, vec)
    points["v"] = rng.random((n, 3), dtype=np.float32) * 4 - 2
    out = np.zeros(n, vec)
    t = np.zeros((), k.parameters[2]["dtype"])
    t["scale"]["v"] = (2.0, -1.0, 0.5)
    t["shift"]["v"] = (0.25, 0.5, -0.75)
    k[(n + 127) // 128, 128](points, out, t, (-1.5, 1.5), n)
    expected = np.clip(points["v"] * np.float32([2.0, -1.0, 0.5]) + np.float32([0.25, 0.5, -0.75]), -1.5, 1.5)
    return [("apply", out["v"], expected)]


PROGRAMS = [
    Program("precision", [("", PRECISION_SINGLE), ("-DDOUBLE_PRECISION", PRECISION_DOUBLE)], run_precision,
            headers=[("real.cuh", REAL_CUH)],
            expect={"drift": [particle_layout(np.float32), np.float32, np.int32],
                    "drift_double": [particle_layout(np.float64), np.float64, np.int32]}),
    Program("arch", [("--name arch -DWITH_SCALE", ARCH)], run_arch,
            expect={"block_sums": [np.float32, np.float64, (16, {"n": 0, "scale": 8})]}),
    Program("stencil", [("--name stencil", STENCIL)], run_stencil, headers=[("config.cuh", CONFIG_CUH)],
            expect={"filter1d": [np.float32, np.float32, (24, {"w": 0, "n": 20})]}),
    Program("matmul", [("", MATMUL)], run_matmul,
            expect={"MatMulKernel": [(24, {"width": 0, "height": 4, "stride": 8, "elements": 16})] * 3}),
    Program("transform", [("", TRANSFORM)], run_transform,
            expect={"apply": [(12, {"v": 0}), (12, {"v": 0}), (24, {"scale": 0, "shift": 12}),
                              (8, {"lo": 0, "hi": 4}), np.int32]}),
]

# ---- 6. a whole program as nvcc4jupyter's %%cuda cells hold them -----------------------------------
# Pattern: the vector addition of course notebooks run with nvcc4jupyter: cudaMalloc, cudaMemcpy, a
# <<<>>> launch, a check on the host, printf of the result; the host prints before it touches the GPU.
WHOLE_PROGRAM = r"""#include <stdio.h>
#include <stdlib.h>

#define N 1024

__global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char** argv)
{
    int n = argc > 1 ? atoi(argv[1]) : N;
    printf("adding %d elements\n", n);
    fflush(stdout);
    size_t bytes = n * sizeof(float);
    float *h_a = (float*)malloc(bytes), *h_b = (float*)malloc(bytes), *h_c = (float*)malloc(bytes);
    for (int i = 0; i < n; ++i) { h_a[i] = i; h_b[i] = 2 * i; }
    float *d_a, *d_b, *d_c;
    cudaError_t err = cudaMalloc(&d_a, bytes);
    if (err != cudaSuccess) { fprintf(stderr, "cudaMalloc: %s\n", cudaGetErrorString(err)); return 2; }
    cudaMalloc(&d_b, bytes);
    cudaMalloc(&d_c, bytes);
    cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice);
    vector_add<<<(n + 255) / 256, 256>>>(d_a, d_b, d_c, n);
    cudaMemcpy(h_c, d_c, bytes, cudaMemcpyDeviceToHost);
    double sum = 0;
    int wrong = 0;
    for (int i = 0; i < n; ++i) { sum += h_c[i]; wrong += h_c[i] != 3.0f * i; }
    printf("sum %.1f\n", sum);
    printf(wrong ? "FAILED\n" : "PASSED\n");
    cudaFree(d_a); cudaFree(d_b); cudaFree(d_c);
    free(h_a); free(h_b); free(h_c);
    return wrong ? 1 : 0;
}
"""


def whole_program_expected_sum(n):
    return float(3 * np.arange(n, dtype=np.float64).sum())
