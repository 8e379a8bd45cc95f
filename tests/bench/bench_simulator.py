"""The PTX simulator's speed (XCUDA_DEVICE=simulator, docs/simulator.md): simulated thread-instructions
per second for SAXPY, a shared-memory block reduction and a warp shuffle scan, beside numpy doing the
same work in the same run (the baseline of the ratio column). No assertion on any time. Each kernel's
result is checked against numpy's before its row is printed.

    XCUDA_DEVICE=simulator PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_simulator.py [--n 1048576]

It sets XCUDA_DEVICE=simulator itself when unset, and finds build/python next to the checkout. The
thread-instructions are the simulator's own count (each instruction times its active lanes), read from
libxcuda-sim.so's xcuda_sim_counter. Inputs and outputs are device arrays, so the timed launch copies
nothing; the time is the wall time of launch + synchronize, the median of the repeats.
"""
import argparse
import ctypes
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("XCUDA_DEVICE", "simulator")
os.environ.pop("XCUDA_LIBCUDA", None)
sys.path.insert(0, str(Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")) / "python"))

import numpy as np  # noqa: E402

import xcuda  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import add_results_option, benchmark_entry, result_row, write_results  # noqa: E402

GOAL_PER_CORE = 100  # M simulated thread-instructions a second on one host thread (issue 24)

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

WARP_SCAN = r"""
extern "C" __global__ void warp_scan(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = i < n ? in[i] : 0;
    for (int d = 1; d < 32; d <<= 1)
    {
        int up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    if (i < n) out[i] = v;  // the inclusive scan of each warp's 32 values
}
"""


def counter(name):
    library = ctypes.CDLL(str(Path(xcuda.__file__).parent / "libxcuda-sim.so"))
    library.xcuda_sim_counter.restype = ctypes.c_ulonglong
    return library.xcuda_sim_counter(name.encode())


def median_s(run, repeat):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def measure(run, repeat):
    run()  # warm-up: module load
    before = counter("thread_instructions")
    launches = counter("launches")
    seconds = median_s(run, repeat)
    per_launch = (counter("thread_instructions") - before) / max(1, counter("launches") - launches)
    return seconds, per_launch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="the pool measured beside one thread (default: the cores)")
    add_results_option(parser)
    args = parser.parse_args()
    if "simulator" not in str(xcuda.info()):
        sys.exit("bench_simulator: xcuda is not on the simulator (XCUDA_DEVICE=simulator, libxcuda-sim.so in build/python)")
    n = args.n
    rng = np.random.default_rng(1)
    x_host, y_host = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    x, y, out = xcuda.to_device(x_host), xcuda.to_device(y_host), xcuda.zeros(n, "float32")
    saxpy = xcuda.compile(SAXPY, name="bench_sim_saxpy").saxpy
    block_sum = xcuda.compile(BLOCK_SUM, name="bench_sim_block_sum").block_sum
    warp_scan = xcuda.compile(WARP_SCAN, name="bench_sim_warp_scan").warp_scan
    grid = (n + 255) // 256
    sums = xcuda.zeros(grid, "float32")
    ints_host = rng.integers(-1000, 1000, n, dtype=np.int32)
    ints, scanned = xcuda.to_device(ints_host), xcuda.zeros(n, "int32")

    def run_saxpy():
        saxpy[grid, 256](np.float32(2.0), x, y, out, n)
        xcuda.synchronize()

    def run_sum():
        block_sum[grid, 256](x, sums, n)
        xcuda.synchronize()

    def run_scan():
        warp_scan[grid, 256](ints, scanned, n)
        xcuda.synchronize()

    def numpy_scan():
        padded = np.zeros((n + 31) // 32 * 32, np.int32)
        padded[:n] = ints_host
        return np.cumsum(padded.reshape(-1, 32), axis=1, dtype=np.int32).reshape(-1)[:n]

    def numpy_sum():
        return (x_host.reshape(-1, 256).sum(axis=1) if n % 256 == 0
                else np.add.reduceat(x_host, np.arange(0, n, 256)))

    # Each kernel's result against numpy's, before anything is timed (a wrong simulator is not measured).
    run_saxpy()
    np.testing.assert_array_equal(out.copy_to_host(), np.float32(2.0) * x_host + y_host)
    run_sum()
    np.testing.assert_allclose(sums.copy_to_host(), numpy_sum(), rtol=1e-5)
    run_scan()
    np.testing.assert_array_equal(scanned.copy_to_host(), numpy_scan())

    # The blocks of a launch run on XCUDA_SIM_THREADS host threads (read at each launch): one, then the
    # pool (--threads, default the machine's cores).
    pool = args.threads or os.cpu_count() or 1
    rows = []
    for name, run, host in (
            ("saxpy", run_saxpy, lambda: np.float32(2.0) * x_host + y_host),
            ("block_sum (shared memory, bar.sync)", run_sum, numpy_sum),
            ("warp_scan (shfl.sync.up, int32)", run_scan, numpy_scan)):
        numpy_s = median_s(host, args.repeat)
        for threads in sorted({1, pool}):
            os.environ["XCUDA_SIM_THREADS"] = str(threads)
            seconds, instructions = measure(run, args.repeat)
            rows.append((name, threads, instructions, seconds, instructions / seconds, numpy_s, seconds / numpy_s))
    print(f"PTX simulator, n = {n} threads, 256 per block, 1 and {pool} host threads (median of {args.repeat})")
    print(f"{'kernel':38} {'threads':>7} {'thread-instr':>13} {'sim ms':>9} {'M thread-instr/s':>17} {'numpy ms':>9} "
          f"{'sim/numpy':>10}")
    for name, threads, instructions, seconds, rate, numpy_s, ratio in rows:
        print(f"{name:38} {threads:7d} {instructions:13.0f} {seconds * 1e3:9.1f} {rate / 1e6:17.1f} {numpy_s * 1e3:9.2f} "
              f"{ratio:9.0f}x")
    write_results(args.results, benchmark_entry(
        "simulator", f"The PTX simulator: simulated thread-instructions per second, n = {n} threads",
        results_rows(rows), "the PTX simulator (libxcuda-sim.so)", False,
        note=f"256 threads a block, median of {args.repeat}; each kernel's result checked against numpy's first. "
             f"Issue 24's goal: {GOAL_PER_CORE} M a second on one core."))


def results_rows(rows):
    """The table as rows of results.json: the rate of each kernel and pool, the one-thread rows held to the goal."""
    return [result_row(f"{name}, {threads} host thread{'s' if threads > 1 else ''}", rate / 1e6, "M thread-instr/s",
                       goal=f">= {GOAL_PER_CORE} M thread-instr/s" if threads == 1 else None,
                       note=f"{seconds * 1e3:.1f} ms a launch; numpy {numpy_s * 1e3:.2f} ms ({ratio:.0f}x faster)")
            for name, threads, instructions, seconds, rate, numpy_s, ratio in rows]

if __name__ == "__main__":
    main()
