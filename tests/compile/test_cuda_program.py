"""%%cuda_program (issue 25, item 7): a whole CUDA program compiled by nvcc and run as a process, its
output streamed into the cell, with arguments, nvcc options, the exit status, an interrupt that kills
it, --profile / --sanitize, and one clear message without nvcc; and a %%cuda cell holding a whole
program that says so in its first error, and <stdio.h> accepted there for device printf."""
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import xcuda
from conftest import HAS_GPU

NVCC = next((p for p in [os.environ.get("CUDA_HOME", "") + "/bin/nvcc", "/usr/local/cuda/bin/nvcc",
                         shutil.which("nvcc") or ""] if p and os.access(p, os.X_OK)), None)
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc here: %%cuda_program compiles with it")

HOST_ONLY = r"""#include <stdio.h>
int main(int argc, char** argv) {
    printf("host says %d\n", argc - 1);
    for (int i = 1; i < argc; ++i) printf("[%s]\n", argv[i]);
    fprintf(stderr, "a line on stderr\n");
    return 0;
}
"""


@needs_nvcc
def test_a_host_program_runs_with_its_arguments(shell, capsys):
    shell.run_cell_magic("cuda_program", "--args '-n 100' out.txt", HOST_ONLY)
    out, err = capsys.readouterr()
    assert "host says 3\n[-n]\n[100]\n[out.txt]\n" in out
    assert "a line on stderr" in err


@needs_nvcc
def test_nvcc_options_pass_through(shell, capsys):
    source = ("#include <cstdio>\nint main() {\n#ifdef GREETING\n  printf(\"%s\\n\", GREETING);\n#endif\n"
              "  printf(\"std %ld\\n\", __cplusplus);\n  return 0;\n}\n")
    shell.run_cell_magic("cuda_program", "-std=c++20 -DGREETING='\"hi\"'", source)
    out, _ = capsys.readouterr()
    assert "hi\n" in out and "std 202002" in out


@needs_nvcc
def test_a_pasted_compile_line_gives_nvcc_its_option_values_and_the_program_its_arguments(shell, capsys, tmp_path):
    (tmp_path / "greeting.h").write_text('#define GREETING "from the header"\n')
    source = ('#include <cstdio>\n#include "greeting.h"\n'
              'int main(int argc, char** argv) {\n  printf("%s\\n", GREETING);\n'
              '  for (int i = 1; i < argc; ++i) printf("[%s]\\n", argv[i]);\n  return 0;\n}\n')
    # -I and its folder as two words, as in a compile line; 42 is the program's.
    shell.run_cell_magic("cuda_program", f"-I {tmp_path} -O2 42", source)
    out, _ = capsys.readouterr()
    assert "from the header\n[42]\n" in out, out


@needs_nvcc
def test_a_non_zero_exit_status_is_a_program_error(shell, capsys):
    with pytest.raises(xcuda.ProgramError, match=r"the program exited with status 7") as caught:
        shell.run_cell_magic("cuda_program", "", "#include <cstdio>\nint main() { printf(\"bye\\n\"); return 7; }\n")
    assert caught.value.returncode == 7
    assert "bye" in capsys.readouterr().out


@needs_nvcc
def test_an_nvcc_error_is_a_compile_error_naming_the_cell_line(shell):
    with pytest.raises(xcuda.CompileError, match=r"cell\(2\): error: identifier \"undefined_thing\" is undefined"):
        shell.run_cell_magic("cuda_program", "", "int main() {\n  return undefined_thing;\n}\n")


@needs_nvcc
def test_a_kernel_launch_reports_the_cuda_runtimes_own_error_without_a_gpu(shell, capsys):
    source = r"""#include <cstdio>
__global__ void hello() { printf("hello from block %d\n", blockIdx.x); }
int main() {
    hello<<<2, 1>>>();
    cudaError_t e = cudaDeviceSynchronize();
    printf("sync: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
"""
    if HAS_GPU:
        shell.run_cell_magic("cuda_program", "", source)
        out, _ = capsys.readouterr()
        assert "hello from block 0" in out and "hello from block 1" in out and "sync: no error" in out
    else:
        with pytest.raises(xcuda.ProgramError, match=r"status 1"):
            shell.run_cell_magic("cuda_program", "", source)
        out, _ = capsys.readouterr()
        assert "sync: " in out and "sync: no error" not in out  # the runtime's words, whatever they are


