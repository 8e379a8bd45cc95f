#!/usr/bin/env python3
"""GPU benchmark of xcuda against a C++ driver-API baseline and the Python CUDA libraries, in one run.

A benchmark, not a test: it prints tables with ratios against baselines measured in the same run and
never asserts on time. Run it on a GPU host with the Python that has CuPy, cuda-python and PyTorch
(tests/bench/run_gpu.sh does the build and the run):

    XCUDA_BUILD_DIR=build-host python3 tests/bench/bench_gpu.py [--baseline PATH] [--out PATH]

XCUDA_BUILD_DIR (default <repo>/build) is the build folder whose python/ holds the `xcuda` module.
--baseline names a prebuilt tests/bench/launch_baseline.cpp; without it the script builds it with nvcc
into a temporary folder. --out also writes the tables (markdown) to a file.

What is measured
----------------
1. Launch host cost: SAXPY at n = 4096, block 256. 25 batches of 1000 asynchronous launches on the
   default stream; each batch is timed on the host (perf_counter_ns) around the 1000 calls only, the
   synchronizes before and after it are outside the timed region; the result is the median batch / 1000
   in us. The batches are interleaved: every row's check and warm-up batch first, then 25 turns of one
   batch of each row, the order rotated every turn (interleaved_us). The host's speed drifts during a
   process; rows timed one after another put that drift between systems (a later one looked faster), in
   turns it falls on every row alike. Each row keeps what its loop launches on until the last turn, and
   xcuda's rows of the other way of passing arguments set it around each of their batches.
   Systems: C++ cuLaunchKernel (launch_baseline), xcuda `saxpy[g, b](a, x, y, out, n)` with DeviceArrays
   (the launcher looked up inside the loop, as a user writes it, and hoisted out of it), cuda.core
   `launch`, cuda.bindings `cuLaunchKernel` with prepacked kernelParams, CuPy RawKernel, and PyTorch
   `torch.add(y, x, alpha=2.0, out=out)` (y + 2x: SAXPY) as a reference. The same for a kernel of 16 float scalars and
   16 pointers (xcuda, cuda.core, cuda.bindings, CuPy, C++). The loops run in functions whose objects are
   locals (default arguments), the same for every system; the Python peers' return values are not
   checked inside the timed loop.
   Goal (issue 27): xcuda <= 1.0x C++ for SAXPY and <= 1.1x for 16 + 16, and faster than every Python
   peer (PyTorch, a different operation, is shown for reference and is not a peer). One process' figure
   moves by a fifth between runs: the goal is judged by launch_rounds.py's medians over rounds.
2. SAXPY kernel time at n = 2^24 (grid 65536, block 256): CUDA events around each launch, median of 100
   after 10 warm-up launches: xcuda `saxpy.time`, xcuda with xcuda.Event around each launch, CuPy
   RawKernel of the same source, C++. Bandwidth counts x, y and out (12 bytes per element). The copy
   ceiling is a device-to-device copy of 6 * n bytes (cuMemcpyDtoDAsync in C++, and CuPy's memcpyAsync),
   its GB/s counting bytes read plus bytes written (12 * n, the traffic of SAXPY); the faster of the two
   is the ceiling.
   Goal: xcuda within 3% of CuPy (time <= 1.03x) and >= 80% of the copy ceiling.
3. The CUDA Python tutorial end to end at n = 2^24 (= 512 * 32768, the tutorial's size) from pageable
   numpy arrays: host wall time, median of 20 after 3 warm-up runs. xcuda in one call,
   `saxpy[g, b](a, x_np, y_np, out_np, n)` (copies in and out, device temporaries included); xcuda in
   explicit steps (to_device, empty, launch, copy_to_host: allocation included); xcuda into preallocated
   DeviceArrays (copy_from, launch, copy_to_host(out=...): the same work as the C++ baseline); C++ with
   cuMemcpyHtoD/DtoH from malloc'ed buffers (the baseline), the same with cuMemAlloc/cuMemFree in the
   timed region, and from page-locked buffers; CuPy (asarray, RawKernel, asnumpy) for reference.
   The one call in each way of copying pageable arrays (xcuda.transfer_options(pageable=...): auto,
   registered, per-copy, staged with three thread/buffer settings, driver), with the same arrays every
   run and, for auto, registered, per-copy and staged, with new arrays every run (made outside the timer:
   the cost of registering each new array is in the row).
   Goal: xcuda from pageable numpy arrays within 1.5x of C++ from page-locked memory (the bus limit); xcuda
   from page-locked arrays within 1.1x of the same C++ steps.

Every system's SAXPY (and 16-argument) result is checked once with numpy before it is timed; a wrong
result is reported as such and not timed. A system that cannot run (not installed, no GPU, an error)
shows "n/a (reason)" and the run goes on. Without a GPU the script says so, still builds the C++
baseline and compiles the kernels with xcuda (NVRTC works without a driver), prints the tables with
every row n/a, and exits 0.
"""

import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (NA, add_results_option, attempt, below_peers_row, benchmark_entry,  # noqa: E402
                          build_baseline, device_text, goal_ratio, markdown_table, measured, median_wall_ms, probe_gpu,
                          ratio, result_row, run_baseline, short_error, show_section, write_report, write_results)

SAXPY_SRC = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""

# 16 float scalars and 16 pointers; the work is one element, so the launch cost dominates.
MANY_SRC = (
    'extern "C" __global__ void many('
    + ", ".join(f"float s{k}" for k in range(16))
    + ", "
    + ", ".join(f"const float* p{k}" for k in range(15))
    + ", float* p15)\n{\n    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
    + "    if (i < 1) p15[i] = "
    + " + ".join([f"s{k}" for k in range(16)] + [f"p{k}[i]" for k in range(15)])
    + ";\n}\n"
)

A = 2.0
BLOCK = 256
LAUNCH_N = 4096
BATCHES = 25
PER_BATCH = 1000
BIG_N = 1 << 24
KERNEL_REPEAT, KERNEL_WARMUP = 100, 10
E2E_REPEAT, E2E_WARMUP = 20, 3
SAXPY_BYTES_PER_ELEMENT = 12  # x and y read, out written
COPY_BYTES = 6 * BIG_N  # read + written = 12 * BIG_N, the traffic of SAXPY at BIG_N

LAUNCH_GOAL_VS_CPP = {1: 1.0, 16: 1.1}  # by the kernel's argument count: SAXPY, 16 scalars + 16 pointers
KERNEL_GOAL_VS_CUPY = 1.03
KERNEL_GOAL_OF_CEILING = 0.80
E2E_GOAL_VS_CPP = 1.10
PAGEABLE_GOAL_VS_PINNED_CPP = 1.50  # pageable numpy arrays: within 1.5x of C++ from page-locked memory


# ---- results ---------------------------------------------------------------------------------------


