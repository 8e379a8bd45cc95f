"""The tutorial notebooks execute in the xcuda kernel through nbclient.

Without a GPU a notebook must run every cell up to its first launch and stop there with
CudaUnavailableError; with one, it must run top to bottom.
"""
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import HAS_GPU

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def execute(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(notebook, kernel_name="xcuda", timeout=300)
    error = None
    try:
        client.execute()
    except CellExecutionError as e:
        error = e
    # Keep the executed notebook as a test artefact (XCUDA_TEST_ARTIFACTS names the folder).
    artifacts = os.environ.get("XCUDA_TEST_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, Path(artifacts) / name)
    return notebook, error


def outputs_text(cell):
    # A kernel may send one print as several stream messages: concatenate them as a frontend does.
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        else:
            parts.append("\n" + output.get("data", {}).get("text/plain", "") + output.get("evalue", "") + "\n")
    return "".join(parts)


@pytest.mark.nogpu
def test_saxpy_notebook_runs_up_to_its_first_launch_without_a_gpu():
    notebook, error = execute("01-saxpy.ipynb")
    assert error is not None and error.ename == "CudaUnavailableError"
    code = [c for c in notebook.cells if c.cell_type == "code"]
    failed = [i for i, c in enumerate(code) if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    assert len(failed) == 1
    failing = code[failed[0]]
    assert failing.source.startswith("saxpy[")
    before = "\n".join(outputs_text(c) for c in code[: failed[0]])
    assert "saxpy(float a, const float* x, const float* y, float* out, size_t n)" in before
    assert "n = 16,777,216 elements" in before
    assert all(c.get("execution_count") for c in code[: failed[0] + 1])


@pytest.mark.gpu
def test_saxpy_notebook_runs_top_to_bottom_on_a_gpu():
    notebook, error = execute("01-saxpy.ipynb")
    assert error is None, f"{error.ename}: {error.evalue}" if error else ""
    text = "\n".join(outputs_text(c) for c in notebook.cells if c.cell_type == "code")
    assert "SAXPY is correct for all 16777216 elements" in text, text
    assert "GB/s" in text and "median" in text, text


def test_ptx_course_notebook_runs_on_any_machine():
    notebook, error = execute("02-ptx-inspection.ipynb")
    assert error is None, f"{error.ename}: {error.evalue}" if error else ""
    text = "\n".join(outputs_text(c) for c in notebook.cells if c.cell_type == "code")
    assert ".entry saxpy" in text
    assert "out[i] = a * x[i] + y[i];" in text and "fma.rn.f32" in text
    assert "1024 B shared" in text
    assert "div.approx" in text and "only left" in text
    assert "scale<double>(double* x, double factor, int n)" in text
    if HAS_GPU:
        assert "limited by" in text
    else:
        assert "occupancy skipped" in text
    html = [o for c in notebook.cells for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    assert any("xcuda-sbs" in o["data"]["text/html"] for o in html)


def test_cuda_python_way_notebook_shows_both_ways_and_times_them_only_where_it_can():
    notebook, error = execute("03-cuda-python-way.ipynb")
    assert error is None, f"{error.ename}: {error.evalue}" if error else ""
    code = [c for c in notebook.cells if c.cell_type == "code"]
    text = "\n".join(outputs_text(c) for c in code)
    assert "<xcuda.Kernel saxpy(float a, const float* x, const float* y, float* out, size_t n)" in text
    # The cuda.bindings steps are there to read whether or not they run.
    steps = "\n".join(c.source for c in code)
    for call in ("nvrtcCreateProgram", "nvrtcCompileProgram", "cuDevicePrimaryCtxRetain", "cuModuleLoadData",
                 "cuMemAlloc", "cuMemcpyHtoDAsync", "cuLaunchKernel", "cuStreamSynchronize", "cuMemcpyDtoHAsync"):
        assert call in steps, call
    try:
        import cuda.bindings  # noqa: F401  (the kernel's Python is this one)
        have_cuda_python = True
    except ImportError:
        have_cuda_python = False
    if HAS_GPU and have_cuda_python:
        assert "CUDA Python: correct for all 16777216 elements" in text
        assert "xcuda: correct for all 16777216 elements" in text
        assert "times measured in this run" in text
    else:
        assert "not measured:" in text and "times measured" not in text
        assert ("cuda-python is not installed" in text) or ("no usable NVIDIA GPU" in text)
