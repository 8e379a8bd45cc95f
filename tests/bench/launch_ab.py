"""Host cost of one async SAXPY launch with the xcuda module of a given build folder.

    python3 tests/bench/launch_ab.py BUILD_A; python3 tests/bench/launch_ab.py BUILD_B   # alternate, repeat

For before/after comparisons of the launch path on one machine: build the module of both commits
(-DXCUDA_BUILD_KERNEL=OFF) and run this for each in turn, several times. Prints one line per run.
"""
import sys, time, statistics
sys.path.insert(0, sys.argv[1] + "/python")
import numpy as np, xcuda
src = r'''extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }'''
m = xcuda.compile(src, name="ab")
n = 4096
x, y, o = (xcuda.zeros(n, np.float32) for _ in range(3))
k = m.saxpy
a = np.float32(2.0)
samples = []
for batch in range(25):
    xcuda.synchronize()
    t = time.perf_counter()
    for _ in range(1000):
        k[16, 256](a, x, y, o, n)
    samples.append((time.perf_counter() - t) / 1000 * 1e6)
    xcuda.synchronize()
print(f"{sys.argv[1]}: {statistics.median(samples):.3f} us per launch")
