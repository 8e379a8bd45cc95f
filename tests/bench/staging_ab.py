#!/usr/bin/env python3
"""Pageable copies of the tutorial's arrays in alternating processes: builds and settings side by side.

    python3 tests/bench/staging_ab.py BUILD [BUILD ...] [--rounds 5] [--env XCUDA_STAGING_SPIN_US=0,200]
                                      [--imports none,torch]

For each round, one fresh process per variant (every BUILD, times every --env value, times every --imports
entry), in turn, every other round in the opposite order: each process measures, with the `xcuda` module of BUILD/python (n = 2^24 float32, 64 MiB
an array):
  - one call `saxpy[g, b](a, x, y, out, n)` with new numpy arrays every run (made outside the timer: x and
    y copies of the inputs, out from np.zeros_like, which writes every page; `auto` stages a new array's
    first copy), median of 10 after 2; and how many of out's 256 pieces its scan ahead had not read when its
    copy in came, per call (transfer_stats' scan_unread_pieces: a count, in the ms column);
  - the same with out from np.empty_like (never written: the copy back takes its first-touch faults, as
    `out = np.zeros(n)` (calloc) or `np.empty` do), and with out from np.zeros (notebooks/01's);
  - copy_to_host of 64 MiB into a new np.empty array, pageable='staged';
  - the same call with the same arrays every run, pageable='staged' (every copy staged), median of 10;
  - the same call from page-locked arrays (xcuda.empty_pinned, `xcuda.Out(out)`): the bus limit as seen
    from this process, the row the others are divided by;
  - copy_from of 64 MiB and copy_to_host of 64 MiB, pageable='staged', median of 10.
--baseline PATH (launch_baseline, built by run_gpu.sh) runs the C++ driver-API tutorial in a process of its own in
every round too, in the same rotation: the table then divides each call by C++ from page-locked memory (the bus
limit), and --results [FILE] writes the medians into results.json as `tutorial-rounds`, with issue 48's goals:
every call from pageable numpy arrays within 1.5x of C++ page-locked, the call from page-locked arrays within
1.1x (bench_gpu.py's goals for one process, here over the rounds).
--imports torch (or cupy) imports that library and starts CUDA in it before xcuda starts, as bench_gpu.py's
process has them: whether another library's presence changes the staging.
A benchmark, not a test: it prints each process' line and a table of medians over the rounds with their
min and max, and the ratio of each row to the first variant; a difference inside the spread is "level with".
"""
import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (add_results_option, benchmark_entry, device_text, goal_met, probe_gpu,  # noqa: E402
                          result_row, run_baseline, write_results)

N = 1 << 24
BLOCK = 256
A = 2.0
SAXPY = r'''extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }'''
TAG = "STAGING_AB "
CPP = "C++ page-locked (cuMemAllocHost), the same steps"
PINNED_ROW = "one call, page-locked arrays (the bus limit here)"
UNREAD_ROW = "out's pieces the scan had not read, per call (a count, not ms)"
PAGEABLE_GOAL, PINNED_GOAL = "<= 1.50x", "<= 1.10x"


def start_library(name):
    if name == "torch":
        import torch
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
    elif name == "cupy":
        import cupy
        cupy.zeros(1)
        cupy.cuda.Device(0).synchronize()
    elif name != "none":
        raise SystemExit(f"--imports: '{name}' is not none, torch or cupy")


def median_ms(run, prepare=None, repeat=10, warmup=2):
    samples = []
    for index in range(warmup + repeat):
        arguments = prepare() if prepare else ()
        start = time.perf_counter()
        run(*arguments)
        if index >= warmup:
            samples.append((time.perf_counter() - start) * 1e3)
        del arguments
    return statistics.median(samples)


