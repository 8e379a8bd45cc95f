"""Host functions beside the kernels (magics/src/compile/host_code.cpp): a cell takes what nvcc takes from
the same .cu file. NVRTC refuses every host function; the compiler sets those no kernel calls aside (blanked,
lines kept), compiles the rest, and says so with a warning at each one's line. A host function a kernel
calls keeps NVRTC's refusal and its hint; main() stays the whole-program refusal (%%cuda_program)."""
import numpy as np
import pytest

import xcuda

HELPERS = r"""#include <stdio.h>
#include <assert.h>

// Convenience function for checking CUDA runtime API results; a } and a ; in this comment
inline cudaError_t checkCuda(cudaError_t result)
{
#if defined(DEBUG) || defined(_DEBUG)
  if (result != cudaSuccess) {
    fprintf(stderr, "CUDA Runtime Error: %s\n", cudaGetErrorString(result));
    assert(result == cudaSuccess);
  }
#endif
  const char* braces = "}}; {";  /* a string with braces */ (void)braces;
  return result;
}

void fill(float* x, int n);  // a host prototype

__global__ void twice(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

bool validate(const float* x, int n)
{
    for (int i = 0; i < n; i++)
        if (x[i] != 2.0f * i) { printf("mismatch at %d\n", i); return false; }
    return true;
}
"""


def compile_cell(shell, source):
    shell.user_ns.pop("twice", None)
    shell.run_cell_magic("cuda", "--arch compute_80", source)


def test_host_helpers_beside_a_kernel_are_set_aside_and_the_kernel_is_bound(shell, capsys):
    capsys.readouterr()
    compile_cell(shell, HELPERS)
    assert [p["name"] for p in shell.user_ns["twice"].parameters] == ["x", "n"]
    shown = capsys.readouterr().out
    for name, line in (("checkCuda", 6), ("fill", 18), ("validate", 26)):
        assert f'host function "{name}" set aside' in shown, shown
        assert f"line {line}" in shown or f"({line})" in shown, (name, shown)


def test_an_error_after_the_set_aside_code_keeps_its_line(shell):
    broken = HELPERS.replace("x[i] *= 2.0f;", "x[i] *= undefined_name;")
    with pytest.raises(xcuda.CompileError, match=r'line 23, .*identifier "undefined_name" is undefined'):
        compile_cell(shell, broken)


def test_a_host_function_a_kernel_calls_keeps_nvrtcs_refusal_and_its_hint(shell, capsys):
    source = "float scale(float v) { return 2.0f * v; }\n__global__ void twice(float* x) { x[0] = scale(x[0]); }\n"
    capsys.readouterr()
    with pytest.raises(xcuda.CompileError, match="line 2, column 7: .*host functions are not allowed in JIT mode"):
        compile_cell(shell, source)
    assert "a kernel calls this one, so mark it __device__" in capsys.readouterr().out


def test_main_stays_the_whole_program_refusal(shell):
    source = HELPERS + "int main() { float* x; cudaMalloc(&x, 4); twice<<<1, 1>>>(x, 1); return 0; }\n"
    with pytest.raises(xcuda.CompileError, match=r"this cell is a whole CUDA program"):
        compile_cell(shell, source)


@pytest.mark.parametrize("device", ["simulator"])
def test_the_kernel_of_a_cell_with_host_code_runs_on_the_simulator(device, tmp_path):
    import os
    import subprocess
    import sys

    child = (
        "import numpy as np, xcuda\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance(); shell.run_line_magic('load_ext', 'xcuda')\n"
        f"shell.run_cell_magic('cuda', '', {HELPERS!r})\n"
        "x = xcuda.to_device(np.arange(64, dtype=np.float32))\n"
        "shell.user_ns['twice'][1, 64](x, 64)\n"
        "assert np.array_equal(np.asarray(x), 2 * np.arange(64, dtype=np.float32))\n"
        "print('ran')\n")
    env = dict(os.environ, XCUDA_DEVICE=device)
    env.pop("XCUDA_LIBCUDA", None)
    ran = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300, env=env,
                         cwd=tmp_path)
    assert ran.returncode == 0 and ran.stdout.strip().endswith("ran"), ran.stdout[-2000:] + ran.stderr[-3000:]


def test_host_functions_past_nvrtcs_error_limit_are_set_aside_too():
    # A long host function using the host library (<vector>, <iostream>: names declared only) makes NVRTC stop
    # counting errors before it reaches the functions after it; each compile sets aside what its log refuses.
    body = "\n".join(f"  v.push_back({i}); std::cout << v.size() << std::endl;" for i in range(150))
    source = ("#include <vector>\n#include <iostream>\nvoid fill(std::vector<int>& v) {\n" + body + "\n}\n"
              "__global__ void twice(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] *= 2.0f; }\n"
              "void clear(std::vector<int>& v) { v.clear(); }\n")
    module = xcuda.compile(source, arch="compute_80")
    assert 'host function "fill" set aside' in module.log and 'host function "clear" set aside' in module.log
    assert "(156): warning" in module.log  # clear's line, as the editor counts it


HOST_LIBRARY = r"""#include <iostream>
#include <vector>
#include <string>

__global__ void twice(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

// As a .cu file checks its result on the host: set aside in a cell.
bool validate(const std::vector<float>& x, const std::string& what)
{
    for (size_t i = 0; i < x.size(); i++)
        if (x[i] != 2.0f * i) { std::cerr << what << ": mismatch at " << i << std::endl; return false; }
    std::cout << what << ": ok" << std::endl;
    return true;
}
"""


def test_a_cell_with_host_library_host_code_runs_its_kernel_on_the_simulator(tmp_path):
    import os
    import subprocess
    import sys

    child = (
        "import numpy as np, xcuda\n"
        f"module = xcuda.compile({HOST_LIBRARY!r}, arch='compute_80')\n"
        "assert 'host function \"validate\" set aside' in module.log, module.log\n"
        "x = xcuda.to_device(np.arange(64, dtype=np.float32))\n"
        "module['twice'][1, 64](x, 64)\n"
        "assert np.array_equal(np.asarray(x), 2 * np.arange(64, dtype=np.float32))\n"
        "print('ran')\n")
    env = dict(os.environ, XCUDA_DEVICE="simulator")
    env.pop("XCUDA_LIBCUDA", None)
    ran = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300, env=env,
                         cwd=tmp_path)
    assert ran.returncode == 0 and ran.stdout.strip().endswith("ran"), ran.stdout[-2000:] + ran.stderr[-3000:]
