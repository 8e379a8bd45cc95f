"""%%cuda through the real xcuda Jupyter kernel (jupyter_client): replies, error names, outputs."""
import pytest

from conftest import HAS_GPU, execute_code, text_of

SAXPY = """%%cuda
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
"""


@pytest.fixture(scope="module")
def kernel(xcuda_kernel_client):
    return xcuda_kernel_client


def execute(client, code, timeout=60):
    return execute_code(client, code, timeout)


def test_a_cuda_cell_makes_a_kernel_object_with_its_signature(kernel):
    reply, _ = execute(kernel, SAXPY)
    assert reply["status"] == "ok"
    reply, messages = execute(kernel, "saxpy")
    assert reply["status"] == "ok"
    assert "<xcuda.Kernel saxpy(float a, const float* x, const float* y, float* out, size_t n)" in text_of(messages)


def test_ptx_option_shows_the_entry(kernel):
    reply, messages = execute(kernel, SAXPY.replace("%%cuda", "%%cuda --ptx"))
    assert reply["status"] == "ok"
    assert ".entry saxpy" in text_of(messages)


def test_name_option_binds_a_module(kernel):
    reply, _ = execute(kernel, SAXPY.replace("%%cuda", "%%cuda --name blas"))
    assert reply["status"] == "ok"
    reply, messages = execute(kernel, "sorted(blas.kernels), type(blas).__name__")
    assert "(['saxpy'], 'Module')" in text_of(messages)


def test_rerunning_a_cell_replaces_the_kernel(kernel):
    execute(kernel, '%%cuda\nextern "C" __global__ void again(int* x) { x[0] = 1; }\n')
    execute(kernel, "first = again")
    execute(kernel, '%%cuda\nextern "C" __global__ void again(int* x, int y) { x[0] = y; }\n')
    reply, messages = execute(kernel, "again is first, [p['name'] for p in again.parameters]")
    assert "(False, ['x', 'y'])" in text_of(messages)


def test_a_compile_error_replies_error_with_ename_compile_error_and_the_cell_line(kernel):
    reply, messages = execute(kernel, '%%cuda\nextern "C" __global__ void bad(int* x)\n{\n  x[0] = nothing_here;\n}\n')
    assert reply["status"] == "error"
    assert reply["ename"] == "CompileError"
    # Named as IPython names the cell (its In[N], the reply's execution_count), at the editor's line.
    assert reply["evalue"].startswith(f'1 error in Cell In[{reply["execution_count"]}], line 4, column')
    errors = [m for m in messages if m["msg_type"] == "error"]
    assert errors and errors[0]["content"]["ename"] == "CompileError"
    # Shown once: the diagnostics as a display (full text too), then the error as one line, without
    # IPython's frames (run_cell_magic, interactiveshell.py) or the re-quoted cell.
    displays = [m for m in messages if m["msg_type"] == "display_data"]
    assert len(displays) == 1
    plain = displays[0]["content"]["data"]["text/plain"]
    assert 'line 4, column 10: error: identifier "nothing_here" is undefined' in plain
    assert "      x[0] = nothing_here;\n             ^" in plain
    assert errors[0]["content"]["traceback"] == ["CompileError: " + reply["evalue"]]
    assert "run_cell_magic" not in str(messages) and "interactiveshell" not in str(messages)
    reply, messages = execute(kernel, "40 + 2")
    assert reply["status"] == "ok" and "42" in text_of(messages)


def test_a_bad_option_replies_usage_error(kernel):
    reply, _ = execute(kernel, "%%cuda --arch nonsense\n__global__ void k() {}\n")
    assert reply["status"] == "error" and reply["ename"] == "UsageError"
    assert "sm_XX" in reply["evalue"]


def test_a_wrong_argument_is_a_type_error_before_anything_launches(kernel):
    execute(kernel, SAXPY)
    reply, _ = execute(kernel, "import numpy as np\nsaxpy[1, 32](2.0, np.zeros(4), np.zeros(4), np.zeros(4), 4)")
    assert reply["status"] == "error" and reply["ename"] == "TypeError"
    assert "needs float32 elements" in reply["evalue"]


@pytest.mark.nogpu
def test_a_launch_without_a_driver_replies_cuda_unavailable(kernel):
    execute(kernel, SAXPY)
    reply, _ = execute(kernel, "import numpy as np\nx = np.ones(8, np.float32)\nsaxpy[1, 32](2.0, x, x, x, 8)")
    assert reply["status"] == "error"
    assert reply["ename"] == "CudaUnavailableError"
    assert "no NVIDIA driver was found" in reply["evalue"]


@pytest.mark.gpu
def test_saxpy_runs_in_the_kernel_on_a_gpu(kernel):
    execute(kernel, SAXPY)
    reply, messages = execute(kernel, "import numpy as np\nx = np.arange(1000, dtype=np.float32)\n"
                                      "out = np.zeros_like(x)\nsaxpy.forall(1000)(2.0, x, x, out, 1000)\n"
                                      "print(bool(np.allclose(out, 3 * x)))")
    assert reply["status"] == "ok", reply
    assert "True" in text_of(messages)
