"""%load_ext xcuda in a plain IPython InteractiveShell: the magics, kernel objects, compile errors.

None of these needs a GPU: compiling, parsing and PTX work with NVRTC alone.
"""
import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import xcuda

SAXPY = """extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
"""


def run(shell, code):
    result = shell.run_cell(code, store_history=False)
    return result


def test_load_ext_registers_the_magics(shell):
    magics = shell.magics_manager.lsmagic()
    assert "cuda" in magics["cell"]
    for name in ("cuda_info", "cuda_status", "cuda_timeit"):
        assert name in magics["line"]


def test_cuda_help_shows_the_full_usage(shell):
    doc = shell.find_cell_magic("cuda").__doc__
    for option in ("--name", "--arch", "-D", "-I", "--std", "--lineinfo", "--ptx", "--fast-math"):
        assert option in doc


def test_a_cell_binds_each_kernel_with_its_parameters(shell):
    shell.run_cell_magic("cuda", "", SAXPY)
    saxpy = shell.user_ns["saxpy"]
    assert isinstance(saxpy, xcuda.Kernel)
    assert "saxpy(float a, const float* x, const float* y, float* out, size_t n)" in repr(saxpy)
    params = saxpy.parameters
    assert [p["name"] for p in params] == ["a", "x", "y", "out", "n"]
    assert [p["type"] for p in params] == ["float", "const float*", "const float*", "float*", "size_t"]
    assert [p["pointer"] for p in params] == [False, True, True, True, False]
    assert [p["const"] for p in params] == [False, True, True, False, False]
    assert params[0]["dtype"] == np.float32 and params[4]["dtype"] == np.uint64


def test_ptx_option_prints_the_entry(shell, capsys):
    shell.run_cell_magic("cuda", "--ptx", SAXPY)
    assert ".entry saxpy" in capsys.readouterr().out


def test_name_option_binds_a_module(shell):
    shell.run_cell_magic("cuda", "--name vecops", SAXPY + '\nextern "C" __global__ void fill(float* x, float v, int n) {}\n')
    module = shell.user_ns["vecops"]
    assert isinstance(module, xcuda.Module)
    assert sorted(module.kernels) == ["fill", "saxpy"]
    assert module["fill"].name == "fill" and module.saxpy.name == "saxpy"
    assert ".entry fill" in module.ptx
    with pytest.raises(KeyError, match="has no kernel 'nope'"):
        module["nope"]


def test_rerunning_a_cell_replaces_its_kernels(shell):
    shell.run_cell_magic("cuda", "", 'extern "C" __global__ void version(int* out) { out[0] = 1; }\n')
    first = shell.user_ns["version"]
    shell.run_cell_magic("cuda", "", 'extern "C" __global__ void version(int* out, int extra) { out[0] = 2; }\n')
    second = shell.user_ns["version"]
    assert second is not first
    assert [p["name"] for p in second.parameters] == ["out", "extra"]
    # The kernel object kept from the first run still describes (and keeps) its own module.
    assert [p["name"] for p in first.parameters] == ["out"]
    assert "out[0] = 1" in first.module.source


def test_an_unchanged_cell_comes_back_from_the_cache(shell):
    source = 'extern "C" __global__ void cached_kernel(int* out) { out[0] = 7; }\n'
    shell.run_cell_magic("cuda", "", source)
    hits_before = _cache_hits()
    shell.run_cell_magic("cuda", "", source)
    assert _cache_hits() == hits_before + 1


def _cache_hits():
    table = [t for t in xcuda.status().tables if t["title"] == "Compile cache"][0]
    return int(table["rows"][0][1])


def test_cpp_kernels_without_extern_c_are_found_by_name(shell):
    shell.run_cell_magic("cuda", "", "namespace math { template <class T> __device__ T twice(T v) { return 2 * v; }\n"
                                     "__global__ void double_it(float* x, int n) { x[0] = twice(x[0]); } }\n")
    kernel = shell.user_ns["double_it"]
    assert kernel.qualified_name == "math::double_it"
    assert kernel.symbol.startswith("_ZN4math9double_it")


