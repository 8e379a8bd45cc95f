"""Types under the preprocessor (issue 25, item 4): the branch of an #if that NVRTC takes decides the
parameter types xcuda reads, -D / -U of the %%cuda line and NVRTC's predefined macros included; what the
reader cannot decide refuses the parameters that depend on it; and the compiler checks the struct
layouts the reader computed (a probe compiled with the cell), refusing a parameter where they differ."""

import numpy as np
import pytest

import xcuda
from thread_runs import run_in_threads  # tests/thread_runs.py

PRECISION = """#ifdef DOUBLE_PRECISION
typedef double real;
#else
typedef float real;
#endif
struct Body { real x, y; };
extern "C" __global__ void advance(Body* bodies, real dt, int n) {}
"""


def test_the_define_of_the_cuda_line_picks_the_typedef_and_the_struct_behind_the_pointer(shell):
    shell.run_cell_magic("cuda", "--arch compute_80", PRECISION)
    bodies, dt, _ = shell.user_ns["advance"].parameters
    assert dt["dtype"] == np.float32
    assert bodies["dtype"].itemsize == 8 and bodies["dtype"]["x"] == np.float32
    shell.run_cell_magic("cuda", "--arch compute_80 -DDOUBLE_PRECISION", PRECISION)
    bodies, dt, _ = shell.user_ns["advance"].parameters
    assert dt["dtype"] == np.float64
    assert bodies["dtype"].itemsize == 16 and bodies["dtype"].fields["y"][1] == 8
    # -U after -D (an NVRTC option on the line) undefines it again.
    shell.run_cell_magic("cuda", "--arch compute_80 -DDOUBLE_PRECISION -UDOUBLE_PRECISION", PRECISION)
    assert shell.user_ns["advance"].parameters[1]["dtype"] == np.float32


def test_the_target_arch_decides_cuda_arch_conditions():
    source = ("#if __CUDA_ARCH__ >= 800\ntypedef double acc_t;\n#else\ntypedef float acc_t;\n#endif\n"
              "#ifndef __CUDA_ARCH__\ntypedef int acc_t;\n#endif\n"
              'extern "C" __global__ void k(acc_t* out) {}\n')
    assert xcuda.compile(source, arch="compute_80").k.parameters[0]["dtype"] == np.float64
    assert xcuda.compile(source, arch="compute_75").k.parameters[0]["dtype"] == np.float32


def test_an_undecidable_condition_refuses_the_parameter_naming_it():
    m = xcuda.compile("#ifdef __VENDOR_WIDE__\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"
                      'extern "C" __global__ void k(real* x, int n) {}\n', arch="compute_80")
    x, n = m.k.parameters
    assert "`#ifdef __VENDOR_WIDE__` (line 1 of the cell)" in x["refusal"] and x["dtype"] is None
    assert n["refusal"] is None
    with pytest.raises(TypeError, match=r"parameter 0 'x' \(real\*\): xcuda will not pass it, its type depends on "
                                         r"`#ifdef __VENDOR_WIDE__`"):
        m.k[1, 1](np.zeros(4, np.float32), 4)


def test_a_layout_the_compiler_disagrees_with_is_refused_naming_both_sizes():
    m = xcuda.compile("#pragma pack(push, 1)\nstruct Packed { char tag; double value; };\n#pragma pack(pop)\n"
                      'extern "C" __global__ void k(Packed p, const Packed* q) {}\n', arch="compute_80")
    p, q = m.k.parameters
    assert "sizeof is 9 bytes to NVRTC and 16 to the reader" in p["refusal"]
    assert "the pointee of const Packed*" in q["refusal"]
    with pytest.raises(TypeError, match=r"the compiler lays out Packed differently"):
        m.k[1, 1](np.zeros((), [("tag", "i1"), ("value", "f8")]), None)
    # An offset the reader gets wrong is named too.
    m = xcuda.compile("struct __attribute__((packed)) Inner { char c; int i; };\nstruct Outer { Inner in; double d; };\n"
                      'extern "C" __global__ void k(Outer o) {}\n', arch="compute_80")
    assert "differently from xcuda's reader" in m.k.parameters[0]["refusal"]


def test_a_layout_the_compiler_agrees_with_passes_unchanged():
    m = xcuda.compile("namespace geo { struct P { float x; double y; struct { int a; short b; } in; }; }\n"
                      '__global__ void k(geo::P p, geo::P* q) {}\n', arch="compute_80")
    p, q = m.k.parameters
    assert p["refusal"] is None and q["refusal"] is None
    assert p["dtype"].itemsize == 24 and p["dtype"].fields["in"][1] == 16
    assert "xcuda_probe_0" in m.ptx


def test_a_cell_that_breaks_the_probe_compiles_without_it():
    m = xcuda.compile("#define type int\nstruct P { char c; double d; };\n"
                      'extern "C" __global__ void k(P p) {}\n', arch="compute_80")
    assert m.k.parameters[0]["refusal"] is None and m.k.parameters[0]["size"] == 16
    assert "xcuda_probe" not in m.ptx


def test_a_cell_without_structs_gets_no_probe():
    m = xcuda.compile('extern "C" __global__ void k(float* x, int n) {}\n', arch="compute_80")
    assert "xcuda_probe" not in m.ptx


def test_cells_compile_and_probe_from_several_threads():
    def work(index):
        width = "double" if index % 2 else "float"
        m = xcuda.compile(f"struct S{index} {{ {width} a; int b; }};\n"
                          f'extern "C" __global__ void k{index}(S{index} s) {{}}\n', arch="compute_80")
        parameter = m[f"k{index}"].parameters[0]
        assert parameter["refusal"] is None
        assert parameter["size"] == (16 if index % 2 else 8)

    run_in_threads(work, 6)


def test_a_macro_generated_struct_is_read_and_checked_by_the_compiler():
    m = xcuda.compile("#define DECLARE_PAIR(T) struct T##_pair { T first; T second; };\n"
                      "DECLARE_PAIR(double)\nDECLARE_PAIR(short)\n"
                      'extern "C" __global__ void k(double_pair a, const short_pair* b) {}\n', arch="compute_80")
    a, b = m.k.parameters
    assert a["refusal"] is None and a["size"] == 16 and a["dtype"].names == ("first", "second")
    assert b["refusal"] is None and b["dtype"].itemsize == 4
    assert "xcuda_probe_1" in m.ptx


def test_a_struct_whose_members_depend_on_the_arch_follows_the_target():
    source = ("struct Acc {\n#if __CUDA_ARCH__ >= 900\n  double sum;\n#else\n  float sum;\n#endif\n  int count;\n};\n"
              'extern "C" __global__ void k(Acc a) {}\n')
    assert xcuda.compile(source, arch="sm_90").k.parameters[0]["size"] == 16
    assert xcuda.compile(source, arch="sm_80").k.parameters[0]["size"] == 8


def test_a_class_with_private_members_is_checked_by_size():
    m = xcuda.compile("class Counter {\n  int hits;\npublic:\n  float rate;\n  __device__ int get() const { return hits; }\n};\n"
                      "struct Wide { Counter c; double d; };\n"
                      'extern "C" __global__ void k(Counter c, Wide w) {}\n', arch="compute_80")
    c, w = m.k.parameters
    assert c["refusal"] is None and c["size"] == 8 and w["refusal"] is None and w["size"] == 16
    assert "xcuda_probe_0" in m.ptx and "xcuda_probe_1" in m.ptx  # probed (sizes), not dropped for access
