"""xcuda's IPython magics and load_ipython_extension (what `%load_ext xcuda` and the xcuda kernel call).

The magics: %%cuda, %%cuda_header, %%cuda_program (a whole program through nvcc), %cuda_info, %cuda_status,
%cuda_recover (xcuda/recovery.py), and those that take a launch or a sweep written as Python: %cuda_timeit,
%cuda_bench, %cuda_profile and %cuda_sanitize. Every magic's options are declared for the core's one parser
(base/magic_arguments): -h works in each, and a usage error is one line (IPython's UsageError).

They are real IPython magics (shell.register_magic_function), so IPython splits the cell, lists them in
%lsmagic and shows their help with %%cuda?; the lines of the cell magics are expanded by xcuda, under a limit
(xcuda/magic_lines.py), the line magics' by IPython. The same registration serves the xcuda kernel and
`%load_ext xcuda` in any IPython (ipykernel included).

What each magic does is the core's (frontend/cuda_cell, compile/program_cell, runtime/header_cell,
base/help_transform, frontend/launch_magic_options), reached through xcuda._core._magic_core
(py_magics.cpp); here the shell's namespace, displays, warnings and prints, and the Python of the launch
magics' lines, evaluated in the user's namespace.
"""
import sys
import warnings

from . import _core
from ._core import _magic_core as _ops

# The mimetype the JupyterLab / Notebook 7 extension (share/labextension) reads to mark each message in the
# cell's editor; other frontends have no renderer for it and show the HTML or text beside it.
DIAGNOSTICS_MIMETYPE = "application/vnd.xcuda.diagnostics+json"

# The name of the cell transform of help_transform (its header says why), among input_transformers_cleanup.
HELP_TRANSFORM_NAME = "xcuda_help_with_empty_body"


def _package():
    """The package xcuda, whose functions the magics look up at call time (tests may wrap xcuda.bench)."""
    import xcuda

    return xcuda


def _display(value, **options):
    from IPython.display import display

    display(value, **options)


def _usage_error(message):
    from IPython.core.error import UsageError

    return UsageError(message)


class _UsageErrors:
    """Inside it, the core's MagicUsageError (a magic's line is wrong) is raised as IPython's UsageError, which
    IPython shows as one line. A `with` block, not a wrapper function: the magics' warnings count their frames."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is not None and issubclass(kind, _ops.MagicUsageError):
            raise _usage_error(str(error)) from None
        return False


_usage_errors = _UsageErrors()


def _show_diagnostics(html, text, diagnostics):
    """The messages of a compile, as HTML, text and the extension's JSON (version 1)."""
    _display({"text/html": html, "text/plain": text,
              DIAGNOSTICS_MIMETYPE: {"version": 1, "diagnostics": diagnostics}}, raw=True)


def _shell_needs_name(shell, name):
    """A name the shell needs (cuda_cell::reserved_name), or one of this shell's user_ns_hidden."""
    if _ops.reserved_name(name):
        return True
    hidden = getattr(shell, "user_ns_hidden", None)
    return isinstance(hidden, dict) and name in hidden


# The warnings of %%cuda point at IPython's run_cell_magic, the frame that ran the cell's %%cuda line:
# stacklevel counts from the function that warns, through the magic registered (_register's cuda) and
# magic_lines' wrapper.
_CUDA_CELL_STACKLEVEL = 4


def _bind(shell, user_ns, name, value, what):
    """Binds a kernel or module under name, unless the shell needs the name (then a warning says how to
    reach it). A variable of another kind already there is replaced, with a warning the first time."""
    if _shell_needs_name(shell, name):
        warnings.warn(_ops.unbound_warning(what, name), UserWarning, stacklevel=_CUDA_CELL_STACKLEVEL + 1)
        return
    old = user_ns.get(name, value)
    if type(old) is not type(value) and not isinstance(old, (_core.Kernel, _core.Module)):
        warnings.warn(_ops.replaces_warning(what, name, old), UserWarning, stacklevel=_CUDA_CELL_STACKLEVEL + 1)
    user_ns[name] = value