def test_compile_error_raises_compile_error_with_the_editors_line(shell, capsys):
    with pytest.raises(xcuda.CompileError) as error:
        shell.run_cell_magic("cuda", "", 'extern "C" __global__ void broken(int* x)\n{\n  x[0] = missing_name;\n}\n')
    # Line 4 as the editor counts it: the %%cuda line is line 1.
    message = str(error.value)
    count = shell.execution_count  # the cell's In[N]: how IPython names it
    assert message == (f'1 error in Cell In[{count}], line 4, column 10: identifier "missing_name" is undefined '
                       "(shown above)")
    assert "cell(4): error" in error.value.log
    assert error.value.diagnostics[0]["line"] == 4 and error.value.diagnostics[0]["column"] == 10
    assert any(option.startswith("--gpu-architecture=") for option in error.value.options)
    shown = capsys.readouterr().out  # the diagnostics' text/plain, displayed once before the error
    assert shown.rstrip("\n") == (f'Cell In[{count}]\nline 4, column 10: error: identifier "missing_name" is undefined\n'
                                  "      x[0] = missing_name;\n             ^")


def test_the_api_compile_error_keeps_its_full_message(shell):
    with pytest.raises(xcuda.CompileError) as error:
        xcuda.compile('extern "C" __global__ void broken(int* x) { x[0] = missing_name; }\n')
    message = str(error.value)
    assert "cell(1): error" in message and "--gpu-architecture=" in message
    # IPython shows it as the whole message, without frames (no cell ran it here: no cell lines).
    assert error.value._render_traceback_() == ("CompileError: " + message).split("\n")


def test_the_shell_keeps_working_after_a_compile_error(shell):
    result = run(shell, '%%cuda\nthis is not C++\n')
    assert not result.success and isinstance(result.error_in_exec, xcuda.CompileError)
    assert run(shell, "1 + 1").result == 2


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("--arch", "needs a value"),
        ("--arch gpu9", "sm_XX"),
        ("--name 9lives", "identifier"),
        ("saxpy", "unexpected word"),
    ],
)
def test_bad_magic_options_raise_usage_errors(shell, line, fragment):
    with pytest.raises(UsageError, match=fragment):
        shell.run_cell_magic("cuda", line, SAXPY)


def test_an_empty_cell_is_a_usage_error(shell):
    with pytest.raises(UsageError, match="empty"):
        shell.run_cell_magic("cuda", "", "  \n")


def test_defines_and_raw_options_reach_nvrtc(shell):
    shell.run_cell_magic("cuda", "--name defs -DWIDTH=3 -- -maxrregcount=32",
                         '#if WIDTH != 3\n#error WIDTH missing\n#endif\nextern "C" __global__ void k(int* x) {}\n')
    module = shell.user_ns["defs"]
    assert "--define-macro=WIDTH=3" in module.options
    assert "-maxrregcount=32" in module.options


def test_template_kernels_are_listed_but_not_launchable(shell):
    shell.run_cell_magic("cuda", "", "template <typename T> __global__ void tmpl(T* x, int n) {}\n")
    kernel = shell.user_ns["tmpl"]
    assert kernel.is_template
    with pytest.raises(TypeError, match="template"):
        kernel[1, 1](np.zeros(1, np.float32), 1)


def test_cuda_info_and_status_display_without_a_gpu(shell, capsys):
    shell.run_line_magic("cuda_info", "")
    shell.run_line_magic("cuda_status", "")
    out = capsys.readouterr().out
    assert "NVRTC" in out and "Modules" in out


def test_cuda_timeit_needs_a_launch_expression(shell):
    with pytest.raises(UsageError, match="expected a launch"):
        shell.run_line_magic("cuda_timeit", "saxpy")


def test_device_output_waiting_is_written_before_the_cells_result(shell, capsys, monkeypatch):
    """The displayhook waits for launches whose printf output is pending (xcuda._flush_device_output) before
    IPython shows Out[N], so the output comes before the result, not after it (the end-of-cell flush)."""
    flushes = []

    def flush():
        flushes.append(1)
        print("DEVICE OUTPUT")

    monkeypatch.setattr(xcuda, "_flush_device_output", flush)
    capsys.readouterr()
    shell.run_cell("'the result'", store_history=True)
    out = capsys.readouterr().out
    assert out.index("DEVICE OUTPUT") < out.index("'the result'"), out
    flushes.clear()
    shell.run_cell("x_without_result = 1", store_history=True)  # no result: only the end-of-cell flush
    assert len(flushes) == 1
