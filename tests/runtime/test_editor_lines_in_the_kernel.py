"""Issue 51 (items 4 and 5) through the real xcuda Jupyter kernel on the PTX simulator (no GPU needed): what
the notebook receives. A simulated fault publishes the editor mark of its %%cuda cell (the extension's
diagnostics data, with the cell's In[N] and the editor's line) before its error; device printf output comes
where the launch is, before the cell's result; %%cuda --ptx shows the source lines beside the PTX.
"""
import pytest

from conftest import execute_code, text_of

DIAGNOSTICS = "application/vnd.xcuda.diagnostics+json"
FAULT_CELL = """%%cuda
extern "C" __global__ void oob(float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 1.0f;
}
"""
FAULT_LINE = 5  # out[i] = 1.0f; the %%cuda line is line 1
PRINTF_CELL = """%%cuda
extern "C" __global__ void hello(int* x)
{
    printf("hello from the device %d\\n", threadIdx.x);
    x[threadIdx.x] = 1;
}
"""


@pytest.fixture(scope="module")
def kernel(xcuda_kernel_client):
    reply, messages = execute_code(xcuda_kernel_client, "import xcuda, numpy as np\nxcuda.use_simulator()")
    assert reply["status"] == "ok", (reply, text_of(messages))
    return xcuda_kernel_client


def test_a_simulated_fault_publishes_the_mark_of_its_cuda_cell_line_before_the_error(kernel):
    built, _ = execute_code(kernel, FAULT_CELL)
    assert built["status"] == "ok", built
    reply, messages = execute_code(kernel, "out = np.zeros(40, dtype=np.float32)\noob[2, 32](out)", timeout=300)
    assert reply["status"] == "error" and "CUDA_ERROR_ILLEGAL_ADDRESS" in reply["evalue"], reply
    assert f"Cell In[{built['execution_count']}], line {FAULT_LINE}" in reply["evalue"], reply["evalue"]
    kinds = [m["msg_type"] for m in messages]
    marks = [m for m in messages if m["msg_type"] == "display_data" and DIAGNOSTICS in m["content"]["data"]]
    assert len(marks) == 1, kinds
    (mark,) = marks[0]["content"]["data"][DIAGNOSTICS]["diagnostics"]
    assert (mark["cell"], mark["line"], mark["severity"]) == (built["execution_count"], FAULT_LINE, "error"), mark
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in mark["message"], mark
    assert kinds.index("display_data") < kinds.index("error"), kinds


def test_device_printf_output_comes_before_the_cells_result(kernel):
    built, _ = execute_code(kernel, PRINTF_CELL)
    assert built["status"] == "ok", built
    # A device array: no copy back, so nothing but the launch itself waits (a numpy array's copy back would).
    reply, messages = execute_code(kernel, "x = xcuda.to_device(np.zeros(2, dtype=np.int32))\nprint('before')\n"
                                           "hello[1, 2](x)\nprint('after')\n'the result'", timeout=300)
    assert reply["status"] == "ok", reply
    order = []
    for m in messages:
        if m["msg_type"] == "stream":
            order += [line for line in m["content"]["text"].splitlines() if line]
        elif m["msg_type"] == "execute_result":
            order.append("RESULT")
    assert order == ["before", "hello from the device 0", "hello from the device 1", "after", "RESULT"], order


def test_ptx_option_shows_each_source_line_above_its_instructions(kernel):
    reply, messages = execute_code(kernel, FAULT_CELL.replace("%%cuda", "%%cuda --ptx"))
    assert reply["status"] == "ok", reply
    text = text_of(messages)
    assert ".entry oob" in text
    assert f"//    {FAULT_LINE} | out[i] = 1.0f;" in text, text