@needs_nvcc
def test_output_is_streamed_while_the_program_runs(shell, tmp_path, monkeypatch):
    # The program prints a line, then waits (up to 60 s) for a file that the cell's stdout creates once that
    # line has reached it: without streaming, the line would come only after the program ended.
    flag = tmp_path / "seen"
    seen = []

    class Recorder:
        def write(self, text):
            seen.append(text)
            if "first" in "".join(seen):
                flag.touch()
            return len(text)

        def flush(self):
            pass

    source = r"""#include <cstdio>
#include <unistd.h>
int main(int argc, char** argv) {
    printf("first\n"); fflush(stdout);
    for (int i = 0; i < 6000 && access(argv[1], F_OK) != 0; ++i) usleep(10000);
    printf(access(argv[1], F_OK) == 0 ? "second\n" : "never streamed\n");
    return 0;
}
"""
    monkeypatch.setattr(sys, "stdout", Recorder())
    shell.run_cell_magic("cuda_program", str(flag), source)
    monkeypatch.undo()
    text = "".join(seen)
    assert "first\nsecond\n" in text and "never streamed" not in text


@needs_nvcc
def test_an_interrupt_kills_the_program(shell, tmp_path):
    # Python's own SIGINT handler, as in a notebook: a test run started in the background (`cmd &` in a
    # script) inherits SIGINT ignored, and the interrupt below would then never arrive (the test hung).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_kills_the_program(shell, tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt_kills_the_program(shell, tmp_path):
    pid_file = tmp_path / "pid"
    source = r"""#include <cstdio>
#include <unistd.h>
int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "w"); fprintf(f, "%d", (int)getpid()); fclose(f);
    for (;;) sleep(1);
}
"""

    def interrupt_once_running():
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text():
                break
            threading.Event().wait(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_running, daemon=True).start()
    with pytest.raises(KeyboardInterrupt, match=r"the program was interrupted"):
        shell.run_cell_magic("cuda_program", str(pid_file), source)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_without_nvcc_one_message_names_what_to_install(shell, monkeypatch):
    monkeypatch.setenv("XCUDA_NVCC", "/nonexistent/nvcc")
    with pytest.raises(xcuda.ToolNotFoundError, match=r"%%cuda_program needs nvcc.*Install the CUDA toolkit"):
        shell.run_cell_magic("cuda_program", "", HOST_ONLY)


def tool_found(name):
    return any(os.access(p, os.X_OK) for p in [os.environ.get("CUDA_HOME", "") + "/bin/" + name,
                                               "/usr/local/cuda/bin/" + name, shutil.which(name) or ""] if p)


@needs_nvcc
def test_profile_and_sanitize_without_their_tools_say_what_is_missing(shell):
    if tool_found("ncu") or tool_found("nsys") or tool_found("compute-sanitizer"):
        pytest.skip("a profiler or compute-sanitizer is installed here: the gpu tests run them")
    with pytest.raises(xcuda.ToolNotFoundError, match=r"--profile needs ncu \(Nsight Compute\) or nsys"):
        shell.run_cell_magic("cuda_program", "--profile", HOST_ONLY)
    with pytest.raises(xcuda.ToolNotFoundError, match=r"--sanitize needs compute-sanitizer"):
        shell.run_cell_magic("cuda_program", "--sanitize --tool racecheck", HOST_ONLY)


