"""What the suites of real programs share (tests/compile/test_programs.py, test_programs2.py, test_programs3.py,
test_programs4.py, test_family_programs.py, test_programs_preprocessor.py): pasting a program cell by cell as a
notebook user would, finding the kernels it bound, and checking what its host code got against numpy. Each suite
keeps what differs: which parameters must be typed, and how close a float result must be."""
import warnings

import numpy as np


def paste(shell, program, arch=None):
    """Runs the program's header cells (%%cuda_header; a program of programs3/ has none) and then its cells
    (%%cuda), each compiled for `arch` where one is given."""
    for name, text in getattr(program, "headers", ()):
        shell.run_cell_magic("cuda_header", name, text)
    for line, text in program.cells:
        shell.run_cell_magic("cuda", (line + (f" --arch {arch}" if arch else "")).strip(), text)


def modules_of(shell):
    return [v for v in list(shell.user_ns.values()) if type(v).__name__ == "Module"]


def kernels_of(shell):
    """Every kernel the cells bound, by name: those of each Module and each Kernel in the namespace."""
    found = {}
    for value in list(shell.user_ns.values()):
        if type(value).__name__ == "Module":
            found.update(value.kernels)
        elif type(value).__name__ == "Kernel":
            found[value.name] = value
    return found


def paste_without_warnings(shell, program, arch="compute_80"):
    """Pastes the program into an empty namespace with every warning an error (no "defines no __global__", no
    stale header), and returns the kernels it bound: at least one."""
    shell.user_ns.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paste(shell, program, arch=arch)
    kernels = kernels_of(shell)
    assert kernels, f"{program.name} bound no kernel"
    return kernels


def run_as_host_code(shell, program):
    """Pastes the program into an empty namespace for the device and runs its host code: its (name, got, expected)."""
    shell.user_ns.clear()
    paste(shell, program)
    return program.run(shell.user_ns)


def check(label, got, expected, rtol=0.0, atol=0.0, mismatch=None):
    """got is expected: to the element for integers; within rtol and atol where either is a float; or, given
    `mismatch`, with at most that fraction of the elements different."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (label, got.shape, expected.shape)
    if mismatch is not None:
        wrong = np.count_nonzero(got != expected) / got.size
        assert wrong <= mismatch, f"{label}: {wrong:.2%} of the elements differ"
    elif np.issubdtype(expected.dtype, np.floating) or np.issubdtype(got.dtype, np.floating):
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=label)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=label)


def scaled_tolerance(expected):
    """The first suites' tolerance: rtol 2e-5, and an atol of 1e-4 times the largest expected magnitude (at least 1)."""
    largest = float(np.abs(np.asarray(expected, dtype=np.float64)).max(initial=0.0))
    return {"rtol": 2e-5, "atol": 1e-4 * max(1.0, largest)}
