"""The tutorial notebooks run to their end in the xcuda kernel on the PTX simulator (docs/simulator.md).

Each notebook executes through nbclient in the real kernel (the build's kernelspec, found through
JUPYTER_PATH as tests/conftest.py sets it), with XCUDA_DEVICE=simulator (and XCUDA_LIBCUDA unset) in the
kernel's environment: every cell runs, none is skipped, and none may end with an error output.

One change is made to 01-saxpy.ipynb before it runs, in memory: NUM_BLOCKS = 32768 becomes 64 (n =
32,768 elements instead of 16,777,216). The notebook launches SAXPY about 200 times (the timing cells
repeat it 50, 105 and 2 x 21 times); at the full size one launch takes about 2 s of interpretation, so
the notebook would take some 7 minutes of CPU. Every cell, every launch path (numpy arguments, device
arrays, time(), %cuda_timeit, events, %cuda_status, the per-device split) runs as written.
"""
import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent.parent / "notebooks"


def outputs_text(cell):
    # As tests/package/test_notebooks.py: streams concatenated, results and errors on lines of their own.
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        else:
            parts.append("\n" + output.get("data", {}).get("text/plain", "") + output.get("evalue", "") + "\n")
    return "".join(parts)


SMALL_SAXPY = ("NUM_BLOCKS = 32768", "NUM_BLOCKS = 64")


def execute_on_the_simulator(name, replace=None):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    if replace:
        cells = [c for c in notebook.cells if c.cell_type == "code" and replace[0] in c.source]
        assert len(cells) == 1, f"{name}: the line to change ({replace[0]}) is not in exactly one cell"
        cells[0].source = cells[0].source.replace(*replace)
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env["XCUDA_DEVICE"] = "simulator"
    client = NotebookClient(notebook, kernel_name="xcuda", timeout=600)
    client.execute(env=env)  # raises CellExecutionError at the first cell that fails
    code = [c for c in notebook.cells if c.cell_type == "code"]
    errors = [(i, o) for i, c in enumerate(code) for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    assert all(c.get("execution_count") for c in code), "a code cell did not run"
    return "\n".join(outputs_text(c) for c in code)


def test_the_saxpy_tutorial_runs_to_its_end_on_the_simulator():
    text = execute_on_the_simulator("01-saxpy.ipynb", SMALL_SAXPY)
    assert "xcuda PTX simulator" in text, text
    assert "SAXPY is correct for all 32768 elements" in text, text
    assert "SAXPY on 1 GPU(s) is correct for all 32768 elements" in text, text
    assert "[simulated: the PTX simulator's time on the CPU, not a GPU's]" in text, text  # %cuda_timeit
    assert "one launch, timed with events:" in text, text


def test_the_ptx_inspection_course_runs_to_its_end_on_the_simulator():
    text = execute_on_the_simulator("02-ptx-inspection.ipynb")
    assert ".entry saxpy" in text, text
    assert "out[i] = a * x[i] + y[i];" in text and "fma.rn.f32" in text, text
