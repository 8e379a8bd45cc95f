"""CUDA as people write it: types from header cells, kernels in headers, default arguments and
arguments by name, errors said in the user's words, and log parsers that take any text; plus the
argument-conversion checks that the mutation check in docs/other-peoples-cuda.md relies on."""
import warnings

import numpy as np
import pytest

import xcuda
from conftest import HAS_GPU

TYPES = "#pragma once\ntypedef unsigned int uint;\nstruct Box { float lo, hi; uint n; };\n"


def launch_reaches_the_gpu(call):
    """Runs a launch whose arguments are right: it launches on a GPU, and on a machine without one it
    gets as far as asking for the driver (every argument was converted before that)."""
    if HAS_GPU:
        call()
    else:
        with pytest.raises(xcuda.CudaUnavailableError):
            call()


def test_a_typedef_from_a_header_cell_types_a_by_value_parameter():
    xcuda.set_header("op_types.cuh", TYPES)
    m = xcuda.compile('#include "op_types.cuh"\nextern "C" __global__ void k(uint n, Box b, uint* out) {}\n',
                      arch="compute_80")
    n, box, out = m.k.parameters
    assert n["dtype"] == np.uint32 and n["size"] == 4
    assert box["dtype"].names == ("lo", "hi", "n") and box["dtype"].itemsize == 12
    assert out["dtype"] == np.uint32
    value = np.zeros((), box["dtype"])
    launch_reaches_the_gpu(lambda: m.k[1, 1](7, value, np.zeros(1, np.uint32)))
    launch_reaches_the_gpu(lambda: m.k[1, 1](np.uint32(7), (0.0, 1.0, 3), np.zeros(1, np.uint32)))
    with pytest.raises(TypeError, match=r"'b' \(Box\) is 12 bytes; the value given has 8 bytes"):
        m.k[1, 1](7, np.zeros(2, np.float32), np.zeros(1, np.uint32))
    with pytest.raises(TypeError, match=r"does not make a value of dtype"):
        m.k[1, 1](7, (1.0, "x", 2), np.zeros(1, np.uint32))


def test_kernels_in_a_header_cell_are_bound_and_marked_stale_with_it(shell):
    shell.run_cell_magic("cuda_header", "ops.cuh", TYPES + "__global__ void fill(uint* x, uint v) { x[0] = v; }\n")
    shell.run_cell_magic("cuda", "--arch compute_80",
                         '#include "ops.cuh"\nextern "C" __global__ void own(uint* x) { x[0] = 1; }\n')
    fill = shell.user_ns["fill"]
    assert fill.file == "ops.cuh" and shell.user_ns["own"].file == ""
    assert set(fill.module.kernels) == {"fill", "own"}
    shell.run_cell_magic("cuda_header", "ops.cuh", TYPES + "__global__ void fill(uint* x, uint v) { x[0] = v + 1; }\n")
    assert fill.module.stale


def test_defaults_apply_and_arguments_go_by_name():
    m = xcuda.compile("__global__ void k(int* data, int width, int* partial_sums = NULL, float scale = 0.5f) {}\n",
                      arch="compute_80")
    data = np.zeros(4, np.int32)
    launch_reaches_the_gpu(lambda: m.k[1, 1](data, 2))
    launch_reaches_the_gpu(lambda: m.k[1, 1](data, width=2, scale=2.0))
    launch_reaches_the_gpu(lambda: m.k[1, 1](partial_sums=None, width=2, data=data))
    assert [p["default"] for p in m.k.parameters] == [None, None, "NULL", "0.5f"]
    with pytest.raises(TypeError, match=r"takes 4 arguments, got 1: 'width' has no default argument"):
        m.k[1, 1](data)
    with pytest.raises(TypeError, match=r"has no parameter named 'widht'; its parameters are 'data', 'width'"):
        m.k[1, 1](data, widht=2)
    with pytest.raises(TypeError, match=r"got parameter 1 'width' twice"):
        m.k[1, 1](data, 2, width=2)
    with pytest.raises(ValueError, match=r"'width' \(int\): 2147483648 does not fit in int32"):
        m.k[1, 1](data, width=2**31)


def test_a_default_xcuda_cannot_evaluate_asks_for_the_argument():
    m = xcuda.compile("__device__ int pick(); __global__ void k(int* x, int n = pick()) {}\n", arch="compute_80")
    with pytest.raises(TypeError, match=r"'n' defaults to 'pick\(\)', which is not a constant xcuda can evaluate"):
        m.k[1, 1](np.zeros(1, np.int32))


def test_errors_in_a_header_cell_name_it_and_its_line():
    xcuda.set_header("broken.cuh", "#pragma once\n\n__device__ int f() { return undefined_thing; }\n")
    with pytest.raises(xcuda.CompileError) as caught:
        xcuda.compile('#include "broken.cuh"\nextern "C" __global__ void k(int* x) { x[0] = f(); }\n',
                      arch="compute_80")
    (d,) = caught.value.diagnostics
    assert (d["file"], d["line"], d["source_line"]) == ("broken.cuh", 3, "__device__ int f() { return undefined_thing; }")
    assert "Source of header cell 'broken.cuh'" in str(caught.value)
    assert "header cell broken.cuh, line 3" in caught.value.html


def test_a_host_function_a_kernel_calls_gets_a_hint_naming_the_declaration():
    # A host function no kernel calls is set aside (tests/compile/test_host_code.py); one a kernel calls is not.
    with pytest.raises(xcuda.CompileError) as caught:
        xcuda.compile('int helper(int a) { return a + 1; }\nextern "C" __global__ void k(int* x) { x[0] = helper(1); }\n',
                      arch="compute_80")
    hint = caught.value.diagnostics[0]["hint"]
    assert hint.startswith("'int helper(int a) { return a + 1; }'")
    assert "a kernel calls this one, so mark it __device__" in hint


