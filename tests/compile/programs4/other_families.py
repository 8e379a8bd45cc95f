"""The rest of the 24-program list: mini-nbody, the cuRAND device API's own example, CuPy's and PyCUDA's
examples, GPU MODE lectures 3 and 5.

Each source is written for these tests after the public program named in its provenance comment (the same
kernels, signatures, constants and launch shapes), not copied from it; `run(ns)` is the program's host code
as a notebook user writes it with xcuda (PyCUDA's and CuPy's calls, the lectures' PyTorch calls).
"""
from fractions import Fraction

import numpy as np

from curand_reference import philox4x32_10
from program import Program, cdiv, xcuda

# ---- mini-nbody: nbody-orig.cu and nbody-block.cu --------------------------------------------------------
# Provenance: harrism/mini-nbody cuda/nbody-orig.cu and cuda/nbody-block.cu (Apache-2.0): bodyForce on an
# array of Body structs, and on float4 positions with a shared-memory tile of float3 (BLOCK_SIZE 256),
# SOFTENING 1e-9f, rsqrtf, dt 0.01, positions integrated on the host after each step as there. The
# originals run 30,000 bodies for 10 steps: here 1024 bodies for 3 steps (the force is n^2).
NBODY_ORIG = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK_SIZE 256
#define SOFTENING 1e-9f

typedef struct { float x, y, z, vx, vy, vz; } Body;

__global__ void bodyForce(Body *p, float dt, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) {
    float Fx = 0.0f; float Fy = 0.0f; float Fz = 0.0f;
    for (int j = 0; j < n; j++) {
      float dx = p[j].x - p[i].x;
      float dy = p[j].y - p[i].y;
      float dz = p[j].z - p[i].z;
      float distSqr = dx * dx + dy * dy + dz * dz + SOFTENING;
      float invDist = rsqrtf(distSqr);
      float invDist3 = invDist * invDist * invDist;
      Fx += dx * invDist3; Fy += dy * invDist3; Fz += dz * invDist3;
    }
    p[i].vx += dt * Fx; p[i].vy += dt * Fy; p[i].vz += dt * Fz;
  }
}
"""

NBODY_BLOCK = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK_SIZE 256
#define SOFTENING 1e-9f

typedef struct { float4 *pos, *vel; } BodySystem;

__global__ void bodyForce(float4 *p, float4 *v, float dt, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) {
    float Fx = 0.0f; float Fy = 0.0f; float Fz = 0.0f;
    for (int tile = 0; tile < gridDim.x; tile++) {
      __shared__ float3 spos[BLOCK_SIZE];  // a tile of positions, read by the whole block
      float4 tpos = p[tile * blockDim.x + threadIdx.x];
      spos[threadIdx.x] = make_float3(tpos.x, tpos.y, tpos.z);
      __syncthreads();
      for (int j = 0; j < BLOCK_SIZE; j++) {
        float dx = spos[j].x - p[i].x;
        float dy = spos[j].y - p[i].y;
        float dz = spos[j].z - p[i].z;
        float distSqr = dx * dx + dy * dy + dz * dz + SOFTENING;
        float invDist = rsqrtf(distSqr);
        float invDist3 = invDist * invDist * invDist;
        Fx += dx * invDist3; Fy += dy * invDist3; Fz += dz * invDist3;
      }
      __syncthreads();
    }
    v[i].x += dt * Fx; v[i].y += dt * Fy; v[i].z += dt * Fz;
  }
}
"""


def nbody_force(pos):
    d = pos[None, :, :] - pos[:, None, :]
    inv = 1.0 / np.sqrt((d * d).sum(axis=2) + 1e-9)
    return (d * (inv ** 3)[:, :, None]).sum(axis=1)


def run_nbody_orig(ns):
    n, dt, steps = 1024, np.float32(0.01), 3
    bodies = (2.0 * np.random.default_rng(21).random((n, 6)) - 1.0).astype(np.float32)
    body = ns["bodyForce"].parameters[0]["dtype"]
    buf = np.ascontiguousarray(bodies).view(body).reshape(n)
    expected = bodies.astype(np.float64)
    d_buf = xcuda().to_device(buf)
    for _ in range(steps):
        d_buf.copy_from(buf)
        ns["bodyForce"][cdiv(n, 256), 256](d_buf, dt, n)
        d_buf.copy_to_host(out=buf)
        flat = buf.view(np.float32).reshape(n, 6)
        flat[:, 0:3] += flat[:, 3:6] * dt  # the host integrates the positions
        expected[:, 3:6] += float(dt) * nbody_force(expected[:, 0:3])
        expected[:, 0:3] += expected[:, 3:6] * float(dt)
    return [("bodies", buf.view(np.float32).reshape(n, 6), expected)]


