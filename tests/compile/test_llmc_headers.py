"""Host code in the user's own headers, included by relative path or from a -I folder, is set aside as the cell's
is (docs/pasting-real-cuda.md): llm.c's llmc/utils.h, tokenizer.h and dataloader.h beside its kernels, and the
bf16 path of train_gpt2.cu (llmc/cuda_common.h with NVTX, cuda_utils.cuh's Packed128, the encoder, LayerNorm,
residual and GELU kernels in bf16). The llm.c files are in tests/compile/programs4/llmc_repo, written after the
published ones (karpathy/llm.c, MIT: llmc_repo/LICENSE); the cells run with that folder as the working
directory, as a notebook beside the repo would. Without a GPU: compiles, warnings, errors located in headers,
stand-ins; the gpu tests run the bf16 kernels against numpy (on the PTX simulator in CI:
tests/simulator/test_round2_on_the_simulator.py)."""
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs3"))
sys.path.insert(0, str(Path(__file__).resolve().parent / "programs4"))
from family_programs import LLMC_REPO  # noqa: E402

# A header with what llm.c's have: host types from POSIX headers, a host variable, host functions, a main (a test
# harness left in), and device code that a kernel of the cell uses. Line numbers matter: see the tests.
LOADER = """#pragma once
#include <stdio.h>
#include <glob.h>
typedef struct { glob_t found; FILE* file; } Loader;
int loader_count = 0;
void loader_open(Loader* l, const char* pattern) {
    glob(pattern, 0, NULL, &l->found);
    l->file = fopen(l->found.gl_pathv[0], "rb");
}
int main(int argc, char** argv) { return argc; }
__device__ float twice(float x) { return 2 * x; }
"""
CELL = ('#include "lib/loader.h"\n'
        'extern "C" __global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = twice(x[i]); }\n')


def _xcuda():
    import xcuda

    return xcuda


def write(folder, files):
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def test_a_headers_host_function_variable_and_main_are_set_aside_and_its_device_code_stays(tmp_path, monkeypatch):
    xcuda = _xcuda()
    write(tmp_path, {"lib/loader.h": LOADER})
    monkeypatch.chdir(tmp_path)
    module = xcuda.compile(CELL, arch="compute_80")
    assert ".entry k" in module.ptx and "add.f32" in module.ptx  # twice(), inlined: 2 * x as x + x
    warning = next(line for line in module.log.splitlines() if "set aside from this header" in line)
    assert warning.startswith("lib/loader.h(5): warning: host code set aside from this header (3: "), warning
    for name in ("loader_count", "loader_open", "main"):
        assert name in warning


def test_an_error_in_a_header_keeps_its_line_after_the_set_aside(tmp_path, monkeypatch):
    # The set-aside blanks code and keeps every newline: the error is still on line 12 of the header.
    xcuda = _xcuda()
    write(tmp_path, {"lib/loader.h": LOADER + "__device__ float broken(float x) { return x + undefined_name; }\n"})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(xcuda.CompileError) as caught:
        xcuda.compile(CELL, arch="compute_80")
    located = [(d["file"], d["line"]) for d in caught.value.diagnostics if "undefined_name" in d["message"]]
    assert located == [("lib/loader.h", 12)], caught.value.diagnostics
    assert "host functions are not allowed" not in caught.value.log


def test_a_kernel_calling_a_headers_host_function_still_gets_nvrtcs_refusal(tmp_path, monkeypatch):
    xcuda = _xcuda()
    write(tmp_path, {"lib/loader.h": LOADER})
    monkeypatch.chdir(tmp_path)
    cell = '#include "lib/loader.h"\n__global__ void k(Loader* l) { loader_open(l, "*.bin"); }\n'
    with pytest.raises(xcuda.CompileError, match="host functions are not allowed"):
        xcuda.compile(cell, arch="compute_80")


def test_a_header_of_an_include_folder_is_set_aside_too(tmp_path, monkeypatch):
    xcuda = _xcuda()
    write(tmp_path, {"inc/lib/loader.h": LOADER})
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    module = xcuda.compile(CELL, arch="compute_80", include_dirs=[str(tmp_path / "inc")])
    assert f"{tmp_path}/inc/lib/loader.h(5): warning: host code set aside" in module.log


def test_an_include_inside_a_header_is_found_in_that_headers_folder_first(tmp_path, monkeypatch):
    # llmc/dataloader.h's #include "utils.h" is llmc/utils.h, not a utils.h of the cell's folder: the set-aside
    # copies handed to NVRTC keep the lookup nvcc's preprocessor makes.
    xcuda = _xcuda()
    write(tmp_path, {
        "utils.h": "#error the cell's folder was searched before the includer's\n",
        "llmc/utils.h": "#pragma once\n#define FROM_LLMC 3\nint utils_host_variable;\n",
        "llmc/dataloader.h": '#pragma once\n#include "utils.h"\nvoid dataloader_host() {}\n',
    })
    monkeypatch.chdir(tmp_path)
    cell = '#include "llmc/dataloader.h"\nextern "C" __global__ void k(int* x) { x[0] = FROM_LLMC; }\n'
    module = xcuda.compile(cell, arch="compute_80")
    assert "llmc/utils.h(3): warning: host code set aside from this header (1: utils_host_variable)" in module.log
    assert "llmc/dataloader.h(3): warning: host code set aside" in module.log


