"""The PTX simulator's speed (XCUDA_DEVICE=simulator, docs/simulator.md): simulated thread-instructions
per second for SAXPY, a shared-memory block reduction, a warp shuffle scan and a naive matrix multiply, beside
numpy doing the same work (the sim/numpy column), and, with --base, beside another build of the simulator
measured in the same run (the ratio column). No assertion on any time. Each kernel's result is checked against
numpy's before its row is printed.

    XCUDA_BUILD_DIR=build /usr/bin/python3 tests/bench/bench_simulator.py [--n 1048576] [--base build-base]
        [--base-label 392819b] [--rounds 3] [--matmul 5120,256,5120] [--results]

Each build runs in processes of its own (XCUDA_BUILD_DIR names the build whose build/python is imported), base
and new in turn for --rounds rounds; a row is the median of the rounds, its note the spread. The
thread-instructions are the simulator's own count (each instruction times its active lanes), read from
libxcuda-sim.so's xcuda_sim_counter. Inputs and outputs are device arrays, so the timed launch copies nothing;
the time is the wall time of launch + synchronize, the median of --repeat launches. The blocks of a launch run
on XCUDA_SIM_THREADS host threads (read at each launch): one, then the pool (--threads, default the cores).

The matrix multiply runs twice: at 512x256 by 256x512 in every round (the base build takes about ten seconds
for it), and once at --matmul's size (issue 46's goal: 5120x256 by 256x5120 in under 60 s) with the new build
and the pool only; --matmul none leaves that out.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import add_results_option, benchmark_entry, ranges_overlap, result_row, write_results  # noqa: E402

GOAL_PER_CORE = 100  # M simulated thread-instructions a second on one host thread (issue 24)
GOAL_POOL = 1000     # M a second with every host thread, SAXPY, reduction and scan (issue 46)
GOAL_MATMUL_S = 60   # seconds for the naive 5120x256 by 256x5120 multiply (issue 46)
SMALL_MATMUL = (512, 256, 512)

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

MATMUL = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* c, int m, int k, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n)
    {
        float sum = 0.0f;
        for (int i = 0; i < k; ++i)
            sum += a[row * k + i] * b[i * n + col];
        c[row * n + col] = sum;
    }
}
"""

KERNELS = ("saxpy", "block_sum (shared memory, bar.sync)", "warp_scan (shfl.sync.up, int32)")


def matmul_name(size):
    m, k, n = size
    return f"naive matmul {m}x{k} by {k}x{n}"


