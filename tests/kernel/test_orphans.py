"""A killed kernel leaves no helper process behind (issue 28, item 4): the compile worker (xcuda-compile)
ends with the kernel even in the middle of a long compile, and so does a fork-per-compile child
(XCUDA_COMPILE_PROCESS's default without the worker). No GPU needed."""
import json
import os
import signal
import time

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel

from conftest import BUILD, SLOW_SOURCE

SLOW_CELL = "%%cuda\n" + SLOW_SOURCE


def children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def without_the_worker(tmp_path, monkeypatch):
    """A kernelspec whose module folder has the module but no xcuda-compile beside it: a fork per compile."""
    module_dir = tmp_path / "module"
    module_dir.mkdir()
    for entry in (BUILD / "python").iterdir():
        if entry.name != "xcuda-compile":
            (module_dir / entry.name).symlink_to(entry)
    spec = KernelSpecManager().get_kernel_spec("xcuda").to_dict()
    spec["env"] = dict(spec.get("env") or {}, XCUDA_PYTHONPATH=str(module_dir))
    spec_dir = tmp_path / "jupyter" / "kernels" / "xcuda"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join([str(tmp_path / "jupyter"), os.environ.get("JUPYTER_PATH", "")]))


@pytest.mark.parametrize("compile_process", ["worker", "fork"])
def test_killing_the_kernel_mid_compile_leaves_no_child_within_two_seconds(tmp_path, monkeypatch, compile_process):
    env = dict(os.environ, IPYTHONDIR=str(tmp_path), XCUDA_CACHE="0")
    if compile_process == "fork":
        without_the_worker(tmp_path, monkeypatch)
    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60, env=env)
    kernel_pid = manager.provisioner.process.pid
    try:
        client.execute(SLOW_CELL)
        deadline = time.monotonic() + 30
        helpers = []
        while time.monotonic() < deadline and not helpers:
            time.sleep(0.2)
            helpers = children_of(kernel_pid)
        assert helpers, "the compile started no helper process"
        time.sleep(1.0)  # well into the compile
        assert any(alive(pid) for pid in helpers), "the compile ended before the kernel was killed: make it slower"
        os.kill(kernel_pid, signal.SIGKILL)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and any(alive(pid) for pid in helpers):
            time.sleep(0.05)
        left = [pid for pid in helpers if alive(pid)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)  # not to leave them to the next test
        assert left == [], f"helper processes {left} outlived the killed kernel"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