def run_nbody_block(ns):
    n, dt, steps = 1024, np.float32(0.01), 3
    data = (2.0 * np.random.default_rng(22).random((2 * n, 4)) - 1.0).astype(np.float32)
    pos, vel = data[:n].copy(), data[n:].copy()
    expected_pos, expected_vel = pos.astype(np.float64), vel.astype(np.float64)
    vector = ns["bodyForce"].parameters[0]["dtype"]
    d_pos, d_vel = xcuda().to_device(pos.view(vector).reshape(n)), xcuda().to_device(vel.view(vector).reshape(n))
    for _ in range(steps):
        ns["bodyForce"][cdiv(n, 256), 256](d_pos, d_vel, dt, n)
        d_vel.copy_to_host(out=vel.view(vector).reshape(n))
        pos[:, 0:3] += vel[:, 0:3] * dt
        d_pos.copy_from(pos.view(vector).reshape(n))
        expected_vel[:, 0:3] += float(dt) * nbody_force(expected_pos[:, 0:3])
        expected_pos[:, 0:3] += expected_vel[:, 0:3] * float(dt)
    return [("positions", pos, expected_pos), ("velocities", vel, expected_vel)]


# ---- cuRAND's device API example --------------------------------------------------------------------------
# Provenance: the cuRAND documentation's "Device API Example" (docs.nvidia.com/cuda/curand, device-api-
# overview): setup_kernel (curand_init(1234, id, 0, &state) for each thread), generate_kernel (counts the
# odd values of curand()), generate_uniform_kernel (counts curand_uniform() > 0.5), with the
# Philox4_32_10 generator variant the example also builds; 64 blocks of 64 threads as there, 10,000 draws a
# thread there: here 256 (numpy computes the same numbers, curand_reference.py).
CURAND_EXAMPLE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <cuda.h>
#include <curand_kernel.h>

__global__ void setup_kernel_philox(curandStatePhilox4_32_10_t *state) {
  int id = threadIdx.x + blockIdx.x * blockDim.x;
  // Each thread gets the same seed, a different sequence number, no offset.
  curand_init(1234, id, 0, &state[id]);
}

__global__ void generate_kernel(curandStatePhilox4_32_10_t *state, int n, unsigned int *result) {
  int id = threadIdx.x + blockIdx.x * blockDim.x;
  int count = 0;
  unsigned int x;
  curandStatePhilox4_32_10_t localState = state[id];  // the state in fast memory for the loop
  for (int i = 0; i < n; i++) {
    x = curand(&localState);
    if (x & 1) count++;  // the low bit set
  }
  state[id] = localState;
  result[id] += count;
}

__global__ void generate_uniform_kernel(curandStatePhilox4_32_10_t *state, int n, unsigned int *result) {
  int id = threadIdx.x + blockIdx.x * blockDim.x;
  unsigned int count = 0;
  float x;
  curandStatePhilox4_32_10_t localState = state[id];
  for (int i = 0; i < n; i++) {
    x = curand_uniform(&localState);
    if (x > .5) count++;
  }
  state[id] = localState;
  result[id] += count;
}
"""


def philox_draws(seed, threads, draws):
    """curand() from curand_init(seed, id, 0) Philox states: the counter's upper half is the subsequence."""
    blocks = cdiv(draws, 4)
    ids = np.repeat(np.arange(threads, dtype=np.uint64), blocks)
    counter = np.tile(np.arange(blocks, dtype=np.uint64), threads)
    words = philox4x32_10([counter & np.uint64(0xFFFFFFFF), counter >> np.uint64(32), ids & np.uint64(0xFFFFFFFF), ids >> np.uint64(32)],
                          [np.full(ids.shape, seed & 0xFFFFFFFF, np.uint64), np.full(ids.shape, seed >> 32, np.uint64)])
    out = np.stack(words, axis=1).reshape(threads, blocks * 4)
    return out[:, :draws].astype(np.uint32)


