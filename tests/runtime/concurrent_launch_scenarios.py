"""Launches from several Python threads at once, each in a process of its own.

tests/runtime/test_concurrent_launches.py runs each scenario against the fake driver (tests/fake_driver: any
machine) and, marked gpu, on a real GPU. Every scenario starts THREADS threads that each launch
LAUNCHES times with their own scalars and arrays, and checks every result against numpy: a launch that
computed with another thread's scalar or array shows as a wrong result, named with the thread and the
launch.

    python3 tests/runtime/concurrent_launch_scenarios.py NAME     # exits 0 when the scenario holds
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from thread_runs import run_in_threads  # noqa: E402  (tests/thread_runs.py)

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }

extern "C" __global__ void fill(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value; }
"""

THREADS = 4
LAUNCHES = 200
BLOCK = 256


class CudaArrayInterfaceOnly:
    """A device array seen only through __cuda_array_interface__ (as CuPy or Numba would pass one)."""

    def __init__(self, array):
        self._array = array
        self.__cuda_array_interface__ = array.__cuda_array_interface__


def run_threads(work):
    """work(thread_index) in THREADS threads started together; the first error any raised, re-raised."""
    run_in_threads(work, THREADS)


def check(expected, got, thread, launch, what):
    if not np.allclose(got, expected, rtol=1e-6, atol=1e-6):
        bad = int(np.argmax(~np.isclose(got, expected, rtol=1e-6, atol=1e-6)))
        raise AssertionError(f"launch {launch} of thread {thread} ({what}): element {bad} is {got[bad]}, "
                             f"expected {expected[bad]}: the launch computed with another call's arguments")


def inputs(n, thread):
    rng = np.random.default_rng(1000 + thread)
    x = rng.random(n, dtype=np.float32) + np.float32(thread)
    y = rng.random(n, dtype=np.float32) - np.float32(thread)
    return x, y


def saxpy_scenario(n, arrays, streams):
    """Every thread launches saxpy with a = thread + 1 and its own x and y."""
    import xcuda

    module = xcuda.compile(SOURCE, name="concurrent")
    saxpy = module.saxpy
    grid = (n + BLOCK - 1) // BLOCK

    def work(thread):
        a = np.float32(thread + 1)
        x, y = inputs(n, thread)
        expected = a * x + y
        stream = xcuda.Stream() if streams else None
        if arrays == "numpy":
            args_x, args_y = x, y
        else:
            dx, dy = xcuda.to_device(x), xcuda.to_device(y)
            args_x, args_y = (dx, dy) if arrays == "device" else (CudaArrayInterfaceOnly(dx), CudaArrayInterfaceOnly(dy))
        for launch in range(LAUNCHES):
            out = np.zeros(n, dtype=np.float32)
            saxpy[grid, BLOCK, stream](a, args_x, args_y, out, n)
            check(expected, out, thread, launch, f"{arrays} arrays, {'own stream' if streams else 'default stream'}")

    run_threads(work)


def device_only_scenario(n):
    """Device arrays in and out, nothing copied per launch: the hot path, with no wait in it."""
    import xcuda

    module = xcuda.compile(SOURCE, name="concurrent")
    saxpy = module.saxpy
    grid = (n + BLOCK - 1) // BLOCK

    def work(thread):
        x, y = inputs(n, thread)
        dx, dy = xcuda.to_device(x), xcuda.to_device(y)
        stream = xcuda.Stream()
        outs = [xcuda.empty(n, dtype=np.float32) for _ in range(8)]
        for launch in range(LAUNCHES):
            a = np.float32(thread * 1000 + launch)
            out = outs[launch % len(outs)]
            saxpy[grid, BLOCK, stream](a, dx, dy, out, n)
            if launch % len(outs) == len(outs) - 1:
                stream.synchronize()
                for k, done in enumerate(outs):
                    value = np.float32(thread * 1000 + launch - len(outs) + 1 + k)
                    check(value * x + y, done.copy_to_host(), thread, launch - len(outs) + 1 + k, "device arrays only")

    run_threads(work)


def two_kernels_scenario(n):
    """Half the threads launch saxpy, the others fill, on the same module at once."""
    import xcuda

    module = xcuda.compile(SOURCE, name="concurrent")
    grid = (n + BLOCK - 1) // BLOCK

    def work(thread):
        x, y = inputs(n, thread)
        for launch in range(LAUNCHES):
            out = np.zeros(n, dtype=np.float32)
            if thread % 2:
                value = np.float32(thread * 10 + launch)
                module.fill[grid, BLOCK](out, value, n)
                check(np.full(n, value, dtype=np.float32), out, thread, launch, "fill")
            else:
                a = np.float32(thread + 2)
                module.saxpy[grid, BLOCK](a, x, y, out, n)
                check(a * x + y, out, thread, launch, "saxpy")

    run_threads(work)


def compile_while_launching_scenario(n):
    """One thread compiles new cells (each a new module, registry and caches written) while the others
    launch saxpy with numpy arrays: docs/launching.md says compiling while other threads launch is safe."""
    import xcuda

    module = xcuda.compile(SOURCE, name="concurrent")
    saxpy = module.saxpy
    grid = (n + BLOCK - 1) // BLOCK

    def work(thread):
        if thread == 0:
            for k in range(LAUNCHES // 10):
                compiled = xcuda.compile(SOURCE.replace("fill", f"fill_{k}"), name=f"concurrent_{k}")
                assert f"fill_{k}" in compiled.kernels, list(compiled.kernels)
            return
        a = np.float32(thread + 1)
        x, y = inputs(n, thread)
        for launch in range(LAUNCHES):
            out = np.zeros(n, dtype=np.float32)
            saxpy[grid, BLOCK](a, x, y, out, n)
            check(a * x + y, out, thread, launch, "numpy arrays while another thread compiles")

    run_threads(work)


def own_configurations_scenario(n):
    """Every thread alternates between two (grid, block) configurations of its own, as new tuples every call: the
    kernel's last-hit memo and its cache of four launchers are shared by the threads and evicted all the time
    (eight configurations), and each launch must still run with the calling thread's block and its own a."""
    import xcuda

    module = xcuda.compile(SOURCE, name="concurrent_configurations")
    saxpy = module.saxpy

    def work(thread):
        a = np.float32(thread + 1)
        x, y = inputs(n, thread)
        expected = a * x + y
        blocks = (32 << thread, 32 << ((thread + 1) % 4))
        for launch in range(LAUNCHES):
            block = blocks[launch % 2]
            out = np.zeros(n, dtype=np.float32)
            saxpy[(n + block - 1) // block, block](a, x, y, out, n)
            check(expected, out, thread, launch, f"block {block}")

    run_threads(work)


SCENARIOS = {
    "compile_while_launching": compile_while_launching_scenario,
    "numpy_default_stream": lambda n: saxpy_scenario(n, "numpy", False),
    "numpy_own_streams": lambda n: saxpy_scenario(n, "numpy", True),
    "device_arrays_default_stream": lambda n: saxpy_scenario(n, "device", False),
    "cuda_array_interface_own_streams": lambda n: saxpy_scenario(n, "interface", True),
    "device_only_own_streams": device_only_scenario,
    "two_kernels": two_kernels_scenario,
    "own_configurations": own_configurations_scenario,
}

if __name__ == "__main__":
    name = sys.argv[1]
    size = int(os.environ.get("XCUDA_SCENARIO_N", str(1 << 16)))
    SCENARIOS[name](size)
    print(f"scenario held: {name}")
