"""Zero-copy interop with CuPy, PyTorch and cuda.core, on a GPU host whose Python has them.

These run under a Python that has CuPy, PyTorch and cuda.core and the xcuda module installed in it (on
the GPU host: tests/gpu_host/run_interop.sh pip-installs xcuda into the host's Python 3.12 and fails if
any of these skips); elsewhere they skip, saying which library is missing.
"""
import importlib

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


@pytest.fixture(scope="module")
def cuda_core():
    for name in ("cuda.core", "cuda.core.experimental"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "Device"):
            return module
    pytest.skip("cuda.core is not installed in this Python")


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


def test_a_torch_stream_orders_the_launch(mod, torch):
    n = 1 << 20
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.full((n,), 3.0, device="cuda")
        out = torch.zeros(n, device="cuda")
        mod.saxpy[xcuda.grid_for(n), 256, stream](1.0, x, x, out, n)
    stream.synchronize()
    assert float(out[-1]) == 6.0 and float(out.sum()) == 6.0 * n


def test_a_cuda_core_stream_orders_the_launch(mod, cuda_core):
    n = 1 << 20
    device = cuda_core.Device(0)
    device.set_current()
    stream = device.create_stream()
    x = xcuda.to_device(np.full(n, 3.0, np.float32))
    out = xcuda.zeros(n, np.float32)
    mod.saxpy[xcuda.grid_for(n), 256, stream](1.0, x, x, out, n)
    stream.sync()
    assert np.asarray(out)[-1] == 6.0


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
