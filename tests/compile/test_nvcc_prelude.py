"""Names nvcc's host headers give every .cu file, in NVRTC cells with no #include (issue 45, item 1's
leftover): uint, ushort, ulong (glibc's <sys/types.h>), M_PI and kin, INFINITY, NAN, HUGE_VAL (<math.h>),
INT_MAX and kin (<limits.h>), RAND_MAX and EXIT_SUCCESS (<stdlib.h>), through the nvcc prelude
(magics/src/compile/nvcc_prelude, standard_headers/xcuda_nvcc_prelude.h). Values against numpy on the PTX
simulator under NVRTC 13 and 12; a user's own definition of the same name (in the cell, a header cell or
-D) is the one used, with no redefinition warning; the signature reader sees what NVRTC sees."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import xcuda
from conftest import HAS_GPU
from test_nvrtc_versions import NVRTC12, needs_12
from test_standard_headers import WORKING

NO_INCLUDES = r'''
extern "C" __global__ void values(double* d, long long* i, uint* u, ushort* s, ulong* l)
{
    d[0] = M_PI; d[1] = M_E; d[2] = M_SQRT2; d[3] = M_PI_2; d[4] = M_1_PI; d[5] = M_LN2;
    d[6] = INFINITY; d[7] = NAN; d[8] = HUGE_VAL; d[9] = -HUGE_VALF; d[10] = MAXFLOAT;
    i[0] = INT_MAX; i[1] = INT_MIN; i[2] = UINT_MAX; i[3] = LLONG_MAX; i[4] = LLONG_MIN; i[5] = CHAR_BIT;
    i[6] = SHRT_MIN; i[7] = USHRT_MAX; i[8] = SCHAR_MIN; i[9] = UCHAR_MAX; i[10] = RAND_MAX;
    i[11] = EXIT_SUCCESS; i[12] = EXIT_FAILURE; i[13] = LONG_MAX; i[14] = sizeof(uint) + 10 * sizeof(ulong);
    u[0] = (uint)(M_PI * 1000); s[0] = (ushort)USHRT_MAX; l[0] = ULONG_MAX;
}
'''

EXPECTED_D = [np.pi, np.e, np.sqrt(2.0), np.pi / 2, 1 / np.pi, np.log(2.0), np.inf, np.nan, np.inf, -np.inf,
              float(np.finfo(np.float32).max)]
EXPECTED_I = [2**31 - 1, -2**31, 2**32 - 1, 2**63 - 1, -2**63, 8, -2**15, 2**16 - 1, -128, 255, 2**31 - 1, 0, 1,
              2**63 - 1, 4 + 80]

CHILD = r'''
import json, sys
import numpy as np
import xcuda
m = xcuda.compile(sys.argv[1], defines=json.loads(sys.argv[2]))
d, i = np.zeros(11), np.zeros(15, np.int64)
u, s, l = np.zeros(1, np.uint32), np.zeros(1, np.uint16), np.zeros(1, np.uint64)
m.values[1, 1](d, i, u, s, l)
print(json.dumps({"version": xcuda.nvrtc_version(), "log": m.log, "d": [repr(float(x)) for x in d],
                  "i": [int(x) for x in i], "u": int(u[0]), "s": int(s[0]), "l": int(l[0])}))
'''


def run_on_the_simulator(build_dir, tmp_path, source, defines=(), nvrtc=None):
    env = {k: v for k, v in os.environ.items() if k not in ("XCUDA_LIBCUDA", "XCUDA_NVRTC", "XCUDA_SIM_MAX_STEPS")}
    env.update({"XCUDA_DEVICE": "simulator", "XCUDA_CACHE_DIR": str(tmp_path),
                "PYTHONPATH": os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])})
    if nvrtc:
        env["XCUDA_NVRTC"] = str(nvrtc)
    ran = subprocess.run([sys.executable, "-c", CHILD, source, json.dumps(list(defines))], capture_output=True,
                         text=True, timeout=300, env=env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-6000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def check(result):
    np.testing.assert_array_equal(np.array([float(x) for x in result["d"]]), np.array(EXPECTED_D))
    assert result["i"] == EXPECTED_I
    assert (result["u"], result["s"], result["l"]) == (3141, 2**16 - 1, 2**64 - 1)
    assert "warning" not in result["log"]


def test_nvccs_implicit_names_work_with_no_include_and_match_numpy_on_the_simulator(build_dir, tmp_path):
    result = run_on_the_simulator(build_dir, tmp_path, NO_INCLUDES)
    assert result["version"][0] >= 13
    check(result)


@needs_12
def test_nvccs_implicit_names_work_with_no_include_under_nvrtc_12(build_dir, tmp_path):
    result = run_on_the_simulator(build_dir, tmp_path, NO_INCLUDES, nvrtc=NVRTC12)
    assert result["version"][0] == 12
    check(result)


OWN_PI = r'''
typedef unsigned int uint;
#define M_PI 3.0f
extern "C" __global__ void values(double* d, long long* i, uint* u, ushort* s, ulong* l) { d[0] = M_PI; d[1] = M_E; }
'''


def test_a_cells_own_m_pi_and_uint_are_taken_without_a_warning(build_dir, tmp_path):
    result = run_on_the_simulator(build_dir, tmp_path, OWN_PI)
    assert [float(x) for x in result["d"][:2]] == [3.0, np.e]
    assert "warning" not in result["log"]


def test_a_d_option_defining_m_pi_wins_over_the_prelude(build_dir, tmp_path):
    source = OWN_PI.replace("#define M_PI 3.0f\n", "")
    result = run_on_the_simulator(build_dir, tmp_path, source, defines=["M_PI=2.5"])
    assert [float(x) for x in result["d"][:2]] == [2.5, np.e]
    assert "warning" not in result["log"]


def test_a_header_cells_own_definition_wins_over_the_prelude():
    header = "#pragma once\n#define INT_MAX 7\ntypedef unsigned int uint;\n"
    module = xcuda.compile('#include "limits_of_mine.h"\n'
                           'extern "C" __global__ void k(int* x) { static_assert(INT_MAX == 7, ""); x[0] = INT_MAX; }\n',
                           arch="compute_80", headers={"limits_of_mine.h": header})
    assert module.log == ""


@pytest.mark.parametrize("header", sorted(WORKING) + ["cuda/std/climits", "cub/block/block_reduce.cuh"])
def test_a_standard_header_included_after_the_prelude_repeats_nothing_differently(header):
    module = xcuda.compile(f"#include <{header}>\n"
                           "__global__ void k(float* x, uint n) { x[0] = M_PI + INT_MAX + INFINITY + NAN + n; }\n",
                           arch="compute_80")
    assert module.log == ""


def test_an_include_folders_own_m_pi_replaces_the_preludes_without_a_warning(tmp_path):
    (tmp_path / "consts.h").write_text("#pragma once\n#define M_PI 3.0f\n#define INT_MAX 5\n")
    module = xcuda.compile('#include "consts.h"\n'
                           "__global__ void k(float* x) { static_assert(M_PI == 3.0f && INT_MAX == 5, \"\"); x[0] = M_PI; }\n",
                           arch="compute_80", include_dirs=[str(tmp_path)])
    assert module.log == ""


def test_other_warnings_stay_in_the_log_beside_a_removed_redefinition():
    module = xcuda.compile("#include <cub/block/block_reduce.cuh>\n"
                           "__global__ void k(float* x) { int unused = 1; x[0] = INFINITY; }\n", arch="compute_80")
    assert "unused" in module.log and "redefinition" not in module.log and "xcuda_nvcc_prelude" not in module.log
    assert "Remark" in module.log


def test_the_signature_reader_sees_the_prelude_as_nvrtc_does():
    # #ifdef M_PI is true to NVRTC (the prelude defines it): the reader must take the same branch.
    module = xcuda.compile("#ifdef M_PI\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"
                           'extern "C" __global__ void k(real* x, uint n, ushort s, ulong l) {}\n', arch="compute_80")
    x, n, s, l = module.k.parameters
    assert x["dtype"] == np.float64 and x["refusal"] is None
    assert (n["dtype"], s["dtype"], l["dtype"]) == (np.uint32, np.uint16, np.uint64)


def test_a_default_argument_of_m_pi_is_evaluated():
    module = xcuda.compile('extern "C" __global__ void k(float* x, double angle = M_PI / 2) {}\n', arch="compute_80")
    if HAS_GPU:
        module.k[1, 1](np.zeros(1, np.float32))
    else:
        with pytest.raises(xcuda.CudaUnavailableError):  # the arguments were converted: only the launch is missing
            module.k[1, 1](np.zeros(1, np.float32))


def test_a_cell_that_undefines_a_prelude_name_compiles():
    module = xcuda.compile("#undef M_PI\n#define M_PI 3\n__global__ void k(int* x) { x[0] = M_PI; }\n",
                           arch="compute_80")
    assert module.log == ""


@pytest.mark.gpu
def test_nvccs_implicit_names_on_the_gpu():
    m = xcuda.compile(NO_INCLUDES)
    d, i = np.zeros(11), np.zeros(15, np.int64)
    u, s, l = np.zeros(1, np.uint32), np.zeros(1, np.uint16), np.zeros(1, np.uint64)
    m.values[1, 1](d, i, u, s, l)
    np.testing.assert_array_equal(d, np.array(EXPECTED_D))
    assert list(i) == EXPECTED_I and (u[0], s[0], l[0]) == (3141, 2**16 - 1, 2**64 - 1)
