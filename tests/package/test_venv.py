"""The wheel pip-installed into a venv, and `%load_ext xcuda` in current IPython 9 and ipykernel 7 from PyPI.

The venv is the one `bash .ci/test` makes (build/venv, or $XCUDA_TEST_VENV): /usr/bin/python3 -m venv,
then `pip install "<wheel>[all]" ipython>=9 ipykernel>=7 ...`, the wheel being the one `bash .ci/wheel` built
from this checkout (scikit-build-core, as pip builds it for a user; auditwheel's manylinux tag). Everything here runs in that venv's Python, in subprocesses whose environment names
neither the build tree's module (PYTHONPATH) nor its kernelspecs (JUPYTER_PATH): what they import is
what pip installed. Where the venv was not made (a plain pytest run), the tests skip saying so; under
`.ci/test` (XCUDA_TEST_VENV set) a missing venv fails them.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD, HAS_GPU, REPO

VENV = Path(os.environ.get("XCUDA_TEST_VENV") or BUILD / "venv")
PYTHON = VENV / "bin" / "python"


def _missing():
    if PYTHON.exists():
        return None
    why = f"the test venv {VENV} does not exist: bash .ci/test (or .ci/setup --tests) makes it"
    if os.environ.get("XCUDA_TEST_VENV"):
        raise RuntimeError(why)  # .ci/test asked for it: failing is the honest answer
    return why


MISSING = _missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def venv_env(**extra):
    """The environment for the venv's processes: nothing that points at the build tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_PATH", "XCUDA_PYTHONPATH")}
    env["PYTHONNOUSERSITE"] = "1"  # not the system Python's user site (.ci/setup's .pth names build/python)
    env.update(extra)
    return env


def venv_python(code, timeout=180, **env):
    result = subprocess.run([str(PYTHON), "-c", code], env=venv_env(**env), capture_output=True, text=True,
                            timeout=timeout, cwd=str(BUILD))
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result.stdout


def test_pip_installed_the_module_into_the_venv_without_linking_the_driver_or_nvrtc():
    out = json.loads(venv_python(
        "import json, sys, xcuda, IPython, ipykernel\n"
        "print(json.dumps({'file': xcuda.__file__, 'core': xcuda._core.__file__, 'prefix': sys.prefix,"
        " 'ipython': IPython.__version__, 'ipykernel': ipykernel.__version__,"
        " 'nvrtc': xcuda.nvrtc_library()['path']}))"))
    assert Path(out["file"]).resolve().is_relative_to(VENV.resolve()), out
    assert "site-packages" in out["file"], out
    assert Path(out["file"]).parts[-2:] == ("xcuda", "__init__.py"), out
    assert Path(out["core"]).parent == Path(out["file"]).parent, out
    assert int(out["ipython"].split(".")[0]) >= 9 and int(out["ipykernel"].split(".")[0]) >= 7, out
    assert out["nvrtc"], out
    from test_packaging import assert_links_neither_driver_nor_nvrtc

    assert_links_neither_driver_nor_nvrtc(Path(out["core"]))


def test_pip_install_puts_only_the_package_and_its_dist_info_at_the_top_of_site_packages():
    out = json.loads(venv_python(
        "import json, importlib.metadata as m\n"
        "d = m.distribution('xcuda')\n"
        "print(json.dumps(sorted({str(f).split('/')[0] for f in d.files})))"))
    tops = [top for top in out if not top.startswith("..")]  # scripts and data outside site-packages
    assert tops and all(top == "xcuda" or (top.startswith("xcuda-") and top.endswith(".dist-info")) for top in tops), tops
    files = json.loads(venv_python(
        "import json, importlib.metadata as m\n"
        "print(json.dumps(sorted(str(f) for f in m.distribution('xcuda').files)))"))
    for needed in ("xcuda/__init__.py", "xcuda/magics.py", "xcuda/recovery.py", "xcuda/parallel.py",
                   "xcuda/xcuda-compile", "xcuda/xcuda-replay"):
        assert needed in files, (needed, files)
    assert any(f.startswith("xcuda/_core") and f.endswith(".so") for f in files), files


IPYTHON_SESSION = r'''
import json
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "xcuda")
shell.run_cell_magic("cuda", "", """extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }""")
shell.run_cell("import numpy as np; x = np.ones(1000, np.float32); out = np.zeros_like(x)")
launch = shell.run_cell("saxpy[4, 256](np.float32(2), x, x, out, 1000)")
error = launch.error_in_exec
compile_error = shell.run_cell('%%cuda\nextern "C" __global__ void f(int* x)\n{\n  x[0] = nope;\n}\n').error_in_exec
print(json.dumps({
    "magics": sorted(shell.magics_manager.lsmagic()["cell"]),
    "repr": repr(shell.user_ns["saxpy"]),
    "launch_error": type(error).__name__ if error else None,
    "out": float(shell.user_ns["out"].sum()),
    "compile_error": [type(compile_error).__name__, str(compile_error)],
}))
'''


def test_load_ext_in_ipython_9_compiles_launches_and_reports_compile_errors():
    out = json.loads(venv_python(IPYTHON_SESSION).strip().splitlines()[-1])
    assert "cuda" in out["magics"] and "cuda_header" in out["magics"]
    assert out["repr"].startswith("<xcuda.Kernel saxpy(float a, const float* x, const float* y, float* out, size_t n)")
    if HAS_GPU:
        assert out["launch_error"] is None and out["out"] == 3000.0
    else:
        assert out["launch_error"] == "CudaUnavailableError"
    # Shown once: the diagnostics above, then a one-line summary with the editor's line (the %%cuda line is 1).
    assert out["compile_error"][0] == "CompileError" and "line 4, column" in out["compile_error"][1]


def test_the_saxpy_notebook_runs_in_ipykernel_7_with_load_ext(tmp_path):
    """The tutorial through nbclient in the venv's own ipykernel ("python3", its sys.prefix spec)."""
    saved = tmp_path / "01-saxpy-ipykernel.ipynb"
    result = subprocess.run(
        [str(PYTHON), str(REPO / "notebooks" / "run_notebook.py"), str(REPO / "notebooks" / "01-saxpy.ipynb"),
         "--kernel", "python3", "--load-ext", "xcuda", "--save", str(saved), "--timeout", "300"],
        env=venv_env(), capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    import nbformat

    notebook = nbformat.read(saved, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code[0].source == "%load_ext xcuda" and code[0].execution_count == 1
    text = "\n".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") + o.get("ename", "")
                     for c in code for o in c.get("outputs", []))
    assert "<xcuda.Kernel saxpy(float a, const float* x, const float* y, float* out, size_t n)" in text
    if HAS_GPU:
        assert "SAXPY is correct for all 16777216 elements" in text
        assert "all 22 cells ran" in result.stdout
    else:
        assert "CudaUnavailableError" in text
        assert "stopped at the first launch" in result.stdout
