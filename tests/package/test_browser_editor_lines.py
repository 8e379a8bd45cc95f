"""The editor and the output in a real browser (issue 51, items 4 and 5): JupyterLab 4 and Notebook 7 in
headless Chromium, with this checkout's extension (the server of test_browser_labextension), on the PTX
simulator (no GPU here: the notebook's first cell calls xcuda.use_simulator()).

- a fault the simulator reports at a line of a %%cuda cell is marked in that cell's editor at that line,
  as an error (the launch runs in another cell), and the mark goes when the %%cuda cell is edited;
- NVRTC's "catastrophic error" (an #include it cannot open) is marked as an error, not a warning;
- Enter at the end of the %%cuda line leaves the next line unindented (C++'s indenter took the magic line
  for an unfinished statement and indented by 4).
Screenshots: build/test-artifacts/editor-lines-*.png.
"""
import json

import pytest

from test_browser import RENDER_S, wait_for
from test_browser_lab import KERNEL_READY_JS, MISSING, close_notebook, save_screenshot
from test_browser_labextension import (CELL_JS, MARKS_JS, SET_SOURCE_JS, _notebook, browser,  # noqa: F401 (fixtures)
                                       run_cell, server)

pytestmark = [pytest.mark.browser, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]

SIMULATOR_CELL = "import xcuda\nxcuda.use_simulator()"
FAULT_CELL = ('%%cuda\nextern "C" __global__ void oob(float* out)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
              '    out[i] = 1.0f;\n}')
FAULT_LINE = 5  # out[i] = 1.0f; in the editor (the %%cuda line is line 1)
LAUNCH_CELL = "import numpy as np\nout = np.zeros(40, dtype=np.float32)\noob[2, 32](out)"
CATASTROPHIC_CELL = '%%cuda\n#include "no_such_header_anywhere.h"\nextern "C" __global__ void c(int* x) { x[0] = 1; }'
CATASTROPHIC_LINE = 2
TYPING_CELL = "%%cuda"
CELLS = [SIMULATOR_CELL, FAULT_CELL, LAUNCH_CELL, CATASTROPHIC_CELL, TYPING_CELL]
NOTEBOOK = "editor-lines.ipynb"


def open_notebook(driver, server, frontend):
    (server.folder / NOTEBOOK).write_text(json.dumps(_notebook(CELLS)))
    driver.get(server.page(frontend, NOTEBOOK))
    wait_for(driver, KERNEL_READY_JS, 90, f"{NOTEBOOK} to open in {frontend} with the xcuda kernel idle", NOTEBOOK)


MARKED = MARKS_JS.replace("return {lines", "if (!marked.length) return false; return {lines")


@pytest.mark.parametrize("frontend", ["lab", "nb7"])
def test_a_simulated_fault_is_marked_at_its_line_of_the_cuda_cell_and_goes_on_edit(server, browser, frontend):
    open_notebook(browser, server, frontend)
    try:
        for index in (0, 1, 2):
            run_cell(browser, index)
        outputs = browser.execute_script(CELL_JS + "return cell.model.outputs.toJSON();", 2)
        errors = [o for o in outputs if o["output_type"] == "error"]
        assert errors and "CUDA_ERROR_ILLEGAL_ADDRESS" in errors[0]["evalue"], outputs
        count = browser.execute_script(CELL_JS + "return cell.model.executionCount;", 1)
        assert f"Cell In[{count}], line {FAULT_LINE}" in errors[0]["evalue"], errors[0]["evalue"]
        wait_for(browser, MARKED, RENDER_S, "the fault to be marked in the %%cuda cell", 1)
        marks = browser.execute_script(MARKS_JS, 1)
        assert [(m["line"], m["severity"]) for m in marks["lines"]] == [(FAULT_LINE, "error")], marks
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in marks["lines"][0]["title"], marks
        assert browser.execute_script(MARKS_JS, 2)["lines"] == []  # the launch's own cell has no C++ line
        save_screenshot(browser, f"editor-lines-{frontend}-fault-marked")
        browser.execute_script(SET_SOURCE_JS, 1, FAULT_CELL + "\n")
        wait_for(browser, MARKS_JS.replace("return {lines", "return marked.length === 0; return {lines"),
                 RENDER_S, "the fault's mark to go when the cell is edited", 1)
    finally:
        close_notebook(browser)


@pytest.mark.parametrize("frontend", ["lab"])
def test_a_catastrophic_error_is_marked_as_an_error(server, browser, frontend):
    open_notebook(browser, server, frontend)
    try:
        run_cell(browser, 3)
        wait_for(browser, MARKED, RENDER_S, "the missing include to be marked", 3)
        marks = browser.execute_script(MARKS_JS, 3)
        assert [(m["line"], m["severity"]) for m in marks["lines"]] == [(CATASTROPHIC_LINE, "error")], marks
        assert "catastrophic error" in marks["lines"][0]["title"], marks
        assert "xcuda-error" in marks["gutter"][0]["cls"], marks
    finally:
        close_notebook(browser)


@pytest.mark.parametrize("frontend", ["lab", "nb7"])
def test_enter_after_the_magic_line_does_not_indent(server, browser, frontend):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    open_notebook(browser, server, frontend)
    try:
        wait_for(browser, CELL_JS + "return cell.model.mimeType === 'text/x-c++src';", RENDER_S,
                 "the %%cuda cell to be C++", 4)
        browser.execute_script(CELL_JS + """
            var view = cell.editor.editor; view.focus();
            view.dispatch({selection: {anchor: view.state.doc.length}});""", 4)
        ActionChains(browser).send_keys(Keys.ENTER, "int x;", Keys.ENTER, "}").perform()
        wait_for(browser, CELL_JS + "return cell.model.sharedModel.getSource().indexOf('}') >= 0;", RENDER_S,
                 "the typed text to arrive", 4)
        source = browser.execute_script(CELL_JS + "return cell.model.sharedModel.getSource();", 4)
        assert source.split("\n")[:2] == ["%%cuda", "int x;"], repr(source)
    finally:
        close_notebook(browser)
