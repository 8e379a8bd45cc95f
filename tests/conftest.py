"""Shared test set-up: find the build tree, its kernelspec and its Python module, and mark GPU tests.

The tests never need xcuda installed system-wide: JUPYTER_PATH points at the build tree's kernelspec
(build/share/jupyter/kernels/xcuda) and sys.path at its Python module (build/python). Set
XCUDA_BUILD_DIR to test another build folder.
"""
import atexit
import ctypes
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Where no NVIDIA driver or no device is found and nothing chose the device, xcuda falls back to the PTX
# simulator by itself (docs/simulator.md, "Choosing it"). The suite's tests of a machine without a GPU check
# what a GPU-only process says there (CudaUnavailableError naming the simulator), and run on the fake driver
# or the simulator only where they ask: XCUDA_DEVICE=gpu, which refuses the fallback and chooses the device
# as if unset, is the default of every test and of the kernels and children they start, unless the run sets
# XCUDA_DEVICE itself. The fallback's own tests (tests/simulator/test_fallback.py, the notebooks with nothing
# set, the browser's Run All) unset it for their kernels and children.
os.environ.setdefault("XCUDA_DEVICE", "gpu")
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()

# IPython's profile and history for the tests' shells and the kernels they start: a folder of this run's, never
# the user's ~/.ipython. Removed at exit, after IPython's own exit handlers (atexit runs them in the reverse
# order of registration). A test that needs a fresh one still sets its own.
_IPYTHON_DIR = tempfile.mkdtemp(prefix="xcuda-tests-ipython-")
os.environ["IPYTHONDIR"] = _IPYTHON_DIR
atexit.register(shutil.rmtree, _IPYTHON_DIR, True)

# The shells of this process (InteractiveShell.instance(), a new one for each test module) keep their history
# in memory, not in the folder's history.sqlite that the run's kernels share. When a kernel set that file
# aside (the control-channel history bug, fixed in kernel/: test_hostile_wire's fuzzing did it twice a run),
# each shell here that had it open failed in its exit handler with "attempt to write a readonly database" (8
# tracebacks at the end of every full run); in memory, no shell of this process depends on what the kernels
# do to the file. Nothing here reads a shell's history back from a file. The default of the trait that names
# the file, for this process only: InteractiveShell.instance() takes no configuration. (The GPU host's own
# Python has no IPython: nothing to set there.)
try:
    from IPython.core.history import HistoryAccessor
except ImportError:
    HistoryAccessor = None
if HistoryAccessor is not None:
    HistoryAccessor.class_traits()["hist_file"].default_value = ":memory:"


def _relocated_kernelspec():
    """The build tree's kernelspec, rewritten to name this build's binary and module folder.

    The build writes absolute paths into kernel.json; a build tree copied elsewhere (the GPU host
    runs a copy of the checkout) would name a binary that is not there.
    """
    source = BUILD / "share" / "jupyter" / "kernels" / "xcuda"
    target_root = BUILD / "share" / "jupyter-tests"
    if not (source / "kernel.json").exists():
        return BUILD / "share" / "jupyter"
    import shutil

    target = target_root / "kernels" / "xcuda"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)  # logos and kernel.js too
    spec = json.loads((source / "kernel.json").read_text())
    spec["argv"][0] = str(BUILD / "bin" / "xcuda")
    spec.setdefault("env", {})["XCUDA_PYTHONPATH"] = str(BUILD / "python")
    (target / "kernel.json").write_text(json.dumps(spec, indent=1))
    # ipykernel's own spec names /usr/bin/python3; under another interpreter (the GPU host's packed
    # runtime) that is a Python without ipykernel. The tests' "python3" is the Python running them.
    ipykernel = target_root / "kernels" / "python3"
    ipykernel.mkdir(parents=True, exist_ok=True)
    (ipykernel / "kernel.json").write_text(json.dumps(
        {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
         "display_name": "Python 3 (ipykernel)", "language": "python", "interrupt_mode": "signal"}, indent=1))
    return target_root


os.environ["JUPYTER_PATH"] = os.pathsep.join(
    [str(_relocated_kernelspec())] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(BUILD / "python")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
)
sys.path.insert(0, str(BUILD / "python"))

