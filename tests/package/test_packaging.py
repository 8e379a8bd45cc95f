"""What the build links and where the module finds NVRTC and the driver at run time.

Nothing may need libcuda.so.1 (the module must load on a machine without a driver) or libnvrtc
(it is found at run time: the toolkit, $CUDA_HOME, the loader path or NVIDIA's wheel). CMake's
CUDA::nvrtc used to bring the toolkit's stub libcuda.so into the link, which only a linker that
defaults to --as-needed drops; these tests read the ELF files' DT_NEEDED entries themselves.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD, REPO

NVRTC = Path("/usr/local/cuda/lib64/libnvrtc.so.13")
SAXPY = r'''extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }'''


def needed(path):
    """The DT_NEEDED entries of an ELF file, read with binutils' readelf."""
    readelf = shutil.which("readelf")
    assert readelf, "readelf (binutils, part of build-essential) is needed to read DT_NEEDED"
    out = subprocess.run([readelf, "-d", "-W", str(path)], check=True, capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line]


def built_binary(name):
    """The build's extension module (xcuda/_core), C++ test binary, kernel executable, xcuda-replay,
    xcuda-compile or the PTX simulator (in the package folder, beside the extension); None when not built."""
    package = BUILD / "python" / "xcuda"
    if name == "module":
        module = sorted(package.glob("_core*.so"))
        assert module, f"no xcuda/_core extension in {package}: build first (bash .ci/setup)"
        return module[0]
    if name in ("replay", "compile worker", "simulator"):
        program = package / {"replay": "xcuda-replay", "compile worker": "xcuda-compile",
                             "simulator": "libxcuda-sim.so"}[name]
        assert program.exists(), f"no {program.name} beside the extension in {package}: it is built with it"
        return program
    path = BUILD / "bin" / {"xcuda_core_tests": "xcuda_core_tests", "kernel": "xcuda"}[name]
    return path if path.exists() else None


def assert_links_neither_driver_nor_nvrtc(path):
    entries = needed(path)
    assert entries, f"{path} has no DT_NEEDED entries at all: not a dynamic ELF file?"
    bad = [e for e in entries if e.startswith(("libcuda.so", "libnvrtc"))]
    assert not bad, f"{path.name} needs {bad}; the driver and NVRTC must be loaded at run time (all: {entries})"


@pytest.mark.parametrize("name", ["module", "xcuda_core_tests", "kernel", "replay", "compile worker", "simulator"])
def test_built_binaries_need_neither_libcuda_nor_libnvrtc(name):
    path = built_binary(name)
    if path is None:
        pytest.skip(f"{name} was not built in {BUILD} (XCUDA_BUILD_TESTS / XCUDA_BUILD_KERNEL off)")
    assert_links_neither_driver_nor_nvrtc(path)


