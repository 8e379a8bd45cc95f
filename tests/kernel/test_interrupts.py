"""Interrupting the xcuda kernel (interrupt_mode "signal": the KernelManager sends SIGINT) stops the running
cell with KeyboardInterrupt and nothing else: an interrupt while idle is dropped, never raised in a later
cell.
"""
import os
import tempfile
import time

import pytest
from jupyter_client.manager import start_new_kernel

# Generous: the interrupt usually lands within milliseconds; this only guards against a lost signal.
INTERRUPT_TIMEOUT = 5
TIMEOUT = 30


@pytest.fixture(scope="module")
def kernel():
    with tempfile.TemporaryDirectory() as ipython_dir:
        km, kc = start_new_kernel(kernel_name="xcuda", env=dict(os.environ, IPYTHONDIR=ipython_dir))
        try:
            yield km, kc
        finally:
            kc.stop_channels()
            km.shutdown_kernel()


def wait_for_stdout(kc, msg_id, text):
    """Waits until the cell `msg_id` has printed `text`, i.e. its Python code is running."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                and text in msg["content"]["text"]):
            return
    raise AssertionError(f"the cell never printed {text!r}")


def shell_reply(kc, msg_id, timeout):
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


def wait_for_idle(kc, msg_id):
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            return


def interrupt_running_cell(km, kc, code):
    """Runs `code` (which prints 'started' first), interrupts it once it runs, returns the reply.

    The pause before the interrupt lets the cell get past print() into the blocking call: a SIGINT that
    lands after CPython's last pending-signal check but before the call blocks is only acted on once the
    call returns (a CPython race, ipykernel's too). Waiting for idle before going on is what clients do;
    xeus 2.4.1 aborts, without an idle status, execute requests arriving within 50 ms of an error reply.
    """
    msg_id = kc.execute(code)
    wait_for_stdout(kc, msg_id, "started")
    time.sleep(0.2)
    km.interrupt_kernel()
    reply = shell_reply(kc, msg_id, INTERRUPT_TIMEOUT)
    wait_for_idle(kc, msg_id)
    return reply


def run_ok(kc, code):
    reply = kc.execute_interactive(code, timeout=TIMEOUT)["content"]
    assert reply["status"] == "ok", reply
    return reply


def test_interrupting_a_busy_loop_raises_KeyboardInterrupt_and_the_next_cell_runs(kernel):
    km, kc = kernel
    reply = interrupt_running_cell(km, kc, "print('started', flush=True)\nwhile True: pass")
    assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt")
    run_ok(kc, "after_busy_loop = 1")


def test_interrupting_a_sleep_raises_KeyboardInterrupt(kernel):
    km, kc = kernel
    reply = interrupt_running_cell(km, kc, "import time\nprint('started', flush=True)\ntime.sleep(60)")
    assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt")
    run_ok(kc, "after_sleep = 1")


def test_an_interrupt_while_idle_does_nothing(kernel):
    km, kc = kernel
    run_ok(kc, "x = 1")
    km.interrupt_kernel()
    km.interrupt_kernel()
    time.sleep(0.5)
    assert km.is_alive()
    run_ok(kc, "import time\nfor _ in range(20): time.sleep(0.01)\nx = 2")
    run_ok(kc, "assert x == 2")


def test_an_interrupt_while_idle_does_nothing_after_a_cell_started_a_thread(kernel):
    # The thread inherits the mask of the cell that started it, SIGINT unblocked; an idle interrupt may
    # land there and record a KeyboardInterrupt for Python's main thread.
    km, kc = kernel
    run_ok(kc, "import threading, time\n"
               "sleeper = threading.Thread(target=lambda: [time.sleep(0.05) for _ in range(200)], daemon=True)\n"
               "sleeper.start()")
    for _ in range(3):
        km.interrupt_kernel()
        time.sleep(0.2)
    run_ok(kc, "import time\nfor _ in range(20): time.sleep(0.01)")
    reply = interrupt_running_cell(km, kc, "print('started', flush=True)\nwhile True: pass")
    assert reply["ename"] == "KeyboardInterrupt"
    run_ok(kc, "y = 3")