def child(build, library, n=N):
    start_library(library)
    sys.path.insert(0, os.path.join(build, "python"))
    import numpy as np
    import xcuda

    saxpy = xcuda.compile(SAXPY, name="staging_ab").saxpy
    grid = n // BLOCK
    rng = np.random.default_rng(1)
    hx, hy = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    expected = np.float32(A) * hx + hy
    out = np.zeros_like(hx)
    size = f"{n * 4 / 2**20:g} MiB"
    rows = {}

    def check(result, what):
        if not np.allclose(result, expected, rtol=1e-5, atol=1e-6):
            raise SystemExit(f"{what}: wrong result")

    def fresh():
        return hx.copy(), hy.copy(), np.zeros_like(hx)

    def fresh_untouched():
        return hx.copy(), hy.copy(), np.empty_like(hx)

    def fresh_calloc():
        return hx.copy(), hy.copy(), np.zeros(n, np.float32)

    def fresh_call(x, y, o):
        saxpy[grid, BLOCK](A, x, y, o, n)

    unread_before = xcuda.transfer_stats()["copies"].get("scan_unread_pieces", 0)
    for what, make in (("one call, new arrays every run (auto)", fresh),
                       ("one call, new arrays every run, out never written (auto)", fresh_untouched),
                       ("one call, new arrays every run, out from np.zeros (calloc: the notebook's)", fresh_calloc)):
        x, y, o = make()
        fresh_call(x, y, o)
        check(o, what)
        rows[what] = median_ms(fresh_call, make)
        if make is fresh:
            # Of out's 256 pieces per call, those its scan ahead had not read when its copy in came (a count).
            unread = xcuda.transfer_stats()["copies"].get("scan_unread_pieces", 0) - unread_before
            calls = 1 + 2 + 10  # the check, the warm-ups, the timed runs
            rows[UNREAD_ROW] = unread / calls

    defaults = xcuda.transfer_options()
    xcuda.transfer_options(pageable="staged")
    try:
        same = lambda: saxpy[grid, BLOCK](A, hx, hy, out, n)
        same()
        check(out, "same arrays, staged")
        rows["one call, same arrays, staged"] = median_ms(same)
        device = xcuda.empty(n, np.float32)
        rows[f"copy_from {size}, staged"] = median_ms(lambda: device.copy_from(hx))
        rows[f"copy_to_host {size}, staged"] = median_ms(lambda: device.copy_to_host(out=out))
        device.copy_from(hx)
        rows[f"copy_to_host {size} into a new np.empty, staged"] = median_ms(
            lambda o: device.copy_to_host(out=o), lambda: (np.empty_like(hx),))
        rows[f"copy_from a new {size} copy, staged"] = median_ms(lambda h: device.copy_from(h), lambda: (hx.copy(),))
    finally:
        xcuda.transfer_options(pageable=defaults["pageable"])

    px, py, pout = (xcuda.empty_pinned(n, np.float32) for _ in range(3))
    px[:], py[:] = hx, hy
    pinned = lambda: saxpy[grid, BLOCK](A, px, py, xcuda.Out(pout), n)
    pinned()
    check(pout, "page-locked")
    rows[PINNED_ROW] = median_ms(pinned)
    print(TAG + json.dumps(rows), flush=True)


def goal_of(row):
    """Issue 48's goal of a row against C++ page-locked: the tutorial's calls only (not the copies or counts)."""
    if row == PINNED_ROW:
        return PINNED_GOAL
    return PAGEABLE_GOAL if row.startswith("one call, ") else None


def results_entry(results, labels, rounds, baseline_path, n):
    """results.json's `tutorial-rounds`: each variant's medians of the calls, divided by C++ page-locked's median,
    and the scan's count."""
    cpp = statistics.median(results[CPP][""])
    rows = [result_row(CPP, cpp, "ms", note=f"{min(results[CPP]['']):.2f}-{max(results[CPP]['']):.2f} over "
                                            f"{len(results[CPP][''])} processes")]
    for row, by_label in results.items():
        for label in labels if row != CPP else ():
            values = by_label.get(label)
            if not values:
                continue
            name = row if len(labels) == 1 else f"{row}, {label}"
            note = f"{min(values):.2f}-{max(values):.2f} over {len(values)} processes"
            if row == UNREAD_ROW:
                rows.append(result_row(name, statistics.median(values), "pieces", note=note))
            elif row.startswith("one call, "):
                rows.append(result_row(name, statistics.median(values), "ms", CPP, cpp, goal=goal_of(row), note=note))
            # The single copies stay in the printed table only: they are how a call's time divides, not the call.
    gpu, _ = probe_gpu()
    elements = f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)
    return benchmark_entry(
        "tutorial-rounds", f"The CUDA Python tutorial end to end, n = {elements}, over {rounds} alternating rounds of "
        "new processes: host ms, medians", rows, device_text(gpu, "none"), gpu is not None,
        note=f"Each round: C++ ({baseline_path}) and each xcuda variant in a process of its own, the order reversed "
             "every other round; each xcuda figure is a median of 10 calls after 2. 'new arrays every run': x and y "
             "copies and out from np.zeros_like, made outside the timer (bench_gpu.py's row); 'out never written' "
             "(np.empty_like) and 'out from np.zeros' (calloc) take their first-touch page faults inside the call. "
             "Goals (issue 48): every call from pageable arrays within 1.5x of C++ page-locked, the call from "
             "page-locked arrays within 1.1x.")


def run_variant(build, library, env, n):
    """One child process's rows, or the reason it gave none."""
    ran = subprocess.run([sys.executable, __file__, build, "--child", library, "--n", str(n)], env=env,
                         capture_output=True, text=True, timeout=300)
    line = next((l for l in ran.stdout.splitlines() if l.startswith(TAG)), None)
    if line is None:
        return None, f"exit {ran.returncode}: {(ran.stderr or ran.stdout).strip().splitlines()[-1:]}"
    return json.loads(line[len(TAG):]), None