def run_python(code, env_changes, cwd=None, python=sys.executable):
    env = {k: v for k, v in os.environ.items() if k not in ("XCUDA_NVRTC", "CUDA_HOME", "CUDA_PATH")}
    env.update(env_changes)
    result = subprocess.run([python, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return result


LIBRARY_INFO = "import json, xcuda; print(json.dumps(xcuda.nvrtc_library()))"


def test_a_missing_nvrtc_fails_the_compile_saying_where_it_looked_and_the_module_still_loads():
    # A library that is not NVRTC, named explicitly: the module imports, a compile says why not.
    code = (
        "import xcuda, json\n"
        "info = xcuda.nvrtc_library()\n"
        "try:\n"
        f"    xcuda.compile({SAXPY!r})\n"
        "except xcuda.ToolNotFoundError as e:\n"
        "    print(json.dumps({'info': info, 'error': str(e)}))\n"
    )
    result = run_python(code, {"XCUDA_NVRTC": "/lib/x86_64-linux-gnu/libm.so.6"})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["info"]["path"] is None
    # One line: what XCUDA_NVRTC names is not NVRTC, and what to name instead.
    assert out["error"].startswith("XCUDA_NVRTC=/lib/x86_64-linux-gnu/libm.so.6: /lib/x86_64-linux-gnu/libm.so.6 "
                                   "is not NVRTC 12 or 13 (it lacks nvrtcGetErrorString"), out["error"]
    assert "Name a libnvrtc.so.13 or libnvrtc.so.12" in out["error"] and "\n" not in out["error"]


def test_nvrtc_is_found_on_the_loader_path_or_in_the_toolkit():
    result = run_python(LIBRARY_INFO, {})
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["path"] and os.path.realpath(info["path"]) == os.path.realpath(NVRTC), info
    assert info["searched"][0].startswith("already loaded in this process: no libnvrtc.so.13"), info


def fake_toolkit(root):
    """A folder laid out like a toolkit whose lib64 holds (links to) the real NVRTC and its builtins."""
    (root / "lib64").mkdir(parents=True)
    for library in NVRTC.parent.glob("libnvrtc*.so*"):
        (root / "lib64" / library.name).symlink_to(library.resolve())
    (root / "include").symlink_to(Path("/usr/local/cuda/include").resolve())
    return root


def test_cuda_home_comes_before_the_loader_path(tmp_path):
    home = fake_toolkit(tmp_path / "toolkit")
    code = LIBRARY_INFO + f"\nimport xcuda; xcuda.compile({SAXPY!r}, name='m')"
    result = run_python(code, {"CUDA_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout.splitlines()[0])
    assert info["path"] == str(home / "lib64" / "libnvrtc.so.13"), info
    assert f"$CUDA_HOME: {home}/lib64/libnvrtc.so.13 (NVRTC 13.0)" in info["searched"], info
    assert info["searched"][-1].startswith(f"chosen: {home}/lib64/libnvrtc.so.13 (NVRTC 13.0: "), info


def test_nvrtc_from_nvidias_wheel_beside_the_module(tmp_path):
    # site-packages as pip lays it out: the module, its Python files, and nvidia-cuda-nvrtc's
    # nvidia/cu13/lib (the real library linked in). The wheel comes before the loader path.
    site = tmp_path / "site-packages"
    wheel_lib = site / "nvidia" / "cu13" / "lib"
    wheel_lib.mkdir(parents=True)
    shutil.copytree(BUILD / "python" / "xcuda", site / "xcuda", symlinks=True)
    for library in NVRTC.parent.glob("libnvrtc*.so*"):
        (wheel_lib / library.name).symlink_to(library.resolve())
    code = f"import sys; sys.path.insert(0, {str(site)!r})\n" + LIBRARY_INFO + \
        f"\nimport xcuda; assert xcuda.__file__.startswith({str(site)!r}); xcuda.compile({SAXPY!r}, name='m')"
    env = {"PYTHONPATH": ""}
    result = run_python(code, env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout.splitlines()[0])
    assert info["path"] == str(wheel_lib / "libnvrtc.so.13"), info
    assert f"NVIDIA's nvrtc wheel: {wheel_lib}/libnvrtc.so.13 (NVRTC 13.0)" in info["searched"], info
    assert info["searched"][-1].startswith(f"chosen: {wheel_lib}/libnvrtc.so.13"), info


def test_a_missing_driver_says_where_it_looked():
    code = ("import xcuda\n"
            "try:\n    xcuda.device_count()\nexcept xcuda.CudaUnavailableError as e:\n    print(e)\n")
    result = run_python(code, {"XCUDA_LIBCUDA": ""})
    assert result.returncode == 0, result.stderr
    if "no NVIDIA driver was found" not in result.stdout:
        pytest.skip(f"this machine has a driver: {result.stdout.strip()[:200]}")
    assert "looked on the loader path" in result.stdout and "/usr/local/nvidia/lib64" in result.stdout


def test_the_setup_makes_import_xcuda_work_in_the_system_python_without_pythonpath():
    """`.ci/setup` writes xcuda-build.pth into /usr/bin/python3's user site-packages, naming build/python,
    so that Debian's ipykernel (and any script) imports xcuda without PYTHONPATH."""
    import site

    pth = Path(site.getusersitepackages()) / "xcuda-build.pth"
    if not pth.exists() or pth.read_text().strip() != str(BUILD / "python"):
        why = f"{pth} does not name {BUILD / 'python'}: bash .ci/setup writes it"
        if os.environ.get("XCUDA_TEST_VENV"):  # under .ci/test the set-up ran: a missing file is a failure
            pytest.fail(why)
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    result = subprocess.run(["/usr/bin/python3", "-c", "import xcuda; print(xcuda.__file__)"], env=env,
                            capture_output=True, text=True, timeout=60, cwd="/")
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()) == BUILD / "python" / "xcuda" / "__init__.py"


@pytest.mark.parametrize("module, package", [
    ("ipyparallel", "python3-ipyparallel"),       # tests/kernel/test_engines.py, notebooks/04
    ("jupyter_server", "python3-jupyter-server"),  # tests/kernel/test_gateway.py
    ("selenium", "python3-selenium"),              # the browser tests
    ("matplotlib", "python3-matplotlib"),          # %cuda_bench and %cuda_profile plots
    ("hypothesis", "python3-hypothesis"),          # the fuzz tests
    ("dill", "python3-dill"),                      # %cuda_recover
])
def test_the_test_setup_installs_what_the_optional_tests_need(module, package):
    """Tests that need an optional package skip without it, saying so; under .ci/test, whose set-up installs
    it, its absence is a failure (a package dropped from .ci/setup once left every engine test skipping)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        why = f"{module} is not importable: bash .ci/setup --tests installs {package}"
        if os.environ.get("XCUDA_TEST_VENV"):
            pytest.fail(why)
        pytest.skip(why)
