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

N = 1 << 24
BLOCK = 256
A = 2.0
SAXPY = r'''extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }'''
TAG = "STAGING_AB "


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


def child(build, library):
    start_library(library)
    sys.path.insert(0, os.path.join(build, "python"))
    import numpy as np
    import xcuda

    saxpy = xcuda.compile(SAXPY, name="staging_ab").saxpy
    grid = N // BLOCK
    rng = np.random.default_rng(1)
    hx, hy = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
    expected = np.float32(A) * hx + hy
    out = np.zeros_like(hx)
    rows = {}

    def check(result, what):
        if not np.allclose(result, expected, rtol=1e-5, atol=1e-6):
            raise SystemExit(f"{what}: wrong result")

    def fresh():
        return hx.copy(), hy.copy(), np.zeros_like(hx)

    def fresh_untouched():
        return hx.copy(), hy.copy(), np.empty_like(hx)

    def fresh_calloc():
        return hx.copy(), hy.copy(), np.zeros(N, np.float32)

    def fresh_call(x, y, o):
        saxpy[grid, BLOCK](A, x, y, o, N)

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
            rows["out's pieces the scan had not read, per call (a count, not ms)"] = unread / calls

    defaults = xcuda.transfer_options()
    xcuda.transfer_options(pageable="staged")
    try:
        same = lambda: saxpy[grid, BLOCK](A, hx, hy, out, N)
        same()
        check(out, "same arrays, staged")
        rows["one call, same arrays, staged"] = median_ms(same)
        device = xcuda.empty(N, np.float32)
        rows["copy_from 64 MiB, staged"] = median_ms(lambda: device.copy_from(hx))
        rows["copy_to_host 64 MiB, staged"] = median_ms(lambda: device.copy_to_host(out=out))
        device.copy_from(hx)
        rows["copy_to_host 64 MiB into a new np.empty, staged"] = median_ms(
            lambda o: device.copy_to_host(out=o), lambda: (np.empty_like(hx),))
        rows["copy_from a new 64 MiB copy, staged"] = median_ms(lambda h: device.copy_from(h), lambda: (hx.copy(),))
    finally:
        xcuda.transfer_options(pageable=defaults["pageable"])

    px, py, pout = (xcuda.empty_pinned(N, np.float32) for _ in range(3))
    px[:], py[:] = hx, hy
    pinned = lambda: saxpy[grid, BLOCK](A, px, py, xcuda.Out(pout), N)
    pinned()
    check(pout, "page-locked")
    rows["one call, page-locked arrays (the bus limit here)"] = median_ms(pinned)
    print(TAG + json.dumps(rows), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="+", help="build folders (their python/ holds the xcuda module)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--env", action="append", default=[], help="NAME=V1,V2,...: a variant per value")
    parser.add_argument("--imports", default="none", help="none,torch,cupy: a variant per entry")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child is not None:
        return child(options.build[0], options.child)

    axes = [[("build", build) for build in options.build]] if len(options.build) > 1 else []
    axes.append([("import", name) for name in options.imports.split(",")])
    for entry in options.env:
        name, _, values = entry.partition("=")
        if not name or not values:
            parser.error(f"--env {entry!r}: give NAME=V1,V2")
        axes.append([(name, value) for value in values.split(",")])
    variants = list(itertools.product(*axes))
    results = {}
    for round_number in range(options.rounds):
        # Every other round in the opposite order: no variant always runs first (or just after another).
        for variant in (variants if round_number % 2 == 0 else variants[::-1]):
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
            ran = subprocess.run([sys.executable, __file__, build, "--child", library], env=env,
                                 capture_output=True, text=True, timeout=300)
            line = next((l for l in ran.stdout.splitlines() if l.startswith(TAG)), None)
            if line is None:
                print(f"round {round_number + 1}, {label}: failed (exit {ran.returncode}): "
                      f"{(ran.stderr or ran.stdout).strip().splitlines()[-1:]}", flush=True)
                continue
            rows = json.loads(line[len(TAG):])
            print(f"round {round_number + 1}, {label}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in rows.items()),
                  flush=True)
            for row, value in rows.items():
                results.setdefault(row, {}).setdefault(label, []).append(value)

    labels = [" ".join(f"{k}={v}" for k, v in variant) for variant in variants]
    pinned_row = "one call, page-locked arrays (the bus limit here)"
    print()
    print(f"| measurement | variant | median ms (min-max, {options.rounds} processes) | ratio to the first variant "
          f"| ratio to page-locked, same variant |")
    print("|---|---|---|---|---|")
    for row, by_label in results.items():
        first = statistics.median(by_label[labels[0]]) if labels[0] in by_label else None
        for label in labels:
            values = by_label.get(label)
            if not values:
                continue
            median = statistics.median(values)
            pinned = results.get(pinned_row, {}).get(label)
            to_pinned = f"{median / statistics.median(pinned):.2f}x" if pinned else ""
            to_first = f"{median / first:.2f}x" if first else ""
            print(f"| {row} | {label} | {median:.2f} ({min(values):.2f}-{max(values):.2f}) | {to_first} | {to_pinned} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
