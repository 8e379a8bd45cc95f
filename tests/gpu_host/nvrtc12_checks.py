"""On the GPU host, under NVRTC 12 (issue 23): the seed SAXPY launched and checked, the PTX header's ISA
(8.x for NVRTC 12), SASS and lines() of the module, and an sm_70 compile. Prints one line each.

    XCUDA_NVRTC=/path/to/libnvrtc.so.12 PYTHONPATH=.gpu/build/python python3 tests/gpu_host/nvrtc12_checks.py

NVIDIA's wheel (nvidia-cuda-nvrtc-cu12) holds libnvrtc.so.12 and libnvrtc-builtins.so.12.*; packed with
`tar cJf` they are about 30 MB, which fits beside the build tree but not beside .devrt as well
(../shared/device/README.md): run this in the host's own Python, or look first for a libnvrtc.so.12 that
the host's PyTorch or CuPy wheels bring. Checked here against the fake driver with NVRTC 12.9.
"""
import os, re, numpy as np, xcuda
info = xcuda.nvrtc_library()
print("NVRTC:", info["path"], info["version"], "|", info["reason"], "| note:", info["driver_note"] or "-")
src = r'''extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }'''
m = xcuda.compile(src, name="s12")
n = 512 * 32768
x, y = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
out = np.zeros_like(x)
m.saxpy[(n + 255) // 256, 256](np.float32(2.0), x, y, out, n)
print("saxpy exact:", np.array_equal(out, np.float32(2.0) * x + y))
print("ptx header:", re.search(r"\.version \S+", m.ptx).group(0), re.search(r"\.target \S+", m.ptx).group(0))
try:
    print("sass lines:", len(str(m.sass).splitlines()))
except Exception as e:
    print("sass:", type(e).__name__, str(e)[:200])
try:
    print("lines():", type(m.saxpy.lines()).__name__)
except Exception as e:
    print("lines:", type(e).__name__, str(e)[:200])
m70 = xcuda.compile(src, name="s70", arch="sm_70")
print("sm_70 under NVRTC 12:", re.search(r"\.target \S+", m70.ptx).group(0))
