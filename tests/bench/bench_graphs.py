#!/usr/bin/env python3
"""CUDA graphs benchmark: a chain of 100 small kernels launched eagerly and replayed as a graph, xcuda
against C++ (eager cuLaunchKernel and cuGraphLaunch) and CuPy, in one run.

A benchmark, not a test: it prints a table with ratios against baselines measured in the same run and
never asserts on time. Run it on a GPU host (tests/bench/run_gpu.sh builds the module and the C++
baseline and runs it):

    XCUDA_BUILD_DIR=build-host python3 tests/bench/bench_graphs.py [--baseline PATH] [--out PATH]

What is measured
----------------
The chain: 100 launches of chain_step (x[i] = x[i] * a + 1, n = 4096, grid 16, block 256) on the
default stream, each depending on the one before. For each system, 200 samples after 10 warm-up chains:
- host us per chain: the host time of issuing the chain (the 100 launches, or the one graph launch), the
  synchronize after it outside the timed region;
- wall us per chain: the same with the synchronize inside (the chain's end-to-end time).
Systems: C++ (tests/bench/launch_baseline.cpp `graphs`: cuLaunchKernel x 100; cuGraphLaunch of the chain
captured with cuStreamBeginCapture), xcuda `step[16, 256](x, a, n)` x 100 (the launcher looked up in the
loop, and hoisted), xcuda `g.launch()` of the chain captured with `with xcuda.graph() as g:`, and CuPy
(RawKernel x 100; a graph captured with Stream.begin_capture) for reference. The host cost of
`g.update(i, *args)` (new arguments for one launch of the captured chain) is shown too.
Every system's chain result is checked against numpy before it is timed.

Goal: the host cost per kernel of a replay at most 1/3 of eager xcuda's (ratio <= 0.33).
"""

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(HERE))
from bench_common import (NA, add_results_option, attempt, baseline_for, baseline_value,  # noqa: E402
                          benchmark_entry, device_text, markdown_table, measured, probe_gpu, result_row, short_error,
                          show_section, write_report, write_results)

SOURCE = r"""
extern "C" __global__ void chain_step(float* x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + 1.0f;
}
"""
CHAIN = 100
N = 4096
BLOCK = 256
GRID = N // BLOCK
A = 1.0001
SAMPLES = 200
WARMUP = 10
REPLAY_GOAL = 1 / 3  # replay's host cost per kernel / eager xcuda's
LINKS = range(CHAIN)


def host_and_wall_us(issue, synchronize):
    """(median host us of issue(), median wall us of issue() + synchronize()) over SAMPLES after WARMUP."""
    for _ in range(WARMUP):
        issue()
    synchronize()
    host, wall = [], []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        issue()
        host.append((time.perf_counter() - start) * 1e6)
        synchronize()
        wall.append((time.perf_counter() - start) * 1e6)
    return statistics.median(host), statistics.median(wall)


def steps(x, count):
    """x after `count` launches of chain_step, computed in float32 as the GPU does."""
    x = x.astype(np.float32).copy()
    for _ in range(count):
        x = (x * np.float32(A) + np.float32(1.0)).astype(np.float32)
    return x


def compare(result, expected):
    result = np.asarray(result)
    if np.allclose(result, expected, rtol=1e-4, atol=1e-5):
        return None
    bad = int(np.argmax(~np.isclose(result, expected, rtol=1e-4, atol=1e-5)))
    return f"x[{bad}] = {result[bad]!r}, expected {expected[bad]!r}"