def test_option_mistakes_are_usage_errors(shell):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match=r"--profile and --sanitize"):
        shell.run_cell_magic("cuda_program", "--profile --sanitize", HOST_ONLY)
    with pytest.raises(UsageError, match=r"--tool needs memcheck"):
        shell.run_cell_magic("cuda_program", "--sanitize --tool nothing", HOST_ONLY)
    with pytest.raises(UsageError, match=r"the cell is empty"):
        shell.run_cell_magic("cuda_program", "", "\n")
    # nvcc options that would build something else than the program the magic runs (pasted compile lines).
    with pytest.raises(UsageError, match=r"nvcc's -o names the output file, which %%cuda_program chooses itself"):
        shell.run_cell_magic("cuda_program", "-O2 -o saxpy", HOST_ONLY)
    with pytest.raises(UsageError, match=r"nvcc's -c makes no program for %%cuda_program to run"):
        shell.run_cell_magic("cuda_program", "-c", HOST_ONLY)


@pytest.mark.gpu
@needs_nvcc
def test_a_program_runs_under_compute_sanitizer_on_the_gpu(shell, capsys):
    if not tool_found("compute-sanitizer"):
        pytest.skip("compute-sanitizer is not installed on this GPU host")
    source = r"""#include <cstdio>
__global__ void fill_ids(int* x) { x[threadIdx.x] = threadIdx.x; }
int main() {
    int* d; cudaMalloc(&d, 32 * sizeof(int)); fill_ids<<<1, 32>>>(d); cudaDeviceSynchronize();
    int h[32]; cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost); printf("h[31]=%d\n", h[31]);
    cudaFree(d); return 0;
}
"""
    shell.run_cell_magic("cuda_program", "--sanitize", source)
    out, err = capsys.readouterr()
    assert "h[31]=31" in out and "ERROR SUMMARY: 0 errors" in out + err


# ---- %%cuda and whole programs ----

NVCC4JUPYTER_STYLE = r"""#include <stdio.h>

__global__ void hello() { printf("Hello from block %d\n", blockIdx.x); }

int main() {
    hello<<<2, 1>>>();
    cudaDeviceSynchronize();
    return 0;
}
"""


def test_a_cuda_cell_holding_a_whole_program_says_so_in_its_first_error():
    with pytest.raises(xcuda.CompileError) as caught:
        xcuda.compile(NVCC4JUPYTER_STYLE, arch="compute_80")
    first = caught.value.diagnostics[0]
    assert first["line"] == 5 and "whole CUDA program (a main() function)" in first["message"]
    assert "%%cuda_program" in first["hint"]
    assert str(caught.value).startswith("line 5: this cell is a whole CUDA program.")
    # A launch in a host helper beside the kernels (no main) is host code a cell sets aside, as nvcc would
    # compile it for the host (tests/compile/test_host_code.py): the kernel is there to launch from Python.
    module = xcuda.compile('__global__ void k() {}\nvoid run() { k<<<1, 1>>>(); }\n', arch="compute_80")
    assert "k" in module.kernels


def test_a_main_in_a_comment_is_not_a_whole_program():
    with pytest.raises(xcuda.CompileError) as caught:
        xcuda.compile("// int main() { k<<<1, 1>>>(); }\n__global__ void k() { undefined_thing; }\n", arch="compute_80")
    assert "whole CUDA program" not in str(caught.value)


def test_stdio_h_and_cstdio_are_accepted_for_device_printf():
    m = xcuda.compile('#include <stdio.h>\n#include <cstdio>\n#include <assert.h>\n#include <cassert>\n'
                      'extern "C" __global__ void k(int n) { assert(n > 0); printf("n=%d\\n", n); }\n',
                      arch="compute_80")
    assert m.k.parameters[0]["dtype"] == np.int32
    # A header cell of that name is the cell's own.
    xcuda.set_header("stdio.h", "#pragma once\n#define FROM_HEADER_CELL 1\n")
    try:
        m = xcuda.compile('#include "stdio.h"\n#if FROM_HEADER_CELL\ntypedef double T;\n#else\ntypedef int T;\n#endif\n'
                          'extern "C" __global__ void k(T x) {}\n', arch="compute_80")
        assert m.k.parameters[0]["dtype"] == np.float64
    finally:
        xcuda.remove_header("stdio.h")  # a header cell named stdio.h would hide the stand-in from later tests
