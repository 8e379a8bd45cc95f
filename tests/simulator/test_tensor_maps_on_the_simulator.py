"""TMA on the PTX simulator (issue 45 item 3; docs/simulator.md "TMA"), end to end.

- the gpu tests of tests/runtime/test_tensor_maps.py (the Programming Guide's TMA example as published, a tile copy with zero and NaN fill at the edges, the
  Programming Guide's load-change-store example, each swizzle read back through numpy's inverse, an im2col column
  against numpy's padded im2col) run in a child pytest with XCUDA_DEVICE=simulator, every one of them;
- what only the simulator says: 128 bytes that are no map of its own are named at the copy, a copy whose .Nd
  differs from the map's rank is named, the driver's own rules refuse a bad map at cuTensorMapEncodeTiled (the
  rule in the error), and the session goes on.
"""
import subprocess
import sys
from pathlib import Path

from kernel_runs import run_gpu_tests_on_the_simulator
from test_textures_on_the_simulator import child_env

REPO = Path(__file__).resolve().parent.parent.parent

SCRIPT = r'''
import ctypes, numpy as np, sys, xcuda
sys.path[:0] = ["tests", "tests/runtime"]  # tests/ holds gpu_arch
from test_tensor_maps import TILE_COPY
m = xcuda.compile(TILE_COPY, name="sim_tma_faults")
out = np.zeros((16, 64), np.float32)
try:
    m.tile_copy[1, 32](bytes(range(128)), out, 64)
except xcuda.KernelFault as fault:
    raise AssertionError(f"a simulator fault declared the session lost: {fault}")
except xcuda.CudaError as fault:
    message = str(fault)
else:
    raise AssertionError("a copy through 128 bytes of nothing ran")
assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message and "that is not one: its 128 bytes were not written" in message, message
assert "thread (0,0,0) of block (0,0,0)" in message, message
d = xcuda.to_device(np.ones((4, 8, 32), np.float32))
try:
    m.tile_copy[1, 32](xcuda.tensor_map(d, box=(1, 8, 32)), out, 64)
except xcuda.CudaError as fault:
    assert "copies a 2d tile box through a tiled tensor map of rank 3" in str(fault), str(fault)
else:
    raise AssertionError("a 2d copy through a map of rank 3 ran")
# The shim's own check of the driver's rules (what the core does not check first, reached through the table).
lib = ctypes.CDLL(xcuda.__file__.rsplit("/", 1)[0] + "/libxcuda-sim.so")
buf = (ctypes.c_uint8 * 256)()
at = (ctypes.addressof(buf) + 63) // 64 * 64
dims = (ctypes.c_uint64 * 2)(64, 8); strides = (ctypes.c_uint64 * 1)(200); box = (ctypes.c_uint32 * 2)(32, 8)
ones = (ctypes.c_uint32 * 2)(1, 1)
rc = lib.cuTensorMapEncodeTiled(ctypes.c_void_p(at), 7, 2, ctypes.c_void_p(d.ptr), dims, strides, box, ones, 0, 0, 0, 0)
assert rc == 1, rc  # CUDA_ERROR_INVALID_VALUE
text = ctypes.c_char_p()
lib.cuGetErrorString(rc, ctypes.byref(text))
assert b"globalStrides[0] = 200" in text.value, text.value
m.tile_copy[1, 32](xcuda.tensor_map(xcuda.to_device(np.ones((8, 32), np.float32)), box=(8, 32)), out, 64)
assert (out[:8, :32] == 1).all()  # the session goes on
print("held")
'''


def test_the_tensor_map_gpu_tests_pass_on_the_simulator(build_dir):
    run_gpu_tests_on_the_simulator("tests/runtime/test_tensor_maps.py", build_dir, at_least=7)


def test_maps_the_simulator_did_not_make_and_broken_rules_are_named_and_the_session_goes_on(build_dir):
    ran = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env=child_env(build_dir))
    assert ran.returncode == 0 and "held" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-6000:]