def run_curand_example(ns):
    blocks, threads, draws = 64, 64, 256
    total = blocks * threads
    m = ns["curand_example"]
    state_bytes = 64  # sizeof(curandStatePhilox4_32_10_t)
    d_states = xcuda().zeros(total * state_bytes, np.uint8)
    states = xcuda().Pointer(d_states.ptr)
    m.setup_kernel_philox[blocks, threads](states)
    d_result = xcuda().zeros(total, np.uint32)
    for _ in range(2):  # two rounds continue the same streams
        m.generate_kernel[blocks, threads](states, draws, d_result)
    bits = philox_draws(1234, total, 2 * draws)
    found = [("odd draws per thread", d_result.copy_to_host(), (bits & 1).sum(axis=1).astype(np.uint32))]
    d_result = xcuda().zeros(total, np.uint32)
    m.generate_uniform_kernel[blocks, threads](states, draws, d_result)
    later = philox_draws(1234, total, 3 * draws)[:, 2 * draws:]
    uniform = later.astype(np.float32) * np.float32(2.0 ** -32) + np.float32(2.0 ** -33)
    found.append(("uniform draws > 0.5 per thread", d_result.copy_to_host(), (uniform > 0.5).sum(axis=1).astype(np.uint32)))
    return found


# ---- CuPy: examples/gemm (sgemm.cu) ---------------------------------------------------------------------
# Provenance: cupy/cupy examples/gemm/sgemm.cu and sgemm.py (MIT; the kernel after MAGMA, modified BSD):
# a column-major SGEMM of 64 x 64 blocks of C by 16 x 16 threads, BLK_K 4, A and B staged through shared
# memory with register prefetch, the tile sizes given as -D options (sgemm.py fills them into the source),
# C = A @ B on Fortran-order arrays. sgemm.py's m, n in 1000..1500 and k in 500..3000: here 192 x 128 x 180.
# m and n are multiples of BLK_M and BLK_N here: the kernel loads whole 64-wide tiles of A and B without a
# bounds check (its boundA and boundB are computed and never used), so for other m and n it reads past the
# ends of A and B; a GPU reads the neighbouring memory silently (the rows it feeds are never stored), the
# simulator stops at the first such read with the thread, the address and the cell line
# (test_programs_on_the_simulator.py shows it).
SGEMM = r"""
extern "C" __global__ void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  int idx = threadIdx.x;
  int idy = threadIdx.y;
  int idt = DIM_X * idy + idx;
  int idxA = idt % DIM_XA;
  int idyA = idt / DIM_XA;
  int idxB = idt % DIM_XB;
  int idyB = idt / DIM_XB;
  int blx = blockIdx.x;
  int bly = blockIdx.y;

  __shared__ float sA[BLK_K][BLK_M + 1];
  __shared__ float sB[BLK_N][BLK_K + 1];

  float rC[THR_N][THR_M];
  float rA[THR_M];
  float rB[THR_N];
  float ra[BLK_K / DIM_YA][BLK_M / DIM_XA];  // the next tiles, prefetched into registers
  float rb[BLK_N / DIM_YB][BLK_K / DIM_XB];

  const float *offs_dA = A + blx * BLK_M + idyA * M + idxA;
  const float *offs_dB = B + bly * BLK_N * K + idyB * K + idxB;
  int m, n, k, kk;

#pragma unroll
  for (n = 0; n < THR_N; n++)
#pragma unroll
    for (m = 0; m < THR_M; m++) rC[n][m] = 0;

#pragma unroll
  for (n = 0; n < BLK_K; n += DIM_YA)
#pragma unroll
    for (m = 0; m < BLK_M; m += DIM_XA) sA[n + idyA][m + idxA] = offs_dA[n * M + m];
#pragma unroll
  for (n = 0; n < BLK_N; n += DIM_YB)
#pragma unroll
    for (m = 0; m < BLK_K; m += DIM_XB) sB[n + idyB][m + idxB] = offs_dB[n * K + m];
  __syncthreads();

  for (kk = 0; kk < K - BLK_K; kk += BLK_K) {
    offs_dA += BLK_K * M;
    offs_dB += BLK_K;
#pragma unroll
    for (n = 0; n < BLK_K / DIM_YA; n++)
#pragma unroll
      for (m = 0; m < BLK_M / DIM_XA; m++) ra[n][m] = offs_dA[n * DIM_YA * M + m * DIM_XA];
#pragma unroll
    for (n = 0; n < BLK_N / DIM_YB; n++)
#pragma unroll
      for (m = 0; m < BLK_K / DIM_XB; m++) rb[n][m] = offs_dB[n * DIM_YB * K + m * DIM_XB];

#pragma unroll
    for (k = 0; k < BLK_K; k++) {
#pragma unroll
      for (m = 0; m < THR_M; m++) rA[m] = sA[k][m * DIM_X + idx];
#pragma unroll
      for (n = 0; n < THR_N; n++) rB[n] = sB[n * DIM_Y + idy][k];
#pragma unroll
      for (n = 0; n < THR_N; n++)
#pragma unroll
        for (m = 0; m < THR_M; m++) rC[n][m] += rA[m] * rB[n];
    }
    __syncthreads();
#pragma unroll
    for (n = 0; n < BLK_K / DIM_YA; n++)
#pragma unroll
      for (m = 0; m < BLK_M / DIM_XA; m++) sA[n * DIM_YA + idyA][m * DIM_XA + idxA] = ra[n][m];
#pragma unroll
    for (n = 0; n < BLK_N / DIM_YB; n++)
#pragma unroll
      for (m = 0; m < BLK_K / DIM_XB; m++) sB[n * DIM_YB + idyB][m * DIM_XB + idxB] = rb[n][m];
    __syncthreads();
  }

  // The last full or partial block of K: out-of-range values stay in registers and are never stored.
  kk = K - kk;
#pragma unroll
  for (k = 0; k < kk; k++) {
#pragma unroll
    for (m = 0; m < THR_M; m++) rA[m] = sA[k][m * DIM_X + idx];
#pragma unroll
    for (n = 0; n < THR_N; n++) rB[n] = sB[n * DIM_Y + idy][k];
#pragma unroll
    for (n = 0; n < THR_N; n++)
#pragma unroll
      for (m = 0; m < THR_M; m++) rC[n][m] += rA[m] * rB[n];
  }

#pragma unroll
  for (n = 0; n < THR_N; n++) {
    int coord_dCn = bly * BLK_N + n * DIM_Y + idy;
#pragma unroll
    for (m = 0; m < THR_M; m++) {
      int coord_dCm = blx * BLK_M + m * DIM_X + idx;
      if (coord_dCm < M && coord_dCn < N) C[coord_dCn * M + coord_dCm] = rC[n][m];
    }
  }
}
"""

