"""`bash .ci/kernel-for-venv PATH`: the xcuda kernel in a user's venv. The venv's packages import in cells,
sys.executable is the venv's python, and `%pip install` in a cell installs into the venv (here a wheel
made by the test, --no-index: no network). A venv of another Python is refused in one line.
"""
import base64
import hashlib
import json
import os
import subprocess
import zipfile
from pathlib import Path

from jupyter_client.manager import start_new_kernel

from conftest import REPO

SCRIPT = REPO / ".ci" / "kernel-for-venv"


def make_wheel(folder, name, who):
    """A pure-Python wheel of package `name` whose module says WHO = who."""
    files = {f"{name}/__init__.py": f"WHO = {who!r}\n",
             f"{name}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{name}-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = ""
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(text.encode())}\n"
    record += f"{name}-1.0.dist-info/RECORD,,\n"
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{name}-1.0.dist-info/RECORD", record)
    return wheel


def stdout_of(kc, code):
    outputs = []
    reply = kc.execute_interactive(code, timeout=120, output_hook=outputs.append)
    text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
    assert reply["content"]["status"] == "ok", (reply["content"], text)
    return text


def test_the_kernel_in_a_venv_imports_its_packages_and_pip_installs_into_it(tmp_path, monkeypatch):
    venv = tmp_path / "myenv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=300)
    first = make_wheel(tmp_path, "xcuda_venv_probe_a", "installed before")
    second = make_wheel(tmp_path, "xcuda_venv_probe_b", "installed by %pip")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", str(first)],
                   check=True, timeout=300)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    done = subprocess.run(["bash", str(SCRIPT), str(venv)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    spec = json.loads((tmp_path / "data" / "kernels" / "xcuda-venv-myenv" / "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 (xcuda, venv myenv)"
    km, kc = start_new_kernel(kernel_name="xcuda-venv-myenv", env=dict(os.environ, IPYTHONDIR=str(tmp_path / "ipython")))
    try:
        where = stdout_of(kc, "import sys, xcuda_venv_probe_a, xcuda\n"
                              "print(sys.executable); print(sys.prefix); print(xcuda_venv_probe_a.WHO)")
        assert where.split("\n")[:3] == [str(venv / "bin" / "python"), str(venv), "installed before"], where
        stdout_of(kc, f"%pip install -q --no-index {second}")
        assert stdout_of(kc, "import xcuda_venv_probe_b; print(xcuda_venv_probe_b.WHO)").strip() == "installed by %pip"
        assert stdout_of(kc, "print(get_ipython().find_cell_magic('cuda') is not None)").strip() == "True"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    installed = list((venv / "lib").glob("python3*/site-packages/xcuda_venv_probe_b/__init__.py"))
    assert installed, "the %pip install went into the venv"


def test_a_venv_of_another_python_is_refused_in_one_line(tmp_path):
    venv = tmp_path / "other"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /opt/python3.12/bin\n")
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\necho 3.12\n")
    python.chmod(0o755)
    done = subprocess.run(["bash", str(SCRIPT), str(venv)], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, JUPYTER_DATA_DIR=str(tmp_path / "data")))
    assert done.returncode == 1
    line = done.stderr.strip()
    assert "\n" not in line and "is Python 3.12" in line and "embeds Python 3.11" in line, line
    assert "%load_ext xcuda" in line, line
    assert not (tmp_path / "data" / "kernels").exists()
