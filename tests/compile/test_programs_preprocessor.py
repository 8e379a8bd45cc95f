"""The second set of programs (issue 25, item 8; tests/compile/programs_preprocessor/preprocessor_programs.py): every
parameter typed as the compiler sees it without a GPU (the layout probe agreeing), each program run as
its host code would on a GPU (gpu) and on the PTX simulator, and the whole program through
%%cuda_program. Run as a script (`programs_preprocessor.py NAME` below) it is the simulator's child."""
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "programs_preprocessor"))
from preprocessor_programs import PROGRAMS, WHOLE_PROGRAM, whole_program_expected_sum  # noqa: E402
from pasted_programs import paste  # noqa: E402  (tests/pasted_programs.py)


def kernels_of(ns):
    found = {}
    for value in list(ns.values()):
        kernels = getattr(value, "kernels", None)
        if isinstance(kernels, dict):
            found.update(kernels)
        elif type(value).__name__ == "Kernel":
            found[value.name] = value
    return found


def check(results):
    for name, got, expected in results:
        got = np.asarray(got)
        expected = np.asarray(expected)
        assert got.shape == expected.shape, name
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-4 * max(1.0, float(np.abs(expected).max())),
                                   err_msg=name)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_parameter_is_typed_as_the_compiler_sees_it(shell, program):
    shell.user_ns.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paste(shell, program, arch="compute_80")
    kernels = kernels_of(shell.user_ns)
    assert set(program.expect) <= set(kernels), f"{program.name}: {sorted(kernels)}"
    for name, expected in program.expect.items():
        parameters = kernels[name].parameters
        assert len(parameters) == len(expected), name
        for parameter, want in zip(parameters, expected):
            assert parameter["refusal"] is None, f"{name}: {parameter}"
            dtype = parameter["dtype"]
            assert dtype is not None, f"{name}: {parameter} has no dtype"
            if isinstance(want, tuple):
                itemsize, offsets = want
                assert dtype.itemsize == itemsize, f"{name}.{parameter['name']}: {dtype}"
                assert {f: dtype.fields[f][1] for f in offsets} == offsets, f"{name}.{parameter['name']}: {dtype}"
            else:
                assert dtype == np.dtype(want), f"{name}.{parameter['name']}: {dtype}"
            if not parameter["pointer"]:
                assert parameter["size"] == dtype.itemsize, f"{name}: {parameter}"


def test_the_programs_cover_what_the_items_list():
    text = "\n".join(source for p in PROGRAMS for _, source in p.cells + p.headers)
    for feature in ("#ifdef DOUBLE_PRECISION", "#ifdef __CUDACC__", "__CUDA_ARCH__ >= 700", "defined(__CUDACC_RTC__)",
                    "#ifndef RADIUS", "#elif TAPS", "struct Matrix", "Matrix<float> A", "Vec<T> scale", "geo::Range<float>"):
        assert feature in text, feature
    assert "int main(" in WHOLE_PROGRAM and "<<<" in WHOLE_PROGRAM
    assert len(PROGRAMS) + 1 >= 6


@pytest.mark.gpu
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_runs_as_its_host_code_would(shell, program):
    shell.user_ns.clear()
    paste(shell, program)
    check(program.run(shell.user_ns))


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_runs_on_the_simulator(build_dir, program):
    library = build_dir / "python" / "xcuda" / "libxcuda-sim.so"
    if not library.exists():
        pytest.fail(f"{library} was not built: it is a target of the main build (xcuda_sim_driver)")
    env = dict(os.environ)
    for variable in ("XCUDA_LIBCUDA", "XCUDA_SIM_MAX_STEPS"):
        env.pop(variable, None)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), str(HERE.parent), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(Path(__file__)), program.name], capture_output=True, text=True,
                         timeout=600, env=env)
    assert ran.returncode == 0, f"{program.name} failed on the simulator:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"program held: {program.name}" in ran.stdout


NVCC = next((p for p in [os.environ.get("CUDA_HOME", "") + "/bin/nvcc", "/usr/local/cuda/bin/nvcc",
                         shutil.which("nvcc") or ""] if p and os.access(p, os.X_OK)), None)


@pytest.mark.skipif(NVCC is None, reason="no nvcc here: %%cuda_program compiles with it")
def test_the_whole_program_runs_through_cuda_program(shell, capsys):
    import xcuda
    from conftest import HAS_GPU

    if HAS_GPU:
        shell.run_cell_magic("cuda_program", "2000", WHOLE_PROGRAM)
        out, _ = capsys.readouterr()
        assert "adding 2000 elements" in out and "PASSED" in out
        assert f"sum {whole_program_expected_sum(2000):.1f}" in out
    else:
        # The host part runs; the CUDA runtime's own error is what the program prints, exit status 2.
        with pytest.raises(xcuda.ProgramError, match=r"status 2") as caught:
            shell.run_cell_magic("cuda_program", "2000", WHOLE_PROGRAM)
        assert caught.value.returncode == 2
        out, err = capsys.readouterr()
        assert "adding 2000 elements" in out and "cudaMalloc: " in err
    # The same cell under %%cuda says at once that it wants %%cuda_program.
    with pytest.raises(xcuda.CompileError) as caught:
        shell.run_cell_magic("cuda", "--arch compute_80", WHOLE_PROGRAM)
    assert "whole CUDA program" in caught.value.diagnostics[0]["message"]


@pytest.mark.gpu
@pytest.mark.skipif(NVCC is None, reason="no nvcc here: %%cuda_program compiles with it")
def test_the_whole_program_passes_on_the_gpu(shell, capsys):
    shell.run_cell_magic("cuda_program", "", WHOLE_PROGRAM)
    out, _ = capsys.readouterr()
    assert "adding 1024 elements" in out and "PASSED" in out and f"sum {whole_program_expected_sum(1024):.1f}" in out


def _simulator_child(name):
    """Pastes program `name` into a fresh shell and runs it (XCUDA_DEVICE=simulator set by the parent)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    program = next(p for p in PROGRAMS if p.name == name)
    paste(shell, program)
    check(program.run(shell.user_ns))
    print(f"program held: {name}")


if __name__ == "__main__":
    _simulator_child(sys.argv[1])
