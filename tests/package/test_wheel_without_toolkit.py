"""The wheel (`bash .ci/wheel`) on a machine with no CUDA toolkit: only pip and NVIDIA's wheels.

The hosted-notebook case: a fresh venv installs dist/xcuda-<version>-<tag>.whl with NVIDIA's NVRTC and
header wheels (nvidia-cuda-nvrtc, -runtime, -crt, -cccl, all 13.x) from a download folder, without an
index and without building anything, and then compiles SAXPY, a cell including cuda_fp16.h, a
cooperative-groups cell and a CUB cell, in a mount namespace where every /usr/local/cuda* folder is an
empty folder (the toolkit is not there for any code that looks, not only for code reading a variable).
Without nvidia-cuda-cccl the CUB cell and the cooperative-groups cell (cooperative_groups.h includes CCCL's
<nv/target>) fail with a message naming that wheel.

The wheel is dist/'s, which .ci/setup --tests builds with `bash .ci/wheel` (and installs into the test venv);
when it is missing or older than the sources, `bash .ci/wheel` builds it here. NVIDIA's wheels are downloaded once into
build/wheel/downloads (git-ignored) and installed from there afterwards.
"""
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

PYTHON = Path("/usr/bin/python3")
DOWNLOADS = REPO / "build" / "wheel" / "downloads"
NVIDIA_WHEELS = ["nvidia-cuda-nvrtc>=13,<14", "nvidia-cuda-runtime>=13,<14", "nvidia-cuda-crt>=13,<14"]
CCCL_WHEEL = "nvidia-cuda-cccl>=13,<14"


def _why_not():
    if not sys.platform.startswith("linux"):
        return "mount namespaces are Linux's"
    if os.geteuid() != 0:
        return "hiding /usr/local/cuda in a mount namespace (unshare -m, mount --bind) needs root; CI runs as root"
    if not shutil.which("unshare"):
        return "unshare (util-linux) is missing"
    if not PYTHON.exists():
        return f"{PYTHON} is missing"
    return None


WHY_NOT = _why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")


def python_tag():
    return "cp" + subprocess.run([str(PYTHON), "-c", "import sys; print(f'{sys.version_info[0]}{sys.version_info[1]}')"],
                                 check=True, capture_output=True, text=True).stdout.strip()


def sources_mtime():
    files = subprocess.run(["git", "ls-files", "magics", "CMakeLists.txt", "pyproject.toml", "share/labextension"],
                           cwd=REPO, check=True, capture_output=True, text=True).stdout.split()
    return max((REPO / f).stat().st_mtime for f in files if (REPO / f).exists())


@pytest.fixture(scope="module")
def wheel():
    """dist/'s wheel for /usr/bin/python3: the one .ci/setup --tests built, or, when missing or older than the
    sources, built now by `bash .ci/wheel` (incremental in build/wheel/<tag>; minutes from nothing)."""
    tag = python_tag()
    found = sorted((REPO / "dist").glob(f"xcuda-*-{tag}-*.whl"))
    if len(found) != 1 or found[0].stat().st_mtime < sources_mtime():
        command = ["bash", str(REPO / ".ci" / "wheel"), "--python", str(PYTHON)]
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=3000)
        assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        found = sorted((REPO / "dist").glob(f"xcuda-*-{tag}-*.whl"))
    assert len(found) == 1, f"expected one wheel for {tag} in dist/: {found}"
    return found[0]


def pip(venv, *arguments, timeout=600):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *arguments], env=env, capture_output=True,
                          text=True, timeout=timeout)


