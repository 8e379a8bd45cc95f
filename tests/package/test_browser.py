"""The tutorial notebooks run in a real browser: classic Jupyter Notebook in headless Chromium.

Both notebooks in notebooks/ open with the xcuda kernel and run with Run All; the tests read what
the page shows: the cells' outputs as rendered, the PTX and side-by-side views with their script
working, and `%%cuda` cells highlighted as CUDA C++ by the kernelspec's kernel.js. A full-page
screenshot of each notebook is kept under build/test-artifacts/ ($XCUDA_TEST_ARTIFACTS when set).

Needs Debian's chromium, chromium-driver, python3-selenium and jupyter-notebook (the classic
Notebook 6, the frontend that loads kernel.js); `bash .ci/setup` installs them. Without them the
tests skip and say which is missing. The server and the browser run on this machine only: the
server listens on 127.0.0.1 with a token, the browser starts with its network features off.
"""
import importlib.util
import os
import re
import secrets
import shutil
import urllib.request
from pathlib import Path

import pytest

from conftest import BUILD, GPU_REASON, HAS_GPU, REPO, LocalJupyterServer

NOTEBOOKS = REPO / "notebooks"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
ARTIFACTS = Path(os.environ.get("XCUDA_TEST_ARTIFACTS") or BUILD / "test-artifacts")

# Generous limits for a loaded CI machine; every wait polls a condition and ends as soon as it holds.
SERVER_START_S = 60
KERNEL_READY_S = 60
RUN_ALL_S = 240
RENDER_S = 30
MAX_SCREENSHOT_HEIGHT = 16000  # pixels; Chromium's limit for one capture is about this


def _missing():
    """Why the browser tests cannot run here, or None."""
    if CHROMIUM is None:
        return "Chromium is not installed (Debian: chromium; bash .ci/setup installs it)"
    if CHROMEDRIVER is None:
        return "chromedriver is not installed (Debian: chromium-driver; bash .ci/setup installs it)"
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not importable (Debian: python3-selenium; bash .ci/setup installs it)"
    try:
        import notebook
    except ImportError:
        return "Jupyter Notebook is not installed (Debian: jupyter-notebook; bash .ci/setup installs it)"
    if not notebook.__version__.startswith("6."):
        return (f"needs the classic Notebook 6, the frontend that loads kernel.js (Debian 12's jupyter-notebook); "
                f"found notebook {notebook.__version__}")
    return None


MISSING = _missing()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]


def _served_kernelspec():
    """The kernelspec folder the server will use (conftest.py's relocated copy of the build tree's, kernel.js included)."""
    from jupyter_client.kernelspec import KernelSpecManager

    return Path(KernelSpecManager().get_kernel_spec("xcuda").resource_dir)


