"""Errors that fit on a screen: every xcuda exception shows its own short traceback, in the xcuda kernel and
in ipykernel (`%load_ext xcuda`, Debian's python3-ipykernel), and `%%cuda -h` alone shows the help.

The traceback is the exception's `_render_traceback_()` (xcuda/short_traceback.py): the message, then the line
of each notebook cell the error passed through, and no frame of IPython's machinery. Each test reads the
error reply's `traceback` and the error message on IOPub, as a notebook shows them.
"""
import re

import pytest
from jupyter_client.manager import start_new_kernel

import xcuda
from conftest import HAS_GPU, execute_asking_again, execute_code, text_of

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Every exception class the module exports (its warnings aside); the documented ones (py_errors.cpp).
ERROR_TYPES = sorted(name for name in dir(xcuda)
                     if isinstance(getattr(xcuda, name), type) and issubclass(getattr(xcuda, name), Exception)
              and not issubclass(getattr(xcuda, name), Warning))
DOCUMENTED = {"CudaError", "CudaUnavailableError", "OutOfMemoryError", "KernelFault", "SessionLostError",
              "DeviceMismatchError", "GraphCaptureError", "CompileError", "SignatureError", "ToolNotFoundError",
              "ToolError", "NVRTCError", "SessionClosedError", "ProgramError"}


@pytest.fixture(scope="module", params=["xcuda", "ipykernel"])
def kernel(request):
    name = "xcuda" if request.param == "xcuda" else "python3"
    try:
        manager, client = start_new_kernel(kernel_name=name, startup_timeout=60)
    except Exception as error:  # noqa: BLE001 - ipykernel missing is the reason to skip; the xcuda kernel must start
        if name == "xcuda":
            raise
        pytest.skip(f"ipykernel's kernelspec 'python3' could not start: {error}")
    if name == "python3":
        reply, _ = execute_code(client, "%load_ext xcuda")
        assert reply["status"] == "ok", reply
    run(client, "import numpy as np, xcuda")
    yield client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def run(client, code, timeout=120):
    # ipykernel aborts a request that arrives right after an error (stop_on_error): ask again then.
    reply, messages = execute_asking_again(client, code, timeout)
    errors = [m["content"] for m in messages if m["msg_type"] == "error"]
    return reply, errors, text_of(messages)


def plain(lines):
    return [ANSI.sub("", line) for line in lines]


def assert_short(reply, errors, ename):
    assert reply["status"] == "error" and reply["ename"] == ename, reply
    for traceback in (reply["traceback"], errors[0]["traceback"] if errors else None):
        assert traceback, (reply, errors)
        text = "\n".join(plain(traceback))
        assert "IPython/core" not in text and "interactiveshell" not in text, text
        assert "run_cell_magic" not in text and "run_line_magic" not in text, text
        assert "Traceback (most recent call last)" not in text and "File " not in text, text
        assert plain(traceback)[0].startswith(f"{ename}: "), traceback
    return plain(reply["traceback"])


def test_the_module_exports_the_documented_error_types():
    assert set(ERROR_TYPES) == DOCUMENTED


@pytest.mark.parametrize("ename", ERROR_TYPES)
def test_every_xcuda_error_shows_its_message_and_the_cell_lines_only(kernel, ename):
    reply, errors, _ = run(kernel, f"def fail():\n    raise xcuda.{ename}('what went wrong\\nand what to do')\n")
    assert reply["status"] == "ok", reply
    reply, errors, _ = run(kernel, "x = 1\nfail()")
    lines = assert_short(reply, errors, ename)
    count = reply["execution_count"]
    assert lines[:2] == [f"{ename}: what went wrong", "and what to do"], lines
    # The cell that called, then the cell that raised: their numbers and lines as the user wrote them.
    assert lines[2] == f"  Cell In[{count}], line 2: fail()", lines
    assert re.fullmatch(r"  Cell In\[\d+\], line 2: raise xcuda\.\w+\('what went wrong\\nand what to do'\)",
                        lines[3]), lines
    assert len(lines) == 4, lines


def test_a_launch_without_a_driver_shows_the_message_and_the_launch_line_or_magic_line(kernel):
    if HAS_GPU:
        pytest.skip("checks the launch error of a machine without a CUDA driver; this one has a GPU")
    reply, errors, _ = run(kernel, '%%cuda\nextern "C" __global__ void zero(float* x) { x[threadIdx.x] = 0; }\n')
    assert reply["status"] == "ok", reply
    reply, errors, _ = run(kernel, "x = np.ones(4, np.float32)\nzero[1, 4](x)")
    lines = assert_short(reply, errors, "CudaUnavailableError")
    assert lines[-1] == f"  Cell In[{reply['execution_count']}], line 2: zero[1, 4](x)", lines
    assert "no NVIDIA driver" in "\n".join(lines)
    # From a magic: the cell line is the magic as typed, not IPython's call of it (run_line_magic).
    reply, errors, _ = run(kernel, "x = np.ones(4, np.float32)\n%cuda_timeit zero[1, 4](x)")
    lines = assert_short(reply, errors, "CudaUnavailableError")
    assert lines[-1] == f"  Cell In[{reply['execution_count']}], line 2: %cuda_timeit zero[1, 4](x)", lines


def test_a_compile_error_of_a_cuda_cell_is_its_one_line_summary(kernel):
    reply, errors, _ = run(kernel, '%%cuda\nextern "C" __global__ void bad(int* x)\n{\n  x[0] = nothing;\n}\n')
    lines = assert_short(reply, errors, "CompileError")
    assert lines == ["CompileError: " + reply["evalue"]] and "line 4, column" in reply["evalue"], lines


@pytest.mark.parametrize("cell", ["%%cuda -h", "%%cuda --help\n\n", "%%cuda_header -h", "%%cuda_header --help"])
def test_help_of_a_cell_magic_with_an_empty_body_is_the_help(kernel, cell):
    reply, errors, text = run(kernel, cell)
    assert reply["status"] == "ok" and not errors, (reply, errors)
    magic = cell.split()[0]
    assert f"{magic} " in text and "-h, --help" in text, text
    assert "empty" not in text


def test_an_empty_cuda_cell_without_h_is_still_an_error(kernel):
    reply, errors, _ = run(kernel, "%%cuda --arch sm_90")
    assert reply["status"] == "error" and reply["ename"] == "UsageError", reply