SGEMM_CONFIG = {"DIM_X": 16, "DIM_Y": 16, "BLK_M": 64, "BLK_N": 64, "BLK_K": 4, "DIM_XA": 64, "DIM_YA": 4,
                "DIM_XB": 4, "DIM_YB": 64, "THR_M": 4, "THR_N": 4}


def run_sgemm(ns):
    m, n, k = 192, 128, 180
    rng = np.random.default_rng(23)
    A = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, (k, n)).astype(np.float32)
    # Fortran order: the kernel reads column-major A (m x k) and B (k x n) and writes column-major C.
    d_A, d_B = xcuda().to_device(np.ascontiguousarray(A.T)), xcuda().to_device(np.ascontiguousarray(B.T))
    d_C = xcuda().zeros((n, m), np.float32)
    grid = (cdiv(m, 64), cdiv(n, 64))
    ns["sgemm"][grid, (16, 16)](m, n, k, d_A, d_B, d_C)
    return [("C = A @ B", d_C.copy_to_host().T, A.astype(np.float64) @ B.astype(np.float64))]


# ---- CuPy: examples/custom_struct/complex_struct.py ------------------------------------------------------
# Provenance: cupy/cupy examples/custom_struct/complex_struct.py (MIT): a kernel measures the struct's layout
# on the device (sizeof and member offsets from a null pointer), the host builds a numpy dtype with those
# offsets, and test_kernel sums the members of the struct passed by value: out[i] = i * 55.
COMPLEX_STRUCT = r"""
struct complex_struct {
  int4 a;
  char b;
  double c[2];
  short1 d;
  unsigned long long int e[3];
};

extern "C" __global__ void get_struct_layout(unsigned long long *itemsize, unsigned long long *sizes,
                                             unsigned long long *offsets) {
  const complex_struct *ptr = nullptr;
  itemsize[0] = sizeof(complex_struct);
  sizes[0] = sizeof(ptr->a);
  sizes[1] = sizeof(ptr->b);
  sizes[2] = sizeof(ptr->c);
  sizes[3] = sizeof(ptr->d);
  sizes[4] = sizeof(ptr->e);
  offsets[0] = (unsigned long long)&ptr->a;  // a member's address from a null pointer: its offset
  offsets[1] = (unsigned long long)&ptr->b;
  offsets[2] = (unsigned long long)&ptr->c;
  offsets[3] = (unsigned long long)&ptr->d;
  offsets[4] = (unsigned long long)&ptr->e;
}

extern "C" __global__ void test_kernel(const complex_struct s, double *out) {
  int i = threadIdx.x;
  double sum = 0.0;
  sum += s.a.x + s.a.y + s.a.z + s.a.w;
  sum += s.b;
  sum += s.c[0] + s.c[1];
  sum += s.d.x;
  sum += s.e[0] + s.e[1] + s.e[2];
  out[i] = i * sum;
}
"""


