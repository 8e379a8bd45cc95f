"""NVRTC 12 and 13: which one is chosen (XCUDA_NVRTC, the driver's version), what each compiles, and
what is said when XCUDA_NVRTC names something unusable or the driver is older than the only NVRTC.

Each case runs in a child process: the NVRTC is chosen once per process. NVRTC 12 comes from NVIDIA's
wheel nvidia-cuda-nvrtc-cu12 (.ci/setup --tests installs it into build/venv); XCUDA_TEST_NVRTC12
names another libnvrtc.so.12. The driver is the fake one (tests/fake_driver), whose reported version
XCUDA_FAKE_DRIVER_VERSION sets.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD

NVRTC13 = Path("/usr/local/cuda/lib64/libnvrtc.so.13")
FAKE_DRIVER = BUILD / "lib" / "libxcuda_fake_cuda.so"

SAXPY = r'''extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''


def find_nvrtc12():
    named = os.environ.get("XCUDA_TEST_NVRTC12")
    if named:
        return Path(named)
    venv = Path(os.environ.get("XCUDA_TEST_VENV", BUILD / "venv"))
    patterns = [str(venv / "lib" / "python3*" / "site-packages" / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12")]
    patterns += [os.path.join(p, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12") for p in sys.path if p]
    for pattern in patterns:
        hits = glob.glob(pattern)
        if hits:
            return Path(hits[0])
    return None


NVRTC12 = find_nvrtc12()
needs_12 = pytest.mark.skipif(
    NVRTC12 is None,
    reason="no libnvrtc.so.12: `.ci/setup --tests` installs nvidia-cuda-nvrtc-cu12 into build/venv "
           "(or set XCUDA_TEST_NVRTC12 to one)")
needs_fake = pytest.mark.skipif(not FAKE_DRIVER.exists(), reason=f"{FAKE_DRIVER} was not built (XCUDA_BUILD_TESTS off)")


def run(code, env_changes, cwd=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("XCUDA_NVRTC", "CUDA_HOME", "CUDA_PATH", "XCUDA_LIBCUDA", "XCUDA_FAKE_DRIVER_VERSION")}
    env.update(env_changes)
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr + result.stdout
    return json.loads(result.stdout.strip().splitlines()[-1])


INFO = "import json, xcuda\ninfo = xcuda.nvrtc_library()\n"


# --- NVRTC 12 compiles what 13 does, with PTX ISA 8.x, and its own compile-cache entries -----------------

@needs_12
def test_nvrtc12_compiles_ptx_8_and_sm_70_and_reports_why(tmp_path):
    code = INFO + (
        f"m = xcuda.compile({SAXPY!r}, name='m')\n"
        f"old = xcuda.compile({SAXPY!r}, name='old', arch='sm_70')\n"
        "err = ''\n"
        "try:\n"
        "    xcuda.compile('__global__ void k() { undefined_thing(); }', name='bad')\n"
        "except xcuda.CompileError as e:\n"
        "    err = str(e)\n"
        "print(json.dumps({'info': xcuda.nvrtc_library(), 'ptx': str(m.ptx), 'old': str(old.ptx), 'err': err,\n"
        "                  'version': xcuda.nvrtc_version()}))\n")
    out = run(code, {"XCUDA_NVRTC": str(NVRTC12), "XCUDA_CACHE_DIR": str(tmp_path / "cache")})
    assert out["version"][0] == 12
    assert out["info"]["reason"] == f"NVRTC 12.{out['version'][1]}: XCUDA_NVRTC names it", out["info"]
    assert "\n.version 8." in out["ptx"], out["ptx"][:400]
    assert ".target sm_70" in out["old"], out["old"][:400]
    assert "undefined_thing" in out["err"]


def ptx_header(env):
    code = INFO + f"m = xcuda.compile({SAXPY!r}, name='m')\nprint(json.dumps({{'ptx': str(m.ptx)}}))\n"
    ptx = run(code, env)["ptx"]
    return next(line for line in ptx.splitlines() if line.startswith(".version"))


@needs_12
def test_the_compile_cache_keeps_nvrtc_12_and_13_apart(tmp_path):
    cache = tmp_path / "cache"
    entries = lambda: sorted(p.name for p in cache.rglob("*") if p.is_file() and p.name != "nvrtc-version")
    thirteen = ptx_header({"XCUDA_NVRTC": str(NVRTC13), "XCUDA_CACHE_DIR": str(cache)})
    after_13 = entries()
    twelve = ptx_header({"XCUDA_NVRTC": str(NVRTC12), "XCUDA_CACHE_DIR": str(cache)})
    after_12 = entries()
    assert thirteen.startswith(".version 9.") and twelve.startswith(".version 8."), (thirteen, twelve)
    assert len(after_12) > len(after_13), (after_13, after_12)  # a second entry, not 13's PTX served to 12
    assert ptx_header({"XCUDA_NVRTC": str(NVRTC12), "XCUDA_CACHE_DIR": str(cache)}) == twelve
    assert entries() == after_12  # and 12's entry is found again


def test_sm_70_under_nvrtc_13_says_how_to_get_nvrtc_12(tmp_path):
    code = INFO + (
        "try:\n"
        f"    xcuda.compile({SAXPY!r}, name='m', arch='sm_70')\n"
        "    print(json.dumps({'err': ''}))\n"
        "except xcuda.CompileError as e:\n"
        "    print(json.dumps({'err': str(e)}))\n")
    err = run(code, {"XCUDA_NVRTC": str(NVRTC13), "XCUDA_CACHE_DIR": str(tmp_path)})["err"]
    assert "pip install nvidia-cuda-nvrtc-cu12" in err and "XCUDA_NVRTC" in err, err


# --- the choice by the driver's version ---------------------------------------------------------------

def site_with_wheel12(tmp_path):
    """site-packages as pip lays it out: the module and nvidia-cuda-nvrtc-cu12's nvidia/cuda_nvrtc/lib."""
    site = tmp_path / "site-packages"
    wheel_lib = site / "nvidia" / "cuda_nvrtc" / "lib"
    wheel_lib.mkdir(parents=True)
    shutil.copytree(BUILD / "python" / "xcuda", site / "xcuda", symlinks=True)
    for library in NVRTC12.parent.glob("libnvrtc*.so*"):
        (wheel_lib / library.name).symlink_to(library.resolve())
    return site, wheel_lib


