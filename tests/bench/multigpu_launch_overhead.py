"""Host overhead of launching on several devices, in the ways a notebook can write it.

    XCUDA_BUILD_DIR=build python3 tests/bench/multigpu_launch_overhead.py

SAXPY of n = 2^28 float32: on device 0 alone, then split across every device, each variant timed
(median of 30 after 5 warm-up runs, wall clock around launch and wait) and printed with its ratio to
the one-device default-stream run measured first. A benchmark: it asserts nothing.
"""
import os, sys, time, statistics
sys.path.insert(0, os.path.join(os.environ["XCUDA_BUILD_DIR"], "python"))
import numpy as np, xcuda
src = r'''extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }'''
m = xcuda.compile(src, name="mg")
N = 1 << 28
B = 256
def med(f, r=30, w=5):
    for _ in range(w): f()
    s = []
    for _ in range(r):
        t = time.perf_counter(); f(); s.append(time.perf_counter() - t)
    return statistics.median(s) * 1e3
parts = []
count = xcuda.device_count()
for d in range(count):
    with xcuda.device(d):
        n = N // count
        parts.append(dict(d=d, n=n, x=xcuda.zeros(n, np.float32), y=xcuda.zeros(n, np.float32), o=xcuda.zeros(n, np.float32), s=xcuda.Stream(), g=(n + B - 1) // B))
with xcuda.device(0):
    X, Y, O = xcuda.zeros(N, np.float32), xcuda.zeros(N, np.float32), xcuda.zeros(N, np.float32)
    S = xcuda.Stream()
    G = (N + B - 1) // B
    L = m.saxpy[G, B]
    LS = m.saxpy[G, B, S]
def a_default(): L(2.0, X, Y, O, N); xcuda.synchronize()
def a_stream(): LS(2.0, X, Y, O, N); S.synchronize()
def a_stream_ctx(): LS(2.0, X, Y, O, N); xcuda.synchronize()
def b_bench():
    for p in parts:
        with xcuda.device(p["d"]): m.saxpy[p["g"], B, p["s"]](2.0, p["x"], p["y"], p["o"], p["n"])
    for p in parts: p["s"].synchronize()
launchers = []
for p in parts:
    with xcuda.device(p["d"]): launchers.append((p["d"], m.saxpy[p["g"], B, p["s"]], p))
def b_hoisted():
    for d, l, p in launchers:
        xcuda.set_device(d); l(2.0, p["x"], p["y"], p["o"], p["n"])
    xcuda.set_device(0)
    for p in parts: p["s"].synchronize()
def b_default_streams():
    for p in parts:
        with xcuda.device(p["d"]): m.saxpy[p["g"], B](2.0, p["x"], p["y"], p["o"], p["n"])
    for p in parts: xcuda.synchronize(device=p["d"])
def b_launch_only():
    for d, l, p in launchers:
        xcuda.set_device(d); l(2.0, p["x"], p["y"], p["o"], p["n"])
    xcuda.set_device(0)
def one_slice():
    p = parts[-1]
    with xcuda.device(p["d"]): m.saxpy[p["g"], B, p["s"]](2.0, p["x"], p["y"], p["o"], p["n"])
    p["s"].synchronize()
baseline = None
print("| variant | median ms | ratio to one device, default stream |")
print("|---|---|---|")
for name, f in [("one device, default stream + synchronize", a_default), ("one device, Stream + stream.synchronize", a_stream),
                ("one device, Stream + synchronize", a_stream_ctx), ("all devices, with xcuda.device + kernel[g, b, s]", b_bench),
                ("all devices, launchers hoisted, set_device", b_hoisted), ("all devices, default streams", b_default_streams),
                ("one slice on the last device", one_slice)]:
    ms = med(f)
    baseline = baseline or ms
    print(f"| {name} | {ms:.4f} | {baseline / ms:.2f}x |")