# The tests' own disk compile cache, emptied per run, so that no test reads ~/.cache/xcuda.
# A kernel NVRTC's optimiser takes many seconds on (800 dependent sinf steps: 2000 took 35 s on a 2-core
# machine): for tests that need a compile still running (an interrupt, a kill, a question asked meanwhile).
SLOW_SOURCE = ("extern \"C\" __global__ void slow(float* x) {\n    float a = x[threadIdx.x];\n"
               + "".join(f"    a = a * 1.0001f + sinf(a + {i}.5f);\n" for i in range(800))
               + "    x[threadIdx.x] = a;\n}\n")
TEST_CACHE = BUILD / "test-compile-cache"
if TEST_CACHE.exists():
    import shutil

    shutil.rmtree(TEST_CACHE)
os.environ["XCUDA_CACHE_DIR"] = str(TEST_CACHE)


def _probe_gpus():
    """(None, number of CUDA devices) when a driver and a device are present, else (why GPU tests cannot run, 0)."""
    if os.environ.get("XCUDA_DEVICE") == "simulator" and not os.environ.get("XCUDA_LIBCUDA"):
        # tests/simulator/test_runtime_on_the_simulator.py runs chosen GPU tests on the PTX simulator's one
        # device (docs/simulator.md): xcuda opens libxcuda-sim.so, not libcuda.so.1.
        return None, 1
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver (libcuda.so.1) on this machine", 0
    if lib.cuInit(0) != 0:
        return "the NVIDIA driver is present but cuInit failed (no usable GPU)", 0
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "the NVIDIA driver found no CUDA device", 0
    return None, count.value


GPU_REASON, GPU_COUNT = _probe_gpus()
HAS_GPU = GPU_REASON is None


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU and driver; skipped with the reason elsewhere")
    config.addinivalue_line("markers", "multigpu: needs two or more GPUs; skipped with the reason elsewhere")
    config.addinivalue_line("markers", "nogpu: checks the behaviour on a machine without a driver")
    config.addinivalue_line("markers", "browser: runs the notebooks in headless Chromium; skipped with the reason where it is missing")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(pytest.mark.skip(reason=f"needs a GPU: {GPU_REASON}"))
        elif "multigpu" in item.keywords and GPU_COUNT < 2:
            why = GPU_REASON or f"the driver found {GPU_COUNT} CUDA device"
            item.add_marker(pytest.mark.skip(reason=f"needs two or more GPUs: {why}"))
        if "nogpu" in item.keywords and HAS_GPU:
            item.add_marker(pytest.mark.skip(reason="checks the no-driver behaviour; this machine has a GPU"))


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(params=["buffer", "pointers"])
def launch_arguments_env(request):
    """The environment of a child process that passes launch arguments one way or the other against the fake
    driver: the buffer way needs XCUDA_FAKE_PARAM_INFO=1, with which the fake reports its known kernels' layouts
    (without it every launch would pass pointers; cooperative launches pass pointers either way)."""
    if request.param == "buffer":
        return {"XCUDA_LAUNCH_ARGUMENTS": "buffer", "XCUDA_FAKE_PARAM_INFO": "1"}
    return {}


def execute_code(client, code, timeout=60):
    """Runs code through a jupyter_client; returns the reply's content and the request's iopub messages."""
    msg_id = client.execute(code)
    reply = client.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=timeout)
    return reply["content"], iopub_until_idle(client, msg_id, timeout)


def interrupted_reply(manager, client, code, delay):
    """Sends code, interrupts the kernel `delay` seconds after the cell has started (Kernel > Interrupt);
    the request's reply.

    "Started" is the request's execute_input on iopub, which both kernels publish as the cell begins. A
    delay counted from the send instead let a loaded machine deliver the interrupt before the cell ran:
    ipykernel ignores SIGINT between cells, so the cell then ran to its end ('ok', seen in CI)."""
    msg_id = client.execute(code)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") == msg_id and message["msg_type"] == "execute_input":
            break
    time.sleep(delay)
    manager.interrupt_kernel()
    reply = client.get_shell_msg(timeout=120)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=120)
    return reply["content"]


