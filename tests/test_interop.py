"""Zero-copy interop with CuPy and PyTorch, on a GPU host whose Python has them.

These run under a Python that has CuPy or PyTorch and the xcuda module built for it (on the GPU host:
the module from tests/bench/run_gpu.sh's build-host, `XCUDA_BUILD_DIR=build-host python3 -m pytest
tests/test_interop.py`); elsewhere they skip, saying which library is missing.
"""
import numpy as np
import pytest

import xcuda

pytestmark = pytest.mark.gpu

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
extern "C" __global__ void fill(float* x, float value, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) x[i] = value; }
"""


@pytest.fixture(scope="module")
def mod():
    return xcuda.compile(SOURCE, name="interop")


@pytest.fixture(scope="module")
def cupy():
    return pytest.importorskip("cupy", reason="CuPy is not installed in this Python")


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed in this Python")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch


def test_cupy_arrays_are_kernel_arguments_without_copies(mod, cupy):
    n = 10_000
    x = cupy.arange(n, dtype=cupy.float32)
    y = cupy.ones(n, dtype=cupy.float32)
    out = cupy.zeros(n, dtype=cupy.float32)
    mod.saxpy.forall(n)(2.0, x, y, out, n)
    cupy.testing.assert_allclose(out, 2 * x + y)


def test_cupy_views_xcuda_arrays_in_place(mod, cupy):
    buf = xcuda.zeros(1000, np.float32)
    view = cupy.asarray(buf)                      # __cuda_array_interface__
    assert view.data.ptr == buf.ptr
    mod.fill.forall(1000)(buf, 4.0, 1000)
    assert float(view.sum()) == 4000.0
    view[:] = 1.5
    assert np.asarray(buf).sum() == 1500.0
    shared = cupy.from_dlpack(buf)                # __dlpack__
    assert shared.data.ptr == buf.ptr


def test_a_cupy_stream_orders_the_launch(mod, cupy):
    n = 1 << 20
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.full(n, 3.0, dtype=cupy.float32)
    out = cupy.zeros(n, dtype=cupy.float32)
    mod.saxpy[xcuda.grid_for(n), 256, stream](1.0, x, x, out, n)
    stream.synchronize()
    assert float(out[-1]) == 6.0


def test_non_contiguous_cupy_arrays_are_refused(mod, cupy):
    x = cupy.zeros((64, 64), dtype=cupy.float32).T
    with pytest.raises(ValueError, match="not C-contiguous"):
        mod.fill.forall(64 * 64)(x, 1.0, 64 * 64)


def test_torch_tensors_are_kernel_arguments_and_views(mod, torch):
    n = 4096
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    out = torch.empty(n, dtype=torch.float32, device="cuda")
    mod.saxpy.forall(n)(3.0, x, x, out, n)
    torch.testing.assert_close(out, 4 * x)
    with pytest.raises(TypeError, match="needs float32 elements"):
        mod.saxpy.forall(n)(3.0, x.double(), x, out, n)
    buf = xcuda.to_device(np.arange(16, dtype=np.float32))
    tensor = torch.from_dlpack(buf)
    assert tensor.data_ptr() == buf.ptr and tensor.device.type == "cuda"
    tensor += 1
    np.testing.assert_array_equal(np.asarray(buf), np.arange(16) + 1)


def test_dlpack_only_producers_are_kernel_arguments(mod, torch):
    class DLPackOnly:
        """Exports DLPack and nothing else (as JAX arrays do)."""

        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, stream=None):
            return self.tensor.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.tensor.__dlpack_device__()

    n = 2048
    x = torch.full((n,), 2.0, device="cuda")
    out = torch.zeros(n, device="cuda")
    mod.saxpy.forall(n)(1.0, DLPackOnly(x), DLPackOnly(x), DLPackOnly(out), n)
    assert float(out.sum()) == 4.0 * n
