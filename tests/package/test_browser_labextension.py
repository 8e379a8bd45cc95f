"""The xcuda-jupyterlab extension (share/labextension) in JupyterLab 4 and Notebook 7, headless Chromium.

The server is test_browser_lab's (JupyterLab and Notebook 7 from the test venv, one server for both)
with the build tree's share/jupyter added to JUPYTER_PATH, where the build copies the extension: the
tests see this checkout's extension, as `jupyter labextension list` does. In one notebook on the xcuda
kernel they check, in each frontend:

- `%%cuda` and `%%cuda_header` cells get JupyterLab's C++ language and a Python cell stays Python:
  the colours the editor gives a comment, a type, a keyword and a number in the C++ cell are those of
  C++ tokens (the same as the Python cell's comment, keyword and number; `void` and `int` coloured as
  types, which Python would leave plain), and `//` in the Python cell is not a comment;
- the language follows the first line: removing `%%cuda` makes the cell Python, writing it back
  (typed into the editor) makes it C++ again;
- a compile error is marked on its line (gutter marker, tinted line, underline, the message in the
  title), the marks go when the cell is edited, and a clean run leaves none; a warning of a cell that
  compiles is marked as a warning;
- the marked line and the magic line stay readable in JupyterLab's light and dark themes: plain text
  keeps 4.5:1 on the tint, the tint costs no token more than 15% of its contrast, the marker keeps 3:1;
- with windowing on (JupyterLab's default "contentVisibility", and "full") a %%cuda cell far down is C++
  with its magic marked once scrolled to.
Also: pip's install puts the extension where JupyterLab finds it (where the venv has xcuda from pip),
JupyterLab's debugger switch starts the kernel's debugger, and xcuda's tables and compare view are
left-aligned in both frontends.
Screenshots: build/test-artifacts/labextension-*.png.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD
from test_browser import RENDER_S, wait_for
from test_browser_lab import (KERNEL_READY_JS, MISSING, PANEL_JS, LabServer, close_notebook, headless_chromium,
                              save_screenshot)
from test_venv import PYTHON as VENV_PYTHON
from test_venv import venv_env

pytestmark = [pytest.mark.browser, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]

EXTENSION = "xcuda-jupyterlab"
BUILD_SHARE = BUILD / "share" / "jupyter"
EXTENSION_READY_S = 60
RUN_S = 120

CUDA_CELL = '%%cuda\n// a comment\nextern "C" __global__ void f(int* x) { if (x) x[0] = 42; }'
PYTHON_CELL = "# a comment\ndef g(x):\n    return 42 // 7"
HEADER_CELL = "%%cuda_header vec.cuh\nstruct vec { float x; };"
ERROR_CELL = '%%cuda\nextern "C" __global__ void h(int* x)\n{\n  x[0] = nope;\n}'
ERROR_LINE = 4  # in the editor: the %%cuda line is line 1
FIXED_CELL = '%%cuda\nextern "C" __global__ void h(int* x)\n{\n  x[0] = 1;\n}'
WARNING_CELL = '%%cuda\nextern "C" __global__ void w(int* x)\n{\n  int unused = 3;\n  x[0] = 1;\n}'
WARNING_LINE = 4
CELLS = [CUDA_CELL, PYTHON_CELL, HEADER_CELL, ERROR_CELL, WARNING_CELL]


def _notebook(cells=None):
    """A notebook of `cells` (the sources; CELLS by default) on the xcuda kernel."""
    cells = CELLS if cells is None else cells
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "xcuda", "display_name": "Python 3 (xcuda)", "language": "python"},
                         "language_info": {"name": "python"}},
            "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
                       "source": source} for i, source in enumerate(cells)]}


def _jupyter_path():
    return os.pathsep.join([os.environ["JUPYTER_PATH"], str(BUILD_SHARE)])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    assert (BUILD_SHARE / "labextensions" / EXTENSION / "package.json").exists(), \
        "the build did not copy the extension into build/share/jupyter/labextensions"
    saved = os.environ["JUPYTER_PATH"]
    os.environ["JUPYTER_PATH"] = _jupyter_path()
    try:
        s = LabServer(tmp_path_factory.mktemp("labextension-server"))
    finally:
        os.environ["JUPYTER_PATH"] = saved
    (s.folder / "cuda-cells.ipynb").write_text(json.dumps(_notebook()))
    yield s
    s.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = headless_chromium(tmp_path_factory, "chromium-labextension-profile", 60)
    yield driver
    driver.quit()


# ---------------------------------------------------------------------------------------------
# The page: the cells through window.jupyterapp, the editor through its DOM (CodeMirror 6).

CELL_JS = PANEL_JS + """
if (!ok) return null;
var cell = panel.content.widgets[arguments[0]];
"""

MIME_TYPES_JS = PANEL_JS + """
if (!ok) return null;
return panel.content.widgets.map(function (c) { return c.model.mimeType; });
"""

# {token text: computed colour} for every highlighted token of cell arguments[0], plus the editor's
# plain text colour under ''. A token is the innermost element of a line whose text is exactly it.
COLOURS_JS = CELL_JS + """
var content = cell.node.querySelector('.cm-content');
var colours = {'': getComputedStyle(content).color};
cell.node.querySelectorAll('.cm-line span').forEach(function (span) {
  if (span.children.length) return;
  var text = span.textContent.trim();
  if (text && !(text in colours)) colours[text] = getComputedStyle(span).color;
});
return colours;
"""

SET_SOURCE_JS = CELL_JS + "cell.model.sharedModel.setSource(arguments[1]); return true;"

# The diagnostic marks of cell arguments[0]: [{line (1-based), severity, title}], the gutter markers,
# the underlined texts.
MARKS_JS = CELL_JS + """
var lines = Array.prototype.slice.call(cell.node.querySelectorAll('.cm-content > .cm-line'));
var marked = [];
lines.forEach(function (line, i) {
  if (line.classList.contains('xcuda-diagnostic-line'))
    marked.push({line: i + 1, severity: line.getAttribute('data-xcuda-severity'), title: line.title});
});
return {lines: marked,
        gutter: Array.prototype.map.call(cell.node.querySelectorAll('.xcuda-gutter-marker'),
                                         function (m) { return {text: m.textContent, title: m.title,
                                                                cls: m.className}; }),
        underlined: Array.prototype.map.call(cell.node.querySelectorAll('.xcuda-diagnostic-mark'),
                                             function (m) { return m.textContent; })};
