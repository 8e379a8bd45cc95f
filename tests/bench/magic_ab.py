"""Host cost of re-running an unchanged %%cuda cell (a compile-cache hit) with a given build's module.

    python3 tests/bench/magic_ab.py BUILD_A; python3 tests/bench/magic_ab.py BUILD_B   # alternate, repeat

For before/after comparisons of the %%cuda path on one machine, as launch_ab.py is for launches: each
run is a fresh process with a plain IPython shell and `%load_ext xcuda` from BUILD/python; the cell is
compiled once (its cache key made unique by a nonce), then re-run 200 times in each of 15 batches.
Prints one line per run: the median over batches of the mean cost of one re-run.
"""
import os
import statistics
import sys
import time
import uuid

sys.path.insert(0, sys.argv[1] + "/python")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

cell = (f"// {uuid.uuid4()}\n"
        'extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n'
        "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }\n")
os.environ.setdefault("XCUDA_CACHE", "0")
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "xcuda")
shell.run_cell_magic("cuda", "", cell)  # the compile
samples = []
for batch in range(15):
    t = time.perf_counter()
    for _ in range(200):
        shell.run_cell_magic("cuda", "", cell)
    samples.append((time.perf_counter() - t) / 200 * 1e6)
print(f"{sys.argv[1]}: {statistics.median(samples):.1f} us per unchanged %%cuda cell")
