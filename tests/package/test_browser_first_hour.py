"""The first hour without a GPU, as a person has it (issue 51, item 7): 01-saxpy opened in JupyterLab 4 and in
Notebook 7 (from the test venv, headless Chromium), with nothing set, and Run All.

The Jupyter server, and the kernels it starts, have neither XCUDA_DEVICE (the suite's default
XCUDA_DEVICE=gpu is removed for this server only) nor XCUDA_LIBCUDA: xcuda falls back to the PTX
simulator by itself in the first cell (xcuda.info()). Every cell must run without an error, the
simulator's notice must show once, in the first cell's output, rendered as stderr (JupyterLab's
warning colour), and no figure may read as a GPU's (notebooks/run_notebook.py's patterns: a time without
its "[simulated" label, a bandwidth, a speed-up). The budget: Run All must finish within RUN_ALL_BUDGET_S
(the notebook alone takes about 11 s of a 2-core machine's time; the rest is the browser, the server and
the kernel's start on a shared machine). It is a limit to wait for, not a measurement. Needs a machine
without a driver (marked nogpu): with one nothing falls back. Server, browser and helpers are
test_browser_lab.py's (the build's kernelspec through JUPYTER_PATH; the user's kernelspecs are not touched).
"""
import importlib.util

import pytest

from conftest import REPO
from test_browser_lab import (MISSING, CODE_CELLS_JS, RUN_ALL_DONE_JS, RUN_ALL_JS, LabServer,  # noqa: F401
                              browser, close_notebook, open_notebook, save_screenshot, wait_for)

pytestmark = [pytest.mark.browser, pytest.mark.nogpu, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]

RUN_ALL_BUDGET_S = 180
NOTICE = "no NVIDIA driver was found, so kernels run on the PTX simulator"

_spec = importlib.util.spec_from_file_location("run_notebook", REPO / "notebooks" / "run_notebook.py")
run_notebook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebook)

# The text of every stderr output of the first code cell, as the page renders it.
STDERR_OF_FIRST_CELL_JS = """
var panel = window.jupyterapp.shell.currentWidget;
var first = panel.content.widgets.filter(function (c) { return c.model.type === 'code'; })[0];
return Array.prototype.map.call(
    first.outputArea.node.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"]'),
    function (e) { return e.innerText; });
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        for name in ("XCUDA_DEVICE", "XCUDA_LIBCUDA"):
            patch.delenv(name, raising=False)  # the server's environment, and so its kernels'
        s = LabServer(tmp_path_factory.mktemp("first-hour-server"))
    yield s
    s.close()


@pytest.mark.parametrize("frontend", ["lab", "nb7"])
def test_saxpy_runs_all_on_the_simulator_with_nothing_set_and_says_so(server, browser, frontend):
    name = "01-saxpy.ipynb"
    try:
        open_notebook(browser, server, frontend, name)
        # open_notebook waited for the kernel's start on its own (KERNEL_READY_S): the budget is Run All's.
        started = browser.execute_async_script(RUN_ALL_JS)
        assert started is True, started
        wait_for(browser, RUN_ALL_DONE_JS, RUN_ALL_BUDGET_S, f"Run All of {name} in {frontend} within its budget")
        cells = browser.execute_script(CODE_CELLS_JS)
        failed = [(c["source"].splitlines()[0], c["errors"], c["output"][-300:]) for c in cells
                  if c["errors"] or not isinstance(c["prompt"], int)]
        assert not failed, failed
        # The notice: once, in the first cell, drawn as stderr.
        everything = "\n".join(c["output"] for c in cells)
        assert everything.count(NOTICE) == 1, everything
        assert any(NOTICE in text for text in browser.execute_script(STDERR_OF_FIRST_CELL_JS)), cells[0]["output"]
        assert "xcuda PTX simulator" in cells[0]["output"] and "no driver (simulator)" in cells[0]["output"]
        # The lesson ran (smaller), and every figure says it is simulated.
        assert "NUM_BLOCKS = 64 instead of 32,768" in everything, everything
        assert "SAXPY is correct for all 32768 elements" in everything, everything
        unlabelled = [line for line in everything.splitlines() if run_notebook.GPU_ONLY.search(line) or
                      (run_notebook.TIME.search(line) and run_notebook.SIMULATED not in line)]
        assert not unlabelled, unlabelled
        assert everything.count("[simulated") >= 4, everything  # time(), %cuda_timeit, events, one device
    finally:
        save_screenshot(browser, f"first-hour-{frontend}-01-saxpy")
        close_notebook(browser)