def choose(site, driver_version, cwd):
    code = f"import sys; sys.path.insert(0, {str(site)!r})\n" + INFO + (
        f"assert xcuda.__file__.startswith({str(site)!r})\n"
        "print(json.dumps(info))\n")
    env = {"PYTHONPATH": "", "XCUDA_LIBCUDA": str(FAKE_DRIVER) if driver_version else "/nonexistent/libcuda.so.1"}
    if driver_version:
        env["XCUDA_FAKE_DRIVER_VERSION"] = str(driver_version)
    return run(code, env, cwd=cwd)


@needs_12
@needs_fake
def test_a_12_driver_gets_nvrtc_12_and_a_13_driver_or_none_gets_13(tmp_path):
    site, wheel_lib = site_with_wheel12(tmp_path)
    twelve = choose(site, 12090, tmp_path)
    assert twelve["path"] == str(wheel_lib / "libnvrtc.so.12"), twelve
    assert twelve["reason"].startswith("NVRTC 12.9: the driver supports CUDA 12.9"), twelve
    assert "NVRTC 13.0" in twelve["reason"] and "needs a newer driver" in twelve["reason"], twelve
    assert twelve["driver_note"] == ""
    # 12.4 is older than the wheel's 12.9: still NVRTC 12 (its CUBINs load by minor version compatibility).
    older = choose(site, 12040, tmp_path)
    assert older["version"] == [12, 9] and "minor version compatibility" in older["reason"], older
    thirteen = choose(site, 13000, tmp_path)
    assert thirteen["version"][0] == 13 and thirteen["reason"] == "NVRTC 13.0: the driver supports CUDA 13.0", thirteen
    none = choose(site, 0, tmp_path)
    assert none["version"][0] == 13 and "the newest found (no driver to match)" in none["reason"], none


@needs_fake
def test_a_12_driver_with_only_nvrtc_13_is_said_in_one_line(tmp_path):
    code = INFO + (
        f"m = xcuda.compile({SAXPY!r}, name='m')\n"
        "print(json.dumps({'info': info, 'report': repr(xcuda.info())}))\n")
    out = run(code, {"XCUDA_LIBCUDA": str(FAKE_DRIVER), "XCUDA_FAKE_DRIVER_VERSION": "12040",
                     "XCUDA_CACHE_DIR": str(tmp_path)})
    if out["info"]["version"][0] != 13 or any("libnvrtc.so.12" in l and "(NVRTC 12" in l for l in out["info"]["searched"]):
        pytest.skip(f"an NVRTC 12 is installed where xcuda looks: {out['info']['searched']}")
    note = out["info"]["driver_note"]
    assert "\n" not in note and "CUDA 12.4" in note and "NVRTC 13.0" in note, note
    assert "pip install nvidia-cuda-nvrtc-cu12" in note and "XCUDA_NVRTC" in note, note
    assert "NVRTC and driver" in out["report"] and "CUDA 12.4" in out["report"], out["report"]


# --- XCUDA_NVRTC naming something unusable: one line, the problem and the fix --------------------------