def _cuda_cell(shell, line, cell):
    """%%cuda: compiles the cell and binds its kernels (or the module, with --name) in the namespace."""
    options = _ops.cuda_options(line)
    if options.help:
        print(_ops.cuda_usage())
        return
    if options.name and _shell_needs_name(shell, options.name):
        raise _usage_error(_ops.reserved_name_problem(options.name))
    # The cell's In[N] while it runs (IPython counts it up after the cell): how its messages name it.
    count = getattr(shell, "execution_count", 0)
    module, messages, shown, log = _ops.build_cuda_cell(cell, options, _show_diagnostics,
                                                        count if isinstance(count, int) else 0)
    for message in messages:
        warnings.warn(message, UserWarning, stacklevel=_CUDA_CELL_STACKLEVEL)
    user_ns = shell.user_ns
    if options.name:
        _bind(shell, user_ns, options.name, module, "module")
    else:
        for name, kernel in module.kernels.items():
            # Instances ("saxpy<float>") are not identifiers: they stay reachable through the module.
            if isinstance(name, str) and name.isidentifier():
                _bind(shell, user_ns, name, kernel, "kernel")
    # One compact line of resources per kernel, when ptxas ran (sm_XX targets).
    for name, resources in module.resources.items():
        print(f"{name}: {resources!r}")
    if shown is not None:
        _show_diagnostics(*shown)
    elif log:
        sys.stderr.write(log)
    if options.show_ptx:
        # With each source line above its instructions, numbered as the editor numbers them.
        _display(module.ptx_by_line)
    if options.show_sass:
        # The module is bound and usable without a disassembler: say so, and let the cell (and Run All) succeed.
        try:
            _display(module.sass)
        except _core.ToolNotFoundError as error:
            warnings.warn(_ops.sass_unavailable_warning(str(error)), UserWarning, stacklevel=_CUDA_CELL_STACKLEVEL)


def _compiles(expression):
    try:
        compile(expression, "<cuda_bench>", "eval")
        return True
    except Exception:
        return False


def _shown(result, return_object):
    """The magic's result: returned with -o, else displayed."""
    if return_object:
        return result
    _display(result)
    return None


def _launch_magic(shell, magic, line):
    """%cuda_timeit, %cuda_bench, %cuda_profile and %cuda_sanitize: the core reads the line (options, values,
    the launch or the three expressions); the Python in it is evaluated in the user's namespace."""
    help_asked, return_object, texts, keywords = _ops.read_launch_magic(magic, line, _compiles)
    if help_asked:
        print(_ops.launch_usage(magic))
        return None
    user_ns = shell.user_ns
    if magic == "cuda_bench":
        kernel, sizes, make_args = [eval(text, user_ns) for text in texts]
        return _shown(_package().bench(kernel, sizes, make_args, **keywords), return_object)
    callee, arguments = texts
    launcher = eval(callee, user_ns)
    if not hasattr(launcher, "time") or not hasattr(launcher, "grid"):
        raise _usage_error(_ops.not_a_launcher(magic, callee))
    args = eval(arguments, user_ns)
    if magic == "cuda_timeit":
        timing = launcher.time(*args, **keywords)
        print(repr(timing))
        return timing if return_object else None
    if magic == "cuda_sanitize":
        return _shown(launcher.sanitize(*args, **keywords), return_object)
    plot = keywords.pop("plot")
    result = launcher.profile(*args, **keywords)
    result.show_plot = plot
    return _shown(result, return_object)


def _plain_magic(magic, description, show):
    """A line magic without options of its own: runs show(line) unless the line asks for help (or is wrong)."""

    def run(line):
        with _usage_errors:
            if _ops.plain_asks_help(magic, description, line):
                print(_ops.plain_usage(magic, description))
                return
        show(line)

    return _named(run, magic[1:], _ops.plain_usage(magic, description))


