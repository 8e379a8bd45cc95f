"""The xcuda kernel runs behind a Jupyter server and is used through another one's --gateway-url.

Two jupyter_server processes on 127.0.0.1 stand for two machines: the "GPU host" serves the xcuda
kernelspec (conftest.py's relocated copy of the build tree's) with a token; the "laptop" has no xcuda
kernelspec of its own and starts with `--gateway-url` pointing at the GPU host and
`--GatewayClient.auth_token` set to its token, so it proxies every kernelspec and kernel request and
every kernel websocket there. The tests talk only to the laptop's REST API and websocket, as JupyterLab
would: kernelspecs, starting a kernel (which must then run under the GPU host's server), `%%cuda` cells,
an interrupt, shutting it down. The launch itself is checked on a GPU host (marked gpu) and, without a
driver, as the CudaUnavailableError it gives there (marked nogpu).

Needs Debian's python3-jupyter-server (which brings python3-websocket); `bash .ci/setup` installs it.
Without it the tests skip and say so. On the GPU host, pack it with
`EXTRA_PACKAGES="python3-jupyter-server" pack-runtime.sh .devrt`.
"""
import json
import os
import secrets
import signal
import time
import urllib.request
import uuid
from contextlib import contextmanager

import pytest

from conftest import LocalJupyterServer

try:
    import jupyter_server  # noqa: F401 (only whether it is there)
    import websocket

    MISSING = None
except ImportError as error:
    MISSING = (f"jupyter_server or websocket-client is not importable ({error}); Debian: python3-jupyter-server, "
               "which bash .ci/setup installs")

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

# Generous limits for a loaded CI machine; every wait polls a condition and ends as soon as it holds.
SERVER_START_S = 30
HTTP_S = 30
CELL_S = 60

SAXPY_CELL = """%%cuda
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
"""

SAXPY_ARGUMENTS = """import numpy as np
n = 1 << 20
a, x, y = np.float32(2.0), np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
out = np.full_like(x, np.nan)
"""


class JupyterServer(LocalJupyterServer):
    """A jupyter_server on 127.0.0.1 with a token and its own runtime, config and data folders."""

    what = "jupyter_server"

    def __init__(self, root, jupyter_path, extra_args=()):
        root.mkdir()
        self.token = secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_GATEWAY_")}
        env["JUPYTER_PATH"] = jupyter_path
        self.start(root, "jupyter_server",
                   [f"--ServerApp.token={self.token}", f"--ServerApp.root_dir={root}", *extra_args],
                   env, "jpserver", SERVER_START_S)

    def api(self, path, method="GET", body=None):
        """The decoded JSON answer of a REST call (None for an empty one); HTTPError for a failure."""
        request = urllib.request.Request(
            f"{self.url}/{path}", method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=HTTP_S) as response:
            data = response.read()
        return json.loads(data) if data else None

    def _answers(self):
        self.api("api/status")
        return True

    def _ask_to_shut_down(self):
        self.api("api/shutdown", method="POST")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """(gpu_host, laptop): the laptop's server proxies all kernel management to the GPU host's."""
    root = tmp_path_factory.mktemp("gateway")
    gpu_host = JupyterServer(root / "gpu-host", os.environ.get("JUPYTER_PATH", ""))
    try:
        # The laptop's JUPYTER_PATH names an empty folder: an xcuda it lists can only come from the GPU host.
        (root / "laptop-share").mkdir()
        laptop = JupyterServer(root / "laptop", str(root / "laptop-share"),
                               [f"--gateway-url={gpu_host.url}", f"--GatewayClient.auth_token={gpu_host.token}"])
    except BaseException:
        gpu_host.close()
        raise
    yield gpu_host, laptop
    laptop.close()
    gpu_host.close()


class KernelConnection:
    """The kernel's websocket on the laptop's server, speaking the Jupyter messaging protocol in JSON."""

    def __init__(self, server, kernel_id):
        self.session = uuid.uuid4().hex
        url = server.url.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels?session_id={self.session}"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {server.token}"], timeout=CELL_S)

    def request(self, msg_type, content, timeout=CELL_S, on_iopub=None):
        """Sends a shell request; returns its reply's content and the iopub messages up to idle.

        on_iopub, when given, is called with each of the request's iopub messages as it arrives.
        """
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "session": self.session, "username": "test",
                       "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell",
        }))
        reply, iopub, idle = None, [], False
        deadline = time.monotonic() + timeout
        while reply is None or not idle:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise websocket.WebSocketTimeoutException()
                self.ws.settimeout(remaining)
                message = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                raise TimeoutError(f"no reply and idle status for {msg_type} within {timeout} s; "
                                   f"got {iopub}") from None
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if message["channel"] == "shell":
                reply = message["content"]
            elif message["msg_type"] == "status":
                idle = message["content"]["execution_state"] == "idle"
            else:
                iopub.append(message)
            if on_iopub is not None and message["channel"] == "iopub":
                on_iopub(message)
        return reply, iopub

    def wait_for_ready(self):
        """The kernel_info reply, asking again until one comes (as jupyter_client's wait_for_ready does).

        jupyter_server 1.23.3's gateway proxy drops a message that arrives before its own websocket
        to the gateway is being opened (GatewayWebSocketClient.on_message waits on a placeholder
        future that never resolves), so the first request after connecting is sometimes lost.
        """
        deadline = time.monotonic() + CELL_S
        timeout = 1.0
        while True:
            try:
                return self.request("kernel_info_request", {}, timeout=timeout)[0]
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise
                timeout = min(2 * timeout, 10.0)

    def execute(self, code, on_iopub=None):
        """Runs a cell; returns the reply's content and the text the cell printed or returned."""
        reply, iopub = self.request("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False,
            "stop_on_error": True}, on_iopub=on_iopub)
        text = "".join(m["content"].get("text", "") + m["content"].get("data", {}).get("text/plain", "")
                       for m in iopub)
        return reply, text

    def close(self):
        self.ws.close()


