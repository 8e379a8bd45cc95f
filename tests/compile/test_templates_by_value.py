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


# --- instances asked for by name (--instantiate, instantiate=[...]), issue 45 item 6 ----------------------

SGEMM_STYLE = r"""
template <typename T> struct Matrix { int width; int height; int stride; T* elements; };
namespace blas { template <class T> struct Tile { T lo, hi; }; }
template <typename T>
__global__ void MatMulKernel(const Matrix<T> A, const Matrix<T> B, Matrix<T> C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < C.width * C.height) C.elements[i] = A.elements[i] + B.elements[i];
}
namespace blas {
template <class T> __global__ void clamp(T* x, Tile<T> range, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] < range.lo ? range.lo : (x[i] > range.hi ? range.hi : x[i]);
}
}
"""


def test_an_instance_asked_for_by_name_gets_its_dtype_from_the_units_class_template():
    m = xcuda.compile(SGEMM_STYLE, arch="compute_80", instantiate=["MatMulKernel<float>", "blas::clamp<double>"])
    a, b, c = m["MatMulKernel<float>"].parameters
    assert a["type"] == "const Matrix<float>" and a["refusal"] is None and a["size"] == 24
    assert a["dtype"].names == ("width", "height", "stride", "elements") and a["dtype"].fields["elements"][1] == 16
    assert b["dtype"] == a["dtype"] == c["dtype"]
    x, tile, n = m["blas::clamp<double>"].parameters
    assert x["dtype"] == np.float64 and tile["type"] == "Tile<double>" and tile["size"] == 16
    assert tile["dtype"]["lo"] == np.float64 and tile["dtype"].fields["hi"][1] == 8
    assert "xcuda_probe_" in m.ptx  # the layout probe checked the instances' records against NVRTC
    value = np.zeros((), a["dtype"])
    value["width"], value["height"] = 2, 3
    reaches_the_gpu(lambda: m["MatMulKernel<float>"][1, 32](value, value, value))
    with pytest.raises(TypeError, match=r"'A' \(const Matrix<float>\) is 24 bytes; the value given has 16 bytes"):
        m["MatMulKernel<float>"][1, 32](np.zeros(4, np.float32), value, value)


def test_an_instance_the_unit_cannot_type_still_gets_its_scalar_types():
    m = xcuda.compile("template <class T> __global__ void k(T* x, T a) {}\n", arch="compute_80", instantiate=["k<short>"])
    x, a = m["k<short>"].parameters
    assert x["dtype"] == np.int16 and a["dtype"] == np.int16


def test_instantiate_naming_no_template_kernel_is_a_short_usage_error_in_the_magic(shell):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match=r"^--instantiate nope<int>: the cell has no template kernel named 'nope' "
                                         r"\(its template kernels: MatMulKernel, blas::clamp\)$"):
        shell.run_cell_magic("cuda", "--arch compute_80 --instantiate 'nope<int>'", SGEMM_STYLE)
    with pytest.raises(UsageError, match=r"^--instantiate MatMulKernel<float, int>: 'MatMulKernel<float, int>' gives 2 "
                                         r"template arguments; MatMulKernel takes 1$"):
        shell.run_cell_magic("cuda", "--arch compute_80 --instantiate 'MatMulKernel<float, int>'", SGEMM_STYLE)
    with pytest.raises(UsageError, match=r"\(it has none\)"):
        shell.run_cell_magic("cuda", "--arch compute_80 --instantiate 'nope<int>'", "__global__ void k() {}\n")
    # From Python the same mistake stays a ValueError, as every other wrong argument of xcuda.compile.
    with pytest.raises(ValueError, match=r"the cell has no template kernel named 'nope'"):
        xcuda.compile(SGEMM_STYLE, arch="compute_80", instantiate=["nope<int>"])


@pytest.mark.gpu
def test_an_instance_asked_for_by_name_runs_with_its_matrices_by_value():
    m = xcuda.compile(SGEMM_STYLE, instantiate=["MatMulKernel<float>", "blas::clamp<double>"])
    dtype = m["MatMulKernel<float>"].parameters[0]["dtype"]
    a, b, c = (xcuda.to_device(np.arange(6, dtype=np.float32) * k) for k in (1, 10, 0))
    mats = []
    for d in (a, b, c):
        v = np.zeros((), dtype)
        v["width"], v["height"], v["stride"], v["elements"] = 3, 2, 3, d.ptr
        mats.append(v)
    m["MatMulKernel<float>"][1, 32](*mats)
    np.testing.assert_array_equal(c.copy_to_host(), np.arange(6, dtype=np.float32) * 11)
    x = np.linspace(-2, 2, 9)
    m["blas::clamp<double>"][1, 32](x, (-1.0, 0.5), x.size)
    np.testing.assert_array_equal(x, np.clip(np.linspace(-2, 2, 9), -1.0, 0.5))
