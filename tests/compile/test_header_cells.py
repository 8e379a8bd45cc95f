"""Header cells: %%cuda_header keeps a header in memory for later %%cuda cells; the compile cache key
covers its text; changing it marks the modules built with the old text stale."""
import warnings

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import xcuda
from thread_runs import run_in_threads

USER = 'extern "C" __global__ void twice(float* x, int n)\n{ int i = threadIdx.x; if (i < n) x[i] = vec_scale(x[i]); }\n'
CELL = '#include "vecmath.cuh"\n' + USER


@pytest.fixture()
def shell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    return shell


def test_a_header_cell_is_included_by_later_cells(shell, capsys):
    shell.run_cell_magic("cuda_header", "vecmath.cuh", "__device__ inline float vec_scale(float v) { return 2 * v; }\n")
    assert 'header vecmath.cuh kept for #include "vecmath.cuh"' in capsys.readouterr().out
    shell.run_cell_magic("cuda", "--name hm --arch compute_75", CELL)
    module = shell.user_ns["hm"]
    assert "vecmath.cuh" in module.headers and not module.stale
    assert "mul.f32" in module.ptx or "add.f32" in module.ptx


def test_changing_a_header_marks_its_modules_stale_and_rerunning_recompiles(shell, capsys):
    shell.run_cell_magic("cuda_header", "vecmath.cuh", "__device__ inline float vec_scale(float v) { return 2 * v; }\n")
    shell.run_cell_magic("cuda", "--name hs --arch compute_75", CELL)
    old = shell.user_ns["hs"]
    capsys.readouterr()
    shell.run_cell_magic("cuda_header", "vecmath.cuh", "__device__ inline float vec_scale(float v) { return 3 * v; }\n")
    assert "stale until their cells run again: hs" in capsys.readouterr().out
    assert old.stale
    assert "STALE: vecmath.cuh changed" in repr(xcuda.status())
    shell.run_cell_magic("cuda", "--name hs --arch compute_75", CELL)
    new = shell.user_ns["hs"]
    assert not new.stale and new.origin == "nvrtc"
    assert "3 * v" in new.headers["vecmath.cuh"]
    # Back to the first text: that binary is still in the compile cache.
    shell.run_cell_magic("cuda_header", "vecmath.cuh", "__device__ inline float vec_scale(float v) { return 2 * v; }\n")
    shell.run_cell_magic("cuda", "--name hs --arch compute_75", CELL)
    assert shell.user_ns["hs"].origin in ("memory", "disk")


def test_launching_a_stale_kernel_warns(shell):
    shell.run_cell_magic("cuda_header", "warn.cuh", "__device__ inline float vec_scale(float v) { return v; }\n")
    shell.run_cell_magic("cuda", "--name hw --arch compute_75", '#include "warn.cuh"\n' + USER)
    shell.run_cell_magic("cuda_header", "warn.cuh", "__device__ inline float vec_scale(float v) { return -v; }\n")
    kernel = shell.user_ns["hw"].twice
    with pytest.warns(UserWarning, match="compiled with an older warn.cuh"):
        try:
            kernel[1, 32](np.zeros(4, np.float32), 4)
        except xcuda.CudaUnavailableError:
            pass  # no GPU here: the warning came first


def test_a_header_cell_needs_one_name(shell):
    with pytest.raises(UsageError, match="one header name"):
        shell.run_cell_magic("cuda_header", "", "int x;\n")


def test_headers_that_include_other_headers_are_passed_along(shell):
    shell.run_cell_magic("cuda_header", "inner.cuh", "__device__ inline int inner_value() { return 41; }\n")
    shell.run_cell_magic("cuda_header", "outer.cuh", '#include "inner.cuh"\n__device__ inline int outer_value() { return inner_value() + 1; }\n')
    shell.run_cell_magic("cuda", "--name nested --arch compute_75",
                         '#include "outer.cuh"\nextern "C" __global__ void answer(int* x) { x[0] = outer_value(); }\n')
    assert set(shell.user_ns["nested"].headers) == {"inner.cuh", "outer.cuh"}


