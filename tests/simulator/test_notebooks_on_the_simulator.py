"""The tutorial notebooks run to their end in the xcuda kernel on the PTX simulator (docs/simulator.md), with
nothing set (issue 51, item 3).

Each notebook executes through nbclient in the real kernel (the build's kernelspec, found through
JUPYTER_PATH as tests/conftest.py sets it) with neither XCUDA_DEVICE nor XCUDA_LIBCUDA in the kernel's
environment, as a new user's laptop has it: xcuda falls back to the simulator by itself at the first launch
(or xcuda.info()) and says so once. A notebook that needs XCUDA_DEVICE set fails here. Every cell runs,
none may end with an error output, and every figure measured on the simulator is labelled simulated, with
no bandwidth or speed-up (notebooks/run_notebook.py's unlabelled_figures, which .ci/tutorial's run applies
too). The notebooks shrink what only measures themselves (xcuda.sized: 01-saxpy's 32768 blocks become 64),
nothing is changed before they run. XCUDA_DEVICE=simulator, as .ci/tutorial may set it, runs 01-saxpy the
same way. These runs need a machine without a driver (marked nogpu): with one, nothing falls back.
"""
import importlib.util
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent.parent / "notebooks"
NOTICE = "so kernels run on the PTX simulator"

_spec = importlib.util.spec_from_file_location("run_notebook", NOTEBOOKS / "run_notebook.py")
run_notebook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebook)


def outputs_text(cell):
    # As tests/package/test_notebooks.py: streams concatenated, results and errors on lines of their own.
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        else:
            parts.append("\n" + output.get("data", {}).get("text/plain", "") + output.get("evalue", "") + "\n")
    return "".join(parts)


def execute_on_the_simulator(name, **env_changes):
    """Runs the notebook with nothing set (or env_changes); returns its code cells' outputs, one text per cell."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    env = dict(os.environ)
    for variable in ("XCUDA_DEVICE", "XCUDA_LIBCUDA"):
        env.pop(variable, None)
    env.update(env_changes)
    client = NotebookClient(notebook, kernel_name="xcuda", timeout=600)
    client.execute(env=env)  # raises CellExecutionError at the first cell that fails
    code = [c for c in notebook.cells if c.cell_type == "code"]
    errors = [(i, o) for i, c in enumerate(code) for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    assert all(c.get("execution_count") for c in code), "a code cell did not run"
    assert run_notebook.ran_on_the_simulator(notebook), "the notebook did not run on the simulator"
    assert run_notebook.unlabelled_figures(notebook) == [], run_notebook.unlabelled_figures(notebook)
    return [outputs_text(c) for c in code]


@pytest.mark.nogpu
def test_the_saxpy_tutorial_runs_to_its_end_with_nothing_set_and_says_so_once():
    cells = execute_on_the_simulator("01-saxpy.ipynb")
    text = "\n".join(cells)
    # The first cell (xcuda.info()) falls back, says so, and names the simulator as the device and who chose it.
    assert NOTICE in cells[0] and text.count(NOTICE) == 1, text
    assert "xcuda PTX simulator" in cells[0] and "no driver (simulator)" in cells[0], cells[0]
    assert "the fallback: no NVIDIA driver was found" in cells[0], cells[0]
    # What only measures is smaller, and says so; the lesson's cells run as written.
    assert "on the PTX simulator: NUM_BLOCKS = 64 instead of 32,768" in text, text
    assert "SAXPY is correct for all 32768 elements" in text, text
    assert "SAXPY on 1 device(s) is correct for all 32768 elements" in text, text
    assert "GPU(s)" not in text, text
    # Every figure labelled (unlabelled_figures found none above), each kind of it present.
    assert "kernel: median" in text and "one launch, timed with events:" in text and "one device:" in text, text
    assert "over 100 launches [simulated" in text or "launches [simulated" in text, text  # %cuda_timeit
    assert "sm_90 PTX (the PTX simulator runs it)" in text, text  # %cuda_status


@pytest.mark.nogpu
def test_the_saxpy_tutorial_runs_the_same_with_XCUDA_DEVICE_simulator():
    # .ci/tutorial sets it on a machine without a GPU: no fallback, no notice, the same small sizes.
    cells = execute_on_the_simulator("01-saxpy.ipynb", XCUDA_DEVICE="simulator")
    text = "\n".join(cells)
    assert NOTICE not in text, text
    assert "chosen by                XCUDA_DEVICE=simulator" in cells[0], cells[0]
    assert "on the PTX simulator: NUM_BLOCKS = 64 instead of 32,768" in text, text


@pytest.mark.nogpu
def test_the_ptx_inspection_course_runs_to_its_end_with_nothing_set():
    text = "\n".join(execute_on_the_simulator("02-ptx-inspection.ipynb"))
    assert "device: the PTX simulator (no GPU)" in text and text.count(NOTICE) == 1, text
    assert ".entry saxpy" in text, text
    assert "out[i] = a * x[i] + y[i];" in text and "fma.rn.f32" in text, text
    assert "occupancy skipped" not in text, text  # the simulator answers the driver's occupancy calls


@pytest.mark.nogpu
def test_the_cuda_python_way_runs_its_xcuda_cells_with_nothing_set():
    text = "\n".join(execute_on_the_simulator("03-cuda-python-way.ipynb"))
    assert "xcuda launches on: the PTX simulator" in text, text
    assert "xcuda: correct for all 32768 elements" in text and text.count(NOTICE) == 1, text


try:
    import ipyparallel  # noqa: F401 (only whether it is there)

    NO_IPYPARALLEL = None
except ImportError as missing:
    NO_IPYPARALLEL = f"ipyparallel is not importable ({missing}); Debian: python3-ipyparallel"


@pytest.mark.nogpu
@pytest.mark.skipif(NO_IPYPARALLEL is not None, reason=NO_IPYPARALLEL or "")
def test_the_several_hosts_notebook_runs_on_simulating_engines_with_nothing_set(tmp_path):
    # The cluster's profile and the engines' registry in tmp_path; no launcher variable (as test_notebooks.py).
    changes = {"IPYTHONDIR": str(tmp_path / "ipython"), "XCUDA_HOST_REGISTRY": str(tmp_path / "registry")}
    for name in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"):
        os.environ.pop(name, None)
    text = "\n".join(execute_on_the_simulator("04-several-hosts.ipynb", **changes))
    assert text.count(NOTICE) == 2, text  # one per engine, in %px %cuda_info
    assert "on the PTX simulator: n = 16,384 instead of 16,777,216" in text, text
    assert "SAXPY over 2 engines is correct for all 16,384 elements" in text, text
    assert "sum over 2 engines:" in text, text