def install_offline(venv, *requirements):
    """pip install from the wheel file and build/wheel/downloads only; downloads what is missing there first.
    Returns the seconds of the install that succeeded (not counting a download)."""
    arguments = ["install", "-q", "--no-index", "--only-binary=:all:", "--find-links", str(DOWNLOADS), *requirements]
    start = time.monotonic()
    result = pip(venv, *arguments)
    if result.returncode != 0:
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        names = [r for r in requirements if not r.endswith(".whl")]
        wheels = [r for r in requirements if r.endswith(".whl")]
        # numpy (xcuda's one dependency) for this Python, and NVIDIA's wheels, from PyPI.
        download = pip(venv, "download", "-q", "--only-binary=:all:", "-d", str(DOWNLOADS), *names,
                       *(["numpy"] if wheels else []))
        assert download.returncode == 0, f"pip download failed (PyPI is needed once):\n{download.stderr}"
        start = time.monotonic()
        result = pip(venv, *arguments)
    assert result.returncode == 0, f"pip install failed:\n{result.stdout}\n{result.stderr}"
    return time.monotonic() - start


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh venv with the wheel and NVIDIA's NVRTC and toolkit-header wheels (not CCCL's)."""
    root = tmp_path_factory.mktemp("wheel-venv") / "venv"
    start = time.monotonic()
    subprocess.run([str(PYTHON), "-m", "venv", str(root)], check=True, timeout=300)
    made = time.monotonic() - start
    installed = install_offline(root, str(wheel), *NVIDIA_WHEELS)
    # The goal is under 30 s on a 2-core machine; printed (pytest -s, or -rA), never asserted.
    print(f"\nA fresh venv ({made:.1f} s) and pip install of {wheel.name} with numpy and "
          f"{', '.join(NVIDIA_WHEELS)} ({installed:.1f} s): {made + installed:.1f} s")
    return root


def hidden_toolkit_command(venv):
    """argv that runs $XCUDA_TEST_SCRIPT in the venv's Python in a new mount namespace where every /usr/local/cuda*
    folder (and the folder a link of that name points to) is an empty folder."""
    folders = []
    for path in sorted(Path("/usr/local").glob("cuda*")):
        real = Path(os.path.realpath(path))
        if real.is_dir() and str(real) not in folders:
            folders.append(str(real))
    mounts = "".join(f"mount --bind \"$empty\" '{folder}' && " for folder in folders)
    shell = (f"set -e; empty=$(mktemp -d); {mounts}"
             f"exec '{venv / 'bin' / 'python'}' -c \"$XCUDA_TEST_SCRIPT\"")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", shell], folders


COMPILES = r'''
import ctypes, json, os
out = {"toolkit": [p for p in ("/usr/local/cuda/include/cuda.h", "/usr/local/cuda/lib64/libnvrtc.so.13") if os.path.exists(p)]}
try:
    ctypes.CDLL("libnvrtc.so.13")
    out["loader_nvrtc"] = True
except OSError:
    out["loader_nvrtc"] = False
import xcuda
out["xcuda"] = xcuda.__file__
out["nvrtc"] = xcuda.nvrtc_library()["path"]
for name, source in json.loads(os.environ["XCUDA_TEST_CELLS"]).items():
    try:
        module = xcuda.compile(source, name=name)
        out[name] = ["ok", sorted(module.kernels)]
    except Exception as e:
        out[name] = [type(e).__name__, str(e)]
print(json.dumps(out))
'''

CELLS = {
    "saxpy": r'''extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }''',
    "half": r'''#include <cuda_fp16.h>
extern "C" __global__ void hsaxpy(__half a, const __half* x, __half* y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = __hfma(a, x[i], y[i]); }''',
    "groups": r'''#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void warp_sums(const float* x, float* sums)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    float v = x[block.thread_rank()];
    for (int offset = 16; offset > 0; offset /= 2) v += warp.shfl_down(v, offset);
    if (warp.thread_rank() == 0) sums[block.thread_rank() / 32] = v;
    block.sync();
}''',
    "cub": r'''#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sum(const int* x, int* out)
{
    using reduce = cub::BlockReduce<int, 128>;
    __shared__ typename reduce::TempStorage storage;
    int total = reduce(storage).Sum(x[threadIdx.x]);
    if (threadIdx.x == 0) *out = total;
}''',
}


def compile_without_toolkit(venv, cells):
    command, folders = hidden_toolkit_command(venv)
    assert folders, "no /usr/local/cuda* folder to hide: is there a toolkit on this machine at all?"
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_HOME", "CUDA_PATH", "XCUDA_NVRTC", "LD_LIBRARY_PATH", "PYTHONPATH", "XCUDA_PYTHONPATH")}
    env.update(PYTHONNOUSERSITE="1", XCUDA_CACHE="0", XCUDA_TEST_SCRIPT=COMPILES, XCUDA_TEST_CELLS=json.dumps(cells))
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd="/")
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    out = json.loads(result.stdout.strip().splitlines()[-1])
    # The namespace really has no toolkit: neither its files nor an NVRTC on the loader path.
    assert out["toolkit"] == [] and out["loader_nvrtc"] is False, out
    site = venv / "lib"
    assert Path(out["xcuda"]).is_relative_to(site), out
    assert out["nvrtc"] and Path(out["nvrtc"]).is_relative_to(site) and "/nvidia/" in out["nvrtc"], out
    return out


def test_the_wheel_has_a_manylinux_tag_and_links_neither_the_driver_nor_nvrtc(wheel, tmp_path):
    assert "-manylinux_2_" in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        # auditwheel grafted nothing: the extension needs only the C and C++ runtimes every Linux has.
        assert not [n for n in names if ".libs/" in n], names
        for needed in ("xcuda/xcuda-compile", "xcuda/xcuda-replay", "xcuda/libxcuda-sim.so", "xcuda/__init__.py"):
            assert needed in names, (needed, names)
        archive.extractall(tmp_path)
    from test_packaging import assert_links_neither_driver_nor_nvrtc

    for elf in [*tmp_path.glob("xcuda/_core*.so"), tmp_path / "xcuda" / "xcuda-compile",
                tmp_path / "xcuda" / "xcuda-replay", tmp_path / "xcuda" / "libxcuda-sim.so"]:
        assert_links_neither_driver_nor_nvrtc(elf)


def test_without_a_toolkit_nvidias_wheels_compile_saxpy_and_fp16_and_name_the_cccl_wheel_for_cub_and_groups(venv):
    pip(venv, "uninstall", "-y", "-q", "nvidia-cuda-cccl")  # absent, whatever ran before
    out = compile_without_toolkit(venv, CELLS)
    assert out["saxpy"] == ["ok", ["saxpy"]], out
    assert out["half"] == ["ok", ["hsaxpy"]], out
    # CUB is CCCL's, and so is <nv/target>, which cooperative_groups.h includes: each names the wheel.
    for name, header in (("cub", "cub/block/block_reduce.cuh"), ("groups", "nv/target")):
        kind, message = out[name]
        assert kind == "CompileError", out
        assert f'cannot open source file "{header}"' in message and "pip install nvidia-cuda-cccl" in message, message


def test_without_a_toolkit_cooperative_groups_and_cub_compile_with_nvidias_cccl_wheel(venv):
    install_offline(venv, CCCL_WHEEL)
    out = compile_without_toolkit(venv, CELLS)
    for name, kernel in (("saxpy", "saxpy"), ("half", "hsaxpy"), ("groups", "warp_sums"), ("cub", "block_sum")):
        assert out[name] == ["ok", [kernel]], out
