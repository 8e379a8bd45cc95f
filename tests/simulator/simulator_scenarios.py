"""Scenarios of xcuda on the PTX simulator (XCUDA_DEVICE=simulator), each run in a process of its own.

tests/test_simulator.py runs each one with XCUDA_DEVICE=simulator, XCUDA_LIBCUDA unset and PYTHONPATH at
the build's python folder (where libxcuda-sim.so sits beside the module):

    python3 tests/simulator_scenarios.py NAME     # exits 0 and prints "scenario held: NAME" when it holds
"""
import os
import sys
from pathlib import Path

import numpy as np

import xcuda

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
"""

BLOCK_SUM = r"""
extern "C" __global__ void block_sum(const float* in, float* out, int n)
{
    __shared__ float partial[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    partial[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1)
    {
        if (t < k) partial[t] += partial[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}
"""

OVERRUN = r"""
extern "C" __global__ void overrun(float* out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i <= n) out[i] = 1.0f; }
extern "C" __global__ void misaligned(char* bytes) { *(int*)(bytes + 1 + threadIdx.x * 4) = 7; }
"""

SLEEPY = r"""
extern "C" __global__ void sleepy(int* out) { asm volatile("pmevent 1;"); out[0] = 1; }
extern "C" __global__ void fill(int* out, int v) { out[threadIdx.x] = v; }
"""

HEAP = r"""
extern "C" __global__ void weigh(const float* x, float* out, int n, int k)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float* window = (float*)malloc(k * sizeof(float));
    if (!window) { out[t] = -1.0f; return; }
    for (int j = 0; j < k; ++j) window[j] = x[(t + j) % n];
    float s = 0.0f;
    for (int j = 0; j < k; ++j) s += window[j] * (j + 1);
    out[t] = s;
    free(window);
}
extern "C" __global__ void hoard(unsigned long long* got, int bytes) { got[threadIdx.x] = (unsigned long long)malloc(bytes); }
extern "C" __global__ void overrun(int k) { float* w = (float*)malloc(k * sizeof(float)); w[k] = 1.0f; }
"""

GRID_PHASES = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// Two phases: each thread writes, the grid syncs, each reads its neighbours (written by other blocks).
extern "C" __global__ void phases(const float* in, float* tmp, float* out, int n)
{
    cg::grid_group grid = cg::this_grid();
    int i = grid.thread_rank();
    if (i < n) tmp[i] = in[i] * 2.0f;
    grid.sync();
    if (i < n) out[i] = tmp[(i + 1) % n] - tmp[(i + n - 1) % n];
}
"""


def saxpy():
    info = str(xcuda.info())
    assert "xcuda PTX simulator" in info, info
    m = xcuda.compile(SAXPY, name="sim_saxpy")
    n = 2 ** 20
    rng = np.random.default_rng(7)
    a = np.float32(2.0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    out = np.zeros_like(x)
    m.saxpy[n // 256, 256](a, x, y, out, n)
    # The simulator computes fma (one rounding) as the PTX says; numpy rounds twice: allow one ulp.
    assert np.allclose(out, a * x + y, rtol=1e-6, atol=0), np.max(np.abs(out - (a * x + y)))
    exact = (np.float64(a) * x.astype(np.float64) + y).astype(np.float32)  # fma, rounded once
    assert np.array_equal(out, exact), np.count_nonzero(out != exact)


def block_sum():
    m = xcuda.compile(BLOCK_SUM, name="sim_block_sum")
    n, block = 100000, 256
    grid = (n + block - 1) // block
    values = (np.arange(n) % 13).astype(np.float32)  # small integers: every order of additions is exact
    out = np.zeros(grid, dtype=np.float32)
    m.block_sum[grid, block](values, out, n)
    padded = np.zeros(grid * block, dtype=np.float32)
    padded[:n] = values
    expected = padded.reshape(grid, block).sum(axis=1)
    assert np.array_equal(out, expected), (out[:4], expected[:4])


def out_of_bounds():
    m = xcuda.compile(OVERRUN, name="sim_overrun")
    kept = xcuda.to_device(np.arange(64, dtype=np.float32))  # made before the fault, must survive it
    out = np.zeros(100, dtype=np.float32)
    try:
        m.overrun[4, 32](out, 100)
    except xcuda.KernelFault as fault:
        raise AssertionError(f"a simulator fault declared the session lost: {fault}")
    except xcuda.CudaError as fault:
        message = str(fault)
    else:
        raise AssertionError("the out-of-bounds write raised nothing")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message, message
    assert "thread (4,0,0) of block (3,0,0)" in message, message
    assert "writes 4 bytes at global address 0x" in message and "bytes past the end of device allocation" in message, message
    assert "(the array of the kernel's parameter 0, overrun_param_0)" in message, message  # out
    # The line of out[i] = 1.0f in the source as compile() had it (OVERRUN's first line is empty), never
    # the path PTX's .file names (the working folder and "cell", which does not exist).
    assert "the source, line 3" in message and "/cell" not in message, message
    assert "not sticky" in message, message
    # Not sticky on the simulator: the session goes on, its device arrays intact, the next launch runs.
    xcuda.synchronize()
    assert np.array_equal(kept.copy_to_host(), np.arange(64, dtype=np.float32))
    m.overrun[3, 32](out, 95)  # in bounds: i <= 95 < 100
    assert (out[:96] == 1).all() and (out[96:] == 0).all(), out
    again = xcuda.to_device(np.zeros(100, dtype=np.float32))
    m.overrun[1, 32](again, 10)
    assert (again.copy_to_host()[:11] == 1).all()
    # A misaligned access: the same, and the session goes on again.
    try:
        m.misaligned[1, 4](xcuda.zeros(64, np.int8))
    except xcuda.KernelFault as fault:
        raise AssertionError(f"a simulator fault declared the session lost: {fault}")
    except xcuda.CudaError as fault:
        message = str(fault)
    else:
        raise AssertionError("the misaligned write raised nothing")
    assert "thread (0,0,0) of block (0,0,0): writes 4 bytes at global address 0x" in message, message
    assert "which is not aligned to 4 bytes" in message and "the source, line 4" in message, message
    m.overrun[1, 32](again, 20)
    assert (again.copy_to_host()[:21] == 1).all() and np.array_equal(kept.copy_to_host(), np.arange(64, dtype=np.float32))
    print("survived:", np.arange(3).sum())


def unsupported_instruction():
    m = xcuda.compile(SLEEPY, name="sim_sleepy")
    out = np.zeros(32, dtype=np.int32)
    try:
        m.sleepy[1, 1](out)
        xcuda.synchronize()
    except xcuda.CudaError as error:
        message = str(error)
    else:
        raise AssertionError("an instruction the simulator does not implement ran")
    assert "the instruction 'pmevent' is not implemented by the simulator" in message, message
    # Not a fault: the session goes on.
    m.fill[1, 32](out, 5)
    assert (out == 5).all(), out


PRINTF = r"""
extern "C" __global__ void hello(const int* x) { printf("hello from thread %d of block %d: %d\n", threadIdx.x, blockIdx.x, x[threadIdx.x]); }
"""


def device_printf():
    m = xcuda.compile(PRINTF, name="sim_printf")
    m.hello[2, 2](np.array([10, 20], dtype=np.int32))
    xcuda.synchronize()
    print("after the launch")


CLASSICS = r"""
#define T 16
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int n) {
  __shared__ float As[T][T], Bs[T][T];
  int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x; float acc = 0;
  for (int k0 = 0; k0 < n; k0 += T) {
    As[threadIdx.y][threadIdx.x] = (r < n && k0 + threadIdx.x < n) ? A[r * n + k0 + threadIdx.x] : 0;
    Bs[threadIdx.y][threadIdx.x] = (c < n && k0 + threadIdx.y < n) ? B[(k0 + threadIdx.y) * n + c] : 0;
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (r < n && c < n) C[r * n + c] = acc;
}
extern "C" __global__ void transpose(const double* in, double* out, int w, int h) {
  __shared__ double tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}
extern "C" __global__ void hist(const unsigned char* data, unsigned* bins, int n) {
  __shared__ unsigned local[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomicAdd(&local[data[i]], 1);
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += blockDim.x) atomicAdd(&bins[i], local[i]);
}
extern "C" __global__ void warpsum(const float* in, float* out, int n) {
  __shared__ float w[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = i < n ? in[i] : 0;
  for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) { v = threadIdx.x < blockDim.x / 32 ? w[threadIdx.x] : 0;
    for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) atomicAdd(out, v); }
}
"""


def classic_kernels():
    """A tiled matrix multiply (2-D blocks, a barrier in a loop), a transpose through a padded tile, a
    shared-memory histogram of atomics, and a two-level warp-shuffle sum: each against numpy."""
    m = xcuda.compile(CLASSICS, name="sim_classics")
    rng = np.random.default_rng(3)
    n = 70  # not a multiple of the 16x16 tile
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c = np.zeros_like(a)
    m.matmul[(5, 5), (16, 16)](a, b, c, n)
    assert np.allclose(c, a @ b, rtol=1e-5, atol=1e-5), np.max(np.abs(c - a @ b))
    w, h = 100, 70
    x, y = rng.random((h, w)), np.zeros((w, h))
    m.transpose[(4, 3), (32, 8)](x, y, w, h)
    assert np.array_equal(y, x.T)
    data = rng.integers(0, 256, 100000).astype(np.uint8)
    bins = np.zeros(256, np.uint32)
    m.hist[16, 256](data, bins, data.size)
    assert np.array_equal(bins, np.bincount(data, minlength=256))
    ones, total = np.ones(100000, np.float32), np.zeros(1, np.float32)
    m.warpsum[(100000 + 255) // 256, 256](ones, total, ones.size)
    assert total[0] == 100000, total


RACY = r"""
extern "C" __global__ void racy(int* out, int sync)
{
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    if (sync) __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
}
"""


def shared_race():
    """Racecheck's rule: a write and a read of one shared word by two warps with no barrier between."""
    import os
    m = xcuda.compile(RACY, name="sim_racy")
    out = np.full(64, -1, dtype=np.int32)
    try:
        m.racy[1, 64](out, 0)
    except xcuda.KernelFault as fault:
        raise AssertionError(f"a race declared the session lost: {fault}")
    except xcuda.CudaError as fault:
        message = str(fault)
    else:
        raise AssertionError("the race was not reported")
    assert "CUDA_ERROR_LAUNCH_FAILED" in message, message
    assert "a shared-memory race in block (0,0,0) on 'racy::s' (byte 128 of 256)" in message, message
    assert "thread (32,0,0) writes it at 'st.shared" in message and "the source, line 5" in message, message
    assert "thread (31,0,0) read it at 'ld.shared" in message and "the source, line 7" in message, message
    # With the barrier the same session runs it correctly; with the check off the racy one runs too.
    m.racy[1, 64](out, 1)
    assert np.array_equal(out, np.arange(63, -1, -1)), out
    # With the race check off, the shared initcheck (asked for) still sees thread 0 read s[63], not yet written.
    os.environ["XCUDA_SIM_RACECHECK"] = "0"
    os.environ["XCUDA_SIM_INITCHECK"] = "shared"
    message = launch_error(lambda: m.racy[1, 64](out, 0))
    assert "thread (0,0,0) of block (0,0,0): a read of uninitialised shared memory" in message, message
    os.environ["XCUDA_SIM_INITCHECK"] = "0"
    out[:] = -1
    m.racy[1, 64](out, 0)
    assert out[0] == 0 and out[32] == 31, out


def launch_error(launch):
    """The message of the CudaError a launch raises (a KernelFault, declaring the session lost, fails)."""
    try:
        launch()
    except xcuda.KernelFault as fault:
        raise AssertionError(f"a check declared the session lost: {fault}")
    except xcuda.CudaError as fault:
        assert "CUDA_ERROR_LAUNCH_FAILED" in str(fault), fault
        return str(fault)
    raise AssertionError("the launch was not refused")


PARTIAL_FILL = r"""
extern "C" __global__ void partial_fill(int* out, int n)
{
    __shared__ int s[64];
    if (threadIdx.x < n) s[threadIdx.x] = threadIdx.x * 2;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
extern "C" __global__ void add_one(const int* in, int* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] + 1;
}
"""


def uninitialised_shared():
    """XCUDA_SIM_INITCHECK=shared: a read of shared memory no thread of the block wrote names the thread, the variable
    and the line; the session goes on. Off (the default), the read sees the simulator's zeros."""
    m = xcuda.compile(PARTIAL_FILL, name="sim_partial_fill")
    out = np.full(64, -1, dtype=np.int32)
    m.partial_fill[1, 64](out, 40)
    assert out[39] == 78 and out[40] == 0, out
    os.environ["XCUDA_SIM_INITCHECK"] = "shared"
    message = launch_error(lambda: m.partial_fill[1, 64](out, 40))
    assert "kernel 'partial_fill', thread (40,0,0) of block (0,0,0): a read of uninitialised shared memory" in message, message
    assert "'partial_fill::s' (byte 160 of 256)" in message and "the source, line 7" in message, message
    m.partial_fill[1, 64](out, 64)
    assert np.array_equal(out, 2 * np.arange(64)), out
    os.environ["XCUDA_SIM_INITCHECK"] = "0"
    m.partial_fill[1, 64](out, 40)
    assert out[39] == 78 and out[40] == 0, out


def uninitialised_global():
    """XCUDA_SIM_INITCHECK=global: a kernel's read of a device array nothing wrote names the thread, the byte, the
    argument and the line; a copy, a memset or a kernel's store makes it written. Off (the default), nothing is said."""
    m = xcuda.compile(PARTIAL_FILL, name="sim_uninitialised_global")
    fresh = xcuda.empty(64, dtype=np.int32)
    out = xcuda.empty(64, dtype=np.int32)
    m.add_one[2, 32](fresh, out)  # the check is off: the launch runs on whatever the allocation holds
    os.environ["XCUDA_SIM_INITCHECK"] = "global"
    fresh = xcuda.empty(64, dtype=np.int32)
    out = xcuda.empty(64, dtype=np.int32)
    message = launch_error(lambda: m.add_one[2, 32](fresh, out))
    assert "kernel 'add_one', thread (0,0,0) of block (0,0,0): a read of uninitialised global memory" in message, message
    assert "(the array of the kernel's parameter 0, add_one_param_0), has never been written" in message, message
    assert "the source, line 12" in message, message
    fresh.copy_from(np.arange(64, dtype=np.int32))
    m.add_one[2, 32](fresh, out)  # out was never written either: the kernel only stores to it
    again = xcuda.empty(64, dtype=np.int32)
    m.add_one[2, 32](out, again)  # out was written by the kernel's stores
    assert np.array_equal(again.copy_to_host(), np.arange(64) + 2), again.copy_to_host()
    zeroed = xcuda.zeros(64, dtype=np.int32)
    m.add_one[2, 32](zeroed, out)
    assert np.array_equal(out.copy_to_host(), np.ones(64)), out.copy_to_host()


# Shared with the C++ test of the check (test_simulator_checks.cpp).
WARP_SUM = (Path(__file__).resolve().parent.parent / "cpp" / "fixtures" / "warp_sum.cu").read_text()


def warp_race():
    """XCUDA_SIM_CHECKS=warp-race: the warp-synchronous sum without __syncwarp() is a race between lanes of one warp,
    naming both threads and lines; with __syncwarp() it runs. Off (the default), lockstep gives the pre-Volta sum."""
    m = xcuda.compile(WARP_SUM, name="sim_warp_sum")
    values = np.arange(32, dtype=np.int32)
    out = np.zeros(1, np.int32)
    m.warp_sum[1, 32](values, out, 0)
    assert out[0] == values.sum(), out
    os.environ["XCUDA_SIM_CHECKS"] = "warp-race"
    message = launch_error(lambda: m.warp_sum[1, 32](values, out, 0))
    assert "a shared-memory race between lanes of one warp in block (0,0,0), warp 0" in message, message
    assert "thread (0,0,0) reads it at 'ld.shared" in message and "the source, line 14" in message, message
    assert "thread (16,0,0) wrote it before at 'st.shared" in message and "the source, line 9" in message, message
    out[:] = 0
    m.warp_sum[1, 32](values, out, 1)
    assert out[0] == values.sum(), out


def timing_says_simulated():
    m = xcuda.compile(SLEEPY, name="sim_timing")
    out = np.zeros(32, dtype=np.int32)
    timing = m.fill[1, 32].time(out, 5, repeat=3, warmup=1)
    text = repr(timing)
    assert "simulated" in text and "over 3 launches" in text, text
    print(text)


TRACED = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""


def trace_one_thread():
    """xcuda.trace: the instructions of one thread, in order, with its register writes and cell lines."""
    m = xcuda.compile(TRACED, name="sim_traced")
    x, y = np.arange(8, dtype=np.float32), np.ones(8, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    t = xcuda.trace(m.saxpy, (2, 4), np.float32(2), x, y, out, 7, thread=(1, 0, 0), block=(1, 0, 0))
    assert np.array_equal(out, np.where(np.arange(8) < 7, 2 * x + y, 0)), out  # the launch was real
    assert t.error is None and not t.truncated and t.thread == (1, 0, 0) and t.block == (1, 0, 0)
    ptx = [s.ptx for s in t.steps]
    index = next(k for k, s in enumerate(t.steps) if s.ptx.startswith("mad.lo.s32"))
    assert t.steps[index].writes == ("%r1 = 5",) and t.steps[index].line == 4, t.steps[index]  # i = 1 * 4 + 1
    fma = next(s for s in t.steps if s.ptx.startswith("fma.rn.f32"))
    assert fma.writes[0].endswith(" = 11") and fma.line == 5 and fma.file == "", fma  # 2 * x[5] + 1; "": the cell itself
    branch = next(s for s in t.steps if " bra " in s.ptx)
    assert branch.ptx.startswith("@") and not branch.executed, branch  # i < n: the guarded exit not taken
    assert any(p.startswith("st.global.f32") for p in ptx), ptx
    assert [s.function for s in t.steps] == ["saxpy"] * len(t.steps)
    # Another thread of the same launch, past n: it takes the early exit and never stores.
    past = xcuda.trace(m.saxpy, (2, 4), np.float32(2), x, y, out, 7, thread=(3, 0, 0), block=(1, 0, 0))
    assert next(s for s in past.steps if " bra " in s.ptx).executed
    assert not any(s.ptx.startswith("st.global") for s in past.steps), [s.ptx for s in past.steps]
    assert len(past.steps) < len(t.steps)
    text = repr(t)
    assert text.startswith("saxpy: thread (1,0,0) of block (1,0,0) on the PTX simulator"), text
    assert "fma.rn.f32" in text and "(predicate false: not executed)" in text, text
    page = t._repr_html_()
    assert 'class="xc-cols"' in page and "var(--jp-content-font-color1" in page, page[:400]
    assert "if (i &lt; n) out[i] = a * x[i] + y[i];" in page and 'class="xl xran" data-line="5"' in page, page
    try:
        xcuda.trace(m.saxpy, (2, 4), np.float32(2), x, y, out, 7, thread=(4, 0, 0))
    except ValueError as e:
        assert "thread (4, 0, 0) is outside the launch's block (4, 1, 1)" in str(e), e
    else:
        raise AssertionError("a thread outside the block was traced")


def device_malloc():
    import ctypes
    import os
    m = xcuda.compile(HEAP, name="sim_heap")
    n, k = 1000, 7
    x = (np.arange(n) % 11).astype(np.float32)  # small integers: the weighted sums are exact
    out = np.zeros(n, np.float32)
    m.weigh[(n + 127) // 128, 128](x, out, n, k)
    windows = np.stack([np.roll(x, -j) for j in range(k)], axis=1)
    assert np.array_equal(out, windows @ np.arange(1, k + 1, dtype=np.float32)), out[:8]
    # cuCtxSetLimit / cuCtxGetLimit (CU_LIMIT_MALLOC_HEAP_SIZE = 2) through the simulator's library
    library = ctypes.CDLL(os.path.join(os.path.dirname(xcuda._core.__file__), "libxcuda-sim.so"), mode=os.RTLD_NOLOAD)
    size = ctypes.c_size_t(0)
    assert library.cuCtxGetLimit(ctypes.byref(size), 2) == 0 and size.value == 8 << 20, size.value
    assert library.cuCtxSetLimit(2, ctypes.c_size_t(1 << 20)) == 0
    assert library.cuCtxGetLimit(ctypes.byref(size), 2) == 0 and size.value == 1 << 20, size.value
    got = np.zeros(64, np.uint64)
    m.hoard[1, 64](got, 64 << 10)  # 64 KiB each from 1 MiB: 15 blocks (each with its 16-byte red zone), then null
    assert np.count_nonzero(got) == (1 << 20) // ((64 << 10) + 16) and not got[15:].any(), got
    assert library.cuCtxSetLimit(2, ctypes.c_size_t(2 << 20)) == 1  # CUDA_ERROR_INVALID_VALUE: blocks are alive
    try:
        m.overrun[1, 1](5)
    except xcuda.CudaError as fault:
        message = str(fault)
    else:
        raise AssertionError("the overrun of a malloc'd block raised nothing")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message and "0 bytes past the end of the block of 20 bytes malloc gave" in message, message
    out[:] = 0
    m.weigh[(n + 127) // 128, 128](x, out, n, k)  # the session goes on; 64 KiB left are room for the windows
    assert np.array_equal(out, windows @ np.arange(1, k + 1, dtype=np.float32)), out[:8]


def grid_sync():
    import ctypes
    import os
    m = xcuda.compile(GRID_PHASES, name="sim_grid_phases")
    k = m.phases
    assert k.uses_grid_sync and k.cooperative
    most = k.max_cooperative_blocks(256)
    assert most == 8, most  # the simulated device: one multiprocessor of 2048 threads
    n = most * 256
    x = (np.arange(n) % 23).astype(np.float32)
    out = np.zeros(n, np.float32)
    k[most, 256](x, np.zeros(n, np.float32), out, n)
    assert np.array_equal(out, np.roll(x, -1) * 2 - np.roll(x, 1) * 2), out[:8]
    # The driver's own refusal of a grid larger than the device holds (xcuda checks before it, too)
    library = ctypes.CDLL(os.path.join(os.path.dirname(xcuda._core.__file__), "libxcuda-sim.so"), mode=os.RTLD_NOLOAD)
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    assert library.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(m.ptx.encode())) == 0
    assert library.cuModuleGetFunction(ctypes.byref(function), module, b"phases") == 0
    pointers = [xcuda.zeros(n, np.float32) for _ in range(3)]
    values = [ctypes.c_uint64(int(p.ptr)) for p in pointers] + [ctypes.c_int(n)]
    params = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
    code = library.cuLaunchCooperativeKernel(function, most + 1, 1, 1, 256, 1, 1, 0, None, params)
    assert code == 720, code  # CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
    assert library.cuLaunchCooperativeKernel(function, most, 1, 1, 256, 1, 1, 0, None, params) == 0
TWO_SIDES = r"""
extern "C" __global__ void two_sides(const float* in, float* out)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    if (t < 32) { s[t] = in[t] + 1.0f; __syncthreads(); out[t] = s[63 - t]; }
    else { s[t] = in[t] * 2.0f; __syncthreads(); out[t] = s[63 - t]; }
}
"""


def two_sided_barrier():
    """Each half of a 64-thread block calls __syncthreads() on its own side of a branch: one barrier, as on a GPU,
    a warning at the first launch only, and barrier divergence in strict mode."""
    m = xcuda.compile(TWO_SIDES, name="two_sides")
    x = np.arange(64, dtype=np.float32)
    written = np.where(np.arange(64) < 32, x + 1, x * 2).astype(np.float32)
    for _ in range(2):
        out = np.zeros(64, np.float32)
        m.two_sides[3, 64](x, out)
        xcuda.synchronize()
        assert np.array_equal(out, written[::-1]), out
    print("both launches right")
    os.environ["XCUDA_SIM_STRICT_BARRIERS"] = "1"
    try:
        m.two_sides[1, 64](x, np.zeros(64, np.float32))
    except xcuda.CudaError as e:
        print("strict:", e)
    else:
        raise AssertionError("strict mode let warps at two different barriers through")


def device_assert():
    """A failed assert: CudaError with the expression and the line, each failing thread's line printed, and the
    session goes on."""
    m = xcuda.compile(r"""
extern "C" __global__ void checked(const int* v, int* out)
{
    assert(v[threadIdx.x] >= 0);
    out[threadIdx.x] = 2 * v[threadIdx.x];
}
""", name="sim_assert")
    v = np.arange(32, dtype=np.int32)
    v[7] = -7
    out = np.zeros(32, np.int32)
    try:
        m.checked[1, 32](v, out)
    except xcuda.CudaError as e:
        print("failed:", e)
    else:
        raise AssertionError("a failed assert let the launch through")
    xcuda.synchronize()
    m.checked[1, 32](np.abs(v), out)
    assert np.array_equal(out, 2 * np.abs(v)), out
    print("the next launch ran")


PIPELINE = r"""
template <int WAIT> __device__ void stages(const float* in, float* out, int tiles)
{ __shared__ float buf[2][64]; int t = threadIdx.x; float sum = 0.0f;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"((unsigned)__cvta_generic_to_shared(&buf[0][t])), "l"(in + t) : "memory");
  asm volatile("cp.async.commit_group;" ::: "memory");
  for (int i = 0; i < tiles; ++i) {
    if (i + 1 < tiles) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"((unsigned)__cvta_generic_to_shared(&buf[(i + 1) % 2][t])), "l"(in + (i + 1) * 64 + t) : "memory");
    asm volatile("cp.async.commit_group;\n\tcp.async.wait_group %0;" :: "n"(WAIT) : "memory");
    __syncthreads();
    sum += buf[i % 2][63 - t];
    __syncthreads(); }
  out[t] = sum; }
extern "C" __global__ void too_few(const float* in, float* out, int tiles) { stages<2>(in, out, tiles); }
extern "C" __global__ void enough(const float* in, float* out, int tiles) { stages<1>(in, out, tiles); }
"""


def async_copy_hazard():
    """The async-copy check (on by default): a two-buffer cp.async pipeline that waits for too few stages reads a
    buffer whose copy is still pending; the launch fails naming both threads, both cell lines and the block, and the
    session goes on. The right wait runs and sums every stage; with the check off the short wait runs silently on
    the old bytes (zeros), where a GPU gives either."""
    m = xcuda.compile(PIPELINE, name="sim_pipeline")
    tiles = 4
    values = (np.arange(tiles * 64) % 13).astype(np.float32)
    out = np.full(64, -1, dtype=np.float32)
    message = launch_error(lambda: m.too_few[1, 64](values, out, tiles))
    assert "kernel 'too_few': a cp.async hazard in block (0,0,0) on '" in message and "::buf' (byte 252 of 512)" in message, message
    assert "thread (0,0,0) reads shared bytes at 'ld.shared" in message and "the source, line 10" in message, message
    assert ", the destination of the cp.async at 'cp.async.ca.shared.global" in message and "the source, line 4" in message, message
    assert "which thread (63,0,0) issued and has not waited for" in message, message
    assert "on a GPU the copy may land before or after this read" in message, message
    m.enough[1, 64](values, out, tiles)
    expected = values.reshape(tiles, 64)[:, ::-1].sum(axis=0)
    assert np.array_equal(out, expected), (out, expected)
    os.environ["XCUDA_SIM_CHECKS"] = "-async-copy"
    out[:] = -1
    m.too_few[1, 64](values, out, 2)
    assert np.array_equal(out, np.zeros(64, np.float32)), out  # both stages read before they landed

SCENARIOS = {f.__name__: f for f in (saxpy, block_sum, out_of_bounds, unsupported_instruction, device_printf,
                                     classic_kernels, shared_race, timing_says_simulated, trace_one_thread,
                                     two_sided_barrier, device_assert, device_malloc, grid_sync, uninitialised_shared,
                                     uninitialised_global, warp_race, async_copy_hazard)}

if __name__ == "__main__":
    name = sys.argv[1]
    SCENARIOS[name]()
    print(f"scenario held: {name}")
