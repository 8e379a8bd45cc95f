"""Issue 45's own families, pasted (tests/compile/programs4/family_programs.py): the SGEMM tutorial's kernels,
llm.c's fp32 kernels, a minimal flash attention, the samples' cooperative-groups reduction, CUB's block
primitives and two PMPP kernels. Without a GPU each compiles with no edits and no flags and every parameter is
typed; on a GPU each runs as its host code would, checked against numpy; in CI on the PTX simulator
(tests/simulator/test_round2_on_the_simulator.py runs this file's gpu tests there)."""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs3"))
sys.path.insert(0, str(Path(__file__).resolve().parent / "programs4"))
from family_programs import LLMC_REPO, PROGRAMS  # noqa: E402
from pasted_programs import check, kernels_of, paste, run_as_host_code  # noqa: E402

# The kernels each program must bind: a program whose kernel was lost (set aside with the host code, say)
# fails here rather than in a KeyError on the GPU.
KERNELS = {
    "sgemm_tutorial_kernels_1_to_6": {"sgemm_naive", "sgemm_global_mem_coalesce", "sgemm_shared_mem_block",
                                      "sgemm1DBlocktiling", "sgemm2DBlocktiling", "sgemmVectorize"},
    "flash_attention_minimal_forward": {"forward_kernel"},
    "llmc_gpt2_fp32_kernels": {"encoder_forward_kernel3", "layernorm_forward_kernel3", "softmax_forward_kernel5",
                               "residual_forward_kernel", "gelu_forward_kernel"},
    "reduction_multi_block_cooperative_groups": {"reduceSinglePassMultiBlockCG"},
    "cub_block_load_store_scan_radix_sort_warp_reduce": {"BlockPrefixSumKernel", "BlockSortKernel",
                                                         "ExampleWarpReduceKernel"},
    "pmpp_tiled_matmul_and_kogge_stone_scan": {"MatrixMulKernel", "Kogge_Stone_scan_kernel"},
}


@pytest.fixture(autouse=True)
def beside_the_llmc_repo(monkeypatch):
    # llm.c's train_gpt2_fp32.cu includes "llmc/utils.h" by relative path: the cells run where a notebook beside
    # the repo would, in its folder (the other programs include nothing by relative path).
    monkeypatch.chdir(LLMC_REPO)


def test_every_family_program_has_its_provenance_and_its_kernels_listed():
    assert {p.name for p in PROGRAMS} == set(KERNELS)
    assert all(p.provenance for p in PROGRAMS)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_family_program_compiles_as_pasted_with_every_parameter_typed(shell, program):
    shell.user_ns.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paste(shell, program, arch="compute_80")
    kernels = kernels_of(shell)
    assert KERNELS[program.name] <= {name.split("<")[0] for name in kernels}, f"{program.name} bound {sorted(kernels)}"
    for name, kernel in kernels.items():
        if any(other.startswith(name + "<") for other in kernels):
            continue  # the template itself (Key* before Key is chosen): its instantiations are typed
        for parameter in kernel.parameters:
            assert parameter["dtype"] is not None, f"{name}: {parameter} has no dtype"
    unexpected = [str(w.message) for w in caught if "set aside" not in str(w.message)]
    assert not unexpected, unexpected


def test_host_variables_beside_the_kernels_are_set_aside_with_a_warning_at_their_line(shell, capsys):
    # llm.c's `static cublasComputeType_t cublas_compute_type; cublasHandle_t cublas_handle;`: NVRTC refuses
    # them only once the host functions before them are gone, so the set-aside takes a second round.
    shell.user_ns.clear()
    program = next(p for p in PROGRAMS if p.name == "llmc_gpt2_fp32_kernels")
    paste(shell, program, arch="compute_80")
    shown = capsys.readouterr().out
    # the editor line: the cell's first line is its %%cuda line
    line = program.cells[0][1].splitlines().index("cublasHandle_t cublas_handle;") + 2
    assert f'line {line}, column 16: warning: host variable "cublas_handle" set aside' in shown, shown
    assert 'host function "cudaCheck" set aside' in shown and 'host function "layernorm_forward" set aside' in shown
    assert "layernorm_forward_kernel3" in shell.user_ns


