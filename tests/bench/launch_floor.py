#!/usr/bin/env python3
"""How far xcuda's launch is from the cheapest launch a Python call can make, in one process.

    python3 tests/bench/launch_floor.py [BUILD] [--rounds 7] [--floor-dir DIR] [--out FILE]

Three ways of launching the same kernel (SAXPY n = 4096 from DeviceArrays, and 16 float scalars + 16
DeviceArrays), timed in turn in each round (the order rotated every round), each as the median of 25
batches of 1000 asynchronous launches:

  - C loop: cuLaunchKernel 1000 times from C with arguments packed beforehand (the C++ driver-API loop of
    launch_baseline.cpp, here inside this process: the same context, module and start-up state);
  - Python floor: a Python loop calling a C function (tests/bench/launch_floor.c) that takes the same
    arguments as xcuda's call, reads none of them and calls cuLaunchKernel with arguments packed beforehand:
    what one launch from a Python loop costs when the binding does no work at all;
  - xcuda: `kernel[g, b](...)` with the subscript inside the loop, as bench_gpu.py writes it.

All three launch the kernel loaded from xcuda's own cubin into xcuda's context, and every result is checked
first. The table gives each way's median over the rounds (min-max), its ratio to the C loop, and xcuda's
ratio to the Python floor: the part of the launch cost that is xcuda's binding and core, against the part
that any Python call pays. A benchmark, not a test: it asserts nothing; a difference inside the spread of
the rounds is "level with". --out FILE appends the table to FILE under a heading that says which CPUs the
process could run on (run_gpu.sh runs it pinned with `taskset -c 3` and not, into launch_floor.md).

The helper extension is built with `cc` into --floor-dir (default: a folder in the system's temporary
folder) unless it is there already; it needs Python's headers and cuda.h (CUDA_HOME, default
/usr/local/cuda). It opens the driver xcuda opens (libcuda.so.1, or XCUDA_LIBCUDA's): the script needs an NVIDIA
driver, or the tests' fake driver (lib/libxcuda_fake_cuda.so of a --tests build, which runs saxpy and many on
the host: tests/bench/test_bench_scripts.py checks the script that way).
"""
import argparse
import importlib.util
import os
import statistics
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_common import (add_results_option, benchmark_entry, command_line, device_text, goal_met,  # noqa: E402
                          probe_gpu, result_row, us_per_launch, write_results)

SAXPY = r'''extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }'''
MANY = ('extern "C" __global__ void many(' + ", ".join(f"float s{k}" for k in range(16)) + ", " +
        ", ".join(f"const float* p{k}" for k in range(15)) + ", float* p15)\n"
        "{ if (threadIdx.x == 0 && blockIdx.x == 0) { float s = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + "
        "s10 + s11 + s12 + s13 + s14 + s15; const float* p[] = {p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, "
        "p12, p13, p14}; for (int k = 0; k < 15; ++k) s += p[k][0]; p15[0] = s; } }\n")
GRID, BLOCK, N = 16, 256, 4096
WAYS = ("C loop", "Python floor", "xcuda")
# Issue 48's goals, judged by the medians of one run of this script (pinned and unpinned each): SAXPY's xcuda at
# most 1.05x the Python floor, 16 + 16's xcuda at most 1.10x the C loop. {launch: (the way against, goal)}
GOALS = {"SAXPY": ("Python floor", "<= 1.05x"), "16 + 16": ("C loop", "<= 1.10x")}


def build_floor(folder):
    """The helper extension's path in folder, built there with cc unless it is there already."""
    folder = Path(folder)
    target = folder / ("_launch_floor" + sysconfig.get_config_var("EXT_SUFFIX"))
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    include = sysconfig.get_paths()["include"]
    cuda = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    for needed, what in ((Path(include) / "Python.h", "Python's headers"), (cuda / "cuda.h", "cuda.h")):
        if not needed.exists():
            raise SystemExit(f"launch_floor.py: {what} not found at {needed}; build the helper where they are "
                             f"and pass its folder with --floor-dir")
    command = ["cc", "-O2", "-shared", "-fPIC", "-I", include, "-I", str(cuda), str(HERE / "launch_floor.c"),
               "-o", str(target), "-ldl"]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit("launch_floor.py: building the helper failed:\n" + " ".join(command) + "\n" + built.stderr)
    return target


