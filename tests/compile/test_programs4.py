"""Issue 46's 24-program list (tests/compile/programs4): without a GPU each program compiles with every
parameter typed; on a GPU each runs as its host code would, checked against numpy; on the PTX simulator
in CI every one of them (tests/simulator/test_programs_on_the_simulator.py runs this file's gpu tests
there)."""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs4"))
from programs24 import PROGRAMS  # noqa: E402
from test_programs2 import kernels_of, paste  # noqa: E402  (a program's header cells and cells; the kernels it bound)


def check(program, name, got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (program.name, name, got.shape, expected.shape)
    if np.issubdtype(expected.dtype, np.floating) or np.issubdtype(got.dtype, np.floating):
        tolerance = program.tolerance.get(name, program.tolerance) if isinstance(program.tolerance, dict) else {}
        tolerance = {k: v for k, v in tolerance.items() if k in ("rtol", "atol")}
        np.testing.assert_allclose(got, expected, rtol=tolerance.get("rtol", 0.0), atol=tolerance.get("atol", 0.0),
                                   err_msg=f"{program.name} {name}")
    else:
        np.testing.assert_array_equal(got, expected, err_msg=f"{program.name} {name}")


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_parameter_of_every_program_is_typed_without_a_gpu(shell, program):
    shell.user_ns.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paste(shell, program, arch="compute_80")
    kernels = kernels_of(shell)
    assert kernels, f"{program.name} bound no kernel"
    for name, kernel in kernels.items():
        if kernel.is_template:
            continue  # its instances, asked for by name, are typed
        for parameter in kernel.parameters:
            if parameter["type"].replace("const", "").replace("*", "").strip() in program.opaque:
                assert parameter["pointer"] and parameter["dtype"] is None, parameter  # untyped, and only these
                continue
            assert parameter["dtype"] is not None, f"{name}: {parameter} has no dtype"


@pytest.mark.gpu
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_runs_as_its_host_code_would(shell, program):
    shell.user_ns.clear()
    paste(shell, program)
    results = program.run(shell.user_ns)
    assert results, f"{program.name} checked nothing"
    for name, got, expected in results:
        check(program, name, got, expected)