def test_overloaded_kernels_are_explained_without_nvrtc_internals():
    with pytest.raises(xcuda.CompileError) as caught:
        xcuda.compile("__global__ void f(int* x) {}\n__global__ void f(float* x) {}\n", arch="compute_80")
    text = str(caught.value)
    assert "__nv_name_map" not in text and "nv_mangled_name" not in text
    (d,) = caught.value.diagnostics
    assert d["line"] == 1 and "kernel 'f' is overloaded" in d["message"]
    assert "different names" in d["hint"] and 'extern "C"' in d["hint"] and "instantiate" in d["hint"]


def test_a_cell_without_a_kernel_warns_and_points_to_header_cells(shell):
    with pytest.warns(UserWarning, match=r"no __global__ function.*%%cuda_header"):
        shell.run_cell_magic("cuda", "--arch compute_80", "__device__ float twice(float x) { return 2 * x; }\n")


def test_explicit_instantiations_in_the_source_are_kernels():
    m = xcuda.compile("template <int B> __global__ void k(float* x, int n = B) {}\n"
                      "template __global__ void k<64>(float*, int);\n", arch="compute_80")
    instance = m.kernels["k<64>"]
    assert instance.symbol.startswith("_Z") and [p["name"] for p in instance.parameters] == ["x", "n"]


@pytest.mark.parametrize("text", ["Function properties for", "Function properties for ", "Used 9 registers",
                                  "ptxas info    : Used 9 registers", "cell(1): error: fake", "\u00e9\u00e8 \U0001F600",
                                  "x" * 20000, "'", "bytes stack frame", "Compiling entry function 'x' for 'sm_1'"])
def test_warnings_that_echo_any_text_leave_resources_readable(text):
    m = xcuda.compile(f'#warning {text}\nextern "C" __global__ void k(int* x) {{ x[0] = 1; }}\n', arch="sm_80")
    assert m.resources["k"].registers > 0
    assert m.kernels["k"].ptxas_resources.registers > 0


@pytest.mark.parametrize("text", ["Function properties for", "\u00e9 \U0001F600 \x01", "y" * 20000, "cell(99999999999): error: x"])
def test_errors_that_echo_any_text_are_a_clear_compile_error(text):
    with pytest.raises(xcuda.CompileError) as caught:
        xcuda.compile(f'#error {text}\nextern "C" __global__ void k(int* x) {{}}\n', arch="sm_80")
    assert caught.value.diagnostics[0]["line"] == 1 and caught.value.diagnostics[0]["severity"].endswith("error")


# ---- what the mutation check relies on (docs/other-peoples-cuda.md) ---------------------------------------------

SIGNED = r"""
extern "C" __global__ void widths(signed char a, short b, int c, long long d, int* out) {}
"""


@pytest.mark.parametrize("index, lowest", [(0, -2**7), (1, -2**15), (2, -2**31), (3, -2**63)])
def test_signed_lower_bounds_are_accepted_and_one_below_is_refused(index, lowest):
    m = xcuda.compile(SIGNED, arch="compute_80")
    args = [0, 0, 0, 0, np.zeros(1, np.int32)]
    args[index] = lowest
    launch_reaches_the_gpu(lambda: m.widths[1, 1](*args))
    args[index] = lowest - 1
    with pytest.raises(ValueError, match=r"does not fit in (int(8|16|32|64)|any 64-bit integer)"):
        m.widths[1, 1](*args)


def test_read_only_numpy_arrays_are_taken_for_const_pointers_and_refused_for_others():
    m = xcuda.compile('extern "C" __global__ void k(const float* in, float* out) {}\n', arch="compute_80")
    frozen = np.ones(4, np.float32)
    frozen.flags.writeable = False
    launch_reaches_the_gpu(lambda: m.k[1, 4](frozen, np.zeros(4, np.float32)))
    with pytest.raises(ValueError, match=r"'out' \(float\*\) is written by the kernel, but the numpy array"):
        m.k[1, 4](frozen, frozen)


def test_instantiations_are_part_of_the_compile_cache_key():
    source = "template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }\n"
    first = xcuda.compile(source, arch="compute_80", instantiate=["scale<float>"], name="key_a")
    second = xcuda.compile(source, arch="compute_80", instantiate=["scale<double>"], name="key_b")
    assert first.kernels["scale<float>"].symbol.startswith("_Z")
    assert second.kernels["scale<double>"].symbol.startswith("_Z")
    assert second.kernels["scale<double>"].symbol != first.kernels["scale<float>"].symbol


@pytest.mark.gpu
def test_a_const_pointers_numpy_array_is_not_copied_back():
    m = xcuda.compile('extern "C" __global__ void sneaky(const float* x) { ((float*)x)[threadIdx.x] = 7.0f; }\n')
    x = np.ones(32, np.float32)
    m.sneaky[1, 32](x)
    assert (x == 1).all()


def test_headers_of_an_include_folder_are_read_like_header_cells(tmp_path):
    (tmp_path / "util.h").write_text("#pragma once\ntypedef unsigned short half_word;\n"
                                     "__global__ void clear(half_word* x, half_word v = 0) { x[threadIdx.x] = v; }\n")
    m = xcuda.compile('#include "util.h"\n#include <cuda_fp16.h>\nextern "C" __global__ void own(half_word v) {}\n',
                      arch="compute_80", include_dirs=[str(tmp_path), "/usr/local/cuda/include"])
    assert m.kernels["clear"].file == "util.h"
    assert m.kernels["own"].parameters[0]["dtype"] == np.uint16
    assert m.kernels["clear"].parameters[1]["default"] == "0"
