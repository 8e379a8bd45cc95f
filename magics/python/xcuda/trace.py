"""xcuda.trace: watch one thread of a launch on the PTX simulator, instruction by instruction.

    t = xcuda.trace(saxpy, (4, 256), a, x, y, out, n, thread=(5, 0, 0), block=(1, 0, 0))
    t            # the PTX that thread ran, in order, with the registers it wrote and the cell line of each
    t.steps      # the same as a list of TraceStep

Only on the simulator (XCUDA_DEVICE=simulator, docs/simulator.md): it arms the trace in libxcuda-sim.so
through its C entry points (xcuda_sim_trace_arm, xcuda_sim_trace_take), then makes the launch as
kernel[config](*args) would; the launch is real (every thread runs, outputs are written back), one thread
is recorded. The extension is not involved beyond the launch itself.
"""
import ctypes
import html
import json
import os
from collections import namedtuple

from . import _core

TraceStep = namedtuple("TraceStep", "function pc ptx line file executed writes")
TraceStep.__doc__ = ("One PTX instruction the thread reached: its function, index, text, line as the editor counts it "
                     "(0 without .loc), file ('' for the cell itself, else the header cell or file), "
                     "whether its guard predicate let the thread execute it, and the registers it wrote "
                     "('%r3 = 42').")


def _simulator():
    """The loaded libxcuda-sim.so, or a RuntimeError saying how to get it."""
    advice = ("xcuda.trace runs a launch on the PTX simulator only: set XCUDA_DEVICE=simulator in the environment "
              "before the first GPU use of the process (docs/simulator.md)")
    try:
        _core.device_count()  # loads the driver layer's library: the simulator or libcuda.so.1
    except _core.CudaUnavailableError as e:
        raise RuntimeError(f"{advice}; here: {e}") from None
    path = os.path.join(os.path.dirname(_core.__file__), "libxcuda-sim.so")
    try:
        library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)  # only if the driver layer opened it
    except OSError:
        raise RuntimeError(f"{advice}; this process runs on a GPU's driver") from None
    library.xcuda_sim_trace_arm.argtypes = [ctypes.c_uint] * 6 + [ctypes.c_ulonglong]
    library.xcuda_sim_trace_arm.restype = ctypes.c_int
    library.xcuda_sim_trace_take.argtypes = []
    library.xcuda_sim_trace_take.restype = ctypes.c_char_p
    return library


def _triple(value, what):
    values = tuple(int(v) for v in (value if isinstance(value, (tuple, list)) else (value,)))
    if not 1 <= len(values) <= 3 or any(v < 0 for v in values):
        raise ValueError(f"{what} must be up to three non-negative integers (x, y, z), not {value!r}")
    return values + (0,) * (3 - len(values))


def trace(kernel, config, *args, thread=(0, 0, 0), block=(0, 0, 0), limit=100000):
    """Launch ``kernel[config](*args)`` on the PTX simulator and record one thread.

    Parameters
    ----------
    kernel : xcuda.Kernel
        The kernel (a ``%%cuda`` cell's function).
    config : tuple
        What goes between the brackets of a launch: ``(grid, block)`` or ``(grid, block, stream)``.
    *args
        The kernel's arguments, as for a launch.
    thread, block : tuple of int
        The thread index in its block and the block index in the grid of the thread to record.
    limit : int
        The most instructions kept (the rest are counted as truncated).

    Returns
    -------
    ThreadTrace
        The instructions in the order the thread ran them, with the registers each wrote and its cell line;
        shown as text and, in a notebook, beside the cell's source. When the launch failed (a fault, a race)
        the trace ends where the thread was and ``error`` holds the message.

    Raises
    ------
    RuntimeError
        Not on the simulator (on a GPU, or without XCUDA_DEVICE=simulator).
    ValueError
        ``thread`` or ``block`` outside the launch.
    """
    library = _simulator()
    launcher = kernel[config]
    thread, block = _triple(thread, "thread"), _triple(block, "block")
    for what, index, bound in (("thread", thread, launcher.block), ("block", block, launcher.grid)):
        if any(i >= b for i, b in zip(index, bound)):
            raise ValueError(f"{what} {index} is outside the launch's {'block' if what == 'thread' else 'grid'} "
                             f"{tuple(bound)}")
    library.xcuda_sim_trace_arm(*thread, *block, int(limit))
    error = None
    try:
        launcher(*args)
    except _core.CudaError as e:
        error = str(e)
    finally:
        recorded = json.loads(library.xcuda_sim_trace_take().decode())
    module = kernel.module
    places = {}  # the .loc file and line as the editor shows them (the core's cell_lines), once per line

    def place(file, line):
        if (file, line) not in places:
            own, label, shown = module._place(file, line)
            places[(file, line)] = ("" if own else label, shown)
        return places[(file, line)]

    steps = [TraceStep(s["function"], s["pc"], s["ptx"], place(s["file"], s["line"])[1], place(s["file"], s["line"])[0],
                       s["executed"], tuple(s["writes"]))
             for s in recorded["steps"]]
    return ThreadTrace(kernel.name, module.source, thread, block, steps, recorded["truncated"], error,
                       first_line=1 + module._lines_above)


