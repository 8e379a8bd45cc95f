"""The short traceback every xcuda exception shows in IPython (xcuda kernel, ipykernel, a terminal).

IPython asks an exception for `_render_traceback_()` before formatting its frames (InteractiveShell.
showtraceback); the lines it returns are the whole traceback, both in what the notebook shows and in the
error reply's `traceback`. py_errors.cpp sets `_render_traceback_` on each xcuda exception class to
`render`, so an error from a launch or a magic fits on a screen:

    CudaUnavailableError: no CUDA driver: ... (the message, every line of it)
      Cell In[4], line 1: saxpy[32768, 512](a, x, y, out, n)

The message comes first, then the line of each notebook cell the error passed through (outermost first,
a function defined in one cell and called from another shows both), and nothing of IPython's or xcuda's
own machinery. A cell is a file IPython's compiler made for a cell (`shell.compile._filename_map`, the
same in IPython 8 and 9, ipykernel and xeus-python): that is the only place a notebook user can act on.
A `%%cuda` cell's own error shows its `%%cuda` line, except a CompileError that `%%cuda` displayed:
its one line is its summary (the messages with their lines and carets are just above it).
Without a running IPython shell (no cell files to name) the frames are left out too.
"""
import linecache


def _cell_numbers():
    """{filename: execution count} of the cells the running IPython shell compiled, or {}."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    compiler = getattr(shell, "compile", None) if shell is not None else None
    return dict(getattr(compiler, "_filename_map", None) or {})


def _raw_line(number, lineno):
    """Line `lineno` of cell `number` as the user wrote it (before IPython turned magics into calls), or ''."""
    try:
        from IPython import get_ipython

        raw = get_ipython().history_manager.input_hist_raw[number]
        return raw.splitlines()[lineno - 1].strip()
    except Exception:  # no shell, no history of that cell, a line past its end: no text, the number stays
        return ""


def cell_lines(error):
    """One line per cell frame of `error`'s traceback, outermost first: 'Cell In[N], line L: code'.

    A magic is a call of IPython's in the compiled cell (get_ipython().run_cell_magic('cuda', ...)); the
    line shown is the one the user wrote (%%cuda ..., %cuda_timeit ...), from the shell's raw history.
    """
    cells = _cell_numbers()
    lines = []
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in cells:
            number = cells[code.co_filename]
            where = f"Cell In[{number}]" if isinstance(number, int) and number > 0 else "Cell"
            text = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            if text.startswith("get_ipython()."):
                text = _raw_line(number, tb.tb_lineno)
            line = f"  {where}, line {tb.tb_lineno}"
            lines.append(f"{line}: {text}" if text else line)
        tb = tb.tb_next
    return lines


DIAGNOSTICS_MIMETYPE = "application/vnd.xcuda.diagnostics+json"


def publish_marks(error):
    """The cell lines an error is about (a simulated fault's instruction: `_editor_marks`, made by the core)
    as the display data the JupyterLab extension marks in the editor: the compile messages' JSON, each
    message with the In[N] (`cell`) of the %%cuda cell it is in. Once per exception, in a notebook only (a
    terminal has no editor to mark)."""
    marks = getattr(error, "_editor_marks", None)
    if not marks or getattr(error, "_marks_published", False):
        return
    try:
        error._marks_published = True
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
        if shell is None or type(shell).__name__ == "TerminalInteractiveShell":
            return
        diagnostics = [{"file": "", "line": m["line"], "column": 0, "severity": m["severity"],
                        "message": m["message"], "hint": "", "cell": m["cell"]} for m in marks]
        display({"text/plain": "", DIAGNOSTICS_MIMETYPE: {"version": 1, "diagnostics": diagnostics}}, raw=True)
    except Exception:  # the marks are a help; the traceback must still show
        pass


def render(error):
    """The traceback lines IPython shows for an xcuda exception (the _render_traceback_ protocol)."""
    publish_marks(error)
    name = type(error).__name__
    message = str(error)
    # A message of several lines stays several lines: the frontends join the list with newlines.
    lines = (f"{name}: {message}" if message else name).split("\n")
    if getattr(error, "_shown", False):
        return lines  # %%cuda displayed the messages, each with its line, just above: the summary is enough
    return lines + cell_lines(error)
