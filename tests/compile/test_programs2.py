"""The second set of programs (tests/compile/programs2/round2_programs.py, issue 25): a constant filter set with
get_global, a cooperative grid reduction, 64 KiB of dynamic shared memory, a pointer plus an offset, a
__device__ counter read back, a struct in constant memory. Without a GPU each compiles with every
parameter and every module variable typed; on a GPU each runs as its host code would, checked against
numpy; on the PTX simulator (in CI, tests/simulator/test_round2_on_the_simulator.py) those it can run."""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs2"))
from round2_programs import PROGRAMS  # noqa: E402


def paste(shell, program, arch=None):
    for name, text in program.headers:
        shell.run_cell_magic("cuda_header", name, text)
    for line, text in program.cells:
        shell.run_cell_magic("cuda", (line + (f" --arch {arch}" if arch else "")).strip(), text)


def modules_of(shell):
    return [v for v in list(shell.user_ns.values()) if type(v).__name__ == "Module"]


def kernels_of(shell):
    found = {}
    for value in list(shell.user_ns.values()):
        if type(value).__name__ == "Module":
            found.update(value.kernels)
        elif type(value).__name__ == "Kernel":
            found[value.name] = value
    return found


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_parameter_and_variable_of_every_program_is_typed_without_a_gpu(shell, program):
    shell.user_ns.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paste(shell, program, arch="compute_80")
    kernels = kernels_of(shell)
    assert kernels, f"{program.name} bound no kernel"
    for name, kernel in kernels.items():
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
    shell.user_ns.clear()
    paste(shell, program)
    for name, got, expected in program.run(shell.user_ns):
        got = np.asarray(got)
        expected = np.asarray(expected)
        assert got.shape == expected.shape, name
        if np.issubdtype(expected.dtype, np.floating) or np.issubdtype(got.dtype, np.floating):
            np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-4 * max(1.0, np.abs(expected).max()),
                                       err_msg=name)
        else:
            np.testing.assert_array_equal(got, expected, err_msg=name)


def test_the_cooperative_program_is_seen_to_sync_its_grid_and_the_others_are_not(shell):
    for program in PROGRAMS:
        shell.user_ns.clear()
        paste(shell, program, arch="compute_80")
        for name, kernel in kernels_of(shell).items():
            assert kernel.uses_grid_sync == (program.name == "reduction_multi_block_cooperative"), (program.name, name)
