"""The third set of programs (tests/compile/programs3/round3_programs.py, issue 45 item 7): twelve real
programs of our choosing, each pasted as its .cu file holds it (standard headers, host helpers and macros
beside the kernels). Without a GPU each compiles with every parameter typed; on a GPU each runs as its host
code would, checked against numpy; on the PTX simulator in CI every one of them
(tests/simulator/test_round2_on_the_simulator.py runs this file's gpu tests there)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs3"))
from round3_programs import PROGRAMS  # noqa: E402
from pasted_programs import check, paste, paste_without_warnings, run_as_host_code  # noqa: E402


def test_there_are_twelve_programs_each_with_its_provenance():
    assert len(PROGRAMS) == 12 and len({p.name for p in PROGRAMS}) == 12
    assert all(p.provenance for p in PROGRAMS)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_parameter_of_every_program_is_typed_without_a_gpu(shell, program):
    for name, kernel in paste_without_warnings(shell, program).items():
        for parameter in kernel.parameters:
            assert parameter["dtype"] is not None, f"{name}: {parameter} has no dtype"


def test_the_struct_and_vector_parameters_get_the_compilers_layout(shell):
    shell.user_ns.clear()
    paste(shell, next(p for p in PROGRAMS if p.name == "bfs_struct_nodes_bool_masks"), arch="compute_80")
    node = shell.user_ns["Kernel"].parameters[0]["dtype"]
    assert node.names == ("starting", "no_of_edges") and node.itemsize == 8
    shell.user_ns.clear()
    paste(shell, next(p for p in PROGRAMS if p.name == "black_scholes_float2"), arch="compute_80")
    pair = shell.user_ns["BlackScholesGPU"].parameters[0]["dtype"]
    assert pair.names == ("x", "y") and pair.itemsize == 8


@pytest.mark.gpu
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_runs_as_its_host_code_would(shell, program):
    for name, got, expected in run_as_host_code(shell, program):
        check(f"{program.name} {name}", got, expected, **program.tolerance)  # rtol and atol, or mismatch
