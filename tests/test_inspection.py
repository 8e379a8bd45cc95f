"""Teaching views that need no GPU: resources from ptxas' report, SASS where the toolkit has a
disassembler (and a clear error where it has none)."""
import shutil

import pytest
from IPython.core.interactiveshell import InteractiveShell

import xcuda
from xcuda import ToolNotFoundError

SHARED = r"""
extern "C" __global__ void staged(float* x)
{
    __shared__ float tile[256];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = tile[255 - threadIdx.x];
}
"""

# Many live values: with -maxrregcount=16 ptxas must spill.
PRESSURE = r"""
extern "C" __global__ void pressure(const float* in, float* out)
{
    float v[32];
    #pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = in[threadIdx.x * 32 + i] * (i + 1);
    float s = 0;
    #pragma unroll
    for (int i = 0; i < 32; ++i) s += v[i] * v[31 - i];
    #pragma unroll
    for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = v[i] + s;
}
"""


def has_disassembler():
    return any(shutil.which(tool) or shutil.which(f"/usr/local/cuda/bin/{tool}") for tool in ("nvdisasm", "cuobjdump"))


def test_resources_come_from_ptxas_without_a_gpu():
    module = xcuda.compile(SHARED, name="inspect_shared", arch="compute_75")
    usage = module.staged.ptxas_resources
    assert usage.source == "ptxas" and usage.arch == "sm_75"
    assert usage.registers > 0
    assert usage.static_shared == 1024
    assert "1024 B shared" in repr(usage)


def test_spills_are_reported():
    module = xcuda.compile(PRESSURE, name="inspect_pressure", arch="sm_75", options=["-maxrregcount=16"])
    usage = module.resources["pressure"]
    assert usage.registers <= 24  # ptxas never goes below 24 registers per thread
    assert usage.spill_stores > 0 and usage.spill_loads > 0


def test_each_sm_compile_prints_one_resource_line_per_kernel(capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "--arch sm_80", SHARED)
    out = capsys.readouterr().out
    assert "staged: " in out and "registers" in out and "1024 B shared" in out and "[sm_80, ptxas]" in out


def test_a_compute_target_compile_prints_no_resource_line(capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "--arch compute_75", SHARED)
    assert "registers" not in capsys.readouterr().out


@pytest.mark.skipif(has_disassembler(), reason="this machine has nvdisasm or cuobjdump: the missing-tool error cannot happen")
def test_sass_without_a_disassembler_says_which_tool_is_missing():
    module = xcuda.compile(SHARED, name="inspect_sass_missing", arch="compute_75")
    with pytest.raises(ToolNotFoundError, match="nvdisasm or cuobjdump"):
        module.staged.sass