def make_packed(basetype, count, itemsize):
    return np.dtype(dict(names=list("xyzw")[:count], formats=[basetype] * count, itemsize=int(itemsize)))


def run_complex_struct(ns):
    itemsize, sizes, offsets = xcuda().zeros(1, np.uint64), xcuda().zeros(5, np.uint64), xcuda().zeros(5, np.uint64)
    ns["get_struct_layout"][1, 1](itemsize, sizes, offsets)
    itemsize, sizes, offsets = itemsize.copy_to_host(), sizes.copy_to_host(), offsets.copy_to_host()
    formats = [make_packed(np.int32, 4, sizes[0]), make_packed(np.int8, 1, sizes[1]), make_packed(np.float64, 2, sizes[2]),
               make_packed(np.int16, 1, sizes[3]), make_packed(np.uint64, 3, sizes[4])]
    complex_struct = np.dtype(dict(names=list("abcde"), formats=formats, offsets=[int(o) for o in offsets],
                                   itemsize=int(itemsize[0])))
    s = np.zeros(1, dtype=complex_struct)
    s["a"] = np.arange(0, 4).astype(np.int32).view(formats[0])
    s["b"] = np.arange(4, 5).astype(np.int8).view(formats[1])
    s["c"] = np.arange(5, 7).astype(np.float64).view(formats[2])
    s["d"] = np.arange(7, 8).astype(np.int16).view(formats[3])
    s["e"] = np.arange(8, 11).astype(np.uint64).view(formats[4])
    count = 8
    out = xcuda().zeros(count, np.float64)
    ns["test_kernel"][1, count](s[0], out)
    xcuda_layout = ns["test_kernel"].parameters[0]["dtype"]
    return [("the device's layout is the signature's",
             np.array([xcuda_layout.itemsize] + [xcuda_layout.fields[f][1] for f in "abcde"], np.uint64),
             np.concatenate([itemsize, offsets])),
            ("out", out.copy_to_host(), np.arange(count) * 55.0)]


# ---- PyCUDA: examples/demo_struct.py ---------------------------------------------------------------------
# Provenance: inducer/pycuda examples/demo_struct.py (MIT): an array of two DoubleOperation structs
# {int datalen, __padding; float *ptr;} built by hand in device memory (the length at offset 0, the data's
# address at offset 8), double_array launched on the array (grid 2), then on the second struct alone
# through its raw address (numpy.intp, as PyCUDA passes it), then again on both.
DEMO_STRUCT = r"""
struct DoubleOperation {
  int datalen, __padding;  // so 64-bit ptrs can be aligned
  float *ptr;
};

__global__ void double_array(DoubleOperation *a) {
  a = a + blockIdx.x;
  for (int idx = threadIdx.x; idx < a->datalen; idx += blockDim.x) {
    float *a_ptr = a->ptr;
    a_ptr[idx] *= 2;
  }
}
"""


def run_demo_struct(ns):
    mem_size = 8 + np.intp(0).nbytes
    struct_arr = xcuda().zeros(2 * mem_size, np.uint8)  # cuda.mem_alloc(2 * DoubleOpStruct.mem_size)
    arrays = [np.array([1, 2, 3], dtype=np.float32), np.array([0, 4], dtype=np.float32)]
    data = [xcuda().to_device(a) for a in arrays]
    for k, (array, device) in enumerate(zip(arrays, data)):  # DoubleOpStruct.__init__'s two memcpy_htod
        struct_arr[k * mem_size: k * mem_size + 4].copy_from(np.frombuffer(np.int32(array.size).tobytes(), np.uint8))
        struct_arr[k * mem_size + 8: (k + 1) * mem_size].copy_from(np.frombuffer(np.intp(device.ptr).tobytes(), np.uint8))
    do2_ptr = struct_arr.ptr + mem_size
    func = ns["double_array"]
    found = []
    func[2, 32](np.uintp(struct_arr.ptr))
    found += [("doubled arrays, first", data[0].copy_to_host(), arrays[0] * 2),
              ("doubled arrays, second", data[1].copy_to_host(), arrays[1] * 2)]
    func[1, 32](np.uintp(do2_ptr))
    found += [("doubled second only, first", data[0].copy_to_host(), arrays[0] * 2),
              ("doubled second only, second", data[1].copy_to_host(), arrays[1] * 4)]
    func[2, 32](xcuda().Pointer(struct_arr.ptr))  # prepared_call((2, 1), block, struct_arr)
    found += [("doubled again, first", data[0].copy_to_host(), arrays[0] * 4),
              ("doubled again, second", data[1].copy_to_host(), arrays[1] * 8)]
    return found