def run_cpp(baseline):
    """The C++ tutorial's page-locked time from one launch_baseline process, or the reason there is none."""
    values = run_baseline(baseline)
    if not isinstance(values, dict) or not isinstance(values.get("e2e_pinned_ms"), float):
        return None, str(values) if not isinstance(values, dict) else "the baseline printed no e2e_pinned_ms"
    return {CPP: values["e2e_pinned_ms"]}, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="+", help="build folders (their python/ holds the xcuda module)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=N, help="elements per array (default 2^24, 64 MiB; the C++ "
                                                         "baseline always uses 2^24: give --baseline only with it)")
    parser.add_argument("--env", action="append", default=[], help="NAME=V1,V2,...: a variant per value")
    parser.add_argument("--imports", default="none", help="none,torch,cupy: a variant per entry")
    parser.add_argument("--baseline", help="launch_baseline (tests/bench/launch_baseline.cpp built with nvcc): the C++ "
                                           "tutorial from page-locked memory, a process of its own every round")
    add_results_option(parser)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child is not None:
        return child(options.build[0], options.child, options.n)
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    if options.n < BLOCK or options.n % BLOCK:
        parser.error(f"--n must be a positive multiple of {BLOCK}")
    if options.results and not options.baseline:
        parser.error("--results needs --baseline: its goals are ratios to C++ from page-locked memory")
    if options.baseline and not os.access(options.baseline, os.X_OK):
        parser.error(f"--baseline {options.baseline}: not an executable file (run_gpu.sh builds it into "
                     "build-host/bench/launch_baseline)")

    axes = [[("build", build) for build in options.build]] if len(options.build) > 1 else []
    axes.append([("import", name) for name in options.imports.split(",")])
    for entry in options.env:
        name, _, values = entry.partition("=")
        if not name or not values:
            parser.error(f"--env {entry!r}: give NAME=V1,V2")
        axes.append([(name, value) for value in values.split(",")])
    variants = list(itertools.product(*axes))
    processes = variants + ([None] if options.baseline else [])  # None: the C++ process
    results = {}
    for round_number in range(options.rounds):
        # Every other round in the opposite order: no process always runs first (or just after another).
        for variant in (processes if round_number % 2 == 0 else processes[::-1]):
            if variant is None:
                label = ""
                rows, why = run_cpp(options.baseline)
            else:
                env = dict(os.environ)
                library = "none"
                build = options.build[0]
                for key, value in variant:
                    if key == "import":
                        library = value
                    elif key == "build":
                        build = value
                    else:
                        env[key] = value
                label = " ".join(f"{k}={v}" for k, v in variant)
                rows, why = run_variant(build, library, env, options.n)
            shown = label or "C++"
            if rows is None:
                print(f"round {round_number + 1}, {shown}: failed ({why})", flush=True)
                continue
            print(f"round {round_number + 1}, {shown}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in rows.items()),
                  flush=True)
            for row, value in rows.items():
                results.setdefault(row, {}).setdefault(label, []).append(value)

    labels = [" ".join(f"{k}={v}" for k, v in variant) for variant in variants]
    cpp = statistics.median(results[CPP][""]) if CPP in results else None
    print()
    print(f"| measurement | variant | median ms (min-max, {options.rounds} processes) | ratio to the first variant "
          f"| ratio to page-locked, same variant | ratio to C++ page-locked | goal |")
    print("|---|---|---|---|---|---|---|")
    for row, by_label in results.items():
        first = statistics.median(by_label[labels[0]]) if labels[0] in by_label else None
        for label in labels if row != CPP else [""]:
            values = by_label.get(label)
            if not values:
                continue
            median = statistics.median(values)
            pinned = results.get(PINNED_ROW, {}).get(label)
            timed = row != UNREAD_ROW
            to_pinned = f"{median / statistics.median(pinned):.2f}x" if pinned and timed and row != CPP else ""
            to_first = f"{median / first:.2f}x" if first else ""
            to_cpp = f"{median / cpp:.2f}x" if cpp and (row == CPP or row.startswith("one call, ")) else ""
            goal = goal_of(row) if cpp and row != CPP else None
            verdict = f"{goal}: {'met' if goal_met(goal, median, cpp) else 'missed'}" if goal else ""
            print(f"| {row} | {label or 'C++'} | {median:.2f} ({min(values):.2f}-{max(values):.2f}) | {to_first} | "
                  f"{to_pinned} | {to_cpp} | {verdict} |")
    if options.results:
        if cpp is None:
            print("no C++ process gave a figure: results.json not written", file=sys.stderr)
            return 1
        write_results(options.results, results_entry(results, labels, options.rounds, options.baseline, options.n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
