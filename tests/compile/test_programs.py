"""Other people's CUDA: programs written the way real ones are (templates instantiated explicitly,
cooperative groups, warp votes, shared atomics, scans, padded tiles, vector types, cuda::pipeline,
dynamic shared memory, clock_t timers, header cells with typedefs and kernels, default arguments),
pasted cell by cell. Without a GPU each compiles with every parameter typed; on one, each is launched
as its host code would and checked against numpy."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs"))
from programs import PROGRAMS  # noqa: E402
from pasted_programs import check, paste, paste_without_warnings, run_as_host_code, scaled_tolerance  # noqa: E402


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_parameter_of_every_program_is_typed_without_a_gpu(shell, program):
    for name, kernel in paste_without_warnings(shell, program).items():
        if kernel.is_template:
            continue
        for parameter in kernel.parameters:
            assert parameter["dtype"] is not None, f"{name}: {parameter} has no dtype"
            if not parameter["pointer"]:
                assert parameter["size"] == parameter["dtype"].itemsize, f"{name}: {parameter}"


def test_the_programs_cover_what_the_issue_lists():
    text = "\n".join(source for p in PROGRAMS for _, source in p.cells + p.headers)
    for feature in ("template __global__", "cooperative_groups", "__ballot_sync", "__shfl_xor_sync", "atomicAdd(&local",
                    "extern __shared__", "TILE_DIM + 1", "uint4", "float4", "cuda::pipeline", "memcpy_async",
                    "clock_t*", "typedef unsigned int uint", "= NULL", "enum class"):
        assert feature in text, feature
    assert len(PROGRAMS) >= 12
    assert any(p.headers and "__global__" in p.headers[0][1] for p in PROGRAMS)


def test_a_header_kernel_is_bound_and_listed_with_its_header(shell):
    shell.user_ns.clear()
    program = next(p for p in PROGRAMS if p.headers)
    paste(shell, program, arch="compute_80")
    integrate = shell.user_ns["integrate"]
    assert integrate.file == "particles.cuh"
    assert set(integrate.module.kernels) == {"integrate", "count_below"}
    assert shell.user_ns["count_below"].parameters[3]["dtype"] == np.uint32
    params = integrate.parameters[2]["dtype"]
    assert params.itemsize == 20 and params.names == ("dt", "count", "gravity")
    assert params.fields["gravity"][1] == 8


@pytest.mark.gpu
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_runs_as_its_host_code_would(shell, program):
    for name, got, expected in run_as_host_code(shell, program):
        check(name, got, expected, **scaled_tolerance(expected))
