"""The notebooks in a real browser in JupyterLab 4 and Notebook 7 (from PyPI), headless Chromium.

One Jupyter server from the test venv (`bash .ci/test` makes it: build/venv, or $XCUDA_TEST_VENV)
serves both frontends, JupyterLab at /lab and Notebook 7 at /notebooks, with the xcuda kernelspec of
the build. Every notebook in notebooks/ runs top to bottom in each (Run All; without a GPU up to the
first launch, which must fail with CudaUnavailableError); the tests read the rendered outputs, and
02-ptx-inspection runs once more in JupyterLab's dark theme, where every text in the HTML views must
keep a contrast of at least 4.5:1 against what is behind it (WCAG AA), as in the light theme. Full-
page screenshots go to build/test-artifacts/ ($XCUDA_TEST_ARTIFACTS), named lab-*, lab-dark-*, nb7-*.

The page is read through the application object both frontends expose with expose_app_in_browser
(window.jupyterapp: the notebook widget, its cells' models, the kernel's state) and through the DOM.
Windowing is turned off in the notebook settings so that every cell is in the DOM.

Not checked here: `%%cuda` cells highlighted as C++ (the extension xcuda-jupyterlab does it;
tests/package/test_browser_labextension.py runs this server with it and checks that).
"""
import json
import os
import secrets
import shutil
import urllib.request

import pytest

from conftest import BUILD, HAS_GPU, REPO, LocalJupyterServer
from test_browser import (ARTIFACTS, CHROMEDRIVER, CHROMIUM, MAX_SCREENSHOT_HEIGHT, RENDER_S, headless_chromium,
                          wait_for)
from test_venv import MISSING as VENV_MISSING
from test_venv import PYTHON as VENV_PYTHON
from test_venv import venv_env

SERVER_START_S = 90
KERNEL_READY_S = 90
RUN_ALL_S = 300
# Notebooks not run in the browser, and why (they run top to bottom elsewhere).
NOT_IN_THE_BROWSER = {
    "04-several-hosts.ipynb": "it starts and stops an ipyparallel cluster of its own; tests/package/test_notebooks.py runs "
                              "it through nbclient and checks that the cluster is gone afterwards",
}
NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb") if p.name not in NOT_IN_THE_BROWSER)


def _missing():
    import importlib.util

    if CHROMIUM is None or CHROMEDRIVER is None:
        return "Chromium and chromedriver are not installed (Debian: chromium chromium-driver; bash .ci/test installs them)"
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not importable (Debian: python3-selenium; bash .ci/test installs it)"
    return VENV_MISSING


MISSING = _missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]

# Settings for both frontends: every cell in the DOM, and no news or update checks (no network here).
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


