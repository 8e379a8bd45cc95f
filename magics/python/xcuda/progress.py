"""Progress shown in place while long work runs (xcuda.bench's sweeps, a long launch on the PTX simulator).

What a line says and when it changes is the core's (frontend/progress_meter); this module only draws it:
through IPython's display and update_display where the shell has a rich display publisher (a notebook
kernel), as a line rewritten with '\\r' on sys.stderr when that is a terminal, else nowhere.
"""
import sys


def _notebook_shell():
    """The running IPython shell when it publishes rich displays (a notebook kernel), else None."""
    if "IPython" not in sys.modules:
        return None  # never imported: no shell (and importing it here would take seconds)
    try:
        from IPython import get_ipython
        from IPython.core.displaypub import DisplayPublisher
    except ImportError:
        return None  # no IPython: no notebook, so a terminal at most
    shell = get_ipython()
    publisher = getattr(shell, "display_pub", None) if shell is not None else None
    if publisher is None or type(publisher) is DisplayPublisher:
        return None  # a terminal IPython's publisher prints instead of updating in place
    return shell


class Progress:
    """One progress display. show() puts the latest state in place of the last; end() finishes it."""

    def __init__(self, stream=None):
        self._handle = None
        self._stream = stream
        self._display = stream is None

    def show(self, text, html, line):
        """text and html: the state for a notebook; line: the same for a terminal (starts with '\\r')."""
        if self._display:
            from IPython.display import DisplayHandle

            bundle = {"text/plain": text, "text/html": html}
            if self._handle is None:
                # The handle first, then the display: a Ctrl-C inside display() (after its message went out) must
                # not leave a display that clear() cannot find (display(..., display_id=True) returns it last).
                self._handle = DisplayHandle()
                self._handle.display(bundle, raw=True)
            else:
                self._handle.update(bundle, raw=True)
        else:
            self._stream.write(line)
            self._stream.flush()

    def end(self):
        """After the last show(): a terminal's line is ended."""
        if not self._display:
            self._stream.write("\n")
            self._stream.flush()

    def clear(self, line):
        """Removes what show() put in place (a launch's progress once it has ended); line blanks a terminal's."""
        if self._display:
            if self._handle is not None:
                self._handle.update({"text/plain": ""}, raw=True)
        else:
            self._stream.write(line)
            self._stream.flush()


def warn(text):
    """A warning said once beside the progress (a simulated launch that would take very long), on stderr."""
    stream = sys.stderr
    if stream is not None:
        stream.write("xcuda: " + text + "\n")
        stream.flush()


def open_progress(enabled=True):
    """A Progress where one can be seen (a notebook, or a terminal's stderr), else None."""
    if not enabled:
        return None
    if _notebook_shell() is not None:
        return Progress()
    stream = sys.stderr
    if stream is not None and hasattr(stream, "isatty") and stream.isatty():
        return Progress(stream)
    return None
