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


@pytest.mark.skipif(has_disassembler(), reason="this machine has nvdisasm or cuobjdump: the missing-tool note cannot happen")
def test_cuda_sass_without_a_disassembler_binds_the_kernels_and_warns_instead_of_failing_the_cell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.user_ns.pop("staged", None)
    with pytest.warns(UserWarning, match="compiled and its kernels are bound, but its SASS cannot be shown: .*nvdisasm"):
        shell.run_cell_magic("cuda", "--sass --arch sm_80", SHARED)
    assert isinstance(shell.user_ns["staged"], xcuda.Kernel)


import xml.etree.ElementTree as ElementTree  # noqa: E402

SAXPY_LINES = """extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}
"""

SEVERAL = r"""
template <typename T> __device__ T square(T v) { return v * v; }
extern "C" __global__ void squares(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = square(x[i]);
}
extern "C" __global__ void fill(int* x, int value, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}
template <typename T>
__global__ void scale(T* x, T factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}
"""


def well_formed(html):
    ElementTree.fromstring(f"<root>{html}</root>")
    return True


def instructions_under(text, line_text):
    """The instruction lines that grouped_text puts under the source line containing line_text."""
    owned, inside = [], False
    for line in text.splitlines():
        if "|" in line and not line.startswith("        "):
            inside = line_text in line
        elif inside and line.strip():
            owned.append(line.strip())
    return owned


def test_the_saxpy_statement_owns_its_loads_fma_and_store():
    kernel = xcuda.compile(SAXPY_LINES, name="map_saxpy", arch="compute_75").saxpy
    owned = instructions_under(repr(kernel.lines()), "out[i] = a * x[i] + y[i];")
    assert sum(i.startswith("ld.global") for i in owned) == 2
    assert sum(i.startswith("fma.rn.f32") for i in owned) == 1
    assert sum(i.startswith("st.global.f32") for i in owned) == 1
    condition = instructions_under(repr(kernel.lines()), "if (i < n)")
    assert any(i.startswith("setp") for i in condition)
    assert not any(i.startswith("fma") for i in condition)


def test_ptx_views_are_strings_that_render_as_well_formed_html():
    module = xcuda.compile(SEVERAL, name="views_several", arch="compute_75", instantiate=["scale<float>"])
    ptx = module.fill.ptx
    assert isinstance(ptx, str) and isinstance(ptx, xcuda.PTX)
    assert ".entry fill" in ptx and ".entry squares" not in ptx  # the kernel's own PTX only
    assert ".entry squares" in module.ptx
    assert well_formed(ptx._repr_html_()) and 'class="xcuda-ptx"' in ptx._repr_html_()
    assert well_formed(module.ptx._repr_html_())


@pytest.mark.parametrize("kernel_name", ["squares", "fill", "scale<float>"])
def test_line_views_work_for_each_kernel_of_a_module_with_templates(kernel_name):
    module = xcuda.compile(SEVERAL, name="views_several", arch="compute_75", instantiate=["scale<float>"])
    view = module[kernel_name].lines()
    assert well_formed(view.html) and "data-line" in view.html
    text = repr(view)
    if kernel_name == "fill":
        assert "x[i] = value" in text and "square(" not in text
    if kernel_name == "squares":
        assert "mul.f32" in "\n".join(instructions_under(text, "return v * v;") + instructions_under(text, "square(x[i])"))
    if kernel_name == "scale<float>":
        assert "mul.f32" in "\n".join(instructions_under(text, "x[i] *= factor"))


def test_instances_are_typed_from_their_template_arguments():
    module = xcuda.compile(SEVERAL, name="views_instances", arch="compute_75",
                           instantiate=["scale<float>", "scale<double>"])
    float_kernel, double_kernel = module["scale<float>"], module["scale<double>"]
    assert [p["type"] for p in float_kernel.parameters] == ["float*", "float", "int"]
    assert [p["type"] for p in double_kernel.parameters] == ["double*", "double", "int"]
    assert double_kernel.symbol.startswith("_Z5scaleIdEvPT_S0_i")
    assert module["scale"].is_template and not float_kernel.is_template


def test_instantiating_a_missing_template_is_a_clear_error():
    with pytest.raises(ValueError, match="no template kernel named 'nothere'"):
        xcuda.compile(SEVERAL, name="views_missing", arch="compute_75", instantiate=["nothere<int>"])


def test_compare_marks_what_fast_math_changes():
    source = 'extern "C" __global__ void ratio(const float* a, const float* b, float* out)\n' \
             '{ int i = threadIdx.x; out[i] = a[i] / b[i] + sqrtf(a[i]); }\n'
    kernel = xcuda.compile(source, name="cmp_ratio", arch="compute_75").ratio
    fast = kernel.variant(fast_math=True)
    view = xcuda.compare(kernel, fast)
    assert well_formed(view.html)
    text = repr(view)
    assert "--use_fast_math" in text
    assert "div.rn.f32" in text and "div.approx" in text
    assert "only left" in text


def test_magic_instantiate_option_reaches_the_module(capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "--name tm --instantiate 'scale<int>' --arch compute_75", SEVERAL)
    module = shell.user_ns["tm"]
    assert "scale<int>" in module.kernels
    assert [p["type"] for p in module["scale<int>"].parameters] == ["int*", "int", "int"]


@pytest.mark.skipif(not has_disassembler(), reason="no nvdisasm or cuobjdump on this machine (the CUDA toolkit's binary utilities)")
def test_sass_maps_the_fma_to_the_saxpy_statement():
    kernel = xcuda.compile(SAXPY_LINES, name="sass_saxpy").saxpy
    sass = kernel.sass
    assert isinstance(sass, xcuda.SASS) and "FFMA" in sass
    assert well_formed(sass._repr_html_())
    owned = instructions_under(repr(kernel.lines(sass=True)), "out[i] = a * x[i] + y[i];")
    assert any("FFMA" in i for i in owned), repr(kernel.lines(sass=True))
    assert any("STG" in i for i in owned)


from cuda_sources import CUB_REDUCTION  # noqa: E402  (tests/cuda_sources.py)


def test_cccl_headers_are_found_from_the_toolkit():
    module = xcuda.compile(CUB_REDUCTION, name="cub_reduction", arch="compute_75")
    assert ".entry block_sum" in module.ptx
    assert [p["type"] for p in module.block_sum.parameters] == ["const float*", "float*", "cuda::std::int32_t"]
    assert module.block_sum.parameters[2]["dtype"] == "int32"
