"""Textures and surfaces on the PTX simulator (issue 46 item 1; docs/textures.md), end to end.

- the gpu tests of tests/runtime/test_textures.py (simpleTexture, simpleSurfaceWrite, a PMPP-style convolution
  through a texture, 3D, layered, 2-channel, half, border and mirror textures, against numpy references) run in a
  child pytest with XCUDA_DEVICE=simulator, every one of them;
- what only the simulator can say: a surface write outside its array with cudaBoundaryModeTrap is refused naming
  the thread and the coordinates, and the session goes on (on a GPU the fault would be sticky); a texture handle
  that is no live object (a destroyed texture's) is named; a module whose kernel uses a form the simulator lacks
  (tex.level, a mipmap level) loads, its other kernels run, and the launch that reaches it says why.
"""
import os
import subprocess
import sys

from kernel_runs import run_gpu_tests_on_the_simulator


SCRIPT = r'''
import numpy as np, xcuda
m = xcuda.compile(r"""
extern "C" __global__ void write_at(cudaSurfaceObject_t s, int x, int y)
{ surf2Dwrite(1.0f, s, x * 4, y, cudaBoundaryModeTrap); }
extern "C" __global__ void read(cudaTextureObject_t t, float* out) { out[0] = tex2D<float>(t, 0.5f, 0.5f); }
extern "C" __global__ void level(cudaTextureObject_t t, float* out) { out[0] = tex2DLod<float>(t, 0.5f, 0.5f, 1.0f); }
""", name="sim_texture_faults")
array = xcuda.cuda_array((4, 8), np.float32, surface=True)
surface = xcuda.surface(array)
try:
    m.write_at[1, 1](surface, 8, 1)
except xcuda.KernelFault as fault:
    raise AssertionError(f"a simulator fault declared the session lost: {fault}")
except xcuda.CudaError as fault:
    message = str(fault)
else:
    raise AssertionError("the write outside the surface raised nothing")
assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message, message
assert "accesses a surface of 8 x 4 x 1 elements of 4 bytes outside it, at byte 32 of row 1" in message, message
assert "thread (0,0,0) of block (0,0,0)" in message, message
m.write_at[1, 1](surface, 7, 3)  # inside: the session goes on
assert array.copy_to_host()[3, 7] == 1.0
texture = xcuda.texture(np.full((2, 2), 3.0, np.float32))
stale = texture.handle
del texture
out = np.zeros(1, np.float32)
try:
    m.read[1, 1](stale, out)
except xcuda.CudaError as fault:
    assert "uses the handle 0x" in str(fault) and "which is no live texture object" in str(fault), str(fault)
else:
    raise AssertionError("a destroyed texture's handle was read")
m.read[1, 1](xcuda.texture(np.full((2, 2), 3.0, np.float32)), out)
assert out[0] == 3.0
try:
    m.level[1, 1](xcuda.texture(np.ones((2, 2), np.float32)), out)
except xcuda.CudaError as fault:
    assert "CUDA_ERROR_NOT_SUPPORTED" in str(fault) and "only tex.1d/2d/3d/a1d/a2d are implemented" in str(fault), str(fault)
else:
    raise AssertionError("tex.level ran")
print("held")
'''


def child_env(build_dir):
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env["XCUDA_DEVICE"] = "simulator"
    env["XCUDA_BUILD_DIR"] = str(build_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    return env


def test_the_texture_gpu_tests_pass_on_the_simulator(build_dir):
    run_gpu_tests_on_the_simulator("tests/runtime/test_textures.py", build_dir, at_least=7)


def test_texture_faults_and_refusals_are_named_and_the_session_goes_on(build_dir):
    ran = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300,
                         env=child_env(build_dir))
    assert ran.returncode == 0 and "held" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-6000:]