def execute_asking_again(client, code, timeout=60):
    """execute_code, asking again when ipykernel aborted the request: after an error it aborts what arrives
    before its event loop has turned once (stop_on_error), which a request sent at once can be."""
    for _ in range(5):
        reply, messages = execute_code(client, code, timeout)
        if reply["status"] != "aborted":
            return reply, messages
        time.sleep(0.2)
    return reply, messages


def iopub_until_idle(client, msg_id, timeout, deadline=None):
    """The iopub messages of the request msg_id, up to and including its idle status.

    Stops early, with what has come, when no message arrives for `timeout` seconds or, when given, once
    time.monotonic() has passed `deadline`.
    """
    messages = []
    while deadline is None or time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            break
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(message)
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    return messages


def text_of(messages):
    """The streamed text and text/plain results of iopub messages, concatenated."""
    return "".join(m["content"].get("text", "") + m["content"].get("data", {}).get("text/plain", "") for m in messages)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (the servers below retry further ports if it is taken)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalJupyterServer:
    """A Jupyter server process on 127.0.0.1 with its own runtime, config and data folders under a root folder
    and its output in root/server.log; start() starts it and waits until it answers, close() stops it.

    A subclass names the server in `what` (for messages) and defines _answers() (a REST call that raises
    OSError or ValueError, or returns False, while the server does not answer yet) and _ask_to_shut_down()
    (the REST call that asks it to stop; OSError when it cannot be reached). `url` has no trailing slash.
    """

    what = "the Jupyter server"

    def start(self, root, module, arguments, env, info_prefix, start_s, python=sys.executable):
        """Runs `python -m <module>` on a free port with `arguments` after the common ones, in `env` plus
        the folders; waits up to start_s seconds for its <info_prefix>-<pid>.json and its answer.
        `python` is the interpreter (another venv's, for JupyterLab and Notebook 7 from PyPI)."""
        self.log_path = root / "server.log"
        runtime = root / "runtime"
        env = dict(env, JUPYTER_RUNTIME_DIR=str(runtime), JUPYTER_CONFIG_DIR=str(root / "config"),
                   JUPYTER_DATA_DIR=str(root / "data"))
        command = [
            str(python), "-m", module, "--no-browser", "--ip=127.0.0.1", f"--port={free_port()}",
            "--port-retries=50", *arguments,
        ]
        if os.geteuid() == 0:
            command.append("--allow-root")  # CI containers run as root; the server is on 127.0.0.1 only
        with open(self.log_path, "w") as log:
            # Its own session: nothing the server or its kernels do to their process group or
            # terminal reaches the test run.
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        # The server writes <info_prefix>-<pid>.json, naming the port it bound, once it listens.
        info_file = runtime / f"{info_prefix}-{self.process.pid}.json"
        deadline = time.monotonic() + start_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.what} exited with {self.process.returncode}:\n{self.log()}")
            if info_file.exists():
                try:
                    self.url = json.loads(info_file.read_text())["url"].rstrip("/")
                    if self._answers():
                        break
                except (ValueError, KeyError, OSError):
                    pass  # the file is being written, or the server does not answer yet
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"{self.what} did not start within {start_s} s:\n{self.log()}")
            time.sleep(0.2)

    def _answers(self):
        raise NotImplementedError

    def _ask_to_shut_down(self):
        raise NotImplementedError

    def log(self):
        return self.log_path.read_text(errors="replace")

    def close(self):
        """Asks the server to shut down (it stops its kernels), then makes sure it has exited."""
        if self.process.poll() is None:
            try:
                self._ask_to_shut_down()
            except OSError:
                self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def shell():
    """A plain IPython shell (no kernel) with `%load_ext xcuda`, shared by a test module."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    yield shell
    InteractiveShell.clear_instance()


@pytest.fixture(scope="module")
def xcuda_kernel_client():
    """A client of a fresh xcuda kernel process, shared by a test module, shut down after it."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60)
    yield client
    client.stop_channels()
    manager.shutdown_kernel(now=False)
