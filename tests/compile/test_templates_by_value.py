"""Class templates by value (issue 25, item 5): a kernel taking Matrix<float> by value is typed before its
first launch, from the reader's instantiation of the template (fields and offsets, nested instances and
default arguments too) that the compiler's layout probe checks; a template the reader leaves to the
compiler (one with a specialization) gets the compiler's size, so its bytes can be passed."""
import numpy as np
import pytest

import xcuda
from conftest import HAS_GPU

MATRIX = r"""
template <typename T, int N = 2>
struct Matrix { T* data; int rows, cols; T scale[N]; };
namespace geo { template <class T> struct Box { T lo, hi; }; }
template <class T> struct Pair { T first; Matrix<T, 3> second; };
extern "C" __global__ void fill(Matrix<float> m, Matrix<double, 4> d, geo::Box<short> b, Pair<float> p, Matrix<float>* q)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m.rows * m.cols) m.data[i] = m.scale[0] * i + m.scale[1] + b.lo + p.second.scale[2];
}
"""


def reaches_the_gpu(call):
    if HAS_GPU:
        call()
    else:
        with pytest.raises(xcuda.CudaUnavailableError):
            call()


def test_a_class_template_by_value_is_typed_before_the_first_launch():
    m = xcuda.compile(MATRIX, arch="compute_80")
    mf, md, box, pair, pointer = m.fill.parameters
    assert mf["refusal"] is None and mf["size"] == 24
    assert mf["dtype"].names == ("data", "rows", "cols", "scale") and mf["dtype"].fields["scale"][0].shape == (2,)
    assert md["size"] == 48 and md["dtype"].fields["scale"][0] == np.dtype((np.float64, (4,)))
    assert box["size"] == 4 and box["dtype"]["lo"] == np.int16
    assert pair["size"] == 40 and pair["dtype"].fields["second"][1] == 8
    assert pointer["dtype"] == mf["dtype"]
    assert "xcuda_probe_0" in m.ptx  # the compiler checked these layouts
    value = np.zeros((), mf["dtype"])
    value["rows"], value["cols"] = 2, 3
    reaches_the_gpu(lambda: m.fill[1, 32](value, np.zeros((), md["dtype"]), (1, 2), np.zeros((), pair["dtype"]), None))
    with pytest.raises(TypeError, match=r"'m' \(Matrix<float>\) is 24 bytes; the value given has 16 bytes"):
        m.fill[1, 32](np.zeros(4, np.float32), np.zeros((), md["dtype"]), (1, 2), np.zeros((), pair["dtype"]), None)


def test_a_template_with_a_specialization_is_sized_by_the_compiler():
    m = xcuda.compile("template <class T> struct Wrap { T v; };\ntemplate <> struct Wrap<int> { double d; int i; };\n"
                      'extern "C" __global__ void k(Wrap<int> w, Wrap<float> f) {}\n', arch="compute_80")
    w, f = m.k.parameters
    assert w["dtype"] is None and w["size"] == 16 and w["refusal"] is None
    assert f["dtype"] is None and f["size"] == 4
    reaches_the_gpu(lambda: m.k[1, 1](np.zeros(16, np.uint8), np.float32(1.0)))
    with pytest.raises(TypeError, match=r"'w' \(Wrap<int>\) is 16 bytes; the value given has 8 bytes"):
        m.k[1, 1](np.zeros(8, np.uint8), np.float32(1.0))


def test_a_template_instance_the_probe_disagrees_with_is_refused():
    m = xcuda.compile("template <class T> struct __attribute__((packed)) Tight { char c; T v; };\n"
                      'extern "C" __global__ void k(Tight<double> t) {}\n', arch="compute_80")
    assert "sizeof is 9 bytes to NVRTC and 16 to the reader" in m.k.parameters[0]["refusal"]


@pytest.mark.gpu
def test_a_matrix_by_value_fills_its_data_on_the_gpu():
    m = xcuda.compile(MATRIX)
    mf, md, box, pair, _ = m.fill.parameters
    out = xcuda.zeros(6, np.float32)
    value = np.zeros((), mf["dtype"])
    value["data"], value["rows"], value["cols"], value["scale"] = out.ptr, 2, 3, (2.0, 0.5)
    b = np.zeros((), box["dtype"])
    b["lo"] = 10
    p = np.zeros((), pair["dtype"])
    p["second"]["scale"] = (0, 0, 0.25)
    m.fill[1, 32](value, np.zeros((), md["dtype"]), b, p, None)
    np.testing.assert_allclose(out.copy_to_host(), 2.0 * np.arange(6) + 0.5 + 10 + 0.25)
