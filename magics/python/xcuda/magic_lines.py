"""The magic lines of %%cuda and %%cuda_header, expanded ($name, {expression}) by xcuda under a limit.

IPython expands every magic line before the magic sees it, in time that grows faster than the line,
with or without anything to expand: an 80 KB line took 18 s, a 160 KB one 81 s, and a 10 MB -D value or a
10 MB header name ran until interrupted. The cell
magics are registered without IPython's expansion (MAGIC_NO_VAR_EXPAND_ATTR) and expand here instead: a
line with no "$" and no "{" is taken as it is (the common case, and every huge hostile line that is not
an expansion), a line of at most LIMIT characters with them is expanded as IPython would, and a longer one
is refused at once, saying so.
"""
LIMIT = 16384


def expanded(shell, line, magic):
    """The line as IPython would have expanded it, within the limit."""
    if "$" not in line and "{" not in line:
        return line
    if len(line) > LIMIT:
        from IPython.core.error import UsageError

        raise UsageError(f"%%{magic}: the line is {len(line):,} characters long and has $ or {{ to expand; "
                         f"lines of at most {LIMIT:,} characters are expanded. Put long values in a header "
                         f"cell (%%cuda_header) or in the cell itself")
    # The frame IPython would read local names from: run_cell_magic's caller's caller, here three frames
    # further up (this function, the magic below, run_cell_magic).
    return shell.var_expand(line, 4)


def cell_magic(shell, function, name):
    """function(line, cell) as a cell magic whose line xcuda expands (see the module's docstring)."""

    def magic(line, cell):
        return function(expanded(shell, line, name), cell)

    try:
        from IPython.core.magic import MAGIC_NO_VAR_EXPAND_ATTR as no_expansion
    except ImportError:  # IPython before 7.3 expands every line: the limit below cannot help there
        no_expansion = "_ipython_magic_no_var_expand"
    setattr(magic, no_expansion, True)
    magic.__name__ = name
    magic.__qualname__ = name
    magic.__doc__ = function.__doc__
    return magic