def compare(result, expected, what="out"):
    """None when `result` matches `expected` (np.allclose), else a short description."""
    result = np.asarray(result)
    if result.shape != expected.shape:
        return f"{what} has shape {result.shape}, expected {expected.shape}"
    if np.allclose(result, expected, rtol=1e-5, atol=1e-6):
        return None
    bad = int(np.argmax(~np.isclose(result, expected, rtol=1e-5, atol=1e-6)))
    return f"{what}[{bad}] = {result.flat[bad]!r}, expected {expected.flat[bad]!r}"


# ---- timing methods (the same for every Python system) ------------------------------------------------

class Measurement(NamedTuple):
    """One row of the launch table, registered to be timed by interleaved_us with every other row.

    `check()` says None when the loop's result is right, else what is wrong; `batch()` makes PER_BATCH
    asynchronous launches and `synchronize()` waits for them. `keep` holds, by reference, what the loop
    launches on: its buffers and arguments, and what it knows only by address (cuda.bindings' packed
    kernelParams and the values they point to). The turns run after the function that registered the row
    returned, and what only that function held would be freed by then. `option()` returns a context manager
    entered around the check and around each batch with its synchronizes (outside the timed region), for a
    row timed under a setting of its own, as xcuda.launch_options(arguments=...); by default it sets nothing."""
    key: tuple
    check: object
    batch: object
    synchronize: object
    keep: tuple = ()
    option: object = contextlib.nullcontext


def register(results, key, check, batch, synchronize, keep, option=contextlib.nullcontext):
    """A Measurement in `results`' row `key`, which fixes the row's place in the table; launch_results times it."""
    results[key] = Measurement(key, check, batch, synchronize, keep, option)


def interleaved_us(measurements, batches, per_batch, clock=time.perf_counter_ns):
    """{key: median over `batches` of the host time of one batch / per_batch in us, or NA} for the Measurements.

    Each one's check, then its warm-up batch, first (a wrong result or an error: NA, and it takes no turn);
    then `batches` turns of one batch of each, the order rotated by one every turn so that none is always
    first. A drift of the host's speed during the process (its clock, other work) falls on every row alike
    instead of favouring whichever was timed last. A batch that raises makes its row NA and ends its turns."""
    values, samples, live = {}, {}, []
    for m in measurements:
        def check(m=m):
            with m.option():
                return m.check()

        def warm_up(m=m):
            with m.option():
                m.batch()
                m.synchronize()

        values[m.key] = attempt(check, warm_up)
        if measured(values[m.key]):
            samples[m.key] = []
            live.append(m)
    for turn in range(batches):
        live = [m for m in live if measured(values[m.key])]
        if not live:
            break
        shift = turn % len(live)
        for m in live[shift:] + live[:shift]:
            try:
                with m.option():
                    m.synchronize()
                    start = clock()
                    m.batch()
                    elapsed = clock() - start
                    m.synchronize()
            except Exception as error:  # a benchmark row must not stop the run
                values[m.key] = NA(f"error: {short_error(error)}")
                continue
            samples[m.key].append(elapsed / 1e3 / per_batch)
    for key, taken in samples.items():
        if measured(values[key]):
            values[key] = statistics.median(taken)
    return values


def wall_ms(run):
    """Median host wall time of the synchronous `run()` over E2E_REPEAT after E2E_WARMUP, in ms."""
    return median_wall_ms(run, E2E_REPEAT, E2E_WARMUP)


def event_us(make_event, launch, elapsed_ms):
    """Median device time of `launch()` with events recorded around it, over KERNEL_REPEAT, in us."""
    start, end = make_event(), make_event()
    for _ in range(KERNEL_WARMUP):
        launch()
    samples = []
    for _ in range(KERNEL_REPEAT):
        start.record()
        launch()
        end.record()
        end.synchronize()
        samples.append(elapsed_ms(start, end) * 1e3)
    return statistics.median(samples)


BATCH = range(PER_BATCH)


# ---- the GPU and the C++ baseline ------------------------------------------------------------------


# ---- the systems -----------------------------------------------------------------------------------

def host_data(n):
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    return x, y, (np.float32(A) * x + y).astype(np.float32)


def many_host_data(n):
    scalars = [np.float32(k + 1) for k in range(16)]
    arrays = [np.full(n, 100.0 * (k + 1), dtype=np.float32) for k in range(15)] + [np.zeros(n, np.float32)]
    expected = np.float32(sum(float(s) for s in scalars) + sum(float(p[0]) for p in arrays[:15]))
    return scalars, arrays, np.array([expected], dtype=np.float32)