def test_a_cells_relative_includes_follow_the_notebooks_working_directory(shell, tmp_path, monkeypatch):
    # %%cuda compiles in the long-lived helper xcuda-compile: started from one folder, it compiles from the one the
    # notebook is in at each cell (%cd, os.chdir).
    shell.user_ns.clear()
    for name, value in (("first", 1234511), ("second", 2234522)):
        write(tmp_path / name, {"llmc/values.h": f"#pragma once\n#define VALUE {value}\nint host_count;\n"})
        monkeypatch.chdir(tmp_path / name)
        shell.run_cell_magic("cuda", "--arch compute_80",
                             '#include "llmc/values.h"\nextern "C" __global__ void k(int* x) { x[0] = VALUE; }\n')
        assert str(value) in shell.user_ns["k"].module.ptx


def test_editing_a_header_beside_the_notebook_compiles_the_cell_again(tmp_path, monkeypatch):
    # NVRTC reads llmc/utils.h from disk: its text is part of the compile cache key, as a header cell's is.
    xcuda = _xcuda()
    monkeypatch.chdir(tmp_path)
    cell = '#include "llmc/utils.h"\nextern "C" __global__ void k(int* x) { x[0] = VALUE; }\n'
    for value in (1234567, 7654321):
        write(tmp_path, {"llmc/utils.h": f"#pragma once\n#define VALUE {value}\nvoid host_side() {{}}\n"})
        assert str(value) in xcuda.compile(cell, arch="compute_80").ptx


@pytest.mark.parametrize("header", ["glob.h", "sys/stat.h", "dirent.h", "nvtx3/nvToolsExt.h"])
def test_a_users_include_folder_header_named_like_a_stand_in_wins(tmp_path, header):
    xcuda = _xcuda()
    write(tmp_path, {header: "#pragma once\n#define USERS_OWN 1\n"})
    source = (f"#include <{header}>\n#ifndef USERS_OWN\n#error the stand-in was taken\n#endif\n"
              "__global__ void k(int* x) { x[0] = USERS_OWN; }\n")
    assert ".entry" in xcuda.compile(source, arch="compute_80", include_dirs=[str(tmp_path)]).ptx
    with pytest.raises(xcuda.CompileError, match="the stand-in was taken"):
        xcuda.compile(source, arch="compute_80")


def test_the_posix_stand_ins_declare_the_types_host_code_names():
    xcuda = _xcuda()
    source = ("#include <sys/stat.h>\n#include <sys/types.h>\n#include <dirent.h>\n#include <glob.h>\n"
              "#include <stdio.h>\n#include <nvtx3/nvToolsExt.h>\n#include <cuda_profiler_api.h>\n"
              "struct files { struct stat st; DIR* dir; struct dirent* entry; glob_t found; FILE* file; mode_t mode; };\n"
              "__global__ void k(int* x) { x[0] = S_ISDIR(0040000) + SEEK_END + (int)sizeof(files); nvtxRangePop(); }\n")
    assert ".entry" in xcuda.compile(source, arch="compute_80").ptx


def test_two_threads_set_aside_headers_at_once(tmp_path):
    xcuda = _xcuda()
    results, errors = {}, []

    def compile_in(name):
        try:
            write(tmp_path / name, {"lib/loader.h": LOADER.replace("loader_count", f"count_{name}")})
            module = xcuda.compile(CELL, arch="compute_80", include_dirs=[str(tmp_path / name)])
            results[name] = module.log
        except Exception as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=compile_in, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for name in ("a", "b"):
        assert f"count_{name}" in results[name] and f"count_{'b' if name == 'a' else 'a'}" not in results[name]


# ---- llm.c's mixed-precision train_gpt2.cu: the bf16 kernels with their headers ------------------------------
BF16_KERNELS = {"encoder_forward_kernel3", "layernorm_forward_kernel3", "residual_forward_kernel",
                "gelu_forward_kernel2"}


@pytest.fixture
def beside_the_repo(shell, monkeypatch):
    monkeypatch.chdir(LLMC_REPO)
    shell.user_ns.clear()
    return shell


def paste_train_gpt2(shell, arch=None):
    shell.run_cell_magic("cuda", f"--arch {arch}" if arch else "", (LLMC_REPO / "train_gpt2.cu").read_text())
    return shell.user_ns