# ---- PyCUDA: examples/hello_gpu.py -----------------------------------------------------------------------
# Provenance: inducer/pycuda examples/hello_gpu.py (MIT): multiply_them on 400 random floats, one block of
# 400 threads, with drv.Out / drv.In (xcuda.Out / xcuda.In here); as published.
HELLO_GPU = r"""
__global__ void multiply_them(float *dest, float *a, float *b) {
  const int i = threadIdx.x;
  dest[i] = a[i] * b[i];
}
"""


def run_hello_gpu(ns):
    rng = np.random.default_rng(24)
    a = rng.standard_normal(400).astype(np.float32)
    b = rng.standard_normal(400).astype(np.float32)
    dest = np.zeros_like(a)
    ns["multiply_them"][1, 400](xcuda().Out(dest), xcuda().In(a), xcuda().In(b))
    return [("dest - a * b", dest - a * b, np.zeros_like(a))]


# ---- PyCUDA: examples/demo.py -------------------------------------------------------------------------
# Provenance: inducer/pycuda examples/demo.py (MIT): doublify on a 4 x 4 float32 array with a 4 x 4 block,
# through mem_alloc + memcpy_htod and then through a GPUArray (a DeviceArray here); as published.
DEMO = r"""
__global__ void doublify(float *a) {
  int idx = threadIdx.x + threadIdx.y * 4;
  a[idx] *= 2;
}
"""


def run_demo(ns):
    a = np.random.default_rng(25).standard_normal((4, 4)).astype(np.float32)
    a_gpu = xcuda().empty(a.shape, np.float32)  # cuda.mem_alloc(a.nbytes)
    a_gpu.copy_from(a)                           # cuda.memcpy_htod(a_gpu, a)
    ns["doublify"][1, (4, 4)](a_gpu)
    a_doubled = a_gpu.copy_to_host()
    b_gpu = xcuda().to_device(a)                 # gpuarray.to_gpu(a)
    ns["doublify"][1, (4, 4)](b_gpu)
    return [("doublify", a_doubled, 2 * a), ("doublify on a GPUArray", b_gpu.copy_to_host(), 2 * a)]


# ---- GPU MODE lecture 3: rgb_to_grayscale ----------------------------------------------------------------
# Provenance: gpu-mode/lectures lecture_003/pmpp.ipynb (Apache-2.0): rgb_to_grayscale_kernel in its 1-D
# form (256 threads a block over h * w) and its 2-D form (16 x 16 blocks), on a channels-first uint8 image
# (the lecture's puppy.jpg, 1066 x 1600: here a random image of 333 x 517, both not multiples of the blocks),
# the torch::Tensor wrappers becoming the host code; cdiv as the lecture's utils.py declares it.
GRAYSCALE = r"""
#include <stdio.h>

__host__ __device__ inline unsigned int cdiv(unsigned int a, unsigned int b) { return (a + b - 1) / b; }

__global__ void rgb_to_grayscale_kernel(unsigned char *x, unsigned char *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.2989 * x[i] + 0.5870 * x[i + n] + 0.1140 * x[i + 2 * n];
}

__global__ void rgb_to_grayscale_kernel_2d(unsigned char *x, unsigned char *out, int w, int h) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (c < w && r < h) {
    int i = r * w + c;
    int n = h * w;
    out[i] = 0.2989 * x[i] + 0.5870 * x[i + n] + 0.1140 * x[i + 2 * n];
  }
}
"""