def measure_xcuda(xcuda, results, gpu_reason):
    names = ("xcuda step[g, b](x, a, n) x 100", "xcuda launcher hoisted x 100", "xcuda g.launch() of the chain",
             "xcuda g.update(i, x, a, n), one launch's arguments")
    if xcuda is None:
        for name in names:
            results[name] = NA(gpu_reason)
        return
    step = xcuda.compile(SOURCE, name="bench_graphs").chain_step
    start = np.random.default_rng(0).random(N).astype(np.float32)
    x = xcuda.to_device(start)
    expected = steps(start, CHAIN)

    def in_loop(step=step, x=x, a=A, n=N):
        for _ in LINKS:
            step[GRID, BLOCK](x, a, n)

    def hoisted(launch=step[GRID, BLOCK], x=x, a=A, n=N):
        for _ in LINKS:
            launch(x, a, n)

    def check(issue):
        def run():
            x.copy_from(start)
            issue()
            xcuda.synchronize()
            return compare(x.copy_to_host(), expected)
        return run

    results[names[0]] = attempt(check(in_loop), lambda: host_and_wall_us(in_loop, xcuda.synchronize))
    results[names[1]] = attempt(check(hoisted), lambda: host_and_wall_us(hoisted, xcuda.synchronize))
    try:
        with xcuda.graph() as graph:
            in_loop()
    except Exception as error:
        results[names[2]] = results[names[3]] = NA(f"error: {short_error(error)}")
        return
    results[names[2]] = attempt(check(graph.launch), lambda: host_and_wall_us(graph.launch, xcuda.synchronize))

    other = xcuda.to_device(start)

    def check_update():
        # The middle launch now works on `other`: x gets 99 steps, `other` one.
        graph.update(CHAIN // 2, other, A, N)
        other.copy_from(start)
        x.copy_from(start)
        graph.launch()
        xcuda.synchronize()
        wrong = compare(x.copy_to_host(), steps(start, CHAIN - 1)) or compare(other.copy_to_host(), steps(start, 1))
        graph.update(CHAIN // 2, x, A, N)
        return wrong

    def update_cost():
        samples = []
        for i in range(SAMPLES):
            begin = time.perf_counter()
            graph.update(i % CHAIN, x, A, N)
            samples.append((time.perf_counter() - begin) * 1e6)
        return statistics.median(samples), NA("no wall time: an update queues no work")

    results[names[3]] = attempt(check_update, update_cost)


def measure_cupy(results, gpu_reason):
    names = ("CuPy RawKernel x 100 (reference)", "CuPy graph launch of the chain (reference)")
    try:
        import cupy as cp
    except ImportError as error:
        for name in names:
            results[name] = NA(f"CuPy not installed: {short_error(error)}")
        return
    if gpu_reason:
        for name in names:
            results[name] = NA(f"no GPU: {gpu_reason}")
        return
    kernel = cp.RawKernel(SOURCE, "chain_step")
    start = np.random.default_rng(0).random(N).astype(np.float32)
    x = cp.asarray(start)
    a, n = np.float32(A), np.uint32(N)
    expected = steps(start, CHAIN)
    sync = cp.cuda.Device().synchronize

    def eager(kernel=kernel, x=x, a=a, n=n):
        for _ in LINKS:
            kernel((GRID,), (BLOCK,), (x, a, n))

    def check(issue):
        def run():
            x[...] = cp.asarray(start)
            issue()
            sync()
            return compare(cp.asnumpy(x), expected)
        return run

    results[names[0]] = attempt(check(eager), lambda: host_and_wall_us(eager, sync))
    try:
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            for _ in LINKS:
                kernel((GRID,), (BLOCK,), (x, a, n), stream=stream)
            graph = stream.end_capture()
        replay = lambda: graph.launch(cp.cuda.Stream.null)  # noqa: E731
        results[names[1]] = attempt(check(replay), lambda: host_and_wall_us(replay, sync))
    except Exception as error:
        results[names[1]] = NA(f"error: {short_error(error)}")


def table(results, baseline):
    eager_xcuda = results["xcuda step[g, b](x, a, n) x 100"]
    eager_per_kernel = eager_xcuda[0] / CHAIN if measured(eager_xcuda) else eager_xcuda
    rows = []
    for system, value in results.items():
        if not measured(value):
            rows.append((system, str(value), "", "", "", ""))
            continue
        host, wall = value
        per_update = "update" in system
        per_kernel = host if per_update else host / CHAIN
        ratio = f"{per_kernel / eager_per_kernel:.2f}x" if measured(eager_per_kernel) else "n/a"
        goal = ""
        if system == "xcuda g.launch() of the chain":
            if measured(eager_per_kernel):
                r = per_kernel / eager_per_kernel
                verdict = "met" if r <= REPLAY_GOAL else "missed"
                goal = f"<= 0.33x eager xcuda per kernel: {verdict} ({r:.3f}x, margin {REPLAY_GOAL - r:+.3f}x)"
            else:
                goal = "<= 0.33x eager xcuda per kernel: n/a"
        rows.append((system, "" if per_update else f"{host:.1f} us",
                     f"{per_kernel:.3f} us" + (" per update" if per_update else ""), ratio,
                     f"{wall:.1f} us" if measured(wall) else str(wall), goal))
    return markdown_table(["system", "host us per chain of 100", "host us per kernel", "ratio to eager xcuda per kernel",
                           "wall us per chain (incl. synchronize)", "goal"], rows)


def results_rows(results):
    """The table as rows of results.json: host us per kernel (per update) against eager xcuda's, the wall time of a
    chain in the note; the replay held to REPLAY_GOAL."""
    eager = "xcuda step[g, b](x, a, n) x 100"
    eager_per_kernel = results[eager][0] / CHAIN if measured(results[eager]) else results[eager]
    records = []
    for system, value in results.items():
        if not measured(value):
            records.append(result_row(system, value, "us"))
            continue
        host, wall = value
        per_update = "update" in system
        note = "per update; no wall time (an update queues no work)" if per_update else \
            f"wall per chain {wall:.1f} us" if measured(wall) else None
        goal = f"<= {REPLAY_GOAL:.2f}x" if system == "xcuda g.launch() of the chain" else None
        records.append(result_row(system, host if per_update else host / CHAIN, "us",
                                  None if system == eager else eager, eager_per_kernel, goal, note))
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a prebuilt launch_baseline executable (default: build it with nvcc)")
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    add_results_option(parser)
    options = parser.parse_args()
    gpu, gpu_reason = probe_gpu()
    if gpu_reason:
        print(f"No GPU: {gpu_reason}. Nothing can be timed here; every row shows n/a.\n", flush=True)
    with tempfile.TemporaryDirectory(prefix="xcuda-bench-graphs-") as folder:
        baseline = baseline_for(options.baseline, folder, gpu_reason, "graphs")

    results = {}
    for system, key in (("C++ cuLaunchKernel x 100", "chain_eager"), ("C++ cuGraphLaunch of the chain", "chain_graph")):
        host, wall = baseline_value(baseline, key + "_host_us"), baseline_value(baseline, key + "_wall_us")
        results[system] = (host, wall) if measured(host) else host
    xcuda = None
    try:
        import xcuda as loaded
        xcuda = None if gpu_reason else loaded
    except ImportError as error:
        gpu_reason = gpu_reason or f"no xcuda module in {BUILD / 'python'}: {short_error(error)}"
    measure_xcuda(xcuda, results, gpu_reason)
    measure_cupy(results, gpu_reason)

    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    header = [
        "# xcuda CUDA graphs benchmark",
        "",
        f"- date: {now}",
        f"- device: {gpu['name'] + ' (' + gpu['arch'] + ')' if gpu else 'none: ' + gpu_reason}",
        f"- host: {platform.node()}, Python {platform.python_version()}, numpy {np.__version__}"
        + (f", xcuda {xcuda.__version__}" if xcuda else ""),
        f"- C++ baseline: {'ran' if isinstance(baseline, dict) else baseline}",
        f"- the chain: {CHAIN} launches of chain_step, n = {N}, grid {GRID}, block {BLOCK}; median of {SAMPLES} "
        f"after {WARMUP} warm-up chains",
    ]
    sections = []
    show_section(sections, "\n".join(header))
    show_section(sections, "## A chain of 100 small kernels: eager against replayed\n\n" + table(results, baseline))
    write_report(options.out, sections)
    write_results(options.results, benchmark_entry(
        "graphs", f"CUDA graphs: a chain of {CHAIN} small kernels eager and replayed, host us per kernel",
        results_rows(results), device_text(gpu, "none"), gpu is not None,
        note=f"{CHAIN} launches of chain_step, n = {N}, grid {GRID}, block {BLOCK}; median of {SAMPLES} chains after "
             f"{WARMUP}."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
