"""The tutorial notebooks execute in the xcuda kernel through nbclient.

Without a GPU and with XCUDA_DEVICE=gpu (the suite's default, tests/conftest.py) a notebook must run every
cell up to its first launch and stop there with CudaUnavailableError; with one, it must run top to bottom.
With nothing set they run on the PTX simulator: tests/simulator/test_notebooks_on_the_simulator.py.
"""
import json
import os
import signal
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import HAS_GPU

NOTEBOOKS = Path(__file__).resolve().parent.parent.parent / "notebooks"


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
    # Section 9 profiles and sanitizes where a GPU and the tools are, and says why not elsewhere.
    import xcuda

    try:
        tools = bool(xcuda.find_tool("ncu") and xcuda.find_tool("compute-sanitizer"))
    except xcuda.ToolNotFoundError:
        tools = False
    if HAS_GPU and tools:
        assert "memory-bound" in text and "of stall samples" in text, text
        assert "Invalid __global__ write" in text and "Race on shared memory" in text, text
    else:
        assert "profile skipped: " in text and "sanitize skipped: " in text, text
    assert "data untouched: True" in text


# ---- 04-several-hosts: ipyparallel engines started by the notebook itself --------------------------------

try:
    import ipyparallel  # noqa: F401 (only whether it is there)

    NO_IPYPARALLEL = None
except ImportError as missing:
    NO_IPYPARALLEL = f"ipyparallel is not importable ({missing}); Debian: python3-ipyparallel, which bash .ci/setup installs"


def execute_several_hosts(tmp_path, monkeypatch, device=None):
    """Runs 04-several-hosts.ipynb with the cluster's profile (IPYTHONDIR) and the xcuda engine registry in
    tmp_path and none of the machine's launcher variables (XCUDA_DEVICE=device when given); returns
    (notebook, error, clusters left running).

    The notebook's cluster must be gone once its kernel has shut down: its last cell stops it, and where
    the notebook stopped early the kernel runs ipyparallel's atexit handler at shutdown. Whatever is still
    running after 60 s is reported and stopped here, by the pids in its cluster file.
    """
    ipython_dir = tmp_path / "ipython"
    monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))
    monkeypatch.setenv("XCUDA_HOST_REGISTRY", str(tmp_path / "registry"))
    for name in ("XCUDA_DEVICE", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    if device is not None:
        monkeypatch.setenv("XCUDA_DEVICE", device)
    notebook, error = execute("04-several-hosts.ipynb")
    deadline = time.monotonic() + 60
    while True:
        left = sorted(ipython_dir.glob("profile_default/security/cluster-*.json"))
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for cluster_file in left:
        for pid in cluster_pids(json.loads(cluster_file.read_text()), ipython_dir):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    return notebook, error, [str(path) for path in left]


def cluster_pids(info, ipython_dir):
    """The pids of a cluster file's controller and engines that are still this cluster's processes.

    Only positive pids (an engine set records pid -1, and kill(-1) signals every process of the user),
    and only processes whose command line is ipyparallel's with this test's profile folder (a pid may
    have been reused since).
    """
    states = [info.get("controller", {}).get("state", {})]
    for engine_set in info.get("engines", {}).get("sets", {}).values():
        states.append(engine_set)
        states += list(engine_set.get("engines", {}).values())
    pids = []
    for state in states:
        pid = state.get("pid")
        if not isinstance(pid, int) or pid <= 0:
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone
        if "ipyparallel" in command and str(ipython_dir) in command:
            pids.append(pid)
    return pids


@pytest.mark.nogpu
@pytest.mark.skipif(NO_IPYPARALLEL is not None, reason=NO_IPYPARALLEL or "")
def test_several_hosts_notebook_compiles_on_every_engine_and_stops_at_the_first_device_array(tmp_path, monkeypatch):
    # XCUDA_DEVICE=gpu: a GPU or nothing (with nothing set the engines fall back to the simulator and the
    # notebook runs to its end: tests/simulator/test_notebooks_on_the_simulator.py).
    notebook, error, left = execute_several_hosts(tmp_path, monkeypatch, device="gpu")
    assert error is not None and error.ename == "CudaUnavailableError", error
    assert "on engines 0, 1:" in error.evalue and "no NVIDIA driver" in error.evalue
    code = [c for c in notebook.cells if c.cell_type == "code"]
    failed = [i for i, c in enumerate(code) if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    assert len(failed) == 1
    assert code[failed[0]].source.startswith("parts = xcuda.parallel.scatter(dview")
    before = "\n".join(outputs_text(c) for c in code[: failed[0]])
    assert "2 engines: [0, 1]" in before
    # %px %cuda_info: each engine's device and why (its slot among this host's engines)
    assert "device 0: slot 0 among this host's xcuda engines" in before, before
    assert "device 1: slot 1 among this host's xcuda engines" in before, before
    # %%px + %%cuda compiled on both engines: `%px saxpy` shows each engine's kernel
    signature = "saxpy(float a, const float* x, const float* y, float* out, size_t n) [compute_75 PTX]"
    assert before.count(signature) == 2, before
    assert not left, f"the notebook's cluster was still running after its kernel shut down: {left}"


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.skipif(NO_IPYPARALLEL is not None, reason=NO_IPYPARALLEL or "")
def test_several_hosts_notebook_runs_top_to_bottom_with_an_engine_per_gpu(tmp_path, monkeypatch):
    notebook, error, left = execute_several_hosts(tmp_path, monkeypatch)
    assert error is None, f"{error.ename}: {error.evalue}" if error else ""
    text = "\n".join(outputs_text(c) for c in notebook.cells if c.cell_type == "code")
    assert "on its device 0" in text and "on its device 1" in text, text
    assert "SAXPY over 2 engines is correct for all 16,777,216 elements" in text, text
    assert "sum over 2 engines:" in text, text
    assert not left, f"the notebook's cluster was still running after the notebook: {left}"


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