class ThreadTrace:
    """One thread's PTX instructions of a simulated launch (xcuda.trace).

    Attributes: ``kernel`` (its name), ``source`` (the cell), ``thread``, ``block``, ``steps`` (TraceStep
    list, in order), ``truncated`` (more than ``limit`` instructions ran), ``error`` (the launch's error
    message, or None). Shown as text (``repr``) and as HTML beside the source (``_repr_html_``).
    """

    def __init__(self, kernel, source, thread, block, steps, truncated, error, first_line=1):
        self.kernel, self.source, self.thread, self.block = kernel, source, thread, block
        self.steps, self.truncated, self.error = steps, truncated, error
        self.first_line = first_line  # the editor's number of the source's first line (2 under %%cuda)

    def _title(self):
        t, b = self.thread, self.block
        ran = sum(1 for s in self.steps if s.executed)
        title = (f"{self.kernel}: thread ({t[0]},{t[1]},{t[2]}) of block ({b[0]},{b[1]},{b[2]}) on the PTX simulator, "
                 f"{ran} instructions executed")
        skipped = len(self.steps) - ran
        if skipped:
            title += f" ({skipped} more reached with a false predicate)"
        if self.truncated:
            title += ", truncated"
        return title

    def __repr__(self):
        lines = [self._title()]
        width = max([len(s.ptx) for s in self.steps] + [3])
        lines.append(f"{'#':>5}  {'line':>4}  {'PTX':<{width}}  registers written")
        for i, s in enumerate(self.steps, 1):
            writes = ", ".join(s.writes) if s.executed else "(predicate false: not executed)"
            lines.append(f"{i:>5}  {s.line or '':>4}  {s.ptx:<{width}}  {writes}".rstrip())
        if self.error:
            lines.append(f"the launch failed: {self.error}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle):
        printer.text(repr(self))

    def __len__(self):
        return len(self.steps)

    def _repr_html_(self):
        """The cell's source (lines the thread ran marked) beside the steps: the look of Kernel.lines()."""
        ran = {s.line for s in self.steps if s.line and not s.file}
        key = f"xcuda-trace-{abs(hash((self.kernel, self.thread, self.block, len(self.steps)))):x}"
        scope = "#" + key
        css = (f"{scope}{{font-family:monospace;font-size:12px;color:var(--jp-content-font-color1,#000000)}}\n"
               f"{scope} .xc-title{{font-weight:bold;margin:2px 0 4px 0}}\n"
               f"{scope} .xc-cols{{display:flex;gap:12px;align-items:flex-start}}\n"
               f"{scope} .xc-col{{flex:1 1 50%;min-width:0;overflow:auto;max-height:70vh;"
               f"border:1px solid var(--jp-border-color2,#dddddd)}}\n"
               f"{scope} .xl{{white-space:pre;padding:0 4px;cursor:default}}\n"
               f"{scope} .xn{{display:inline-block;min-width:3em;text-align:right;margin-right:8px;"
               f"color:var(--jp-content-font-color2,#616161)}}\n"
               f"{scope} .xran{{background:var(--jp-layout-color2,#eeeeee)}}\n"
               f"{scope} .xw{{color:var(--jp-mirror-editor-number-color,#008000);margin-left:2em}}\n"
               f"{scope} .xoff{{color:var(--jp-content-font-color3,#9e9e9e)}}\n"
               f"{scope} .xerr{{color:var(--jp-error-color1,#d32f2f);white-space:pre-wrap;margin-top:4px}}\n")
        for line in sorted(ran):
            sel = f'.xl[data-line="{line}"]'
            css += f"{scope}:has({sel}:hover) {sel}{{outline:2px solid #d08000;outline-offset:-1px}}\n"
        out = [f'<div class="xcuda-sbs xcuda-trace" id="{key}"><style>\n{css}</style>',
               f'<div class="xc-title">{html.escape(self._title())}</div>',
               '<div class="xc-cols"><div class="xc-col xc-src">']
        for n, text in enumerate(self.source.splitlines(), self.first_line):
            cls = "xl xran" if n in ran else "xl"
            out.append(f'<div class="{cls}" data-line="{n}"><span class="xn">{n}</span>'
                       f'<span class="xt">{html.escape(text) or "&nbsp;"}</span></div>')
        out.append('</div><div class="xc-col xc-ptx">')
        for i, s in enumerate(self.steps, 1):
            writes = ", ".join(s.writes)
            body = (f'<span class="xn">{i}</span>{html.escape(s.ptx)}' +
                    (f'<span class="xw">{html.escape(writes)}</span>' if s.executed and writes else "") +
                    ('<span class="xw xoff">predicate false: not executed</span>' if not s.executed else ""))
            cls = "xl" if s.executed else "xl xoff"
            out.append(f'<div class="{cls}" data-line="{s.line}" title="line {s.line or "?"}">{body}</div>')
        out.append("</div></div>")
        if self.error:
            out.append(f'<div class="xerr">the launch failed: {html.escape(self.error)}</div>')
        out.append("</div>")
        return "".join(out)