def _named(function, name, doc):
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def xcuda_help_with_empty_body(lines):
    """The cell transform of help_transform: `%%cuda?` with no body asks for the magic's help."""
    if not lines or not _ops.asks_for_help(lines[0]):
        return lines  # every cell passes here: most leave after one look at the first line
    return _ops.with_body(lines[0]) if _ops.needs_body(lines) else lines


def _add_help_transform(shell):
    if not hasattr(shell, "input_transformers_cleanup"):
        return  # a shell without IPython's input transformers (a minimal one of a script)
    cleanup = shell.input_transformers_cleanup
    if any(str(getattr(transform, "__name__", "")) == HELP_TRANSFORM_NAME for transform in cleanup):
        return  # %load_ext again, or %reload_ext
    cleanup.append(xcuda_help_with_empty_body)


def _register(shell):
    from . import recovery
    from .magic_lines import cell_magic  # the cell magics' lines are expanded by xcuda, under a limit

    def cuda(line, cell):
        with _usage_errors:
            _cuda_cell(shell, line, cell)

    def cuda_header(line, cell):
        with _usage_errors:
            print(_ops.run_header_cell(line, cell))

    def cuda_program(line, cell):
        # The core reads the line and runs the program, its output going to the cell's streams.
        with _usage_errors:
            if not _ops.run_program_cell(line, cell):
                print(_ops.program_usage())

    for function, usage in ((cuda, _ops.cuda_usage()), (cuda_header, _ops.header_usage()),
                            (cuda_program, _ops.program_usage())):
        name = function.__name__
        shell.register_magic_function(cell_magic(shell, _named(function, name, usage), name), "cell", name)
    shell.register_magic_function(
        _plain_magic("%cuda_info", _ops.info_description, lambda line: _display(_package().info())), "line", "cuda_info")
    shell.register_magic_function(
        _plain_magic("%cuda_status", _ops.status_description, lambda line: _display(_package().status(shell.user_ns))),
        "line", "cuda_status")
    def launch_magic(name):
        def magic(line):
            with _usage_errors:
                return _launch_magic(shell, name, line)

        return magic

    for name in ("cuda_timeit", "cuda_bench", "cuda_profile", "cuda_sanitize"):
        shell.register_magic_function(_named(launch_magic(name), name, _ops.launch_usage(name)), "line", name)
    _add_help_transform(shell)
    # %cuda_recover and the end-of-cell hook (device printf flush, replacement after a fault) are Python:
    # they pickle the namespace and exec the process (xcuda/recovery.py).
    shell.register_magic_function(
        _plain_magic("%cuda_recover", recovery.cuda_recover.__doc__, recovery.cuda_recover), "line", "cuda_recover")
    if recovery.after_cell not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", recovery.after_cell)
    _flush_before_results(shell)
    recovery.restore_if_requested(shell)
    # %px %load_ext xcuda: an engine joins its host here if importing xcuda did not already.
    _core._join_host_if_engine()


class _FlushingDisplayHook:
    """sys.displayhook while a cell runs (IPython's DisplayTrap sets it): device printf output of launches
    not yet waited for is written before the cell's result (Out[N]), not after it by the end-of-cell
    flush. The shell's own hook does the rest; its attributes are reached through this one."""

    def __init__(self, hook):
        self._hook = hook

    def __call__(self, result=None):
        if result is not None:
            _package()._flush_device_output()
        return self._hook(result)

    def __getattr__(self, name):
        return getattr(self._hook, name)


def _flush_before_results(shell):
    trap = getattr(shell, "display_trap", None)
    if trap is not None and getattr(trap, "hook", None) is not None and not isinstance(trap.hook, _FlushingDisplayHook):
        trap.hook = _FlushingDisplayHook(trap.hook)


def load_ipython_extension(ipython):
    """Register %%cuda, %cuda_info, %cuda_status and %cuda_timeit (for %load_ext xcuda)."""
    _register(ipython)  # importing xcuda registered _shutdown with atexit
    # The compile worker (xcuda-compile) starts now and warms NVRTC while the first cell is written.
    _ops.start_compile_worker()