"""

RUN_CELL_JS = PANEL_JS + """
var done = arguments[arguments.length - 1];
if (!ok) { done('no notebook'); return; }
panel.content.activeCellIndex = arguments[0];
app.commands.execute('notebook:run-cell').then(function () { done(true); }, function (e) { done('' + e); });
"""

CELL_DONE_JS = CELL_JS + """
var kernel = panel.sessionContext.session.kernel;
return cell.model.executionCount !== null && kernel.status === 'idle'
       && cell.node.querySelector('.jp-InputPrompt').textContent.indexOf('*') < 0;
"""

# The contrast of every text in the editor lines with class arguments[1] of cell arguments[0], against
# what is behind it (every ancestor's background composited), with that line's own background (the
# extension's tint) and without it: [[text, with, without]].
CONTRAST_JS = CELL_JS + """
var marked = arguments[1];
function parse(c) { var m = /rgba?\\(([^)]+)\\)/.exec(c); if (!m) return null;
  var p = m[1].split(',').map(parseFloat); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
function over(top, below) { var a = top[3];
  return [top[0] * a + below[0] * (1 - a), top[1] * a + below[1] * (1 - a), top[2] * a + below[2] * (1 - a), 1]; }
function background(el, tinted) { var layers = [];
  for (var e = el; e; e = e.parentElement) {
    if (!tinted && e.classList.contains(marked)) continue;
    var c = parse(getComputedStyle(e).backgroundColor);
    if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
  var colour = [255, 255, 255, 1];
  for (var i = layers.length - 1; i >= 0; i--) colour = over(layers[i], colour);
  return colour; }
function luminance(c) { function f(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); }
function ratio(a, b) { var l1 = luminance(a), l2 = luminance(b); return (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05); }
var out = [];
cell.node.querySelectorAll('.cm-line.' + marked + ', .cm-line.' + marked + ' *').forEach(function (el) {
  var own = Array.prototype.some.call(el.childNodes, function (n) { return n.nodeType === 3 && n.textContent.trim(); });
  if (!own) return;
  var colour = parse(getComputedStyle(el).color);
  var withTint = background(el, true), without = background(el, false);
  out.push([el.textContent.trim().slice(0, 30), ratio(over(colour, withTint), withTint), ratio(over(colour, without), without)]);
});
return out;
"""

# The gutter markers' contrast with the gutter behind them: [[class, ratio]].
MARKER_CONTRAST_JS = CONTRAST_JS.replace("var out = [];", """var out = [];
cell.node.querySelectorAll('.xcuda-gutter-marker').forEach(function (el) {
  var bg = background(el, true); out.push([el.className, ratio(over(parse(getComputedStyle(el).color), bg), bg)]); });
return out;""")


def assert_readable(driver, theme):
    """The marked line and the magic line: the editor's own plain text keeps 4.5:1 on the tint, and the
    tint costs no token more than 15% of the contrast it has without it (JupyterLab's own light colours
    for brackets are under 4.5:1 on a white editor already); the gutter marker keeps 3:1 (WCAG's figure
    for a graphical mark)."""
    for index, cls in ((3, "xcuda-diagnostic-line"), (0, "xcuda-magic-line")):
        contrast = driver.execute_script(CONTRAST_JS, index, cls)
        assert contrast, (theme, cls)
        bad = [c for c in contrast if c[1] < min(4.5, 0.85 * c[2])]
        assert not bad, (theme, cls, bad)
        plain = [c for c in contrast if c[0] == "nope" or c[0].startswith("x[0]")]
        assert cls != "xcuda-diagnostic-line" or (plain and all(c[1] >= 4.5 for c in plain)), (theme, contrast)
    markers = driver.execute_script(MARKER_CONTRAST_JS, 3, "xcuda-diagnostic-line")
    assert markers and all(r >= 3 for _, r in markers), (theme, markers)


def labextension_list():
    result = subprocess.run([str(VENV_PYTHON), "-m", "jupyter", "labextension", "list"], capture_output=True,
                            text=True, timeout=120, env=venv_env(JUPYTER_PATH=_jupyter_path()), cwd=str(BUILD))
    return result.stdout + result.stderr


def open_cells_notebook(driver, server, frontend):
    driver.get(server.page(frontend, "cuda-cells.ipynb"))
    wait_for(driver, KERNEL_READY_JS, 90, f"cuda-cells.ipynb to open in {frontend} with the xcuda kernel idle",
             "cuda-cells.ipynb")
    # The extension has set the %%cuda cells' language: without it this wait fails.
    wait_for(driver, MIME_TYPES_JS.replace("return panel", "var m = panel") +
             "; return m[0] === 'text/x-c++src' && m[2] === 'text/x-c++src';",
             EXTENSION_READY_S, "the %%cuda cells to be C++ (the extension active)")


def colours(driver, index):
    return driver.execute_script(COLOURS_JS, index)


def run_cell(driver, index):
    assert driver.execute_async_script(RUN_CELL_JS, index) is True
    wait_for(driver, CELL_DONE_JS, RUN_S, f"cell {index} to run", index)


def type_first_line(driver, index, text):
    """Puts the cursor at the start of cell `index`'s editor and types `text` and Enter, as a user would."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    cell = driver.execute_script(CELL_JS + "return cell.node;", index)
    content = cell.find_element(By.CSS_SELECTOR, ".cm-content")
    first = content.find_elements(By.CSS_SELECTOR, ".cm-line")[0]
    ActionChains(driver).click(first).send_keys(Keys.HOME).perform()
    driver.execute_script(CELL_JS + """
        var view = cell.editor.editor; view.focus(); view.dispatch({selection: {anchor: 0}});""", index)
    ActionChains(driver).send_keys(text, Keys.ENTER).perform()


def test_the_extension_is_listed_by_jupyter_labextension_list():
    out = labextension_list()
    line = next((l for l in out.splitlines() if EXTENSION in l), None)
    assert line is not None, out
    assert "enabled" in line and "OK" in line, line


@pytest.mark.parametrize("frontend", ["lab", "nb7"])
def test_cuda_cells_are_cpp_python_cells_python_and_compile_errors_are_marked(server, browser, frontend):
    open_cells_notebook(browser, server, frontend)
    try:
        mimes = browser.execute_script(MIME_TYPES_JS)
        assert mimes[0] == "text/x-c++src" and mimes[2] == "text/x-c++src", mimes
        assert mimes[3] == "text/x-c++src", mimes
        assert mimes[1] in ("text/x-ipython", "text/x-python"), mimes
        wait_for(browser, CELL_JS + "return !!cell.node.querySelector('.cm-line span');", RENDER_S,
                 "the editors to be highlighted", 0)
        cpp, python = colours(browser, 0), colours(browser, 1)
        plain = cpp[""]
        # The C++ tokens: a comment, the types void and int, the keyword if, the number 42.
        for token in ("// a comment", "void", "int", "if", "42"):
            assert token in cpp and cpp[token] != plain, (token, cpp)
        assert cpp["// a comment"] == python["# a comment"], (cpp, python)  # both comment-coloured
        assert cpp["void"] == cpp["int"], cpp  # one colour for C++'s primitive types
        assert cpp["if"] == python["def"] == python["return"], (cpp, python)  # keywords
        assert cpp["42"] == python["42"], (cpp, python)  # numbers
        # The Python cell is Python: `//` there is floor division, not a comment.
        assert python.get("//", plain) != python["# a comment"], python
        # The magic line is a magic, not C++ operators.
        assert browser.execute_script(CELL_JS + "return !!cell.node.querySelector('.cm-line.xcuda-magic-line .xcuda-magic');", 0)
        assert not browser.execute_script(CELL_JS + "return !!cell.node.querySelector('.xcuda-magic');", 1)

        # Without its first line the cell is Python again; typing %%cuda back makes it C++.
        browser.execute_script(SET_SOURCE_JS, 0, CUDA_CELL.split("\n", 1)[1])
        wait_for(browser, MIME_TYPES_JS.replace("return panel", "var m = panel") + "; return m[0] !== 'text/x-c++src';",
                 RENDER_S, "the cell without %%cuda to be Python again")
        assert browser.execute_script(MIME_TYPES_JS)[0] == mimes[1]
        wait_for(browser, CELL_JS + "var s = Array.prototype.filter.call(cell.node.querySelectorAll('.cm-line span'),"
                 " function (e) { return e.textContent.trim() === 'void'; }); return s.length === 0 || "
                 "getComputedStyle(s[0]).color !== arguments[1];", RENDER_S, "void to lose its C++ type colour", 0,
                 cpp["void"])
        type_first_line(browser, 0, "%%cuda")
        wait_for(browser, MIME_TYPES_JS.replace("return panel", "var m = panel") + "; return m[0] === 'text/x-c++src';",
                 RENDER_S, "the cell with %%cuda typed back to be C++")
        assert browser.execute_script(CELL_JS + "return cell.model.sharedModel.getSource();", 0) == CUDA_CELL
        wait_for(browser, COLOURS_JS.replace("return colours;", "return colours['void'] === arguments[1];"),
                 RENDER_S, "void to be coloured as a C++ type again", 0, cpp["void"])

        # A compile error: marked on its line, with the message.
        assert browser.execute_script(MARKS_JS, 3)["lines"] == []
        run_cell(browser, 3)
        wait_for(browser, MARKS_JS.replace("return {lines", "if (!marked.length) return false; return {lines"),
                 RENDER_S, "the compile error to be marked in the editor", 3)
        marks = browser.execute_script(MARKS_JS, 3)
        assert [m["line"] for m in marks["lines"]] == [ERROR_LINE], marks
        assert marks["lines"][0]["severity"] == "error" and "nope" in marks["lines"][0]["title"], marks
        assert len(marks["gutter"]) == 1 and "xcuda-error" in marks["gutter"][0]["cls"], marks
        assert "nope" in marks["gutter"][0]["title"], marks
        assert marks["underlined"] == ["nope"], marks
        assert_readable(browser, f"{frontend}'s light theme")
        save_screenshot(browser, f"labextension-{frontend}-error-marked")

        # Editing the cell takes the marks away; a clean run leaves none.
        browser.execute_script(SET_SOURCE_JS, 3, ERROR_CELL + "\n")
        wait_for(browser, MARKS_JS.replace("return {lines", "return marked.length === 0; return {lines"),
                 RENDER_S, "the marks to go when the cell is edited", 3)
        run_cell(browser, 3)
        wait_for(browser, MARKS_JS.replace("return {lines", "if (!marked.length) return false; return {lines"),
                 RENDER_S, "the compile error to be marked again", 3)
        browser.execute_script(SET_SOURCE_JS, 3, FIXED_CELL)
        run_cell(browser, 3)
        outputs = browser.execute_script(CELL_JS + "return cell.model.outputs.toJSON();", 3)
        assert not [o for o in outputs if o["output_type"] == "error"], outputs
        assert browser.execute_script(MARKS_JS, 3) == {"lines": [], "gutter": [], "underlined": []}

        # A warning: the cell succeeds, and the warning is marked as one on its line.
        run_cell(browser, 4)
        outputs = browser.execute_script(CELL_JS + "return cell.model.outputs.toJSON();", 4)
        assert not [o for o in outputs if o["output_type"] == "error"], outputs
        wait_for(browser, MARKS_JS.replace("return {lines", "if (!marked.length) return false; return {lines"),
                 RENDER_S, "the warning to be marked in the editor", 4)
        marks = browser.execute_script(MARKS_JS, 4)
        assert [(m["line"], m["severity"]) for m in marks["lines"]] == [(WARNING_LINE, "warning")], marks
        assert "declared but never referenced" in marks["lines"][0]["title"], marks
        assert "xcuda-warning" in marks["gutter"][0]["cls"] and marks["underlined"] == ["unused"], marks
    finally:
        save_screenshot(browser, f"labextension-{frontend}")
        close_notebook(browser)


def test_the_marks_are_readable_in_jupyterlabs_dark_theme(server, browser):
    def theme(name):
        browser.execute_async_script("""var done = arguments[arguments.length - 1];
            window.jupyterapp.commands.execute('apputils:change-theme', {theme: arguments[0]})
                .then(function () { done(); }, function () { done(); });""", name)

    source = (server.folder / "cuda-cells.ipynb")
    source.write_text(json.dumps(_notebook()))
    open_cells_notebook(browser, server, "lab")
    try:
        theme("JupyterLab Dark")
        wait_for(browser, "return document.body.dataset.jpThemeLight === 'false';", RENDER_S, "the dark theme")
        run_cell(browser, 3)
        wait_for(browser, MARKS_JS.replace("return {lines", "if (!marked.length) return false; return {lines"),
                 RENDER_S, "the compile error to be marked in the editor", 3)
        assert_readable(browser, "JupyterLab Dark")
        save_screenshot(browser, "labextension-lab-dark")
    finally:
        close_notebook(browser)
        theme("JupyterLab Light")


def test_pip_install_puts_the_extension_where_jupyterlab_finds_it():
    """The venv's xcuda, installed by pip (`bash .ci/test` does it), brought the extension with it."""
    probe = subprocess.run([str(VENV_PYTHON), "-c", "import sys, xcuda; print(sys.prefix)"], capture_output=True,
                           text=True, timeout=60, env=venv_env(), cwd=str(BUILD))
    if probe.returncode != 0:
        pytest.skip(f"xcuda is not pip-installed in the venv {VENV_PYTHON.parent.parent} (bash .ci/test does it)")
    installed = Path(probe.stdout.strip()) / "share" / "jupyter" / "labextensions" / EXTENSION
    source = Path(__file__).resolve().parent.parent.parent / "share" / "labextension"
    for name in ("package.json", "install.json", "static/remoteEntry.js", "static/style.css"):
        assert (installed / name).read_bytes() == (source / name).read_bytes(), f"{installed / name} is not the source's"
    out = subprocess.run([str(VENV_PYTHON), "-m", "jupyter", "labextension", "list"], capture_output=True, text=True,
                         timeout=120, env=venv_env(), cwd=str(BUILD))
    line = next((l for l in (out.stdout + out.stderr).splitlines() if EXTENSION in l), "")
    assert "enabled" in line and "OK" in line and "(python, xcuda)" in line, out.stdout + out.stderr


TABLE_CELLS = ['%%cuda\nextern "C" __global__ void halve(float* x, int n)\n'
               '{ int i = threadIdx.x; if (i < n) x[i] = x[i] / 2.0f; }',
               "%cuda_status",
               "import xcuda\nxcuda.compare(halve, halve.variant(fast_math=True))"]

# For each xcuda table in the outputs: how far its left edge is from its output's, and the text-align of
# its first body cell and first header cell.
TABLES_JS = PANEL_JS + """
if (!ok) return null;
var out = [];
panel.content.node.querySelectorAll('.jp-OutputArea-output table').forEach(function (table) {
  var output = table.closest('.jp-OutputArea-output');
  var td = table.querySelector('tbody td'), th = table.querySelector('th');
  out.push({cls: table.className || table.parentElement.className,
            offset: table.getBoundingClientRect().left - output.getBoundingClientRect().left,
            width: output.getBoundingClientRect().width - table.getBoundingClientRect().width,
            td: td ? getComputedStyle(td).textAlign : null, text: td ? td.textContent : null});
});
return out;
"""


@pytest.mark.parametrize("frontend", ["lab", "nb7"])
def test_the_tables_and_the_compare_view_are_left_aligned(server, browser, frontend):
    notebook = _notebook()
    notebook["cells"] = [dict(notebook["cells"][0], id=f"t{i}", source=source) for i, source in enumerate(TABLE_CELLS)]
    (server.folder / "tables.ipynb").write_text(json.dumps(notebook))
    browser.get(server.page(frontend, "tables.ipynb"))
    wait_for(browser, KERNEL_READY_JS, 90, f"tables.ipynb to open in {frontend}", "tables.ipynb")
    try:
        for index in range(len(TABLE_CELLS)):
            run_cell(browser, index)
        tables = browser.execute_script(TABLES_JS)
        # %cuda_status: its tables (modules, compile cache ...); the compare view: one table.
        assert any(t["cls"] == "xcuda-table" for t in tables) and any("xcuda-cmp" in t["cls"] for t in tables), tables
        for table in tables:
            # At the output's left edge (JupyterLab would centre it: the offset half the spare width).
            assert table["offset"] < 12 and (table["width"] < 24 or table["offset"] < table["width"] / 4), tables
            if table["text"] is not None and not table["text"].strip().replace(",", "").isdigit():
                assert table["td"] in ("left", "start"), tables
        save_screenshot(browser, f"tables-{frontend}")
    finally:
        close_notebook(browser)


def test_jupyterlab_offers_its_debugger_for_the_xcuda_kernel_and_starts_it(server, browser):
    """The kernel says debugger: true, so JupyterLab's notebook toolbar has the debugger switch; turned
    on, JupyterLab's own debugger session starts in the kernel (initialize, attach: tests/kernel/test_debugger.py
    drives the rest of the protocol)."""
    (server.folder / "cuda-cells.ipynb").write_text(json.dumps(_notebook()))
    open_cells_notebook(browser, server, "lab")
    try:
        wait_for(browser, PANEL_JS + """if (!ok) return false;
            var kernel = panel.sessionContext.session.kernel;
            return !!(kernel.info && kernel.info.then);""", RENDER_S, "the kernel's info")
        info = browser.execute_async_script(PANEL_JS + """var done = arguments[arguments.length - 1];
            panel.sessionContext.session.kernel.info.then(function (i) { done(i.debugger); });""")
        assert info is True
        switch = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-DebuggerBugButton"
        wait_for(browser, f"var b = document.querySelector('{switch}'); return !!b && !b.disabled;", RENDER_S,
                 "the debugger switch to be offered")
        browser.execute_script(f"document.querySelector('{switch}').click();")
        wait_for(browser, f"return document.querySelector('{switch}').getAttribute('aria-pressed') === 'true';",
                 RENDER_S, "the debugger to start")
        save_screenshot(browser, "labextension-lab-debugger")
    finally:
        close_notebook(browser)


@pytest.mark.parametrize("mode", ["contentVisibility", "full"])
@pytest.mark.parametrize("frontend", ["lab", "nb7"])
def test_with_windowing_a_cuda_cell_far_down_is_cpp_with_its_magic_marked(server, browser, frontend, mode):
    """The other tests turn windowing off (every cell in the DOM); by default JupyterLab 4 and Notebook 7
    render cells lazily ("contentVisibility"), or only those in view ("full"). A %%cuda cell below 40
    Python cells still gets C++ and its magic mark once scrolled to."""
    tracker = (server.folder.parent / "config" / "lab" / "user-settings" / "@jupyterlab" / "notebook-extension"
               / "tracker.jupyterlab-settings")
    saved = tracker.read_text()
    tracker.write_text(json.dumps({"windowingMode": mode}))
    notebook = _notebook()
    cells = [f"value_{i} = {i}" for i in range(40)] + [CUDA_CELL]
    notebook["cells"] = [dict(notebook["cells"][0], id=f"w{i}", source=source) for i, source in enumerate(cells)]
    (server.folder / "long.ipynb").write_text(json.dumps(notebook))
    try:
        browser.get(server.page(frontend, "long.ipynb"))
        wait_for(browser, KERNEL_READY_JS, 90, f"long.ipynb to open in {frontend}", "long.ipynb")
        shown_mode = browser.execute_script(PANEL_JS + "return panel.content.notebookConfig.windowingMode;")
        assert shown_mode == mode, shown_mode
        last = len(cells) - 1
        browser.execute_script(PANEL_JS + "panel.content.activeCellIndex = arguments[0];"
                               "panel.content.scrollToItem(arguments[0]);", last)
        wait_for(browser, CELL_JS + "return cell.model.mimeType === 'text/x-c++src';", EXTENSION_READY_S,
                 "the last cell to be C++", last)
        wait_for(browser, CELL_JS + "return !!cell.node.querySelector('.cm-line.xcuda-magic-line .xcuda-magic');",
                 RENDER_S, "the last cell's %%cuda line to be marked as a magic", last)
        wait_for(browser, COLOURS_JS.replace("return colours;",
                                             "return colours['// a comment'] && colours['// a comment'] !== colours[''];"),
                 RENDER_S, "the last cell's comment to be highlighted as C++", last)
        assert browser.execute_script(CELL_JS + "return cell.model.mimeType;", 0) != "text/x-c++src"
    finally:
        tracker.write_text(saved)
        close_notebook(browser)