class Driver:
    """cuda.bindings driver helpers: device buffers for the cuda.core and cuda.bindings rows."""

    def __init__(self):
        from cuda.bindings import driver
        self.cu = driver
        self.call(driver.cuInit(0), "cuInit")
        device = self.call(driver.cuDeviceGet(0), "cuDeviceGet")
        context = self.call(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
        self.call(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        self.buffers = []

    def call(self, result, name):
        error, *values = result
        if error != self.cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"{name} failed: {error!r}")
        return values[0] if len(values) == 1 else tuple(values)

    def to_device(self, array):
        pointer = self.call(self.cu.cuMemAlloc(array.nbytes), "cuMemAlloc")
        self.buffers.append(pointer)
        self.call(self.cu.cuMemcpyHtoD(pointer, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")
        return int(pointer)

    def to_host(self, pointer, like):
        result = np.empty_like(like)
        self.call(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")
        self.call(self.cu.cuMemcpyDtoH(result.ctypes.data, pointer, result.nbytes), "cuMemcpyDtoH")
        return result

    def synchronize(self):
        self.call(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")

    def free(self):
        for pointer in self.buffers:
            self.cu.cuMemFree(pointer)
        self.buffers = []


def nvrtc_cubin(source, arch):
    """Compile with cuda.bindings.nvrtc (the CUDA Python tutorial's way); returns the CUBIN bytes."""
    from cuda.bindings import nvrtc

    def call(result, name):
        error, *values = result
        if error != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{name} failed: {error!r}")
        return values[0] if values else None

    program = call(nvrtc.nvrtcCreateProgram(source.encode(), b"bench.cu", 0, [], []), "nvrtcCreateProgram")
    options = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
    call(nvrtc.nvrtcCompileProgram(program, len(options), options), "nvrtcCompileProgram")
    size = call(nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
    cubin = b" " * size
    call(nvrtc.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN")
    call(nvrtc.nvrtcDestroyProgram(program), "nvrtcDestroyProgram")
    return cubin


def load_system(name, loader, gpu_reason):
    """Import/initialise one system: (object, None) or (None, reason)."""
    try:
        return loader(), None
    except ModuleNotFoundError as error:
        return None, f"{name} not installed: {short_error(error)}"
    except ImportError as error:
        return None, f"{name} import failed: {short_error(error)}"
    except Exception as error:
        if gpu_reason:
            return None, f"no GPU: {gpu_reason}"
        return None, f"error: {short_error(error)}"


# ---- tables ----------------------------------------------------------------------------------------

def fmt(value, unit, digits=2):
    return str(value) if not measured(value) else f"{value:.{digits}f} {unit}"


def goal_below_peers(value, peers):
    """`value` below every measured peer, as met/missed with the margin to the fastest one."""
    timed = {name: v for name, v in peers.items() if measured(v)}
    if not measured(value) or not timed:
        return "< every Python peer: n/a"
    name, best = min(timed.items(), key=lambda item: item[1])
    verdict = "met" if value < best else "missed"
    missing = "" if len(timed) == len(peers) else f"; {len(peers) - len(timed)} peer(s) n/a"
    return f"< every Python peer: {verdict} (fastest peer {name} {best:.2f} us, {(value / best - 1) * 100:+.0f}%{missing})"


# ---- the measurements -------------------------------------------------------------------------------

def launch_results(sys_, baseline):
    """{(system, 1 or 16): host us per launch, or NA}: the launch host-cost measurements of one process."""
    n = LAUNCH_N
    hx, hy, expected = host_data(n)
    scalars, arrays, many_expected = many_host_data(n)
    data = LaunchData(n, n // BLOCK, hx, hy, expected, scalars, arrays, many_expected)
    reason = {k: v[1] for k, v in sys_.items()}
    results = {}

    def cpp(key):
        return baseline[key] if isinstance(baseline, dict) and key in baseline else (
            baseline if not isinstance(baseline, dict) else NA(f"baseline printed no {key}"))

    results["C++ cuLaunchKernel", 1] = cpp("launch_us")
    results["C++ cuLaunchKernel", 16] = cpp("launch16_us")
    # Each system's function puts a Measurement in its rows (or an NA); every Measurement is then timed
    # together with the others, in turns, and its row given its median.
    for measure in (xcuda_launches, core_launches, bindings_launches, cupy_launches, torch_launches):
        measure(sys_, reason, data, results)
    pending = [value for value in results.values() if isinstance(value, Measurement)]
    results.update(interleaved_us(pending, BATCHES, PER_BATCH))
    return results


class LaunchData(NamedTuple):
    """What every system's launches compute on: SAXPY's inputs and result, and the 16-argument kernel's."""
    n: int
    grid: int
    hx: object
    hy: object
    expected: object
    scalars: object
    arrays: object
    many_expected: object


def xcuda_launches(sys_, reason, data, results):
    """xcuda's launches into results: kernel[g, b](...), the launcher hoisted, and the other way of passing arguments."""
    xcuda = sys_["xcuda"][0]
    n, grid, hx, hy, expected, scalars, arrays, many_expected = data
    if xcuda:
        x, y, out = xcuda.to_device(hx), xcuda.to_device(hy), xcuda.empty(n, np.float32)
        saxpy = sys_["xcuda_saxpy"][0]

        def check():
            saxpy[grid, BLOCK](A, x, y, out, n)
            return compare(out.copy_to_host(), expected)

        def in_loop(saxpy=saxpy, grid=grid, block=BLOCK, a=A, x=x, y=y, out=out, n=n):
            for _ in BATCH:
                saxpy[grid, block](a, x, y, out, n)

        def hoisted(launch=saxpy[grid, BLOCK], a=A, x=x, y=y, out=out, n=n):
            for _ in BATCH:
                launch(a, x, y, out, n)

        sync, keep = xcuda.synchronize, (saxpy, x, y, out)
        register(results, ("xcuda kernel[g, b](...)", 1), check, in_loop, sync, keep)
        register(results, ("xcuda launcher hoisted", 1), check, hoisted, sync, keep)
        # The same loop registered a second time, timed in the same turns as the first: the spread between
        # the two in-loop rows is the noise of one process to read the differences against.
        register(results, ("xcuda kernel[g, b](...), measured again", 1), check, in_loop, sync, keep)

        many = sys_["xcuda_many"][0]
        pointers = [xcuda.to_device(a) for a in arrays]
        args = tuple(float(s) for s in scalars) + tuple(pointers)

        def check_many():
            many[grid, BLOCK](*args)
            return compare(pointers[15].copy_to_host()[:1], many_expected, "p15")

        def many_loop(many=many, grid=grid, block=BLOCK, args=args):
            for _ in BATCH:
                many[grid, block](*args)

        keep_many = (many, pointers, args)
        register(results, ("xcuda kernel[g, b](...)", 16), check_many, many_loop, sync, keep_many)

        # The same two loops with the arguments handed to the driver as one buffer laid out as the kernel
        # lays out its parameters (xcuda.launch_options(arguments='buffer'), CU_LAUNCH_PARAM_BUFFER_POINTER)
        # instead of one pointer each (or the other way round where buffer is the default). Their check and
        # each of their batches run with the option set, and the option is set back after each, outside the
        # timed region: the other rows' batches in the same turns run in the default way.
        other = "pointers" if xcuda.launch_options()["arguments"] == "buffer" else "buffer"

        @contextlib.contextmanager
        def other_way():
            way = xcuda.launch_options()["arguments"]
            xcuda.launch_options(arguments=other)
            try:
                yield
            finally:
                xcuda.launch_options(arguments=way)

        as_other = f"xcuda kernel[g, b](...), arguments as {other}"
        register(results, (as_other, 1), check, in_loop, sync, keep, other_way)
        register(results, (as_other, 16), check_many, many_loop, sync, keep_many, other_way)
    else:
        for key in (("xcuda kernel[g, b](...)", 1), ("xcuda launcher hoisted", 1), ("xcuda kernel[g, b](...)", 16)):
            results[key] = NA(reason["xcuda"])


def core_launches(sys_, reason, data, results):
    """cuda.core's launch into results."""
    driver, core = (sys_[k][0] for k in ("driver", "core"))
    n, grid, hx, hy, expected, scalars, arrays, many_expected = data
    if core:
        launch, config = core["launch"], core["LaunchConfig"](grid=grid, block=BLOCK)
        stream, k_saxpy, k_many = core["stream"], core["saxpy"], core["many"]
        px, py, pout = driver.to_device(hx), driver.to_device(hy), driver.to_device(np.zeros_like(hx))
        a32, n64 = np.float32(A), np.uint64(n)

        def check():
            launch(stream, config, k_saxpy, a32, px, py, pout, n64)
            return compare(driver.to_host(pout, hx), expected)

        def core_loop(launch=launch, stream=stream, config=config, kernel=k_saxpy, a=a32, x=px, y=py, out=pout, n=n64):
            for _ in BATCH:
                launch(stream, config, kernel, a, x, y, out, n)

        # The device buffers are known by address only; `driver` owns them (until its free(), not called here).
        register(results, ("cuda.core launch", 1), check, core_loop, core["sync"], (driver, stream, config, k_saxpy))
        many_pointers = [driver.to_device(a) for a in arrays]
        core_args = tuple(scalars) + tuple(many_pointers)

        def check_many():
            launch(stream, config, k_many, *core_args)
            return compare(driver.to_host(many_pointers[15], arrays[15])[:1], many_expected, "p15")

        def core_many(launch=launch, stream=stream, config=config, kernel=k_many, args=core_args):
            for _ in BATCH:
                launch(stream, config, kernel, *args)

        register(results, ("cuda.core launch", 16), check_many, core_many, core["sync"],
                 (driver, stream, config, k_many, core_args))
    else:
        results["cuda.core launch", 1] = results["cuda.core launch", 16] = NA(reason["core"])


def bindings_launches(sys_, reason, data, results):
    """cuda.bindings' cuLaunchKernel with prepacked kernelParams (the CUDA Python tutorial's way) into results."""
    driver = sys_["driver"][0]
    n, grid, hx, hy, expected, scalars, arrays, many_expected = data
    if driver and sys_["bindings"][0]:
        cu, functions = driver.cu, sys_["bindings"][0]
        stream0 = cu.CUstream(0)
        bx, by, bout = driver.to_device(hx), driver.to_device(hy), driver.to_device(np.zeros_like(hx))
        values = [np.array([A], np.float32), np.array([bx], np.uint64), np.array([by], np.uint64),
                  np.array([bout], np.uint64), np.array([n], np.uint64)]
        params = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        f = functions["saxpy"]

        def check():
            driver.call(cu.cuLaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, stream0, params.ctypes.data, 0), "cuLaunchKernel")
            return compare(driver.to_host(bout, hx), expected)

        def bindings_loop(cuLaunchKernel=cu.cuLaunchKernel, f=f, grid=grid, block=BLOCK, stream=stream0,
                          params=params.ctypes.data):
            for _ in BATCH:
                cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, stream, params, 0)

        # The loop knows the packed kernelParams only by its address: params, and the values it points to,
        # are kept with the row, or they would be freed when this function returns, before the turns. The
        # device buffers are `driver`'s (until its free(), not called here).
        register(results, ("cuda.bindings cuLaunchKernel", 1), check, bindings_loop, driver.synchronize,
                 (driver, params, values))
        many_pointers = [driver.to_device(a) for a in arrays]
        many_values = [np.array([s], np.float32) for s in scalars] + [np.array([p], np.uint64) for p in many_pointers]
        many_params = np.array([v.ctypes.data for v in many_values], dtype=np.uint64)
        g = functions["many"]

        def check_many():
            driver.call(cu.cuLaunchKernel(g, grid, 1, 1, BLOCK, 1, 1, 0, stream0, many_params.ctypes.data, 0),
                        "cuLaunchKernel")
            return compare(driver.to_host(many_pointers[15], arrays[15])[:1], many_expected, "p15")

        def bindings_many(cuLaunchKernel=cu.cuLaunchKernel, f=g, grid=grid, block=BLOCK, stream=stream0,
                          params=many_params.ctypes.data):
            for _ in BATCH:
                cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, stream, params, 0)

        register(results, ("cuda.bindings cuLaunchKernel", 16), check_many, bindings_many, driver.synchronize,
                 (driver, many_params, many_values))
    else:
        why = reason["bindings"] or reason["driver"]
        results["cuda.bindings cuLaunchKernel", 1] = results["cuda.bindings cuLaunchKernel", 16] = NA(why)


def cupy_launches(sys_, reason, data, results):
    """CuPy RawKernel's launches into results."""
    cupy = sys_["cupy"][0]
    n, grid, hx, hy, expected, scalars, arrays, many_expected = data
    if cupy:
        cp = cupy["cp"]
        k_saxpy, k_many = cupy["saxpy"], cupy["many"]
        cx, cy, cout = cp.asarray(hx), cp.asarray(hy), cp.zeros(n, cp.float32)
        a32, n64 = np.float32(A), np.uint64(n)
        sync = cp.cuda.Device().synchronize

        def check():
            k_saxpy((grid,), (BLOCK,), (a32, cx, cy, cout, n64))
            return compare(cp.asnumpy(cout), expected)

        def cupy_loop(kernel=k_saxpy, grid=(grid,), block=(BLOCK,), a=a32, x=cx, y=cy, out=cout, n=n64):
            for _ in BATCH:
                kernel(grid, block, (a, x, y, out, n))

        register(results, ("CuPy RawKernel", 1), check, cupy_loop, sync, (cx, cy, cout))
        c_arrays = [cp.asarray(a) for a in arrays]
        c_args = tuple(scalars) + tuple(c_arrays)

        def check_many():
            k_many((grid,), (BLOCK,), c_args)
            return compare(cp.asnumpy(c_arrays[15])[:1], many_expected, "p15")

        def cupy_many(kernel=k_many, grid=(grid,), block=(BLOCK,), args=c_args):
            for _ in BATCH:
                kernel(grid, block, args)

        register(results, ("CuPy RawKernel", 16), check_many, cupy_many, sync, (c_arrays, c_args))
    else:
        results["CuPy RawKernel", 1] = results["CuPy RawKernel", 16] = NA(reason["cupy"])


def torch_launches(sys_, reason, data, results):
    """PyTorch's torch.add into results: a reference (a different operation), not a peer."""
    torch = sys_["torch"][0]
    hx, hy, expected = data.hx, data.hy, data.expected
    if torch:
        tx, ty = torch.from_numpy(hx).cuda(), torch.from_numpy(hy).cuda()
        tout = torch.empty_like(tx)

        def check():
            torch.add(ty, tx, alpha=A, out=tout)  # y + a * x
            return compare(tout.cpu().numpy(), expected)

        def torch_loop(add=torch.add, x=tx, y=ty, a=A, out=tout):
            for _ in BATCH:
                add(y, x, alpha=a, out=out)

        register(results, ("PyTorch torch.add (reference)", 1), check, torch_loop, torch.cuda.synchronize,
                 (tx, ty, tout))
    else:
        results["PyTorch torch.add (reference)", 1] = NA(reason["torch"])


def launch_group(sys_, baseline):
    """The launch host-cost table, and its rows for results.json."""
    results = launch_results(sys_, baseline)
    rows, records = [], []
    for (system, args), value in results.items():
        base = results["C++ cuLaunchKernel", args]
        goal = ""
        suffix = ", SAXPY" if args == 1 else ", 16 + 16"
        cpp = "C++ cuLaunchKernel" + suffix
        if system.startswith("xcuda"):
            peers = {s: v for (s, a), v in results.items()
                     if a == args and not s.startswith(("xcuda", "C++", "PyTorch"))}
            goal = goal_ratio(value, base, LAUNCH_GOAL_VS_CPP[args], "C++") + "; " + goal_below_peers(value, peers)
            records.append((args, result_row(system + suffix, value, "us", cpp, base,
                                             f"<= {LAUNCH_GOAL_VS_CPP[args]:.2f}x")))
            peer_row = below_peers_row(system + suffix, value, "us", peers, suffix)
            records += [(args, peer_row)] if peer_row else []
        elif system.startswith("C++"):
            records.append((args, result_row(system + suffix, value, "us")))
        else:
            records.append((args, result_row(system + suffix, value, "us", cpp, base)))
        measure = "host us per launch, SAXPY n=4096" if args == 1 else "host us per launch, 16 scalars + 16 pointers"
        rows.append((args, system, measure, fmt(value, "us"), ratio(value, base), goal))
    rows.sort(key=lambda row: row[0])
    records.sort(key=lambda record: record[0])
    return (markdown_table(["system", "measure", "value", "ratio to C++", "goal"], [row[1:] for row in rows]),
            [record for _, record in records])


def kernel_group(sys_, baseline):
    """Rows of the SAXPY n = 2^24 kernel-time table."""
    xcuda, cupy = sys_["xcuda"][0], sys_["cupy"][0]
    n, grid = BIG_N, BIG_N // BLOCK
    hx, hy, expected = host_data(n)
    traffic = SAXPY_BYTES_PER_ELEMENT * n
    times = {}  # system -> us
    copies = {}  # copy system -> GB/s

    if isinstance(baseline, dict):
        times["C++ cuLaunchKernel + cuEvent"] = baseline.get("saxpy_kernel_us", NA("baseline printed no saxpy_kernel_us"))
        copies["C++ cuMemcpyDtoDAsync"] = baseline.get("copy_gbs", NA("baseline printed no copy_gbs"))
    else:
        times["C++ cuLaunchKernel + cuEvent"] = baseline
        copies["C++ cuMemcpyDtoDAsync"] = baseline

    if xcuda:
        saxpy = sys_["xcuda_saxpy"][0]
        x, y, out = xcuda.to_device(hx), xcuda.to_device(hy), xcuda.empty(n, np.float32)

        def check():
            saxpy[grid, BLOCK](A, x, y, out, n)
            return compare(out.copy_to_host(), expected)

        def timed():
            t = saxpy.time(grid, BLOCK, A, x, y, out, n, repeat=KERNEL_REPEAT, warmup=KERNEL_WARMUP)
            return t.median_ms * 1e3

        times["xcuda saxpy.time"] = attempt(check, timed)
        launcher = saxpy[grid, BLOCK]
        times["xcuda xcuda.Event loop"] = attempt(check, lambda: event_us(
            xcuda.Event, lambda: launcher(A, x, y, out, n), lambda s, e: s.elapsed_time(e)))
    else:
        times["xcuda saxpy.time"] = times["xcuda xcuda.Event loop"] = NA(sys_["xcuda"][1])

    if cupy:
        cp, kernel = cupy["cp"], cupy["saxpy"]
        cx, cy, cout = cp.asarray(hx), cp.asarray(hy), cp.zeros(n, cp.float32)
        a32, n64 = np.float32(A), np.uint64(n)

        def check():
            kernel((grid,), (BLOCK,), (a32, cx, cy, cout, n64))
            return compare(cp.asnumpy(cout), expected)

        times["CuPy RawKernel"] = attempt(check, lambda: event_us(
            cp.cuda.Event, lambda: kernel((grid,), (BLOCK,), (a32, cx, cy, cout, n64)), cp.cuda.get_elapsed_time))
        src, dst = cp.ones(COPY_BYTES, cp.uint8), cp.empty(COPY_BYTES, cp.uint8)
        runtime = cp.cuda.runtime

        def check_copy():
            runtime.memcpyAsync(dst.data.ptr, src.data.ptr, COPY_BYTES, runtime.memcpyDeviceToDevice, 0)
            return None if bool((dst == 1).all()) else "the copy differs from its source"

        copy_us = attempt(check_copy, lambda: event_us(
            cp.cuda.Event,
            lambda: runtime.memcpyAsync(dst.data.ptr, src.data.ptr, COPY_BYTES, runtime.memcpyDeviceToDevice, 0),
            cp.cuda.get_elapsed_time))
        copies["CuPy memcpyAsync D2D"] = 2 * COPY_BYTES / (copy_us * 1e-6) / 1e9 if measured(copy_us) else copy_us
    else:
        times["CuPy RawKernel"] = NA(sys_["cupy"][1])
        copies["CuPy memcpyAsync D2D"] = NA(sys_["cupy"][1])

    measured_copies = [v for v in copies.values() if measured(v)]
    ceiling = max(measured_copies) if measured_copies else NA("no copy measured")
    cupy_us = times["CuPy RawKernel"]
    rows = []
    records = kernel_records(times, copies, traffic)
    for system, us in times.items():
        gbs = traffic / (us * 1e-6) / 1e9 if measured(us) else us
        of_ceiling = f"{gbs / ceiling * 100:.1f}%" if measured(gbs) and measured(ceiling) else "n/a"
        goal = ""
        if system.startswith("xcuda"):
            goal = goal_ratio(us, cupy_us, KERNEL_GOAL_VS_CUPY, "CuPy")
            if measured(gbs) and measured(ceiling):
                share = gbs / ceiling
                verdict = "met" if share >= KERNEL_GOAL_OF_CEILING else "missed"
                goal += f"; >= 80% of copy ceiling: {verdict} ({share * 100:.1f}%, margin {(share - KERNEL_GOAL_OF_CEILING) * 100:+.1f} points)"
            else:
                goal += "; >= 80% of copy ceiling: n/a"
        rows.append((system, "SAXPY n=2^24, median of 100 (CUDA events)", fmt(us, "us"),
                     fmt(gbs, "GB/s", 0) if measured(gbs) else "n/a", ratio(us, cupy_us), of_ceiling, goal))
    for system, gbs in copies.items():
        copy_time = f"{2 * COPY_BYTES / (gbs * 1e9) * 1e6:.2f} us" if measured(gbs) else str(gbs)
        of_ceiling = f"{gbs / ceiling * 100:.1f}%" if measured(gbs) and measured(ceiling) else "n/a"
        rows.append((system, f"copy of {COPY_BYTES} bytes (ceiling; read + written counted)", copy_time,
                     fmt(gbs, "GB/s", 0) if measured(gbs) else "n/a", "", of_ceiling, ""))
    return markdown_table(["system", "measure", "value", "GB/s (12 B/element)", "ratio to CuPy",
                           "% of copy ceiling", "goal"], rows), records


def kernel_records(times, copies, traffic):
    """The SAXPY kernel table's rows for results.json: each time against CuPy's, then each bandwidth against
    the copy ceiling (the faster copy)."""
    records = []
    for system, us in times.items():
        if system == "CuPy RawKernel":
            records.append(result_row(system, us, "us"))
        else:
            goal = f"<= {KERNEL_GOAL_VS_CUPY:.2f}x" if system.startswith("xcuda") else None
            records.append(result_row(system, us, "us", "CuPy RawKernel", times["CuPy RawKernel"], goal))
    timed = {system: gbs for system, gbs in copies.items() if measured(gbs)}
    top = max(timed, key=timed.get) if timed else next(iter(copies))  # none measured: the first stands for it
    ceiling_name, ceiling = f"{top}, copy (the ceiling)", copies[top]
    for system, gbs in sorted(copies.items(), key=lambda item: item[0] != top):
        if system == top:
            records.append(result_row(ceiling_name, gbs, "GB/s", note=f"{COPY_BYTES} bytes copied, read + written counted"))
        else:
            records.append(result_row(f"{system}, copy", gbs, "GB/s", ceiling_name, ceiling))
    for system, us in times.items():
        gbs = traffic / (us * 1e-6) / 1e9 if measured(us) else us
        goal = f">= {KERNEL_GOAL_OF_CEILING:.2f}x" if system.startswith("xcuda") else None
        records.append(result_row(f"{system}, bandwidth", gbs, "GB/s", ceiling_name, ceiling, goal))
    return records


def e2e_group(sys_, baseline):
    """Rows of the tutorial end-to-end table."""
    xcuda, cupy = sys_["xcuda"][0], sys_["cupy"][0]
    n, grid = BIG_N, BIG_N // BLOCK
    hx, hy, expected = host_data(n)
    results = {}
    for system, key in (("C++ pageable (malloc)", "e2e_pageable_ms"),
                        ("C++ pageable, cuMemAlloc/cuMemFree timed", "e2e_pageable_alloc_ms"),
                        ("C++ page-locked (cuMemAllocHost)", "e2e_pinned_ms")):
        if isinstance(baseline, dict):
            results[system] = baseline.get(key, NA(f"baseline printed no {key}"))
        else:
            results[system] = baseline

    if xcuda:
        saxpy = sys_["xcuda_saxpy"][0]
        hout = np.zeros_like(hx)

        def one_call():
            saxpy[grid, BLOCK](A, hx, hy, hout, n)

        def check_one_call():
            hout[:] = 0
            one_call()
            return compare(hout, expected)

        def one_call_out():
            saxpy[grid, BLOCK](A, hx, hy, xcuda.Out(hout), n)

        def check_one_call_out():
            hout[:] = 0
            one_call_out()
            return compare(hout, expected)

        def explicit():
            x, y = xcuda.to_device(hx), xcuda.to_device(hy)
            out = xcuda.empty(n, np.float32)
            saxpy[grid, BLOCK](A, x, y, out, n)
            out.copy_to_host(out=hout)

        def check_explicit():
            hout[:] = 0
            explicit()
            return compare(hout, expected)

        px, py, pout = xcuda.empty(n, np.float32), xcuda.empty(n, np.float32), xcuda.empty(n, np.float32)

        def preallocated():
            px.copy_from(hx)
            py.copy_from(hy)
            saxpy[grid, BLOCK](A, px, py, pout, n)
            pout.copy_to_host(out=hout)

        def check_preallocated():
            hout[:] = 0
            preallocated()
            return compare(hout, expected)

        # Page-locked host arrays (xcuda.empty_pinned): the same steps as the C++ page-locked row.
        pinned_x, pinned_y = xcuda.empty_pinned(n, np.float32), xcuda.empty_pinned(n, np.float32)
        pinned_out = xcuda.empty_pinned(n, np.float32)
        pinned_x[:], pinned_y[:] = hx, hy

        def pinned_one_call():
            saxpy[grid, BLOCK](A, pinned_x, pinned_y, xcuda.Out(pinned_out), n)

        def check_pinned_one_call():
            pinned_out[:] = 0
            pinned_one_call()
            return compare(pinned_out, expected)

        def pinned_preallocated():
            px.copy_from(pinned_x)
            py.copy_from(pinned_y)
            saxpy[grid, BLOCK](A, px, py, pout, n)
            pout.copy_to_host(out=pinned_out)

        def check_pinned_preallocated():
            pinned_out[:] = 0
            pinned_preallocated()
            return compare(pinned_out, expected)

        results["xcuda saxpy[g, b](a, x_np, y_np, out_np, n)"] = attempt(check_one_call, lambda: wall_ms(one_call))
        results["xcuda saxpy[g, b](a, x_np, y_np, xcuda.Out(out_np), n)"] = attempt(
            check_one_call_out, lambda: wall_ms(one_call_out))
        results["xcuda to_device / empty / launch / copy_to_host"] = attempt(check_explicit, lambda: wall_ms(explicit))
        results["xcuda preallocated: copy_from / launch / copy_to_host(out=)"] = attempt(
            check_preallocated, lambda: wall_ms(preallocated))
        results["xcuda page-locked (empty_pinned): saxpy[g, b](a, x, y, xcuda.Out(out), n)"] = attempt(
            check_pinned_one_call, lambda: wall_ms(pinned_one_call))
        results["xcuda page-locked (empty_pinned), preallocated device arrays"] = attempt(
            check_pinned_preallocated, lambda: wall_ms(pinned_preallocated))
        results.update(pageable_way_rows(xcuda, saxpy, hx, hy, expected))
    else:
        for system in ("xcuda saxpy[g, b](a, x_np, y_np, out_np, n)",
                       "xcuda saxpy[g, b](a, x_np, y_np, xcuda.Out(out_np), n)", "xcuda to_device / empty / launch / copy_to_host",
                       "xcuda preallocated: copy_from / launch / copy_to_host(out=)",
                       "xcuda page-locked (empty_pinned): saxpy[g, b](a, x, y, xcuda.Out(out), n)",
                       "xcuda page-locked (empty_pinned), preallocated device arrays"):
            results[system] = NA(sys_["xcuda"][1])

    if cupy:
        cp, kernel = cupy["cp"], cupy["saxpy"]
        a32, n64 = np.float32(A), np.uint64(n)

        def cupy_run():
            x, y = cp.asarray(hx), cp.asarray(hy)
            out = cp.empty(n, cp.float32)
            kernel((grid,), (BLOCK,), (a32, x, y, out, n64))
            return cp.asnumpy(out)

        results["CuPy asarray / RawKernel / asnumpy (reference)"] = attempt(
            lambda: compare(cupy_run(), expected), lambda: wall_ms(cupy_run))
    else:
        results["CuPy asarray / RawKernel / asnumpy (reference)"] = NA(sys_["cupy"][1])

    base = results["C++ pageable (malloc)"]
    pinned = "C++ page-locked (cuMemAllocHost)"
    pinned_base = results[pinned]
    rows, records = [], []
    for system, ms in results.items():
        # Every xcuda row from pageable numpy arrays is held to the bus limit (C++ from page-locked
        # memory, within 1.5x); the page-locked xcuda rows to the same C++ steps within 1.1x.
        goal = limit = None
        if system.startswith("xcuda"):
            limit = E2E_GOAL_VS_CPP if "page-locked" in system else PAGEABLE_GOAL_VS_PINNED_CPP
            goal = goal_ratio(ms, pinned_base, limit, "C++ page-locked")
        rows.append((system, "H2D x, y + SAXPY n=2^24 + D2H out, host ms", fmt(ms, "ms"), ratio(ms, base),
                     ratio(ms, pinned_base), goal or ""))
        records.append(result_row(system, ms, "ms") if system == pinned else
                       result_row(system, ms, "ms", pinned, pinned_base, limit and f"<= {limit:.2f}x"))
    return markdown_table(["system", "measure", "value", "ratio to C++ pageable", "ratio to C++ page-locked", "goal"],
                          rows), records


# The ways of xcuda.transfer_options(pageable=...) measured side by side, with the staging knobs each
# uses (the others at their defaults).
PAGEABLE_WAYS = (
    ("auto", {}),
    ("registered", {}),
    ("per-copy", {}),
    ("staged", {}),
    ("staged", {"staging_threads": 8, "staging_chunk_mb": 16, "staging_buffers": 8}),
    ("staged", {"staging_threads": 16, "staging_chunk_mb": 32, "staging_buffers": 4}),
    ("driver", {}),
)
FRESH_WAYS = ("auto", "registered", "per-copy", "staged")


def way_label(mode, knobs):
    text = f"pageable='{mode}'"
    if knobs:
        text += ", " + ", ".join(f"{key}={value}" for key, value in knobs.items())
    return text


def pageable_way_rows(xcuda, saxpy, hx, hy, expected):
    """The one-call tutorial from pageable numpy arrays in each way of copying them: the same arrays every
    run (what registration caches), and new arrays every run (its worst case: a registration per array)."""
    n, grid = BIG_N, BIG_N // BLOCK
    defaults = xcuda.transfer_options()
    restore = {key: defaults[key] for key in ("pageable", "staging_threads", "staging_chunk_mb", "staging_buffers")}
    hout = np.zeros_like(hx)
    rows = {}

    def one_call():
        saxpy[grid, BLOCK](A, hx, hy, hout, n)

    def check():
        hout[:] = 0
        one_call()
        return compare(hout, expected)

    def fresh_arrays():
        # New arrays with every page touched, made outside the timed region.
        return hx.copy(), hy.copy(), np.zeros_like(hx)

    def fresh_call(x, y, out):
        saxpy[grid, BLOCK](A, x, y, out, n)

    def check_fresh():
        x, y, out = fresh_arrays()
        fresh_call(x, y, out)
        return compare(out, expected)

    try:
        for mode, knobs in PAGEABLE_WAYS:
            xcuda.transfer_options(**dict(restore, pageable=mode, **knobs))
            rows[f"xcuda one call, {way_label(mode, knobs)}"] = attempt(check, lambda: wall_ms(one_call))
            if mode in FRESH_WAYS and not knobs:
                rows[f"xcuda one call, new numpy arrays every run, {way_label(mode, knobs)}"] = attempt(
                    check_fresh, lambda: prepared_wall_ms(fresh_arrays, fresh_call))
    finally:
        xcuda.transfer_options(**restore)
    return rows


def prepared_wall_ms(prepare, run, repeat=10, warmup=2):
    """Median host wall time of run(*prepare()) over `repeat` after `warmup`, prepare() outside the timer."""
    for _ in range(warmup):
        run(*prepare())
    samples = []
    for _ in range(repeat):
        arguments = prepare()
        start = time.perf_counter()
        run(*arguments)
        samples.append((time.perf_counter() - start) * 1e3)
        del arguments
    return statistics.median(samples)


# ---- set-up ----------------------------------------------------------------------------------------

def load_systems(gpu, gpu_reason):
    """Import and initialise every system; each entry is (object or None, reason or None)."""
    systems = {}
    no_gpu = f"no GPU: {gpu_reason}" if gpu_reason else None

    def load_xcuda():
        import xcuda
        return xcuda

    systems["xcuda"] = load_system("xcuda", load_xcuda, None)
    if systems["xcuda"][0]:
        xcuda = systems["xcuda"][0]
        try:
            # Compiles without a GPU too (PTX for compute_75), so the sources are checked here as well.
            systems["xcuda_saxpy"] = (xcuda.compile(SAXPY_SRC, name="bench_saxpy").saxpy, None)
            systems["xcuda_many"] = (xcuda.compile(MANY_SRC, name="bench_many").many, None)
        except Exception as error:
            systems["xcuda"] = (None, f"xcuda.compile failed: {short_error(error)}")
    elif not (BUILD / "python").is_dir():
        systems["xcuda"] = (None, f"no xcuda module: {BUILD / 'python'} does not exist (set XCUDA_BUILD_DIR)")
    if no_gpu and systems["xcuda"][0]:
        systems["xcuda"] = (None, no_gpu)

    def load_cupy():
        import cupy as cp
        if gpu_reason:
            raise RuntimeError(gpu_reason)
        options = ("--std=c++17",)
        return {"cp": cp, "saxpy": cp.RawKernel(SAXPY_SRC, "saxpy", options=options),
                "many": cp.RawKernel(MANY_SRC, "many", options=options)}

    def load_torch():
        import torch
        if gpu_reason:
            raise RuntimeError(gpu_reason)
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        torch.zeros(1, device="cuda")
        return torch

    def load_driver():
        from cuda.bindings import driver  # noqa: F401 (import error first)
        if gpu_reason:
            raise RuntimeError(gpu_reason)
        return Driver()

    systems["cupy"] = load_system("CuPy", load_cupy, gpu_reason)
    systems["torch"] = load_system("PyTorch", load_torch, gpu_reason)
    systems["driver"] = load_system("cuda.bindings", load_driver, gpu_reason)
    driver = systems["driver"][0]

    def load_bindings():
        cubin = np.frombuffer(nvrtc_cubin(SAXPY_SRC + MANY_SRC, gpu["arch"]), dtype=np.uint8)
        module = driver.call(driver.cu.cuModuleLoadData(cubin.ctypes.data), "cuModuleLoadData")
        return {name: driver.call(driver.cu.cuModuleGetFunction(module, name.encode()), "cuModuleGetFunction")
                for name in ("saxpy", "many")}

    def load_core():
        try:
            from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
        except ImportError:
            from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
        if not driver:
            raise RuntimeError(systems["driver"][1])
        device = Device(0)
        device.set_current()
        program = Program(SAXPY_SRC + MANY_SRC, code_type="c++",
                          options=ProgramOptions(arch=gpu["arch"], std="c++17"))
        code = program.compile("cubin")
        stream = getattr(device, "default_stream", None) or device.create_stream()
        return {"launch": launch, "LaunchConfig": LaunchConfig, "stream": stream, "sync": device.sync,
                "saxpy": code.get_kernel("saxpy"), "many": code.get_kernel("many")}

    if driver:
        systems["bindings"] = load_system("cuda.bindings", load_bindings, gpu_reason)
        systems["core"] = load_system("cuda.core", load_core, gpu_reason)
    else:
        systems["bindings"] = (None, systems["driver"][1])
        systems["core"] = load_system("cuda.core", load_core, gpu_reason)
    return systems


def versions(systems):
    parts = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    xcuda = sys.modules.get("xcuda")
    if xcuda:
        parts.append(f"xcuda {xcuda.__version__} (NVRTC {'.'.join(map(str, xcuda.nvrtc_version()))})")
    for module in ("cupy", "torch", "cuda.core", "cuda.bindings"):
        if module in sys.modules:
            parts.append(f"{module} {getattr(sys.modules[module], '__version__', '?')}")
    return ", ".join(parts)


def process_state(systems):
    """The threads of this process by name and the CPUs each may run on (/proc/self/task), and xcuda's
    transfer settings: a staged copy's speed depends on its copy threads having cores to run on."""
    groups = {}
    try:
        for task in os.listdir("/proc/self/task"):
            try:
                name = Path(f"/proc/self/task/{task}/comm").read_text().strip()
                status = Path(f"/proc/self/task/{task}/status").read_text()
            except OSError:
                continue  # the thread ended meanwhile
            cpus = next((line.split(":", 1)[1].strip() for line in status.splitlines()
                         if line.startswith("Cpus_allowed_list:")), "?")
            groups[name, cpus] = groups.get((name, cpus), 0) + 1
    except OSError as error:
        return f"- threads: n/a ({short_error(error)})"
    lines = [f"- threads: {sum(groups.values())}; by name and allowed CPUs: " +
             "; ".join(f"{count} x {name!r} on CPUs {cpus}" for (name, cpus), count in sorted(groups.items()))]
    xcuda = systems.get("xcuda", (None, None))[0]
    if xcuda is not None:
        try:
            settings = xcuda.transfer_options()
            lines.append("- xcuda.transfer_options(): " + ", ".join(f"{key}={value}" for key, value in settings.items()))
        except Exception as error:  # a report line, never a failure of the benchmark
            lines.append(f"- xcuda.transfer_options(): n/a ({short_error(error)})")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a prebuilt launch_baseline executable (default: build it with nvcc)")
    parser.add_argument("--out", help="also write the tables (markdown) to this file")
    parser.add_argument("--launch-json", help="measure only the launch host costs and write them to this file as "
                        "JSON (one round of tests/bench/launch_rounds.py)")
    add_results_option(parser)
    options = parser.parse_args()

    gpu, gpu_reason = probe_gpu()
    if gpu_reason:
        print(f"No GPU: {gpu_reason}. Nothing can be timed here; the C++ baseline is only built and the "
              "kernels only compiled, and every row shows n/a.\n", flush=True)

    with tempfile.TemporaryDirectory(prefix="xcuda-bench-") as folder:
        if options.baseline:
            path, build_reason = Path(options.baseline), None
            if not path.is_file():
                path, build_reason = None, f"no baseline at {options.baseline}"
        else:
            path, build_reason = build_baseline(folder)
        if build_reason:
            baseline = NA(build_reason)
        elif gpu_reason:
            baseline = NA(f"no GPU: {gpu_reason}")
            print(f"C++ baseline {'found' if options.baseline else 'built'} ({path}); not run without a GPU.\n")
        else:
            print(f"running the C++ baseline {path} ...", flush=True)
            baseline = run_baseline(path)

    systems = load_systems(gpu, gpu_reason)
    if options.launch_json:
        results = launch_results(systems, baseline)
        Path(options.launch_json).write_text(json.dumps(
            [{"system": system, "arguments": args, "us": value if measured(value) else None,
              "why": None if measured(value) else value.reason} for (system, args), value in results.items()]))
        return 0
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    header = [
        "# xcuda GPU benchmark",
        "",
        f"- date: {now}",
        f"- device: {gpu['name'] + ' (' + gpu['arch'] + ')' if gpu else 'none: ' + gpu_reason}",
        f"- driver: {'CUDA ' + gpu['driver'] if gpu else 'none'}",
        f"- host: {platform.node()}, {versions(systems)}",
        f"- C++ baseline: {'ran' if isinstance(baseline, dict) else baseline}",
    ]
    sections, entries = [], []
    show_section(sections, "\n".join(header))
    for title, group in (("Launch host cost (median of 25 batches of 1000 async launches)", launch_group),
                         ("SAXPY kernel time, n = 2^24 (grid 65536, block 256)", kernel_group),
                         ("CUDA Python tutorial end to end, n = 2^24, pageable numpy arrays", e2e_group)):
        table, rows = group(systems, baseline)
        show_section(sections, f"## {title}\n\n{table}")
        entries.append(results_entry(group, rows, gpu, systems))
    show_section(sections, "## This process after the tables\n\n" + process_state(systems))
    write_report(options.out, sections)
    write_results(options.results, *entries)
    return 0


# The tables' entries in results.json: (name, title, note).
RESULTS_TABLES = {
    launch_group: ("gpu-launch", "Launch host cost: SAXPY n = 4096 and 16 scalars + 16 pointers, median of 25 "
                   "batches of 1000 async launches", "One process' figures move by a fifth between runs: goal 1 is "
                   "judged by launch-rounds' medians."),
    kernel_group: ("gpu-saxpy-kernel", "SAXPY kernel time, n = 2^24, median of 100 by CUDA events",
                   "Bandwidth counts x, y and out (12 bytes an element); the ceiling is a device-to-device copy of "
                   "6n bytes, read and written counted."),
    e2e_group: ("gpu-tutorial", "The CUDA Python tutorial end to end, n = 2^24, from pageable numpy arrays: H2D x, "
                "y, SAXPY, D2H out, host ms, median of 20", "Every xcuda row from pageable arrays is held to C++ from "
                "page-locked memory (the bus limit) within 1.5x, the page-locked rows within 1.1x; the pageable='...' "
                "rows are the ways of xcuda.transfer_options."),
}


def results_entry(group, rows, gpu, systems):
    name, title, note = RESULTS_TABLES[group]
    return benchmark_entry(name, title, rows, device_text(gpu, "none"), gpu is not None,
                           note=f"{versions(systems)}. {note}")


if __name__ == "__main__":
    sys.exit(main())
