"""Shared test set-up: find the build tree, its kernelspec and its Python module, and mark GPU tests.

The tests never need xcuda installed system-wide: JUPYTER_PATH points at the build tree's kernelspec
(build/share/jupyter/kernels/xcuda) and sys.path at its Python module (build/python). Set
XCUDA_BUILD_DIR to test another build folder.
"""
import ctypes
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()



def _relocated_kernelspec():
    """The build tree's kernelspec, rewritten to name this build's binary and module folder.

    The build writes absolute paths into kernel.json; a build tree copied elsewhere (the GPU host
    runs a copy of the checkout) would name a binary that is not there.
    """
    import json

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
    return target_root


os.environ["JUPYTER_PATH"] = os.pathsep.join(
    [str(_relocated_kernelspec())] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(BUILD / "python")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
)
sys.path.insert(0, str(BUILD / "python"))

# The tests' own disk compile cache, emptied per run, so that no test reads ~/.cache/xcuda.
TEST_CACHE = BUILD / "test-compile-cache"
if TEST_CACHE.exists():
    import shutil

    shutil.rmtree(TEST_CACHE)
os.environ["XCUDA_CACHE_DIR"] = str(TEST_CACHE)


def _probe_gpus():
    """(None, number of CUDA devices) when a driver and a device are present, else (why GPU tests cannot run, 0)."""
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


def execute_code(client, code, timeout=60):
    """Runs code through a jupyter_client; returns the reply's content and the request's iopub messages."""
    import queue

    msg_id = client.execute(code)
    reply = client.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=timeout)
    messages = []
    while True:
        try:
            message = client.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            break
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(message)
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    return reply["content"], messages


def text_of(messages):
    """The streamed text and text/plain results of iopub messages, concatenated."""
    return "".join(m["content"].get("text", "") + m["content"].get("data", {}).get("text/plain", "") for m in messages)
