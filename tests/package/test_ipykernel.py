"""`%load_ext xcuda` in ipykernel (Debian's python3-ipykernel): the same magics and launch helpers as
the xcuda kernel, driven through jupyter_client, running the tutorial's cells."""
import nbformat
import pytest
from jupyter_client.manager import start_new_kernel

from conftest import HAS_GPU, REPO, execute_code, text_of


@pytest.fixture(scope="module")
def ipykernel():
    try:
        manager, client = start_new_kernel(kernel_name="python3", startup_timeout=60)
    except Exception as error:  # noqa: BLE001 - any failure to start is the reason to skip
        pytest.skip(f"ipykernel's kernelspec 'python3' could not start: {error}")
    yield client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def run(client, code, timeout=120):
    reply, messages = execute_code(client, code, timeout)
    return reply, text_of(messages)


def test_load_ext_in_ipykernel_runs_the_tutorial_cells(ipykernel):
    reply, _ = run(ipykernel, "%load_ext xcuda")
    assert reply["status"] == "ok", reply
    _, magics = run(ipykernel, "'cuda' in get_ipython().magics_manager.lsmagic()['cell']")
    assert "True" in magics
    notebook = nbformat.read(REPO / "notebooks" / "01-saxpy.ipynb", as_version=4)
    cells = [c.source for c in notebook.cells if c.cell_type == "code"]
    outputs = []
    for source in cells:
        reply, text = run(ipykernel, source)
        outputs.append(text)
        if source.startswith("saxpy[") and not HAS_GPU:
            assert reply["status"] == "error" and reply["ename"] == "CudaUnavailableError"
            break
        assert reply["status"] == "ok", (source, reply)
    joined = "\n".join(outputs)
    assert "<xcuda.Kernel saxpy(float a, const float* x, const float* y, float* out, size_t n)" in joined
    if HAS_GPU:
        assert "SAXPY is correct for all 16777216 elements" in joined


def test_compile_errors_in_ipykernel_name_the_cell_line(ipykernel):
    run(ipykernel, "%load_ext xcuda")
    reply, _ = run(ipykernel, '%%cuda\nextern "C" __global__ void f(int* x)\n{\n  x[0] = undefined;\n}\n')
    assert reply["status"] == "error" and reply["ename"] == "CompileError"
    assert "line 4, column" in reply["evalue"] and "undefined" in reply["evalue"]
    assert len(reply["traceback"]) == 1