@contextmanager
def xcuda_kernel(servers):
    """An xcuda kernel started through the laptop's server, shut down through it afterwards."""
    gpu_host, laptop = servers
    kernel = laptop.api("api/kernels", method="POST", body={"name": "xcuda"})
    try:
        connection = KernelConnection(laptop, kernel["id"])
        try:
            reply = connection.wait_for_ready()
            assert reply["implementation"] == "xcuda", reply
            yield kernel, connection
        finally:
            connection.close()
    finally:
        laptop.api(f"api/kernels/{kernel['id']}", method="DELETE")


def test_the_laptop_lists_the_gpu_hosts_xcuda_kernelspec(servers):
    gpu_host, laptop = servers
    specs = laptop.api("api/kernelspecs")["kernelspecs"]
    assert "xcuda" in specs, f"kernelspecs through the gateway: {sorted(specs)}\n{laptop.log()}"
    spec = specs["xcuda"]["spec"]
    assert spec["display_name"] == "Python 3 (xcuda)"
    assert spec["argv"] == gpu_host.api("api/kernelspecs")["kernelspecs"]["xcuda"]["spec"]["argv"]


def test_a_cuda_cell_compiles_in_a_kernel_started_through_the_gateway(servers):
    gpu_host, laptop = servers
    with xcuda_kernel(servers) as (kernel, connection):
        # The kernel runs under the GPU host's server; the laptop's only proxies it.
        assert kernel["id"] in [k["id"] for k in gpu_host.api("api/kernels")]

        reply, text = connection.execute(SAXPY_CELL)
        assert reply["status"] == "ok", (reply, text)

        reply, text = connection.execute('print(saxpy)\nprint(".entry saxpy" in saxpy.ptx)')
        assert reply["status"] == "ok", (reply, text)
        assert "<xcuda.Kernel saxpy(float a, const float* x, const float* y, float* out, size_t n) [" in text
        assert text.rstrip().endswith("True"), text

        reply, text = connection.execute("import xcuda\nxcuda.compile('int oops(').kernels")
        assert reply["status"] == "error" and reply["ename"] == "CompileError", reply
    assert kernel["id"] not in [k["id"] for k in gpu_host.api("api/kernels")]


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
                    reason="SIGINT is ignored in this process, and so in the servers and kernels it starts: "
                           "the kernel cannot be interrupted (start the tests from a shell that does not ignore it)")
def test_interrupting_through_the_gateway_stops_the_running_cell_with_KeyboardInterrupt(servers):
    _, laptop = servers
    with xcuda_kernel(servers) as (kernel, connection):
        def interrupt_once_started(message):
            # The pause lets the cell get past print() into its loop (see test_interrupts.py).
            if message["msg_type"] == "stream" and "started" in message["content"]["text"]:
                time.sleep(0.2)
                laptop.api(f"api/kernels/{kernel['id']}/interrupt", method="POST")

        reply, _ = connection.execute("print('started', flush=True)\nwhile True: pass",
                                      on_iopub=interrupt_once_started)
        assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt"), reply
        reply, text = connection.execute("print('after')")
        assert reply["status"] == "ok" and text == "after\n", (reply, text)


@pytest.mark.nogpu
def test_a_launch_through_the_gateway_without_a_driver_fails_with_CudaUnavailableError(servers):
    with xcuda_kernel(servers) as (_, connection):
        for cell in (SAXPY_CELL, SAXPY_ARGUMENTS):
            reply, text = connection.execute(cell)
            assert reply["status"] == "ok", (reply, text)
        reply, _ = connection.execute("saxpy.forall(n)(a, x, y, out, n)")
        assert reply["status"] == "error" and reply["ename"] == "CudaUnavailableError", reply


@pytest.mark.gpu
def test_saxpy_launched_through_the_gateway_runs_on_the_gpu_host(servers):
    with xcuda_kernel(servers) as (_, connection):
        for cell in (SAXPY_CELL, SAXPY_ARGUMENTS):
            reply, text = connection.execute(cell)
            assert reply["status"] == "ok", (reply, text)
        reply, text = connection.execute("import xcuda\nsaxpy.forall(n)(a, x, y, out, n)\n"
                                         "print(bool(np.allclose(out, a * x + y)), xcuda.memory_info()[1] > 0)")
        assert reply["status"] == "ok", (reply, text)
        assert text.split() == ["True", "True"], text
