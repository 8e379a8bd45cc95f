"""The in-memory compile-cache hit of xcuda.compile for the CCCL cell and SAXPY: median of 200 calls after a
first compile, in one process (a benchmark: it asserts nothing).

    python3 tests/bench/memory_hit.py BUILD/python
"""
import sys, time, statistics
sys.path.insert(0, sys.argv[1])
import xcuda
for name, src in (("cccl_kernel.cu", open("tests/bench/cccl_kernel.cu").read()),
                  ("SAXPY", 'extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }')):
    xcuda.compile(src)
    ts = []
    for _ in range(200):
        t = time.perf_counter(); xcuda.compile(src); ts.append(time.perf_counter() - t)
    print(f"{name}: xcuda.compile in-memory hit, median of 200: {statistics.median(ts)*1e3:.4f} ms")
