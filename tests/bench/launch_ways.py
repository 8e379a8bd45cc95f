#!/usr/bin/env python3
"""Host cost of one launch with the arguments as pointers and as one buffer, interleaved in one process.

    python3 tests/bench/launch_ways.py BUILD [--rounds 7]

xcuda.launch_options(arguments=...) switches the way between batches: each round times, in turn (the order
swapped every other round), SAXPY (n = 4096, DeviceArrays) and 16 float scalars + 16 DeviceArrays, each as
the median of 25 batches of 1000 `kernel[g, b](...)` calls, asynchronous, with the subscript inside the
loop as bench_gpu.py writes it. Both ways' results are checked first. Prints each round and a table of the
medians over the rounds (min-max) and buffer / pointers. A benchmark, not a test: it asserts nothing; a
difference inside the spread of the rounds is "level with".
"""
import argparse
import statistics
import sys
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("build")
parser.add_argument("--rounds", type=int, default=7)
options = parser.parse_args()
if options.rounds < 1:
    parser.error("--rounds must be at least 1")
sys.path.insert(0, options.build + "/python")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from bench_common import us_per_launch  # noqa: E402
import xcuda  # noqa: E402

SAXPY = r'''extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }'''
MANY = ('extern "C" __global__ void many(' + ", ".join(f"float s{k}" for k in range(16)) + ", " +
        ", ".join(f"const float* p{k}" for k in range(15)) + ", float* p15)\n"
        "{ if (threadIdx.x == 0 && blockIdx.x == 0) { float s = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + "
        "s10 + s11 + s12 + s13 + s14 + s15; p15[0] = s + p0[0] + p14[0]; } }\n")
n = 4096
saxpy = xcuda.compile(SAXPY, name="ways_saxpy").saxpy
many = xcuda.compile(MANY, name="ways_many").many
hx = np.arange(n, dtype=np.float32)
x, y, out = xcuda.to_device(hx), xcuda.to_device(2 * hx), xcuda.zeros(n, np.float32)
pointers = [xcuda.to_device(np.full(n, k, np.float32)) for k in range(16)]
args16 = tuple(float(k) for k in range(16)) + tuple(pointers)


def check(way):
    xcuda.launch_options(arguments=way)
    saxpy[16, 256](2.0, x, y, out, n)
    assert np.array_equal(out.copy_to_host(), 2 * hx + 2 * hx), way
    many[16, 256](*args16)
    assert pointers[15].copy_to_host()[0] == sum(range(16)) + 0 + 14, way


def saxpy_loop(k=saxpy, a=2.0, x=x, y=y, out=out, n=n):
    for _ in range(1000):
        k[16, 256](a, x, y, out, n)


def many_loop(k=many, args=args16):
    for _ in range(1000):
        k[16, 256](*args)


for way in ("pointers", "buffer"):
    check(way)
results = {(way, what): [] for way in ("pointers", "buffer") for what in ("SAXPY", "16 + 16")}
for number in range(options.rounds):
    ways = ("pointers", "buffer") if number % 2 == 0 else ("buffer", "pointers")
    shown = []
    for way in ways:
        xcuda.launch_options(arguments=way)
        for what, loop in (("SAXPY", saxpy_loop), ("16 + 16", many_loop)):
            value = us_per_launch(loop, xcuda.synchronize)
            results[way, what].append(value)
            shown.append(f"{way} {what} {value:.3f}")
    print(f"round {number + 1}: " + ", ".join(shown) + " us", flush=True)
xcuda.launch_options(arguments="pointers")
print()
print(f"| launch | pointers us (median of {options.rounds} rounds, min-max) | buffer us | buffer / pointers |")
print("|---|---|---|---|")
for what in ("SAXPY", "16 + 16"):
    p, b = results["pointers", what], results["buffer", what]
    print(f"| {what} | {statistics.median(p):.3f} ({min(p):.3f}-{max(p):.3f}) | {statistics.median(b):.3f} "
          f"({min(b):.3f}-{max(b):.3f}) | {statistics.median(b) / statistics.median(p):.3f}x |")