def test_views_and_variants_of_a_cell_including_a_header_cell_take_compile_options(shell):
    # Issue 45, item 6: a view of such a cell, compiled with options (-DX=1), keeps the header cell.
    shell.run_cell_magic("cuda_header", "offset_defs.cuh",
                         "#pragma once\n#ifndef X\n#define X 0\n#endif\n__device__ float bump(float v) { return v + X; }\n")
    source = '#include "offset_defs.cuh"\nextern "C" __global__ void bumped(float* a) { a[0] = bump(a[0]); }\n'
    shell.run_cell_magic("cuda", "--arch compute_80 -- -DX=1", source)
    kernel = shell.user_ns["bumped"]
    assert "add.f32" in str(kernel.lines())
    assert "0f3F800000" in kernel.ptx  # X as a float constant: 1.0
    expected = {"-DX=2": "0f40000000", "X=4": "0f40800000"}
    variants = {"-DX=2": kernel.variant(options=["-DX=2"]),
                "X=4": xcuda.compile(source, arch="compute_80", options=["-DX=4"]).bumped}
    for option, variant in variants.items():
        assert "bump(a[0])" in str(variant.lines()) and expected[option] in variant.ptx, option
        assert list(variant.module.headers) == ["offset_defs.cuh"]


HEADER_KERNEL = ('#pragma once\nextern "C" __global__ void in_header(float* a, int n)\n{\n    int i = threadIdx.x;\n'
                 '    if (i < n) a[i] = a[i] * 2.0f + 1.0f;\n}\n')


def test_lines_of_a_kernel_defined_in_a_header_cell_show_the_header_cells_lines(shell):
    shell.run_cell_magic("cuda_header", "kernel_in_header.cuh", HEADER_KERNEL)
    shell.run_cell_magic("cuda", "--name kh --arch compute_80",
                         '#include "kernel_in_header.cuh"\nextern "C" __global__ void own(float* a) { a[0] = 3.0f; }\n')
    module = shell.user_ns["kh"]
    shown = module.in_header.lines()
    text = str(shown)
    # The header cell's editor lines (its body under the %%cuda_header line): line 5 of the body is line 6.
    assert "   6 |     if (i < n) a[i] = a[i] * 2.0f + 1.0f;" in text, text
    assert "   5 |     int i = threadIdx.x;" in text
    fma = text.index("fma.rn.f32")
    assert text.rfind("   6 |", 0, fma) > text.rfind("   5 |", 0, fma)  # the arithmetic under its own line
    assert "header cell kernel_in_header.cuh" in shown._repr_html_()
    own = str(module.own.lines())
    assert "   3 | extern \"C\" __global__ void own" in own and "in_header" not in own


def test_lines_of_a_header_kernel_compiled_from_a_string_count_the_headers_own_lines():
    xcuda.set_header("kernel_in_header_str.cuh", HEADER_KERNEL)
    module = xcuda.compile('#include "kernel_in_header_str.cuh"\n', arch="compute_80")
    text = str(module.in_header.lines())
    assert "   5 |     if (i < n) a[i] = a[i] * 2.0f + 1.0f;" in text and "(no source line)" not in text, text


def test_a_removed_header_cell_gives_the_name_back_to_the_standard_headers_stand_in(shell):
    xcuda.set_header("stdio.h", "#pragma once\n#define FROM_HEADER_CELL 1\n")
    source = ('#include <stdio.h>\n#ifdef FROM_HEADER_CELL\ntypedef double T;\n#else\ntypedef int T;\n#endif\n'
              'extern "C" __global__ void k(T x, FILE* f) {}\n')
    with pytest.raises(xcuda.CompileError, match="FILE"):  # the header cell hides the stand-in, which declares FILE
        xcuda.compile(source, arch="compute_75")
    with_cell = xcuda.compile(source.replace(", FILE* f", ""), arch="compute_75", name="with_stdio_cell")
    assert with_cell.k.parameters[0]["dtype"] == np.float64
    assert xcuda.remove_header("stdio.h") == ["with_stdio_cell"]
    assert with_cell.stale and "stdio.h" not in xcuda.headers()
    assert xcuda.compile(source, arch="compute_75").k.parameters[0]["dtype"] == np.int32
    with pytest.raises(KeyError, match="no header cell named 'stdio.h': xcuda.headers\\(\\) lists them"):
        xcuda.remove_header("stdio.h")


def test_header_cells_set_and_removed_from_several_threads_at_once_end_as_each_thread_left_them():
    def churn(k):
        for round_ in range(40):
            xcuda.set_header(f"churn{k}.cuh", f"#define CHURN{k} {round_}\n")
            if round_ % 2:
                xcuda.remove_header(f"churn{k}.cuh")

    run_in_threads(churn, 6)  # raises the first thread's error, naming the thread
    assert not any(name.startswith("churn") for name in xcuda.headers())  # each thread's last round removed its header
