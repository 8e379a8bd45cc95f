"""Where %%cuda binds its module and kernels: never over a name IPython needs (get_ipython, exit, In,
dunder names), which would break every later cell, and with a warning over a user's own variable."""
import warnings

import numpy as np
import pytest
from IPython.core.error import UsageError


def test_name_of_ipythons_own_is_refused_for_a_module_and_the_shell_still_works(shell):
    cell = 'extern "C" __global__ void k1(int* x) {}\n'
    for name in ("get_ipython", "__builtins__", "exit", "In", "Out"):
        with pytest.raises(UsageError, match=f"--name {name}: the name is IPython's own"):
            shell.run_cell_magic("cuda", f"--name {name}", cell)
    assert shell.run_cell("get_ipython().__class__.__name__").result
    assert shell.run_cell("1 + 1").result == 2


def test_a_kernel_named_like_an_ipython_name_is_not_bound_and_a_warning_says_how_to_reach_it(shell):
    before = shell.user_ns["Out"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shell.run_cell_magic("cuda", "", 'extern "C" __global__ void Out(int* x) {}\n')
    assert shell.user_ns["Out"] is before
    assert any("kernel 'Out' is not bound" in str(w.message) and "--name" in str(w.message) for w in caught)


def test_binding_a_kernel_over_a_users_variable_warns_and_rebinding_a_kernel_does_not(shell):
    shell.user_ns["x_array"] = np.arange(4)
    cell = 'extern "C" __global__ void x_array(int* x) {}\n'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shell.run_cell_magic("cuda", "", cell)
    assert any("replaces the variable x_array (numpy.ndarray)" in str(w.message) for w in caught), \
        [str(w.message) for w in caught]
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        shell.run_cell_magic("cuda", "", cell + "// changed\n")
    assert not [w for w in again if "replaces the variable" in str(w.message)]


def test_the_binding_warnings_point_at_the_frame_that_ran_the_cuda_line_not_inside_xcuda(shell):
    # The frame of IPython's run_cell_magic, which the cell's %%cuda line calls (as when the magics were C++).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shell.run_cell('%%cuda\nextern "C" __global__ void In(int* x) {}\n')
    [warning] = [w for w in caught if "kernel 'In' is not bound" in str(w.message)]
    assert warning.filename.endswith("interactiveshell.py"), (warning.filename, warning.lineno)