FAKE_NVRTC11 = r'''
#include <stddef.h>
typedef int nvrtcResult; typedef void* nvrtcProgram;
nvrtcResult nvrtcVersion(int* major, int* minor) { *major = 11; *minor = 8; return 0; }
const char* nvrtcGetErrorString(nvrtcResult r) { return "fake"; }
#define STUB(name) nvrtcResult name() { return 1; }
STUB(nvrtcGetNumSupportedArchs) STUB(nvrtcGetSupportedArchs) STUB(nvrtcCreateProgram) STUB(nvrtcDestroyProgram)
STUB(nvrtcCompileProgram) STUB(nvrtcGetPTXSize) STUB(nvrtcGetPTX) STUB(nvrtcGetCUBINSize) STUB(nvrtcGetCUBIN)
STUB(nvrtcGetProgramLogSize) STUB(nvrtcGetProgramLog) STUB(nvrtcAddNameExpression) STUB(nvrtcGetLoweredName)
'''


def one_line_error(nvrtc, tmp_path):
    code = INFO + (
        "try:\n"
        f"    xcuda.compile({SAXPY!r}, name='m')\n"
        "    print(json.dumps({'err': None}))\n"
        "except xcuda.ToolNotFoundError as e:\n"
        "    print(json.dumps({'err': str(e), 'info': info}))\n")
    out = run(code, {"XCUDA_NVRTC": str(nvrtc), "XCUDA_CACHE_DIR": str(tmp_path / "cache")})
    assert out["err"] is not None
    assert "\n" not in out["err"], out["err"]
    assert out["err"].startswith(f"XCUDA_NVRTC={nvrtc}: "), out["err"]
    assert "Name a libnvrtc.so.13 or libnvrtc.so.12" in out["err"] and "unset XCUDA_NVRTC" in out["err"], out["err"]
    assert out["info"]["path"] is None and out["info"]["reason"] == out["err"]
    return out["err"]


def test_xcuda_nvrtc_naming_a_missing_file(tmp_path):
    assert "no " + str(tmp_path / "libnvrtc.so.13") in one_line_error(tmp_path / "libnvrtc.so.13", tmp_path)


def test_xcuda_nvrtc_naming_a_library_that_is_not_nvrtc(tmp_path):
    libz = next(Path(p) for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1") if Path(p).exists())
    assert "is not NVRTC 12 or 13 (it lacks nvrtcGetErrorString" in one_line_error(libz, tmp_path)


def test_xcuda_nvrtc_naming_nvrtc_11(tmp_path):
    source = tmp_path / "fake_nvrtc11.c"
    source.write_text(FAKE_NVRTC11)
    library = tmp_path / "libnvrtc.so.11"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    assert "is NVRTC 11.8; xcuda uses NVRTC 12 or 13" in one_line_error(library, tmp_path)


@needs_12
@needs_fake
def test_a_cache_hit_under_another_driver_does_not_take_the_other_nvrtcs_entry(tmp_path):
    # The compile cache knows NVRTC's version without loading it (nvrtc_version_memo, keyed by what the
    # search would open): the driver's version decides the choice, so it is part of that too.
    site, _ = site_with_wheel12(tmp_path)
    code = f"import sys; sys.path.insert(0, {str(site)!r})\n" + (
        "import json, xcuda\n"
        f"m = xcuda.compile({SAXPY!r}, name='m')\n"
        "print(json.dumps({'ptx': str(m.ptx)}))\n")
    cache = tmp_path / "cache"
    header = lambda ptx: next(line for line in ptx.splitlines() if line.startswith(".version"))
    for driver, isa in ((13000, ".version 9."), (12090, ".version 8."), (13000, ".version 9.")):
        out = run(code, {"PYTHONPATH": "", "XCUDA_LIBCUDA": str(FAKE_DRIVER), "XCUDA_FAKE_DRIVER_VERSION": str(driver),
                         "XCUDA_CACHE_DIR": str(cache)}, cwd=tmp_path)
        assert header(out["ptx"]).startswith(isa), (driver, header(out["ptx"]))


@needs_fake
def test_the_first_cuda_cell_warns_once_when_the_driver_is_older_than_the_only_nvrtc(tmp_path):
    code = (
        "import json, warnings, xcuda\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_line_magic('load_ext', 'xcuda')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    shell.run_cell_magic('cuda', '', {SAXPY!r})\n"
        f"    shell.run_cell_magic('cuda', '', {SAXPY!r})\n"
        "print(json.dumps({'warnings': [str(w.message) for w in caught], 'info': xcuda.nvrtc_library()}))\n")
    out = run(code, {"XCUDA_LIBCUDA": str(FAKE_DRIVER), "XCUDA_FAKE_DRIVER_VERSION": "12040",
                     "XCUDA_CACHE_DIR": str(tmp_path)})
    if out["info"]["version"][0] != 13:
        pytest.skip(f"an NVRTC 12 is installed where xcuda looks: {out['info']['searched']}")
    notes = [w for w in out["warnings"] if "CUDA 12.4" in w]
    assert notes == ["%%cuda: " + out["info"]["driver_note"]], out["warnings"]