def load_floor(path):
    spec = importlib.util.spec_from_file_location("_launch_floor", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def goal_for(what, against):
    """The goal of launch `what`'s xcuda row against the way `against`, or None."""
    way, goal = GOALS[what]
    return goal if way == against else None


def results_rows(results, rounds):
    """The medians as rows of results.json: each way against the C loop, and xcuda against the Python floor."""
    rows = []
    for what in dict.fromkeys(what for what, _ in results):
        c_loop = statistics.median(results[what, "C loop"])
        for way in WAYS:
            values = results[what, way]
            note = f"{min(values):.3f}-{max(values):.3f} over {rounds} rounds"
            rows.append(result_row(f"{what}, {way}", statistics.median(values), "us",
                                   None if way == "C loop" else f"{what}, C loop", c_loop,
                                   goal=goal_for(what, "C loop") if way == "xcuda" else None, note=note))
        rows.append(result_row(f"{what}, xcuda", statistics.median(results[what, "xcuda"]), "us",
                               f"{what}, Python floor", statistics.median(results[what, "Python floor"]),
                               goal=goal_for(what, "Python floor"), note="xcuda's own part of the launch"))
    return rows


def write_floor_results(option, results, rounds, where):
    """With --results: the table as the entry of its pinning (run_gpu.sh runs the script pinned and not)."""
    if not option:
        return
    pinning = "pinned" if where.startswith("pinned") else "unpinned"
    gpu, _ = probe_gpu()
    device = device_text(gpu, f"the driver at {os.environ['XCUDA_LIBCUDA']}" if os.environ.get("XCUDA_LIBCUDA")
                         else "none")
    write_results(option, benchmark_entry(
        f"launch-floor-{pinning}", f"xcuda's launch against the C loop and the Python floor, {where}: us per launch, "
        f"median of {rounds} rounds", results_rows(results, rounds), device, gpu is not None,
        command=("taskset -c " + where.split()[-1] + " " if pinning == "pinned" else "") + command_line(),
        note="In one process, in turn: cuLaunchKernel 1000 times from C, a Python loop calling a C function that "
             "takes the same arguments and launches with arguments packed beforehand (the floor), and xcuda's "
             "kernel[g, b](...)."))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="?", default=os.environ.get("XCUDA_BUILD_DIR"),
                        help="a build folder (its python/ holds the xcuda module; default: $XCUDA_BUILD_DIR, as "
                             "results_ab.py sets it)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--floor-dir", default=os.path.join(tempfile.gettempdir(), "xcuda-launch-floor"))
    parser.add_argument("--out", help="append the table to this markdown file")
    add_results_option(parser)
    options = parser.parse_args()
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not options.build:
        parser.error("name a build folder, or set XCUDA_BUILD_DIR")
    floor = load_floor(build_floor(options.floor_dir))
    sys.path.insert(0, options.build + "/python")
    import numpy as np
    import xcuda

    saxpy_module = xcuda.compile(SAXPY, name="floor_saxpy")
    many_module = xcuda.compile(MANY, name="floor_many")
    saxpy, many = saxpy_module.saxpy, many_module.many
    hx = np.arange(N, dtype=np.float32)
    x, y, out = xcuda.to_device(hx), xcuda.to_device(2 * hx), xcuda.zeros(N, np.float32)
    pointers = [xcuda.to_device(np.full(N, k, np.float32)) for k in range(16)]
    args16 = tuple(float(k) for k in range(16)) + tuple(pointers)
    saxpy[GRID, BLOCK](2.0, x, y, out, N)  # loads the module; its context is current on this thread now
    many[GRID, BLOCK](*args16)
    xcuda.synchronize()
    floor_saxpy = floor.make_launcher(saxpy_module.cubin, "saxpy", GRID, BLOCK,
                                      [struct.pack("f", 2.0)] + [struct.pack("Q", a.ptr) for a in (x, y, out)] +
                                      [struct.pack("Q", N)])
    floor_many = floor.make_launcher(many_module.cubin, "many", GRID, BLOCK,
                                     [struct.pack("f", float(k)) for k in range(16)] +
                                     [struct.pack("Q", p.ptr) for p in pointers])

    def saxpy_loops():
        def c_loop(f=floor_saxpy, loop=floor.loop):
            loop(f, 1000)

        def python_floor(f=floor_saxpy, a=2.0, x=x, y=y, out=out, n=N):
            for _ in range(1000):
                f(a, x, y, out, n)

        def xcuda_loop(k=saxpy, a=2.0, x=x, y=y, out=out, n=N):
            for _ in range(1000):
                k[GRID, BLOCK](a, x, y, out, n)
        return dict(zip(WAYS, (c_loop, python_floor, xcuda_loop)))

    def many_loops():
        def c_loop(f=floor_many, loop=floor.loop):
            loop(f, 1000)

        def python_floor(f=floor_many, args=args16):
            for _ in range(1000):
                f(*args)

        def xcuda_loop(k=many, args=args16):
            for _ in range(1000):
                k[GRID, BLOCK](*args)
        return dict(zip(WAYS, (c_loop, python_floor, xcuda_loop)))

    loops = {"SAXPY": saxpy_loops(), "16 + 16": many_loops()}
    expected_saxpy = 2 * hx + 2 * hx
    expected_many = np.float32(sum(range(16)) + sum(range(15)))  # the tests' fake driver computes the same
    for way in WAYS:  # every way's result checked before any timing
        out.copy_from(np.zeros(N, np.float32))
        pointers[15].copy_from(np.full(N, 15, np.float32))
        loops["SAXPY"][way]()
        loops["16 + 16"][way]()
        xcuda.synchronize()
        if not np.array_equal(out.copy_to_host(), expected_saxpy):
            raise SystemExit(f"launch_floor.py: {way}: SAXPY's result is wrong")
        if pointers[15].copy_to_host()[0] != expected_many:
            raise SystemExit(f"launch_floor.py: {way}: the 16 + 16 kernel's result is wrong")

    results = {(what, way): [] for what in loops for way in WAYS}
    for number in range(options.rounds):
        order = WAYS[number % 3:] + WAYS[:number % 3]
        shown = []
        for what in loops:
            for way in order:
                value = us_per_launch(loops[what][way], xcuda.synchronize)
                results[what, way].append(value)
                shown.append(f"{what} {way} {value:.3f}")
        print(f"round {number + 1}: " + ", ".join(shown) + " us", flush=True)

    cpus = sorted(os.sched_getaffinity(0))
    where = f"pinned to CPU {cpus[0]}" if len(cpus) == 1 else f"unpinned ({len(cpus)} CPUs)"
    lines = [f"| launch | way | us per launch, {where} (median of {options.rounds} rounds, min-max) | "
             f"ratio to the C loop | xcuda / Python floor | goal |", "|---|---|---|---|---|---|"]
    for what in loops:
        base = statistics.median(results[what, "C loop"])
        floor_us = statistics.median(results[what, "Python floor"])
        for way in WAYS:
            values = results[what, way]
            median = statistics.median(values)
            over = f"{median / floor_us:.3f}x" if way == "xcuda" else ""
            goal = ""
            if way == "xcuda":
                against, text = GOALS[what]
                met = goal_met(text, median, base if against == "C loop" else floor_us)
                goal = f"{text} the {against}: {'met' if met else 'missed'}"
            lines.append(f"| {what} | {way} | {median:.3f} ({min(values):.3f}-{max(values):.3f}) | "
                         f"{median / base:.3f}x | {over} | {goal} |")
    table = "\n".join(lines)
    print()
    print(table)
    if options.out:
        with open(options.out, "a") as report:
            report.write(f"## launch_floor.py, {where}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n"
                      f"{table}\n\n")
    write_floor_results(options.results, results, options.rounds, where)

if __name__ == "__main__":
    main()
