"""The SAXPY tutorial at n = 2**20 end to end on the PTX simulator: import, compile, numpy arrays, the launch
(copies in and out included) and the check, each timed once; no assertion on time.

    XCUDA_CACHE=0 XCUDA_DEVICE=simulator PYTHONPATH=build/python /usr/bin/python3 tests/bench/simulator_saxpy_end_to_end.py
"""
import argparse, os, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import add_results_option, benchmark_entry, result_row, write_results
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
add_results_option(parser)
options = parser.parse_args()
t0 = time.perf_counter()
import numpy as np, xcuda
m = xcuda.compile('extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }')
t1 = time.perf_counter()
n = 1 << 20
a, x, y = np.float32(2.0), np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
out = np.zeros_like(x)
t2 = time.perf_counter()
m.saxpy[n // 256, 256](a, x, y, out, n)
t3 = time.perf_counter()
assert np.allclose(out, a * x + y)
t4 = time.perf_counter()
print(f"import+compile {1e3*(t1-t0):.0f} ms, arrays {1e3*(t2-t1):.0f} ms, launch with numpy copies {1e3*(t3-t2):.0f} ms, check {1e3*(t4-t3):.0f} ms, total {1e3*(t4-t0):.0f} ms")
write_results(options.results, benchmark_entry(
    "simulator-saxpy", "The SAXPY tutorial at n = 2^20 end to end on the PTX simulator",
    [result_row("import, compile, arrays, launch with numpy copies, check: total", 1e3 * (t4 - t0), "ms", goal="< 1000 ms",
                note=f"import and compile {1e3 * (t1 - t0):.0f} ms, the launch with its copies {1e3 * (t3 - t2):.0f} ms")],
    "the PTX simulator (libxcuda-sim.so)" if os.environ.get("XCUDA_DEVICE") == "simulator" else "xcuda's default device",
    False, command="XCUDA_CACHE=0 XCUDA_DEVICE=simulator python3 tests/bench/simulator_saxpy_end_to_end.py"))