def test_a_real_torch_header_in_an_include_folder_wins_over_the_stand_in(tmp_path):
    # Stand-ins in subfolders (<torch/types.h>) are looked up by their path under each -I folder, as
    # <cstdint> is: a user's own header of that name is taken.
    import xcuda

    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "types.h").write_text("#pragma once\n#define USERS_OWN_TORCH 1\n")
    source = ("#include <torch/types.h>\n#ifndef USERS_OWN_TORCH\n#error the stand-in was taken\n#endif\n"
              "__global__ void k(float* x) { x[0] = USERS_OWN_TORCH; }\n")
    assert ".entry" in xcuda.compile(source, arch="compute_80", include_dirs=[str(tmp_path)]).ptx
    with pytest.raises(xcuda.CompileError, match="the stand-in was taken"):
        xcuda.compile(source, arch="compute_80")


def test_a_kernel_that_uses_a_host_variable_still_gets_nvrtcs_refusal(shell):
    import xcuda

    shell.user_ns.clear()
    with pytest.raises(xcuda.CompileError, match="host variables are not allowed"):
        shell.run_cell_magic("cuda", "--arch compute_80",
                             "int counter;\nvoid host_helper() {}\n__global__ void k(int* out) { out[0] = counter; }\n")


@pytest.mark.gpu
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_family_program_runs_as_its_host_code_would(shell, program):
    for name, got, expected in run_as_host_code(shell, program):
        check(f"{program.name} {name}", got, expected, **program.tolerance)  # rtol and atol, or mismatch


BIT_MASKS = r"""
extern "C" __global__ void masks(const unsigned* a, const unsigned* b, unsigned* clamped, unsigned* wrapped, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned d;
        asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(d) : "r"(a[i]), "r"(b[i]));
        clamped[i] = d;
        asm("bmsk.wrap.b32 %0, %1, %2;" : "=r"(d) : "r"(a[i]), "r"(b[i]));
        wrapped[i] = d;
    }
}
"""


def bmsk(a, b, clamp):
    """The PTX ISA's semantics of bmsk.{clamp,wrap}.b32, step by step, one element at a time."""
    full = 0xFFFFFFFF
    a1, b1 = a & 0x1F, b & 0x1F
    mask0, total = (full << a1) & full, a1 + b1
    mask1 = (full << total) & full
    position_overflow = clamp and a >= 32
    width_overflow = clamp and b >= 32
    if position_overflow:
        mask0 = 0
    if total >= 32 or position_overflow or width_overflow:
        mask1 = 0
    elif b1 == 0:
        mask1 = full
    return mask0 & ~mask1 & full


@pytest.mark.gpu
def test_bmsk_clamps_or_wraps_its_start_and_width_as_the_ptx_isa_says(shell):
    # CUB's BlockRadixSort extracts each digit with bmsk.clamp: the simulator runs it.
    import xcuda

    values = np.array([0, 1, 5, 16, 31, 32, 33, 40, 63, 64, 0xFFFFFFFF], np.uint32)
    a, b = (grid.ravel() for grid in np.meshgrid(values, values))
    module = xcuda.compile(BIT_MASKS, arch="compute_75")
    clamped, wrapped = xcuda.zeros(a.size, np.uint32), xcuda.zeros(a.size, np.uint32)
    module.masks[1, 128](xcuda.to_device(a), xcuda.to_device(b), clamped, wrapped, a.size)
    for mode, got in (("clamp", clamped), ("wrap", wrapped)):
        expected = [bmsk(int(x), int(y), mode == "clamp") for x, y in zip(a, b)]
        np.testing.assert_array_equal(got.copy_to_host(), np.array(expected, np.uint32), err_msg=mode)
