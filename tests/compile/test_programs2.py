"""The second set of programs (tests/compile/programs2/round2_programs.py, issue 25): a constant filter set with
get_global, a cooperative grid reduction, 64 KiB of dynamic shared memory, a pointer plus an offset, a
__device__ counter read back, a struct in constant memory. Without a GPU each compiles with every
parameter and every module variable typed; on a GPU each runs as its host code would, checked against
numpy; on the PTX simulator (in CI, tests/simulator/test_round2_on_the_simulator.py) those it can run."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs2"))
from round2_programs import PROGRAMS  # noqa: E402
from pasted_programs import (check, kernels_of, modules_of, paste, paste_without_warnings,  # noqa: E402
                             run_as_host_code, scaled_tolerance)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_parameter_and_variable_of_every_program_is_typed_without_a_gpu(shell, program):
    for name, kernel in paste_without_warnings(shell, program).items():
        for parameter in kernel.parameters:
            assert parameter["dtype"] is not None, f"{name}: {parameter} has no dtype"
    for variable, (dtype, shape) in program.variables.items():
        found = [m.get_global(variable) for m in modules_of(shell) if variable in m.globals]
        assert len(found) == 1, variable
        assert found[0].shape == shape, (variable, found[0].shape)
        if dtype is not None:
            assert found[0].dtype == np.dtype(dtype), (variable, found[0].dtype)


def test_the_constant_struct_has_the_compilers_layout(shell):
    shell.user_ns.clear()
    program = next(p for p in PROGRAMS if p.name == "particles_constant_struct")
    paste(shell, program, arch="compute_80")
    params = shell.user_ns["particles"].get_global("params")
    assert params.nbytes == 28 and params.dtype.names == ("gravity", "globalDamping", "particleRadius", "numBodies",
                                                           "boundaryDamping")
    assert params.dtype.fields["numBodies"][1] == 20 and params.dtype.fields["numBodies"][0] == np.uint32


def test_the_programs_cover_the_runtime_items():
    text = "\n".join(source for p in PROGRAMS for _, source in p.cells)
    for feature in ("__constant__ float c_Kernel", "cg::sync(grid)", "extern __shared__ unsigned int", "__device__ unsigned int d_count",
                    "__constant__ SimParams"):
        assert feature in text, feature
    hosts = "\n".join(p.run.__code__.co_names.__repr__() for p in PROGRAMS)
    for call in ("get_global", "Pointer", "max_cooperative_blocks"):
        assert call in hosts, call
    assert len(PROGRAMS) >= 6


@pytest.mark.gpu
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_runs_as_its_host_code_would(shell, program):
    for name, got, expected in run_as_host_code(shell, program):
        check(name, got, expected, **scaled_tolerance(expected))


def test_the_cooperative_program_is_seen_to_sync_its_grid_and_the_others_are_not(shell):
    for program in PROGRAMS:
        shell.user_ns.clear()
        paste(shell, program, arch="compute_80")
        for name, kernel in kernels_of(shell).items():
            assert kernel.uses_grid_sync == (program.name == "reduction_multi_block_cooperative"), (program.name, name)
