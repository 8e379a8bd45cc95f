"""Samples linear-filtered textures on the GPU at many coordinates and saves them, to fit the hardware's weights
(docs/textures.md, "On the simulator"). On the GPU host: python3 tests/gpu_host/texture_filter_probe.py OUT.npz"""
import sys
import numpy as np
import xcuda

SRC = r"""
extern "C" __global__ void s2(cudaTextureObject_t t, const float* xy, float* out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = tex2D<float>(t, xy[2 * i], xy[2 * i + 1]); }
extern "C" __global__ void s1(cudaTextureObject_t t, const float* x, float* out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = tex1D<float>(t, x[i]); }
"""
m = xcuda.compile(SRC, name="probe")
rng = np.random.default_rng(1)
image = rng.random((16, 16), dtype=np.float32)
n = 8192
xy = (rng.random(2 * n) * 18 - 1).astype(np.float32)
out2 = np.zeros(n, np.float32)
m.s2[n // 256, 256](xcuda.texture(image, filter="linear"), xy, out2, n)
line = rng.random(16, dtype=np.float32)
x = (rng.random(n) * 18 - 1).astype(np.float32)
out1 = np.zeros(n, np.float32)
m.s1[n // 256, 256](xcuda.texture(line, filter="linear"), x, out1, n)
# a dyadic image: texel values exact in binary, so each weight shows
step = np.zeros((2, 2), np.float32); step[0, 1] = 1.0
xy3 = (rng.random(2 * n) * 1 + 0.5).astype(np.float32)
out3 = np.zeros(n, np.float32)
m.s2[n // 256, 256](xcuda.texture(step, filter="linear"), xy3, out3, n)
np.savez(sys.argv[1], image=image, xy=xy, out2=out2, line=line, x=x, out1=out1, step=step, xy3=xy3, out3=out3)
print("saved", sys.argv[1])