def median_s(run, repeat):
    import time
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def measure_child(args):
    """In a process of one build: each kernel checked against numpy, then timed; one JSON line per measurement."""
    os.environ.setdefault("XCUDA_DEVICE", "simulator")
    os.environ.pop("XCUDA_LIBCUDA", None)
    sys.path.insert(0, str(Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")) / "python"))
    import ctypes
    import xcuda
    if "simulator" not in str(xcuda.info()):
        sys.exit("bench_simulator: xcuda is not on the simulator (XCUDA_DEVICE=simulator, libxcuda-sim.so in build/python)")
    library = ctypes.CDLL(str(Path(xcuda.__file__).parent / "libxcuda-sim.so"))
    library.xcuda_sim_counter.restype = ctypes.c_ulonglong

    def counter(name):
        return library.xcuda_sim_counter(name.encode())

    def measure(name, threads, run, repeat, warm=None):
        os.environ["XCUDA_SIM_THREADS"] = str(threads)
        (warm or run)()  # warm-up: module load
        before, launches = counter("thread_instructions"), counter("launches")
        seconds = median_s(run, repeat)
        instructions = (counter("thread_instructions") - before) / max(1, counter("launches") - launches)
        print(json.dumps({"kernel": name, "threads": threads, "instructions": instructions, "seconds": seconds}),
              flush=True)

    n = args.n
    rng = np.random.default_rng(1)
    x_host, y_host = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    x, y, out = xcuda.to_device(x_host), xcuda.to_device(y_host), xcuda.zeros(n, "float32")
    grid = (n + 255) // 256
    sums = xcuda.zeros(grid, "float32")
    ints_host = rng.integers(-1000, 1000, n, dtype=np.int32)
    ints, scanned = xcuda.to_device(ints_host), xcuda.zeros(n, "int32")
    saxpy = xcuda.compile(SAXPY, name="bench_sim_saxpy").saxpy
    block_sum = xcuda.compile(BLOCK_SUM, name="bench_sim_block_sum").block_sum
    warp_scan = xcuda.compile(WARP_SCAN, name="bench_sim_warp_scan").warp_scan
    matmul = xcuda.compile(MATMUL, name="bench_sim_matmul").matmul

    def matrices(size):
        m, k, n_ = size
        a_host, b_host = rng.random((m, k), dtype=np.float32), rng.random((k, n_), dtype=np.float32)
        a, b, c = xcuda.to_device(a_host), xcuda.to_device(b_host), xcuda.zeros(m * n_, "float32")
        run = lambda: (matmul[(n_ // 16, m // 16), (16, 16)](a, b, c, np.int32(m), np.int32(k), np.int32(n_)),  # noqa: E731
                       xcuda.synchronize())
        warm = lambda: (matmul[(1, 1), (16, 16)](a, b, c, np.int32(16), np.int32(k), np.int32(16)),  # noqa: E731
                        xcuda.synchronize())
        return run, warm, (lambda: np.testing.assert_allclose(c.copy_to_host().reshape(m, n_), a_host @ b_host,
                                                              rtol=1e-4))

    pool = args.threads or os.cpu_count() or 1
    if args.child_matmul:  # the large multiply alone
        run, warm, check = matrices(args.child_matmul)
        measure(matmul_name(args.child_matmul), pool, run, 1, warm)
        check()
        return
    runs = {
        KERNELS[0]: lambda: (saxpy[grid, 256](np.float32(2.0), x, y, out, n), xcuda.synchronize()),
        KERNELS[1]: lambda: (block_sum[grid, 256](x, sums, n), xcuda.synchronize()),
        KERNELS[2]: lambda: (warp_scan[grid, 256](ints, scanned, n), xcuda.synchronize()),
    }
    # Each kernel's result against numpy's, before anything is timed (a wrong simulator is not measured).
    runs[KERNELS[0]]()
    np.testing.assert_array_equal(out.copy_to_host(), np.float32(2.0) * x_host + y_host)
    runs[KERNELS[1]]()
    np.testing.assert_allclose(sums.copy_to_host(), numpy_sum(x_host), rtol=1e-5)
    runs[KERNELS[2]]()
    np.testing.assert_array_equal(scanned.copy_to_host(), numpy_scan(ints_host))
    for name, run in runs.items():
        for threads in sorted({1, pool}):
            measure(name, threads, run, args.repeat)

    run, warm, check = matrices(SMALL_MATMUL)
    measure(matmul_name(SMALL_MATMUL), pool, run, 1, warm)
    check()


def numpy_scan(ints_host):
    n = len(ints_host)
    padded = np.zeros((n + 31) // 32 * 32, np.int32)
    padded[:n] = ints_host
    return np.cumsum(padded.reshape(-1, 32), axis=1, dtype=np.int32).reshape(-1)[:n]


def numpy_sum(x_host):
    n = len(x_host)
    return x_host.reshape(-1, 256).sum(axis=1) if n % 256 == 0 else np.add.reduceat(x_host, np.arange(0, n, 256))


def run_child(build, args, matmul=None):
    """One process of `build`: its measurements, {(kernel, threads): (instructions, seconds)}."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--n", str(args.n), "--repeat",
               str(args.repeat), "--threads", str(args.threads)]
    if matmul:
        command += ["--child-matmul", ",".join(map(str, matmul))]
    ran = subprocess.run(command, env=dict(os.environ, XCUDA_BUILD_DIR=str(Path(build).resolve())),
                         capture_output=True, text=True)
    if ran.returncode != 0:
        sys.exit(f"bench_simulator: the run of {build} failed:\n{ran.stderr[-3000:]}")
    rows = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    return {(r["kernel"], r["threads"]): (r["instructions"], r["seconds"]) for r in rows}


def compared(new, base):
    """'N.NNx faster', or 'level with' when the ranges of the rounds overlap (inside the machine's noise)."""
    if ranges_overlap(new, base):
        return "level with"
    return f"{statistics.median(new) / statistics.median(base):.2f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="the pool measured beside one thread (default: the cores)")
    parser.add_argument("--base", help="another build folder (its python/xcuda) measured in the same run")
    parser.add_argument("--base-label", default="", help="what the base build is (a commit), for the rows' names")
    parser.add_argument("--rounds", type=int, default=3, help="base and new in turn this many times")
    parser.add_argument("--matmul", default="5120,256,5120", help="M,K,N of the one large multiply, or none")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-matmul", type=lambda t: tuple(int(v) for v in t.split(",")), help=argparse.SUPPRESS)
    add_results_option(parser)
    args = parser.parse_args()
    if args.child:
        measure_child(args)
        return
    new_build = os.environ.get("XCUDA_BUILD_DIR", str(REPO / "build"))
    builds = [("new", new_build)] + ([("base", args.base)] if args.base else [])
    samples = {}  # (which, kernel, threads) -> [(instructions, seconds)] over rounds
    for round_ in range(args.rounds):
        for which, build in (builds if round_ % 2 == 0 else builds[::-1]):
            for key, value in run_child(build, args).items():
                samples.setdefault((which,) + key, []).append(value)
    large = None if args.matmul == "none" else tuple(int(v) for v in args.matmul.split(","))
    if large:
        for key, value in run_child(new_build, args, large).items():
            if key[0] == matmul_name(large):
                samples.setdefault(("new",) + key, []).append(value)
    report(args, samples, large)


def numpy_times(args):
    rng = np.random.default_rng(1)
    x_host, y_host = rng.random(args.n, dtype=np.float32), rng.random(args.n, dtype=np.float32)
    ints_host = rng.integers(-1000, 1000, args.n, dtype=np.int32)
    return {KERNELS[0]: median_s(lambda: np.float32(2.0) * x_host + y_host, 5),
            KERNELS[1]: median_s(lambda: numpy_sum(x_host), 5), KERNELS[2]: median_s(lambda: numpy_scan(ints_host), 5)}


def report(args, samples, large):
    label = f"today's build ({args.base_label or args.base})"
    numpy_s = numpy_times(args)
    print(f"PTX simulator, n = {args.n} threads, 256 per block; medians of {args.rounds} rounds"
          + (f", each with the base build {args.base} in its own processes" if args.base else ""))
    print(f"{'kernel':40} {'threads':>7} {'thread-instr':>13} {'sim ms':>9} {'M thread-instr/s':>17} {'base M/s':>9} "
          f"{'new/base':>11} {'sim/numpy':>10}")
    rows = []
    for (which, kernel, threads), values in samples.items():
        if which != "new":
            continue
        rates = [i / s / 1e6 for i, s in values]
        seconds = statistics.median(s for _, s in values)
        base_values = samples.get(("base", kernel, threads))
        base_rates = [i / s / 1e6 for i, s in base_values] if base_values else None
        versus = compared(rates, base_rates) if base_rates else ""
        numpy_ratio = f"{seconds / numpy_s[kernel]:9.0f}x" if kernel in numpy_s else ""
        print(f"{kernel:40} {threads:7d} {values[0][0]:13.0f} {seconds * 1e3:9.1f} {statistics.median(rates):17.1f} "
              f"{statistics.median(base_rates) if base_rates else float('nan'):9.1f} {versus:>11} {numpy_ratio:>10}")
        rows.append((kernel, threads, rates, seconds, base_rates, versus))
    write_results(args.results, benchmark_entry(
        "simulator", f"The PTX simulator: simulated thread-instructions per second, n = {args.n} threads",
        results_rows(rows, label, large), "the PTX simulator (libxcuda-sim.so)", False,
        note=f"256 threads a block (the multiply 16x16); each kernel's result checked against numpy's first. "
             f"Medians of {args.rounds} rounds" + (f", the base build {args.base} in turn in processes of its own, "
                                                    f"'level with' where the rounds' ranges overlap" if args.base else "")
             + f". Goals: issue 24's {GOAL_PER_CORE} M a second on one core; issue 46's {GOAL_POOL} M a second with "
               f"every host thread and the {matmul_name(large or (5120, 256, 5120))} in under {GOAL_MATMUL_S} s. "
               f"The machine's {os.cpu_count()} cores are shared with other work (load average "
               f"{os.getloadavg()[0]:.1f} at the end): the spread is in each note."))


def results_rows(rows, label, large):
    """The table as rows of results.json: the base build's rate (no goal), then the new build's with its ratio to it
    and the issues' goals; the large multiply as seconds."""
    out = []
    for kernel, threads, rates, seconds, base_rates, versus in rows:
        name = f"{kernel}, {threads} host thread{'s' if threads > 1 else ''}"
        spread = f"{min(rates):.0f}-{max(rates):.0f} over {len(rates)} round{'s' if len(rates) > 1 else ''}"
        if kernel == matmul_name(large or (0, 0, 0)):
            out.append(result_row(name, seconds, "s", goal=f"< {GOAL_MATMUL_S} s",
                                  note=f"{statistics.median(rates):.0f} M thread-instr/s, one launch"))
            continue
        goal = (f">= {GOAL_PER_CORE} M thread-instr/s" if threads == 1
                else f">= {GOAL_POOL} M thread-instr/s" if kernel in KERNELS else None)
        if base_rates:
            base_name = f"{name}, {label}"
            out.append(result_row(base_name, statistics.median(base_rates), "M thread-instr/s",
                                  note=f"{min(base_rates):.0f}-{max(base_rates):.0f} over {len(base_rates)} round{'s' if len(base_rates) > 1 else ''}"))
            out.append(result_row(name, statistics.median(rates), "M thread-instr/s", baseline=base_name,
                                  base=statistics.median(base_rates), goal=goal,
                                  note=f"{spread}; {seconds * 1e3:.1f} ms a launch; {versus} {label}"))
        else:
            out.append(result_row(name, statistics.median(rates), "M thread-instr/s", goal=goal,
                                  note=f"{spread}; {seconds * 1e3:.1f} ms a launch"))
    return out


if __name__ == "__main__":
    main()