class NotebookServer(LocalJupyterServer):
    """A Notebook 6 server on 127.0.0.1, with its own runtime, config and data folders.

    It serves copies of the tutorial notebooks, so that nothing it saves reaches the checkout.
    """

    what = "jupyter notebook"

    def __init__(self, root):
        self.root = root
        self.folder = root / "notebooks"
        self.folder.mkdir()
        for path in NOTEBOOKS.glob("*.ipynb"):
            shutil.copyfile(path, self.folder / path.name)
        self.token = secrets.token_hex(16)
        self.start(root, "notebook",
                   [f"--NotebookApp.token={self.token}", f"--notebook-dir={self.folder}"],
                   os.environ, "nbserver", SERVER_START_S)

    def _get(self, path, method="GET"):
        request = urllib.request.Request(f"{self.url}/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        return urllib.request.urlopen(request, timeout=10)

    def _answers(self):
        return self._get("api/status").status == 200

    def _ask_to_shut_down(self):
        self._get("api/shutdown", method="POST")

    def notebook_url(self, name):
        return f"{self.url}/notebooks/{name}?token={self.token}"


@pytest.fixture(scope="module")
def kernelspec():
    return _served_kernelspec()


@pytest.fixture(scope="module")
def server(kernelspec, tmp_path_factory):
    s = NotebookServer(tmp_path_factory.mktemp("notebook-server"))
    yield s
    s.close()


def headless_chromium(tmp_path_factory, profile, script_timeout):
    """Debian's chromium under selenium, headless, with its own profile folder; the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # Headless, and without the features that reach out to the network (a closed network refuses
    # them, which slows start-up or fails it).
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp(profile)}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_script_timeout(script_timeout)
    return driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = headless_chromium(tmp_path_factory, "chromium-profile", 30)
    yield driver
    driver.quit()


# ---------------------------------------------------------------------------------------------
# The page, read through Notebook 6's JavaScript objects (Jupyter.notebook) and its DOM.

KERNEL_READY_JS = """
var nb = window.Jupyter && Jupyter.notebook;
return !!(nb && nb._fully_loaded && nb.kernel && nb.kernel.is_connected() && nb.kernel.info_reply
          && nb.kernel.name === 'xcuda' && !nb.kernel_busy);
"""

RUN_ALL_DONE_JS = """
var nb = Jupyter.notebook;
return !nb.kernel_busy && nb.get_cells().every(function (c) {
    return c.cell_type !== 'code' || c.input_prompt_number !== '*';
});
"""

# Each code cell as the page shows it: source, prompt number, the rendered output's text, the
# CodeMirror mode and the classes CodeMirror gave each token of the input.
CODE_CELLS_JS = """
return Jupyter.notebook.get_cells().filter(function (c) { return c.cell_type === 'code'; }).map(function (c) {
    var mode = c.code_mirror.getOption('mode');
    var tokens = Array.prototype.map.call(c.element[0].querySelectorAll('.CodeMirror-code span[class^="cm-"]'),
        function (s) { return [s.className, s.textContent]; });
    return {source: c.get_text(), prompt: c.input_prompt_number === undefined ? null : c.input_prompt_number,
            output: c.element[0].querySelector('.output_wrapper').innerText,
            mode: typeof mode === 'string' ? mode : (mode && mode.name) || null, tokens: tokens};
});
"""


def wait_for(driver, script, timeout, what, *arguments):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: d.execute_script(script, *arguments))
    except TimeoutException:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{console_log(driver)}") from None


def console_log(driver):
    try:
        entries = driver.get_log("browser")
    except Exception:  # a driver without log support: the message only loses the console part
        return ""
    return "browser console:\n" + "\n".join(f"  {e['level']}: {e['message'][:300]}" for e in entries[-40:])


def run_all(driver, server, name):
    """Opens the notebook, waits for its xcuda kernel, runs all cells and waits until they finished."""
    driver.get(server.notebook_url(name))
    wait_for(driver, KERNEL_READY_JS, KERNEL_READY_S, f"{name} to load with the xcuda kernel idle")
    driver.execute_script("Jupyter.notebook.execute_all_cells();")
    wait_for(driver, RUN_ALL_DONE_JS, RUN_ALL_S, f"Run All to finish in {name}")
    return driver.execute_script(CODE_CELLS_JS)


def close_notebook(driver):
    """Stops the notebook's kernel and leaves the page without the unsaved-changes prompt."""
    driver.execute_async_script("""
        var done = arguments[arguments.length - 1];
        var nb = window.Jupyter && Jupyter.notebook;
        if (!nb || !nb.session) { done(); return; }
        nb.set_dirty(false);
        nb.session.delete(function () { done(); }, function () { done(); });""")


def cell_starting(cells, prefix):
    return next(c for c in cells if c["source"].startswith(prefix))


def tokens_of(cell, kind):
    """The texts CodeMirror styled as `cm-<kind>` in a cell's input (clike keeps `*` with a type)."""
    return {text.rstrip("*& ") for classes, text in cell["tokens"] if f"cm-{kind}" in classes.split()}


def save_screenshot(driver, name):
    """Saves the whole notebook, not only the window, as a PNG and returns its path.

    Notebook 6 scrolls inside #site, so the page is only as tall as the window: the window is made
    as tall as the notebook for the capture, then given back its size. Outputs sized in vh (the
    side-by-side views) grow with the window, so it takes a few rounds to fit.
    """
    size = driver.get_window_size()
    try:
        for _ in range(6):
            needed = driver.execute_script("""
                document.getElementById('site').scrollTop = 0;
                var bottom = document.getElementById('notebook-container').getBoundingClientRect().bottom;
                return Math.ceil(bottom) + 30 - window.innerHeight;""")
            if needed <= 0 or driver.get_window_size()["height"] >= MAX_SCREENSHOT_HEIGHT:
                break
            height = min(driver.get_window_size()["height"] + needed, MAX_SCREENSHOT_HEIGHT)
            driver.set_window_size(size["width"], height)
            # The notebook sizes #site on the window's resize event: let it follow before measuring again.
            wait_for(driver, "return document.getElementById('site').getBoundingClientRect().bottom"
                             " >= window.innerHeight - 2;", RENDER_S, "the notebook to take the window's height")
        driver.execute_script("document.getElementById('site').scrollTop = 0;")
        png = driver.get_screenshot_as_png()
    finally:
        driver.set_window_size(size["width"], size["height"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"browser-{Path(name).stem}.png"
    path.write_bytes(png)
    print(f"screenshot: {path}")
    return path


def wait_for_cuda_highlighting(driver, kernelspec, name):
    """Waits until every `%%cuda` cell is drawn in kernel.js's C++ mode (it loads asynchronously)."""
    assert (kernelspec / "kernel.js").exists(), (
        f"the kernelspec {kernelspec} has no kernel.js: the build copies share/jupyter/kernels/xcuda/kernel.js "
        "into build/share/jupyter/kernels/xcuda")
    wait_for(driver, """
        var cells = Jupyter.notebook.get_cells().filter(function (c) {
            return c.cell_type === 'code' && /^%%cuda/.test(c.get_text()); });
        return cells.length > 0 && cells.every(function (c) {
            return c.code_mirror.getOption('mode') === 'magic_text/x-c++src'
                && c.element[0].querySelector('.CodeMirror-code .cm-type') !== null; });
    """, RENDER_S, f"%%cuda cells in {name} to be highlighted as C++ (kernel.js)")


def assert_cuda_cells_highlighted_as_cpp(driver, kernelspec, name):
    wait_for_cuda_highlighting(driver, kernelspec, name)
    cells = driver.execute_script(CODE_CELLS_JS)
    cuda = [c for c in cells if c["source"].startswith("%%cuda")]
    assert cuda
    for cell in cuda:
        first_line, body = cell["source"].split("\n", 1)
        assert cell["mode"] == "magic_text/x-c++src", cell["source"]
        assert first_line in "".join(tokens_of(cell, "magic")), cell["tokens"]
        # C++ keywords and types as C++ draws them: in Python `void` is a plain name, `float` a builtin.
        if 'extern "C"' in body:
            assert "extern" in tokens_of(cell, "keyword"), cell["tokens"]
        if "template" in body:
            assert {"template", "typename"} <= tokens_of(cell, "keyword"), cell["tokens"]
        for word in ("void", "float", "int"):
            if re.search(rf"\b{word}\b", body):
                assert word in tokens_of(cell, "type"), (word, cell["tokens"])
    # Python cells keep the kernel's Python highlighting.
    python = next(c for c in cells if c["source"].startswith("import"))
    assert python["mode"] != "magic_text/x-c++src"
    assert "import" in tokens_of(python, "keyword")


def test_saxpy_notebook_renders_in_the_browser(server, browser, kernelspec):
    from selenium.webdriver.common.by import By

    name = "01-saxpy.ipynb"
    try:
        cells = run_all(browser, server, name)

        kernel_cell = next(c for c in cells if c["source"].strip() == "saxpy")
        assert "<xcuda.Kernel saxpy(float a, const float* x, const float* y, float* out, size_t n)" \
            in kernel_cell["output"]
        launch = cells.index(cell_starting(cells, "saxpy[NUM_BLOCKS"))
        if HAS_GPU:
            assert all(isinstance(c["prompt"], int) for c in cells)
            assert "SAXPY is correct" in cell_starting(cells, "assert np.allclose")["output"]
            assert not browser.find_elements(By.CSS_SELECTOR, ".output_error")
        else:
            # The launch cell shows the traceback; Run All stops there, so no later cell ran.
            assert "CudaUnavailableError" in cells[launch]["output"]
            if "no NVIDIA driver" in GPU_REASON:
                assert "no NVIDIA driver" in cells[launch]["output"]
            assert all(isinstance(c["prompt"], int) for c in cells[: launch + 1])
            assert all(c["prompt"] is None and not c["output"].strip() for c in cells[launch + 1:])
            errors = browser.find_elements(By.CSS_SELECTOR, ".output_error")
            assert len(errors) == 1 and "CudaUnavailableError" in errors[0].text
        assert "n = 16,777,216 elements" in cell_starting(cells, "NUM_THREADS")["output"]
        assert_cuda_cells_highlighted_as_cpp(browser, kernelspec, name)
    finally:
        save_screenshot(browser, name)
        close_notebook(browser)


def test_ptx_inspection_notebook_renders_in_the_browser(server, browser, kernelspec):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    name = "02-ptx-inspection.ipynb"
    try:
        cells = run_all(browser, server, name)

        not_run = [(c["source"].splitlines()[0], c["prompt"]) for c in cells if not isinstance(c["prompt"], int)]
        failed = [c["output"] for c in cells if "Traceback" in c["output"]]
        assert not not_run and not failed, (not_run, failed)
        assert not browser.find_elements(By.CSS_SELECTOR, ".output_error")

        # kernel.ptx: highlighted PTX, its tokens in spans.
        ptx = browser.find_element(By.CSS_SELECTOR, ".output_area .xcuda-ptx")
        assert ".visible .entry saxpy" in ptx.text
        assert ptx.find_elements(By.CSS_SELECTOR, "span[class]")

        # kernel.lines(): source beside PTX; hovering a source line outlines it and its instructions,
        # through the script the output carries; clicking pins the highlight.
        view = browser.find_element(By.CSS_SELECTOR, ".output_area .xcuda-sbs")
        line = next(el for el in view.find_elements(By.CSS_SELECTOR, ".xc-src .xl[data-line]")
                    if "out[i] = a * x[i] + y[i];" in el.text)
        number = line.get_attribute("data-line")
        assert "xc-" in line.get_attribute("class")  # the line has a colour: it produced instructions
        ActionChains(browser).move_to_element(line).perform()
        marked = f".xl.xc-hover[data-line='{number}']"
        root = f"document.getElementById('{view.get_attribute('id')}')"
        wait_for(browser, f"return {root}.querySelectorAll(\".xc-src {marked}\").length === 1 && "
                          f"{root}.querySelectorAll(\".xc-col:not(.xc-src) {marked}\").length > 0;",
                 RENDER_S, "hovering a source line to highlight it and its PTX instructions")
        instructions = view.find_elements(By.CSS_SELECTOR, f".xc-col:not(.xc-src) .xl[data-line='{number}']")
        assert "fma.rn.f32" in "\n".join(el.text for el in instructions)
        ActionChains(browser).move_to_element(view.find_element(By.CSS_SELECTOR, ".xc-title")).perform()
        wait_for(browser, f"return {root}.querySelectorAll('.xc-hover').length === 0;", RENDER_S,
                 "leaving the line to remove the highlight")
        line.click()
        assert len(view.find_elements(By.CSS_SELECTOR, f".xl.xc-pin[data-line='{number}']")) >= 2

        # xcuda.compare: two compiles side by side, differences marked.
        tables = browser.find_elements(By.CSS_SELECTOR, ".output_area .xcuda-cmp table")
        assert len(tables) == 2
        fast_math = tables[0]
        assert fast_math.find_elements(By.CSS_SELECTOR, "tr.changed, tr.added, tr.removed")
        assert "normalize" in fast_math.text

        assert "registers" in cell_starting(cells, "lesson.saxpy.resources")["output"]
        assert_cuda_cells_highlighted_as_cpp(browser, kernelspec, name)
    finally:
        save_screenshot(browser, name)
        close_notebook(browser)