def test_train_gpt2_cu_compiles_as_pasted_and_its_floatx_parameters_are_bfloat16(beside_the_repo, capsys):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    ns = paste_train_gpt2(beside_the_repo, arch="compute_80")
    assert BF16_KERNELS <= set(ns), sorted(ns)
    assert ns["encoder_forward_kernel3"].parameters[0]["dtype"] == np.dtype(ml_dtypes.bfloat16)
    assert ns["layernorm_forward_kernel3"].parameters[1]["dtype"] == np.dtype(np.float32)
    shown = capsys.readouterr().out
    for header, names in (("llmc/utils.h", "fopen_check"), ("llmc/cuda_common.h", "~NvtxRange"),
                          ("llmc/dataloader.h", "dataloader_init"), ("llmc/layernorm.cuh", "residual_forward")):
        assert header in shown and names in shown, shown


def bf16(values):
    import ml_dtypes

    return np.asarray(values, np.float32).astype(ml_dtypes.bfloat16)


def run_bf16_kernels(ns, xcuda):
    """The launches llm.c's launchers make (their block sizes, x128::size = 8 elements a thread), and numpy's."""
    batch, t, c, vocab = 2, 16, 64, 20  # B * T * C = 2048: residual_forward's 256 threads x 8, exactly
    rng = np.random.default_rng(45)
    n = batch * t * c
    tokens = rng.integers(0, vocab, (batch, t), dtype=np.int32)
    wte, wpe = bf16(rng.standard_normal((vocab, c))), bf16(rng.standard_normal((t, c)))
    out = xcuda.zeros((batch, t, c), wte.dtype)
    ns["encoder_forward_kernel3"][-(-n // (256 * 8)), 256](out, xcuda.to_device(tokens), xcuda.to_device(wte),
                                                           xcuda.to_device(wpe), batch, t, c)
    found = [("encoder_forward_kernel3", out.copy_to_host(),
              bf16(wte.astype(np.float32)[tokens] + wpe.astype(np.float32)[None]))]
    x, y = bf16(rng.standard_normal((batch, t, c))), bf16(rng.standard_normal((batch, t, c)))
    out = xcuda.zeros((batch, t, c), x.dtype)
    ns["residual_forward_kernel"][n // (256 * 8), 256](out, xcuda.to_device(x), xcuda.to_device(y))
    found.append(("residual_forward_kernel", out.copy_to_host(), bf16(x.astype(np.float32) + y.astype(np.float32))))
    g = bf16(rng.standard_normal(4096) * 3)  # gelu_forward's 512 threads x 8
    out = xcuda.zeros(4096, g.dtype)
    ns["gelu_forward_kernel2"][1, 512](out, xcuda.to_device(g))
    g64 = g.astype(np.float64)
    found.append(("gelu_forward_kernel2", out.copy_to_host(),
                  0.5 * g64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (g64 + 0.044715 * g64 ** 3)))))
    weight, bias = bf16(rng.standard_normal(c)), bf16(rng.standard_normal(c))
    out, mean, rstd = xcuda.zeros((batch, t, c), x.dtype), xcuda.zeros(batch * t, np.float32), xcuda.zeros(
        batch * t, np.float32)
    ns["layernorm_forward_kernel3"][-(-batch * t * 32 // 256), 256](
        out, mean, rstd, xcuda.to_device(x), xcuda.to_device(weight), xcuda.to_device(bias), batch * t, c)
    x64 = x.astype(np.float64)
    m, s = x64.mean(axis=-1), 1 / np.sqrt(x64.var(axis=-1) + 1e-5)
    found += [("layernorm mean", mean.copy_to_host(), m.ravel()), ("layernorm rstd", rstd.copy_to_host(), s.ravel()),
              ("layernorm_forward_kernel3", out.copy_to_host(),
               (x64 - m[..., None]) * s[..., None] * weight.astype(np.float64) + bias.astype(np.float64))]
    return found


@pytest.mark.gpu
def test_the_bf16_kernels_of_train_gpt2_cu_match_numpy(beside_the_repo):
    pytest.importorskip("ml_dtypes")
    xcuda = _xcuda()
    ns = paste_train_gpt2(beside_the_repo)
    for name, got, expected in run_bf16_kernels(ns, xcuda):
        got, expected = np.asarray(got).astype(np.float64), np.asarray(expected).astype(np.float64)
        if name in ("encoder_forward_kernel3", "residual_forward_kernel"):
            # one float sum of two bf16 values rounded to bf16 (round to nearest even), as ml_dtypes rounds it
            np.testing.assert_array_equal(got, expected, err_msg=name)
        elif name in ("layernorm mean", "layernorm rstd"):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            # a bf16 result keeps 8 significant bits: within 2^-8 relative of the exact value, plus float's error
            np.testing.assert_allclose(got, expected, rtol=2.0 ** -7, atol=1e-2, err_msg=name)
