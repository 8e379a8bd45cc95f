"""exit and quit in the xcuda kernel end it cleanly, as in ipykernel: the cell replies "ok" with the ask_exit
payload frontends know, its idle status is published, then the process ends (Jupyter restarts it)."""
import time

import pytest
from jupyter_client.manager import start_new_kernel

from conftest import execute_code


@pytest.mark.parametrize("code", ["exit", "quit()", "x = 1\nexit()"])
def test_exit_and_quit_reply_then_end_the_kernel(code):
    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60)
    try:
        reply, messages = execute_code(client, code)
        assert reply["status"] == "ok", reply
        assert {"source": "ask_exit", "keepkernel": False} in reply["payload"]
        assert messages[-1]["content"].get("execution_state") == "idle"
        deadline = time.monotonic() + 30
        while manager.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not manager.is_alive(), "the kernel process is still running after exit"
        assert manager.provisioner.process.poll() == 0  # a clean exit, not a crash
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_kernel_restarted_after_exit_runs_cells():
    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60)
    try:
        execute_code(client, "exit")
        deadline = time.monotonic() + 30
        while manager.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        manager.restart_kernel(now=True)
        client.wait_for_ready(timeout=60)
        reply, messages = execute_code(client, "1 + 1")
        assert reply["status"] == "ok"
        assert any(m["content"].get("data", {}).get("text/plain") == "2" for m in messages)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
