"""Replacing the kernel process never loses a request (issue 13): whatever a client sends after the reply of
the cell that replaces the process, even at once, is run by the new process, with its outputs, its reply
and its idle status, in order.

Without a GPU the replacement is made with %cuda_recover on a healthy session (the same path a kernel fault
takes, see xcuda/recovery.py and kernel/replaceable_server); with a GPU, also after a real fault.
"""
import os
import tempfile
import time

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

from conftest import iopub_until_idle, text_of

OOB = """%%cuda
extern "C" __global__ void oob(float* p) { p[threadIdx.x + (1ull << 40)] = 1.0f; }
"""


def start():
    env = dict(os.environ)
    env.pop("XCUDA_AUTO_RECOVER", None)
    env["IPYTHONDIR"] = tempfile.mkdtemp()
    return start_new_kernel(kernel_name="xcuda", startup_timeout=60, env=env)


def reply_to(client, msg_id, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        message = client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if message["parent_header"].get("msg_id") == msg_id:
            return message["content"]


def next_requests_right_after(replacing_code, setup=()):
    manager, client = start()
    try:
        for code in setup:
            reply_to(client, client.execute(code))
        first = client.execute(replacing_code)
        reply = reply_to(client, first)
        # 0 ms after the reply: two cells and a kernel_info, as a notebook runner would send them.
        second = client.execute("print('second', 6 * 7)")
        info = client.kernel_info()
        third = client.execute("print('third', carried)")
        replies = {name: reply_to(client, msg_id) for name, msg_id in
                   (("second", second), ("info", info), ("third", third))}
        outputs = {name: iopub_until_idle(client, msg_id, 60) for name, msg_id in (("second", second), ("third", third))}
        return reply, replies, outputs
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def check_everything_ran(replies, outputs):
    assert replies["second"]["status"] == "ok" and replies["third"]["status"] == "ok", replies
    assert replies["info"]["status"] == "ok" and replies["info"]["implementation"] == "xcuda"
    assert text_of(outputs["second"]) == "second 42\n"
    assert text_of(outputs["third"]) == "third kept across\n"  # run by the new process: variables carried
    for messages in outputs.values():
        states = [m["content"]["execution_state"] for m in messages if m["msg_type"] == "status"]
        assert states == ["busy", "idle"] and messages[-1]["msg_type"] == "status"


def test_requests_sent_at_once_after_a_replacing_cell_are_run_by_the_new_process():
    reply, replies, outputs = next_requests_right_after("%cuda_recover", setup=["carried = 'kept across'"])
    assert reply["status"] == "ok"
    check_everything_ran(replies, outputs)


def notebook_with(third_cell):
    cells = ["carried = 'kept across'", "print('before')", third_cell, "print('after', carried)",
             "import os\nprint('last', os.getpid() > 0)"]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])


def run_notebook(notebook):
    env = dict(os.environ)
    env.pop("XCUDA_AUTO_RECOVER", None)
    client = NotebookClient(notebook, kernel_name="xcuda", timeout=120, allow_errors=True,
                            kernel_manager_kwargs={}, startup_timeout=60)
    client.execute(env=env)
    return ["".join(o.get("text", "") for o in cell.outputs) for cell in notebook.cells]


def test_nbclient_runs_every_cell_after_a_cell_that_replaces_the_process():
    outputs = run_notebook(notebook_with("%cuda_recover"))
    assert outputs[1] == "before\n"
    assert outputs[3] == "after kept across\n"
    assert outputs[4] == "last True\n"


@pytest.mark.gpu
def test_requests_sent_at_once_after_a_kernel_fault_are_run_by_the_new_process():
    setup = ["carried = 'kept across'", "import numpy as np, xcuda\nd = xcuda.zeros(64, np.float32)", OOB]
    reply, replies, outputs = next_requests_right_after("oob[1, 32](d)\nxcuda.synchronize()", setup=setup)
    assert reply["status"] == "error" and reply["ename"] == "KernelFault"
    check_everything_ran(replies, outputs)


@pytest.mark.gpu
def test_nbclient_runs_every_cell_after_a_faulting_cell():
    faulting = ("import numpy as np, xcuda\nd = xcuda.zeros(64, np.float32)\n"
                f"get_ipython().run_cell_magic('cuda', '', {OOB.split(chr(10), 1)[1]!r})\n"
                "oob[1, 32](d)\nxcuda.synchronize()")
    outputs = run_notebook(notebook_with(faulting))
    assert outputs[1] == "before\n"
    assert outputs[3] == "after kept across\n"
    assert outputs[4] == "last True\n"


def test_a_replacement_leaves_no_recovery_folder_behind(tmp_path):
    # Issue 28, item 11: the carried variables and the saved requests share a mkdtemp folder; whichever is
    # read last removes it, so no empty xcuda-recover-* folder piles up in the temporary folder.
    env = dict(os.environ, IPYTHONDIR=tempfile.mkdtemp(), TMPDIR=str(tmp_path))
    env.pop("XCUDA_AUTO_RECOVER", None)
    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60, env=env)
    try:
        reply_to(client, client.execute("carried = 'kept across'"))
        assert reply_to(client, client.execute("%cuda_recover"))["status"] == "ok"
        second = client.execute("print('second', carried)")  # at once: saved as a request for the new process
        assert reply_to(client, second)["status"] == "ok"
        assert text_of(iopub_until_idle(client, second, 60)) == "second kept across\n"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("xcuda-recover-")) == []