def fma(a, b, c):
    """a * b + c rounded once, as fma.rn.f64 does (Fraction's float() rounds to nearest even)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def grayscale_reference(img):
    """The kernel's double arithmetic as NVRTC contracts it: 0.5870 * g, then two fused multiply-adds
    (fma.rn.f64), truncated to unsigned char. numpy has no fma: the sums are computed unfused and the
    few within 1e-9 of an integer, where one rounding more or less could change the truncation, again
    with exact fmas."""
    r, g, b = (c.astype(np.float64).ravel() for c in img)
    gray = 0.2989 * r + 0.5870 * g + 0.1140 * b
    near = np.flatnonzero(np.abs(gray - np.round(gray)) < 1e-9)
    for i in near:
        gray[i] = fma(b[i], 0.1140, fma(r[i], 0.2989, g[i] * 0.5870))
    return np.trunc(gray).astype(np.uint8).reshape(img.shape[1:])


def run_grayscale(ns):
    h, w = 333, 517
    img = np.random.default_rng(26).integers(0, 256, (3, h, w)).astype(np.uint8)
    d_img = xcuda().to_device(img)
    out = xcuda().empty((h, w), np.uint8)
    ns["rgb_to_grayscale_kernel"][cdiv(w * h, 256), 256](d_img, out, w * h)
    found = [("1-D", out.copy_to_host(), grayscale_reference(img))]
    out2 = xcuda().empty((h, w), np.uint8)
    ns["rgb_to_grayscale_kernel_2d"][(cdiv(w, 16), cdiv(h, 16)), (16, 16)](d_img, out2, w, h)
    found.append(("2-D", out2.copy_to_host(), grayscale_reference(img)))
    return found


# ---- GPU MODE lecture 5: matmul -------------------------------------------------------------------------
# Provenance: gpu-mode/lectures lecture_005/matmul_l5.ipynb (Apache-2.0): matmul_k (one thread per output),
# the tiled matmul_k with tw x tw tiles in dynamic shared memory (matmul_dyn launches it with TW = 16 and
# 2 * TW * TW floats), and matmul_ks with constexpr tw = 16 and static tiles, on the lecture's
# m1 = torch.rand(5120, 256) and m2 = torch.rand(256, 5120). In the list the three kernels run on the
# lecture's m1[:160] and m2[:, :160] slices (as the lecture's m1s/m2s check its Python kernels); the full
# 5120 x 256 by 256 x 5120 runs in tests/simulator/test_programs_on_the_simulator.py (test_the_gpu_mode_
# matmul_runs_at_full_size), which says how long it takes.
MATMUL_L5 = r"""
#include <stdio.h>

__host__ __device__ inline unsigned int cdiv(unsigned int a, unsigned int b) { return (a + b - 1) / b; }

__global__ void matmul_k(float *m, float *n, float *out, int h, int w, int k) {
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= h || c >= w) return;
  float o = 0;
  for (int i = 0; i < k; ++i) o += m[r * k + i] * n[i * w + c];
  out[r * w + c] = o;
}

__global__ void matmul_tiled_k(float *m, float *n, float *out, int h, int w, int k, int tw) {
  int tc = threadIdx.x, tr = threadIdx.y;
  int r = blockIdx.y * blockDim.y + tr, c = blockIdx.x * blockDim.x + tc;
  extern __shared__ float ms[];
  float *ns = &ms[tw * tw];  // the second tile after the first
  float p = 0.0f;
  for (int ph = 0; ph < cdiv(k, tw); ++ph) {
    int idx = ph * tw;
    ms[tr * tw + tc] = r < h && idx + tc < k ? m[tc + idx + r * k] : 0.0f;
    ns[tr * tw + tc] = c < w && idx + tr < k ? n[(tr + idx) * w + c] : 0.0f;
    __syncthreads();
    for (int i = 0; i < tw; ++i) p += ms[tr * tw + i] * ns[tw * i + tc];
    __syncthreads();
  }
  if (r < h && c < w) out[r * w + c] = p;
}