class LabServer(LocalJupyterServer):
    """jupyter lab from the venv on 127.0.0.1, serving copies of the notebooks, Lab and Notebook 7 at once."""

    what = "jupyter lab"

    def __init__(self, root):
        self.folder = root / "notebooks"
        self.folder.mkdir()
        for name in NOTEBOOKS:
            shutil.copyfile(REPO / "notebooks" / name, self.folder / name)
        for name, values in SETTINGS.items():
            path = root / "config" / "lab" / "user-settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        self.token = secrets.token_hex(16)
        # The build's xcuda kernelspec (conftest.py's relocated copy) and nothing of the build's module.
        env = venv_env(JUPYTER_PATH=os.environ["JUPYTER_PATH"],
                       JUPYTERLAB_SETTINGS_DIR=str(root / "config" / "lab" / "user-settings"),
                       JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"))
        self.start(root, "jupyterlab",
                   [f"--ServerApp.token={self.token}", f"--ServerApp.root_dir={self.folder}",
                    "--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True",
                    "--LabApp.news_url=None", "--ServerApp.disable_check_xsrf=False"],
                   env, "jpserver", SERVER_START_S, python=VENV_PYTHON)

    def _get(self, path, method="GET"):
        request = urllib.request.Request(f"{self.url}/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        return urllib.request.urlopen(request, timeout=10)

    def _answers(self):
        return self._get("api/status").status == 200

    def _ask_to_shut_down(self):
        self._get("api/shutdown", method="POST")

    def page(self, frontend, name):
        path = f"lab/tree/{name}" if frontend == "lab" else f"notebooks/{name}"
        return f"{self.url}/{path}?token={self.token}"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = LabServer(tmp_path_factory.mktemp("lab-server"))
    yield s
    s.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = headless_chromium(tmp_path_factory, "chromium-lab-profile", 60)
    yield driver
    driver.quit()


# ---------------------------------------------------------------------------------------------
# The page, through window.jupyterapp (JupyterLab 4 and Notebook 7 alike).

# The current widget, when it is a notebook panel with a kernel session (JupyterLab may show a notebook
# restored from its workspace for a moment before the one asked for).
PANEL_JS = """
var app = window.jupyterapp;
var panel = app && app.shell.currentWidget;
var ok = !!(panel && panel.content && panel.sessionContext && panel.context && panel.sessionContext.session);
"""

KERNEL_READY_JS = PANEL_JS + """
if (!ok || !panel.context.isReady || panel.context.path !== arguments[0]) return false;
var kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
return !!(kernel && kernel.name === 'xcuda' && kernel.connectionStatus === 'connected' && kernel.status === 'idle');
"""

RUN_ALL_JS = PANEL_JS + """
var done = arguments[arguments.length - 1];
app.commands.execute('notebook:clear-all-cell-outputs')
  .then(function () { return app.commands.execute('notebook:run-all-cells'); })
  .then(function () { done(true); }, function (e) { done('run-all failed: ' + e); });
"""

# Run All has finished: the first code cell ran, the kernel is idle and no prompt shows '*'.
RUN_ALL_DONE_JS = PANEL_JS + """
if (!ok) return false;
var code = panel.content.widgets.filter(function (c) { return c.model.type === 'code'; });
var kernel = panel.sessionContext.session.kernel;
var pending = Array.prototype.some.call(panel.content.node.querySelectorAll('.jp-InputPrompt'),
    function (p) { return p.textContent.indexOf('*') >= 0; });
// A cell whose outputs arrived but whose execute_reply has not (the error of a stopped Run All comes on
// iopub first, and the kernel may already be idle) is not done yet: its count comes with the reply.
var unanswered = code.some(function (c) { return c.model.outputs.length > 0 && c.model.executionCount === null; });
return code.length > 0 && code[0].model.executionCount !== null && kernel.status === 'idle' && !pending &&
       !unanswered;
"""

CODE_CELLS_JS = PANEL_JS + """
return panel.content.widgets.filter(function (c) { return c.model.type === 'code'; }).map(function (c) {
    return {source: c.model.sharedModel.getSource(), prompt: c.model.executionCount,
            output: c.outputArea.node.innerText,
            errors: c.model.outputs.toJSON().filter(function (o) { return o.output_type === 'error'; })
                                      .map(function (o) { return o.ename; })};
});
"""

CLOSE_JS = PANEL_JS + """
var done = arguments[arguments.length - 1];
if (!ok) { done(); return; }
panel.context.model.dirty = false;
panel.sessionContext.shutdown().then(function () { return panel.close(); }).then(function () { done(); },
                                                                                   function () { done(); });
"""

# Every text in the xcuda HTML views whose contrast with what is behind it is under the limit.
# The background is every ancestor's background composited, down from the first opaque one.
LOW_CONTRAST_JS = """
var limit = arguments[0];
function parse(c) { var m = /rgba?\\(([^)]+)\\)/.exec(c); if (!m) return null;
  var p = m[1].split(',').map(parseFloat); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
function over(top, below) { var a = top[3];
  return [top[0] * a + below[0] * (1 - a), top[1] * a + below[1] * (1 - a), top[2] * a + below[2] * (1 - a), 1]; }
function background(el) { var layers = [];
  for (var e = el; e; e = e.parentElement) { var c = parse(getComputedStyle(e).backgroundColor);
    if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
  var colour = [255, 255, 255, 1];
  for (var i = layers.length - 1; i >= 0; i--) colour = over(layers[i], colour);
  return colour; }
function luminance(c) { function f(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); }
var views = document.querySelectorAll('.xcuda-code, .xcuda-sbs, .xcuda-cmp, .xcuda-diagnostics');
var bad = [], checked = 0;
views.forEach(function (view) {
  view.querySelectorAll('*').forEach(function (el) {
    var own = Array.prototype.some.call(el.childNodes, function (n) { return n.nodeType === 3 && n.textContent.trim(); });
    if (!own || el.tagName === 'STYLE' || el.tagName === 'SCRIPT') return;
    var bg = background(el), fg = over(parse(getComputedStyle(el).color), bg);
    var l1 = luminance(fg), l2 = luminance(bg);
    var ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    checked++;
    if (ratio < limit) bad.push([el.className, el.textContent.slice(0, 30), ratio.toFixed(2),
                                 getComputedStyle(el).color, bg.map(Math.round).join(',')]);
  });
});
return {views: views.length, checked: checked, bad: bad.slice(0, 20), count: bad.length};
"""


def open_notebook(driver, server, frontend, name):
    driver.get(server.page(frontend, name))
    wait_for(driver, KERNEL_READY_JS, KERNEL_READY_S, f"{name} to open in {frontend} with the xcuda kernel idle",
             name)


def run_all(driver, server, frontend, name, navigate=True):
    if navigate:
        open_notebook(driver, server, frontend, name)
    started = driver.execute_async_script(RUN_ALL_JS)
    assert started is True, started
    wait_for(driver, RUN_ALL_DONE_JS, RUN_ALL_S, f"Run All to finish in {name} ({frontend})")
    return driver.execute_script(CODE_CELLS_JS)


def close_notebook(driver):
    try:
        driver.execute_async_script(CLOSE_JS)
    except Exception as error:  # a page that never loaded: nothing to close, the next test opens its own
        print(f"closing the notebook: {error}")


def save_screenshot(driver, label):
    """The whole notebook as a PNG: the window is made as tall as the notebook's scrolled content."""
    size = driver.get_window_size()
    try:
        for _ in range(6):
            needed = driver.execute_script("""
                var s = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer')
                        || document.querySelector('.jp-WindowedPanel-outer');
                return s ? s.scrollHeight - s.clientHeight : 0;""")
            height = driver.get_window_size()["height"]
            if needed <= 2 or height >= MAX_SCREENSHOT_HEIGHT:
                break
            driver.set_window_size(size["width"], min(height + needed + 20, MAX_SCREENSHOT_HEIGHT))
            driver.execute_script("return new Promise(function (r) { setTimeout(r, 300); });")
        png = driver.get_screenshot_as_png()
    finally:
        driver.set_window_size(size["width"], size["height"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{label}.png"
    path.write_bytes(png)
    print(f"screenshot: {path}")
    return path


def cell_starting(cells, prefix):
    return next(c for c in cells if c["source"].startswith(prefix))


def check_saxpy(cells):
    kernel_cell = next(c for c in cells if c["source"].strip() == "saxpy")
    assert "<xcuda.Kernel saxpy(float a, const float* x, const float* y, float* out, size_t n)" \
        in kernel_cell["output"]
    assert "n = 16,777,216 elements" in cell_starting(cells, "NUM_THREADS")["output"]
    launch = cells.index(cell_starting(cells, "saxpy[NUM_BLOCKS"))
    if HAS_GPU:
        assert all(isinstance(c["prompt"], int) and not c["errors"] for c in cells), cells
        assert "SAXPY is correct" in cell_starting(cells, "assert np.allclose")["output"]
    else:
        assert cells[launch]["errors"] == ["CudaUnavailableError"], cells[launch]
        assert "CudaUnavailableError" in cells[launch]["output"]
        assert all(isinstance(c["prompt"], int) for c in cells[: launch + 1]), \
            [(c["prompt"], c["source"].splitlines()[0] if c["source"] else "") for c in cells[: launch + 1]]
        assert all(c["prompt"] is None and not c["output"].strip() for c in cells[launch + 1:]), [(c["prompt"], c["output"][:80]) for c in cells[launch + 1:]]


def check_ptx_inspection(driver, cells):
    from selenium.webdriver.common.by import By

    not_run = [(c["source"].splitlines()[0], c["prompt"]) for c in cells if not isinstance(c["prompt"], int)]
    failed = [(c["source"].splitlines()[0], c["errors"]) for c in cells if c["errors"]]
    assert not not_run and not failed, (not_run, failed)
    ptx = driver.find_element(By.CSS_SELECTOR, ".jp-OutputArea .xcuda-ptx")
    assert ".visible .entry saxpy" in ptx.text and ptx.find_elements(By.CSS_SELECTOR, "span[class]")
    # The side-by-side view's script runs in the output (JupyterLab trusts outputs it made itself):
    # clicking a source line pins it and its PTX instructions.
    view = driver.find_element(By.CSS_SELECTOR, ".jp-OutputArea .xcuda-sbs")
    line = next(el for el in view.find_elements(By.CSS_SELECTOR, ".xc-src .xl[data-line]")
                if "out[i] = a * x[i] + y[i];" in el.text)
    number = line.get_attribute("data-line")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", line)
    line.click()
    wait_for(driver, f"return document.getElementById('{view.get_attribute('id')}')"
                     f".querySelectorAll(\".xl.xc-pin[data-line='{number}']\").length >= 2;",
             RENDER_S, "clicking a source line to pin it and its instructions")
    instructions = view.find_elements(By.CSS_SELECTOR, f".xc-col:not(.xc-src) .xl[data-line='{number}']")
    assert "fma.rn.f32" in "\n".join(el.get_attribute("textContent") for el in instructions)
    tables = driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea .xcuda-cmp table")
    assert len(tables) == 2 and tables[0].find_elements(By.CSS_SELECTOR, "tr.changed, tr.added, tr.removed")
    assert "registers" in cell_starting(cells, "lesson.saxpy.resources")["output"]


def check_cuda_python_way(cells):
    # Both halves are shown: the cuda.bindings steps and the four xcuda cells, and the comparison.
    kernel_cell = next(c for c in cells if c["source"].startswith("%%cuda"))
    assert kernel_cell["prompt"] is not None and not kernel_cell["errors"]
    errors = [(c["source"].splitlines()[0], c["errors"]) for c in cells if c["errors"]]
    if HAS_GPU:
        assert not errors, errors
        assert "times measured in this run" in cells[-1]["output"]
    else:
        assert not errors, errors  # the notebook says why it does not launch instead of failing
        assert "not measured" in cells[-1]["output"]


def check_readable(driver, theme):
    result = driver.execute_script(LOW_CONTRAST_JS, 4.5)
    assert result["views"] > 0 and result["checked"] > 50, result
    assert result["count"] == 0, f"{result['count']} texts in the xcuda views under 4.5:1 in {theme}: {result['bad']}"


CHECKS = {"01-saxpy.ipynb": lambda driver, cells: check_saxpy(cells),
          "02-ptx-inspection.ipynb": check_ptx_inspection,
          "03-cuda-python-way.ipynb": lambda driver, cells: check_cuda_python_way(cells)}


def test_every_notebook_has_a_check():
    every = {p.name for p in (REPO / "notebooks").glob("*.ipynb")}
    assert every == set(CHECKS) | set(NOT_IN_THE_BROWSER), "a notebook without browser checks, or checks for a missing one"
    assert not set(CHECKS) & set(NOT_IN_THE_BROWSER)


@pytest.mark.parametrize("frontend", ["lab", "nb7"])
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_top_to_bottom_in_the_browser(server, browser, frontend, name):
    try:
        cells = run_all(browser, server, frontend, name)
        assert browser.execute_script("return document.body.dataset.jpThemeLight") == "true"
        CHECKS[name](browser, cells)
        if name == "02-ptx-inspection.ipynb":
            check_readable(browser, f"{frontend}'s light theme")
    finally:
        save_screenshot(browser, f"{frontend}-{name.rsplit('.', 1)[0]}")
        close_notebook(browser)


def test_the_views_are_readable_in_jupyterlabs_dark_theme(server, browser):
    name = "02-ptx-inspection.ipynb"
    open_notebook(browser, server, "lab", name)
    try:
        browser.execute_async_script("""var done = arguments[arguments.length - 1];
            window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})
                .then(function () { done(); }, function () { done(); });""")
        wait_for(browser, "return document.body.dataset.jpThemeLight === 'false';", RENDER_S, "the dark theme")
        cells = run_all(browser, server, "lab", name, navigate=False)
        check_ptx_inspection(browser, cells)
        check_readable(browser, "JupyterLab Dark")
    finally:
        save_screenshot(browser, f"lab-dark-{name.rsplit('.', 1)[0]}")
        close_notebook(browser)
        browser.execute_async_script("""var done = arguments[arguments.length - 1];
            window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})
                .then(function () { done(); }, function () { done(); });""")
