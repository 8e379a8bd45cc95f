"""The debugger of Python cells in the xcuda kernel: xeus-python's, on debugpy (Debian's python3-debugpy).

A client drives the Jupyter debug protocol (DAP messages in debug_request / debug_reply on the control
channel, debug_event on IOPub) as JupyterLab's debugger panel does: initialize, attach, debugInfo,
dumpCell (the file a cell's code runs from), setBreakpoints in that file, configurationDone; then the
cell runs on the shell channel and stops at the breakpoint (a `stopped` event), the test reads the
stack (the cell's file and line), the frame's variables (a local and its value), and continues, through
several stops, and the cell finishes with its result. docs/debugger.md says what it cannot do (device code).
"""
import importlib.util
import queue
import time

import pytest
from jupyter_client.manager import start_new_kernel

from conftest import iopub_until_idle

MISSING = None if importlib.util.find_spec("debugpy") else "debugpy is not installed (Debian: python3-debugpy)"
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

# The breakpoint is hit STOPS times: each stop is one more chance for the race of xeus 2.4.1 that
# kernel/xdap_wait_for_message.cpp fixes (without the fix, about one run of this test in three crashed the
# kernel at a stop).
STOPS = 6
CELL = ("def scaled(values, factor):\n    total = sum(values) * factor\n    return total\n\n"
        f"print(\"before the breakpoint\")\nresults = [scaled([1, 2, 3], f) for f in range(7, {7 + STOPS})]\n"
        "results[0]\n")
BREAK_LINE = 3  # `return total`: total is set by then


class Debugger:
    """The client side of the Jupyter debug protocol over one kernel client."""

    def __init__(self, client):
        self.client = client
        self.seq = 0
        self.events = []

    def request(self, command, arguments=None, timeout=30):
        self.seq += 1
        content = {"type": "request", "seq": self.seq, "command": command, "arguments": arguments or {}}
        message = self.client.session.msg("debug_request", content)
        self.client.control_channel.send(message)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self.client.get_control_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == message["header"]["msg_id"]:
                return reply["content"]
        raise AssertionError(f"no debug_reply to {command} in {timeout} s")

    def wait_event(self, name, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events:
                if event["event"] == name:
                    self.events.remove(event)
                    return event
            try:
                message = self.client.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                continue
            if message["msg_type"] == "debug_event":
                self.events.append(message["content"])
        raise AssertionError(f"no {name} event in {timeout} s; events seen: {self.events}")


@pytest.fixture
def kernel():
    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60)
    yield client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def test_kernel_info_says_the_debugger_is_there(kernel):
    kernel.kernel_info()
    reply = kernel.get_shell_msg(timeout=30)
    assert reply["content"]["debugger"] is True, reply["content"]


def test_a_breakpoint_in_a_python_cell_stops_it_and_shows_its_stack_and_variables(kernel):
    debugger = Debugger(kernel)
    reply = debugger.request("initialize", {
        "clientID": "xcuda-tests", "clientName": "xcuda-tests", "adapterID": "python", "pathFormat": "path",
        "linesStartAt1": True, "columnsStartAt1": True, "supportsVariableType": True,
        "supportsVariablePaging": True, "supportsRunInTerminalRequest": True, "locale": "en"})
    assert reply["success"], reply
    reply = debugger.request("attach")
    assert reply["success"], reply
    info = debugger.request("debugInfo")
    assert info["success"] and info["body"]["isStarted"], info
    dumped = debugger.request("dumpCell", {"code": CELL})
    assert dumped["success"], dumped
    path = dumped["body"]["sourcePath"]
    assert path.startswith(info["body"]["tmpFilePrefix"]) and path.endswith(info["body"]["tmpFileSuffix"]), (path, info)
    reply = debugger.request("setBreakpoints", {"source": {"path": path}, "breakpoints": [{"line": BREAK_LINE}],
                                                "sourceModified": False})
    assert reply["success"] and reply["body"]["breakpoints"][0]["verified"], reply
    assert debugger.request("configurationDone")["success"]

    msg_id = kernel.execute(CELL)
    stopped = debugger.wait_event("stopped")
    assert stopped["body"]["reason"] == "breakpoint", stopped
    thread = stopped["body"]["threadId"]

    stack = debugger.request("stackTrace", {"threadId": thread})
    assert stack["success"], stack
    top = stack["body"]["stackFrames"][0]
    assert top["name"] == "scaled" and top["line"] == BREAK_LINE and top["source"]["path"] == path, top
    # The list comprehension's frame, then the cell's own, both in the cell's file.
    assert stack["body"]["stackFrames"][2]["source"]["path"] == path, stack
    scopes = debugger.request("scopes", {"frameId": top["id"]})
    locals_scope = next(s for s in scopes["body"]["scopes"] if s["name"] == "Locals")
    variables = debugger.request("variables", {"variablesReference": locals_scope["variablesReference"]})
    values = {v["name"]: v["value"] for v in variables["body"]["variables"]}
    assert values.get("total") == "42" and values.get("factor") == "7", values

    assert debugger.request("continue", {"threadId": thread})["success"]
    for stop in range(1, STOPS):
        stopped = debugger.wait_event("stopped")
        frame = debugger.request("stackTrace", {"threadId": stopped["body"]["threadId"]})["body"]["stackFrames"][0]
        assert frame["name"] == "scaled" and frame["line"] == BREAK_LINE, (stop, frame)
        assert debugger.request("continue", {"threadId": stopped["body"]["threadId"]})["success"]
    reply = kernel.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kernel.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    outputs = iopub_until_idle(kernel, msg_id, 30)
    assert any(m["msg_type"] == "execute_result" and m["content"]["data"]["text/plain"] == "42" for m in outputs), outputs
    assert debugger.request("disconnect", {"restart": False, "terminateDebuggee": True})["success"]