constexpr int tw = 16;
__global__ void matmul_ks(float *m, float *n, float *out, int h, int w, int k) {
  __shared__ float ms[tw][tw], ns[tw][tw];
  int tc = threadIdx.x, tr = threadIdx.y;
  int r = blockIdx.y * blockDim.y + tr, c = blockIdx.x * blockDim.x + tc;
  float p = 0.0f;
  for (int ph = 0; ph < cdiv(k, tw); ++ph) {
    int idx = ph * tw;
    ms[tr][tc] = r < h && idx + tc < k ? m[tc + idx + r * k] : 0.0f;
    ns[tr][tc] = c < w && idx + tr < k ? n[(tr + idx) * w + c] : 0.0f;
    __syncthreads();
    for (int i = 0; i < tw; ++i) p += ms[tr][i] * ns[i][tc];
    __syncthreads();
  }
  if (r < h && c < w) out[r * w + c] = p;
}
"""


def lecture5_inputs():
    rng = np.random.default_rng(42)  # torch.manual_seed(42); torch.rand
    return rng.random((5120, 256), dtype=np.float32), rng.random((256, 5120), dtype=np.float32)


def matmul(ns, kernel, m1, m2):
    """The lecture's torch::Tensor wrappers (matmul, matmul_dyn, matmul_static) as host code."""
    h, k = m1.shape
    w = m2.shape[1]
    d_m1, d_m2 = xcuda().to_device(np.ascontiguousarray(m1)), xcuda().to_device(np.ascontiguousarray(m2))
    output = xcuda().zeros((h, w), np.float32)
    blocks = (cdiv(w, 16), cdiv(h, 16))
    if kernel == "matmul_tiled_k":
        ns[kernel][blocks, (16, 16), None, 16 * 16 * 2 * 4](d_m1, d_m2, output, h, w, k, 16)
    else:
        ns[kernel][blocks, (16, 16)](d_m1, d_m2, output, h, w, k)
    return output.copy_to_host()


def run_matmul_l5(ns):
    m1, m2 = lecture5_inputs()
    m1s, m2s = m1[:160], m2[:, :160]
    expected = m1s.astype(np.float64) @ m2s.astype(np.float64)
    return [(kernel, matmul(ns, kernel, m1s, m2s), expected) for kernel in ("matmul_k", "matmul_tiled_k", "matmul_ks")]


OTHER_FAMILIES = [
    Program("mini_nbody_orig", [("", NBODY_ORIG)], run_nbody_orig, "harrism/mini-nbody cuda/nbody-orig.cu (Apache-2.0)",
            "mini-nbody", tolerance={"rtol": 1e-3, "atol": 1e-3}, shrunk="1024 bodies, 3 steps (30,000 and 10 there)"),
    Program("mini_nbody_block", [("", NBODY_BLOCK)], run_nbody_block, "harrism/mini-nbody cuda/nbody-block.cu (Apache-2.0)",
            "mini-nbody", tolerance={"rtol": 1e-3, "atol": 1e-3}, shrunk="1024 bodies, 3 steps (30,000 and 10 there)"),
    Program("curand_device_api_example", [("--name curand_example", CURAND_EXAMPLE)], run_curand_example,
            "the cuRAND documentation's device API example (docs.nvidia.com/cuda/curand), Philox4_32_10",
            "cuRAND Monte Carlo", shrunk="256 draws a thread (10,000 there)", opaque=("curandStatePhilox4_32_10_t",)),
    Program("cupy_examples_gemm_sgemm", [(" ".join(f"-D{k}={v}" for k, v in SGEMM_CONFIG.items()), SGEMM)], run_sgemm,
            "cupy/cupy examples/gemm/sgemm.cu and sgemm.py (MIT; the kernel after MAGMA, modified BSD)", "CuPy",
            tolerance={"rtol": 1e-4, "atol": 1e-5}, shrunk="192 x 180 times 180 x 128 (1000-1500 and 500-3000 there)"),
    Program("cupy_examples_custom_struct", [("", COMPLEX_STRUCT)], run_complex_struct,
            "cupy/cupy examples/custom_struct/complex_struct.py (MIT)", "CuPy"),
    Program("pycuda_demo_struct", [("", DEMO_STRUCT)], run_demo_struct, "inducer/pycuda examples/demo_struct.py (MIT)",
            "PyCUDA"),
    Program("pycuda_hello_gpu", [("", HELLO_GPU)], run_hello_gpu, "inducer/pycuda examples/hello_gpu.py (MIT)", "PyCUDA"),
    Program("pycuda_demo", [("", DEMO)], run_demo, "inducer/pycuda examples/demo.py (MIT)", "PyCUDA"),
    Program("gpu_mode_lecture3_grayscale", [("", GRAYSCALE)], run_grayscale,
            "gpu-mode/lectures lecture_003/pmpp.ipynb (Apache-2.0)", "GPU MODE", shrunk="a 333 x 517 image (1066 x 1600 there)"),
    Program("gpu_mode_lecture5_matmul", [("", MATMUL_L5)], run_matmul_l5,
            "gpu-mode/lectures lecture_005/matmul_l5.ipynb (Apache-2.0)", "GPU MODE", tolerance={"rtol": 1e-5},
            shrunk="m1[:160] @ m2[:, :160] in the list; the full 5120 x 256 @ 256 x 5120 in its own test"),
]
