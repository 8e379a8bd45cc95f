"""Issue 46's 24-program list (tests/compile/programs4): without a GPU each program compiles with every
parameter typed; on a GPU each runs as its host code would, checked against numpy; on the PTX simulator
in CI every one of them (tests/simulator/test_programs_on_the_simulator.py runs this file's gpu tests
there)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs4"))
from programs24 import PROGRAMS  # noqa: E402
from pasted_programs import check, paste_without_warnings, run_as_host_code  # noqa: E402


def tolerance_of(program, name):
    """A result's own rtol and atol where the program names it, else the program's."""
    tolerance = program.tolerance.get(name, program.tolerance) if isinstance(program.tolerance, dict) else {}
    return {k: v for k, v in tolerance.items() if k in ("rtol", "atol")}


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_parameter_of_every_program_is_typed_without_a_gpu(shell, program):
    for name, kernel in paste_without_warnings(shell, program).items():
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
    results = run_as_host_code(shell, program)
    assert results, f"{program.name} checked nothing"
    for name, got, expected in results:
        check(f"{program.name} {name}", got, expected, **tolerance_of(program, name))
