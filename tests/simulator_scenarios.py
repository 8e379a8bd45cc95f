"""Scenarios of xcuda on the PTX simulator (XCUDA_DEVICE=simulator), each run in a process of its own.

tests/test_simulator.py runs each one with XCUDA_DEVICE=simulator, XCUDA_LIBCUDA unset and PYTHONPATH at
the build's python folder (where libxcuda-sim.so sits beside the module):

    python3 tests/simulator_scenarios.py NAME     # exits 0 and prints "scenario held: NAME" when it holds
"""
import sys

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
"""

SLEEPY = r"""
extern "C" __global__ void sleepy(int* out) { __nanosleep(100); out[0] = 1; }
extern "C" __global__ void fill(int* out, int v) { out[threadIdx.x] = v; }
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
    out = np.zeros(100, dtype=np.float32)
    try:
        m.overrun[4, 32](out, 100)
        xcuda.synchronize()
    except xcuda.KernelFault as fault:
        message = str(fault)
    else:
        raise AssertionError("the out-of-bounds write raised nothing")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message, message
    assert "thread (4,0,0) of block (3,0,0)" in message, message
    assert "writes 4 bytes" in message and "bytes past the end of device allocation" in message, message
    # The process survives; Python goes on.
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
    assert "the instruction 'nanosleep' is not implemented by the simulator" in message, message
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


SCENARIOS = {f.__name__: f for f in (saxpy, block_sum, out_of_bounds, unsupported_instruction, device_printf)}

if __name__ == "__main__":
    name = sys.argv[1]
    SCENARIOS[name]()
    print(f"scenario held: {name}")
