#!/usr/bin/env python3
"""Compile benchmark of xcuda: cold NVRTC compiles, the compile caches, and CuPy's, in one run.

A benchmark, not a test: it prints tables with ratios against baselines measured in the same run and
never asserts on time. Run it with the Python that has CuPy and cuda-python (tests/bench/run_gpu.sh
builds the module and runs it after bench_gpu.py):

    XCUDA_BUILD_DIR=build-host python3 tests/bench/bench_compile.py [--out PATH]

XCUDA_BUILD_DIR (default <repo>/build) is the build folder whose python/ holds the `xcuda` module.
--out also writes the tables (markdown) to a file.

Sources
-------
SAXPY (one line of arithmetic) and tests/bench/cccl_kernel.cu (about 300 lines: CUB block load, reduce,
scan and store, <cuda/std/...> span, tuple, limits and type traits, ten extern "C" kernels). Every system
compiles them for the same target: xcuda's default (the GPU's sm_XX: CUBIN and PTX; compute_75 without a
GPU: PTX), with --std=c++17 and the toolkit's include/ and include/cccl/ on the include path.

What is measured
----------------
Every timed region is the compile call inside the process (perf_counter), never the process start.
A "new process" row runs this script again as a worker (`--worker`) with its own empty (or, for a disk
hit, populated) cache folder, so NVRTC's first-call cost is included as a user's first cell sees it;
the result is the median over 5 processes, run round-robin across the systems to spread drift.

1. Cold compile in a new process:
   - bare NVRTC (cuda.bindings.nvrtc, else ctypes on libnvrtc.so.13): create, compile with the options
     xcuda used (Module.options plus the two toolkit include paths), PTX (and CUBIN for sm_XX), log,
     destroy. The library is loaded (nvrtcVersion) before the timer starts; with a GPU, CUDA is started
     first too (cuInit and the primary context, through ctypes), as xcuda's and CuPy's workers start it,
     so every system compiles in the same start-up state. The baseline. When
     cuda.bindings is there, the same through ctypes on the toolkit's libnvrtc.so.13 (the library xcuda
     links) is shown beside it: cuda.bindings may load a pip wheel's NVRTC. The note under the table
     names the libnvrtc each system's processes mapped.
   - xcuda.compile with an empty XCUDA_CACHE_DIR. With a GPU the CUDA session is started first
     (xcuda.zeros(1)), so the call also loads the module, as CuPy's does.
   - CuPy RawKernel(src, name, options=..., backend='nvrtc') with an empty CUPY_CACHE_DIR, compiled by
     kernel.compile() (else kernel.kernel); CUDA is initialised and CuPy's NVRTC loaded first.
   Goal: xcuda cold <= 1.05x CuPy cold (no slower than CuPy; 5% allowed for noise).
2. Cache hits:
   - xcuda in-memory hit: one process compiles once, then xcuda.compile of the same source, median of 200;
   - %%cuda of an unchanged cell, end to end through IPython's run_cell_magic, median of 200 (without
     IPython: the %%cuda function that load_ipython_extension registers, called directly; the row says
     so). Goal: < 1 ms.
   - xcuda disk hit in a new process (XCUDA_CACHE_DIR filled by a cold process): without a session
     (reading the cache only) and, with a GPU, after xcuda.zeros(1) so that the call loads the module
     (origin 'disk' and loaded checked). Goal (with the load): < 5 ms. Below it, where the time goes:
     the driver's module load (Module.load_ms, median over the processes) and whether NVRTC was loaded
     into the process at all (a hit needs only its version, which nvrtc_version_memo keeps on disk).
   - CuPy in-process hit (a second RawKernel of the same source, compiled) and CuPy in a new process with
     a populated CUPY_CACHE_DIR (module load included).

3. Later cold compiles in one process: after a first compile by each (NVRTC warm in both), bare NVRTC,
   xcuda.compile and a new %%cuda cell in turn (every other round in the opposite order), each of a source
   no earlier compile saw (a comment with a counter), LATER_ROUNDS rounds (fewer for the CCCL cell), median
   of each, in one process unpinned and in another pinned to one CPU (CPU 3, as launch_rounds.py; the compile
   process inherits it, so both sides compile on one core: unpinned, the two processes may run on cores of
   different speed on a shared host, seen as 0.86x to 1.18x in four runs on the H200 host); bare NVRTC through ctypes on
   the toolkit's libnvrtc.so.13, the library xcuda loads. xcuda's compile runs in its
   compile process (xcuda-compile) and, with a GPU, its time includes the module load; bare NVRTC's only
   compiles. Goal: xcuda.compile and the %%cuda cell <= 1.05x bare NVRTC.

A system that cannot run (not installed, no GPU, an error) shows "n/a (reason)" and the run goes on.
Without a GPU the NVRTC rows (bare NVRTC, xcuda cold, the xcuda hits without a module load) still run;
CuPy and the module-load rows are n/a. The script exits 0.
"""

import argparse
import ctypes
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (NA, add_results_option, benchmark_entry, device_text, goal_ratio,  # noqa: E402
                          markdown_table, measured, median_wall_ms, probe_gpu, ratio, result_row, short_error,
                          show_section, write_report, write_results)

SAXPY_SRC = (
    'extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) '
    "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }\n"
)
CCCL_PATH = HERE / "cccl_kernel.cu"

# name -> (label, kernel CuPy looks up)
SOURCES = {"saxpy": ("SAXPY", "saxpy"), "cccl": ("cccl_kernel.cu", "block_sum_f32")}
STD = "c++17"

PROCESSES = 5
HITS = 200
WORKER_TIMEOUT_S = 600

MAGIC_GOAL_MS = 1.0
DISK_GOAL_MS = 5.0
COLD_GOAL_VS_CUPY = 1.05
LATER_GOAL_VS_BARE = 1.05
LATER_ROUNDS = {"saxpy": 25, "cccl": 5}
LATER_COUNTER = iter(range(10 ** 9))  # numbers the later compiles' sources: each is new to the process

RESULT_TAG = "BENCH_COMPILE_RESULT "


def source_text(source):
    return SAXPY_SRC if source == "saxpy" else CCCL_PATH.read_text()


# ---- results (the same conventions as bench_gpu.py) ------------------------------------------------


def fmt_ms(value):
    if not measured(value):
        return str(value)
    return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"


def goal_below(value, limit_ms):
    """`value < limit_ms`, as met/missed with the margin."""
    if not measured(value):
        return f"< {limit_ms:g} ms: n/a"
    verdict = "met" if value < limit_ms else "missed"
    return f"< {limit_ms:g} ms: {verdict} (margin {limit_ms - value:+.3f} ms)"


# ---- the machine -----------------------------------------------------------------------------------


def toolkit_root():
    """The CUDA toolkit xcuda takes its headers from: CUDA_HOME, CUDA_PATH, nvcc's, /usr/local/cuda."""
    candidates = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))
    candidates.append("/usr/local/cuda")
    for root in candidates:
        if (Path(root) / "include" / "crt").is_dir():
            return Path(root)
    return Path("/usr/local/cuda")


def toolkit_include_dirs():
    root = toolkit_root()
    dirs = [root / "include"]
    if (root / "include" / "cccl").is_dir():
        dirs.append(root / "include" / "cccl")
    return [str(d) for d in dirs]


# ---- bare NVRTC ------------------------------------------------------------------------------------

class BindingsNvrtc:
    """NVRTC through cuda.bindings.nvrtc."""

    label = "cuda.bindings.nvrtc"

    def __init__(self):
        from cuda.bindings import nvrtc
        self.nvrtc = nvrtc

    def call(self, result, name):
        error, *values = result
        if error != self.nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{name} failed: {error!r}")
        return values[0] if len(values) == 1 else tuple(values)

    def version(self):
        return self.call(self.nvrtc.nvrtcVersion(), "nvrtcVersion")

    def compile(self, source, options, cubin):
        nv = self.nvrtc
        program = self.call(nv.nvrtcCreateProgram(source.encode(), b"bench.cu", 0, [], []), "nvrtcCreateProgram")
        try:
            encoded = [o.encode() for o in options]
            error, = nv.nvrtcCompileProgram(program, len(encoded), encoded)
            log_size = self.call(nv.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
            log = b" " * log_size
            self.call(nv.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            if error != nv.nvrtcResult.NVRTC_SUCCESS:
                raise RuntimeError(f"nvrtcCompileProgram failed: {error!r}: {log.decode(errors='replace')[:300]}")
            size = self.call(nv.nvrtcGetPTXSize(program), "nvrtcGetPTXSize")
            ptx = b" " * size
            self.call(nv.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
            if cubin:
                size = self.call(nv.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
                binary = b" " * size
                self.call(nv.nvrtcGetCUBIN(program, binary), "nvrtcGetCUBIN")
        finally:
            nv.nvrtcDestroyProgram(program)


class CtypesNvrtc:
    """NVRTC through ctypes on libnvrtc.so.13 (the toolkit's first), when cuda.bindings is missing."""

    label = "ctypes libnvrtc"

    def __init__(self):
        errors = []
        for path in (str(toolkit_root() / "lib64" / "libnvrtc.so.13"), "libnvrtc.so.13", "libnvrtc.so"):
            try:
                self.lib = ctypes.CDLL(path)
                self.path = path
                break
            except OSError as error:
                errors.append(str(error))
        else:
            raise OSError("libnvrtc not found: " + "; ".join(errors))
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(self, code, name):
        if code != 0:
            raise RuntimeError(f"{name} failed: {self.lib.nvrtcGetErrorString(code).decode()}")

    def version(self):
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        self.check(self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        return major.value, minor.value

    def compile(self, source, options, cubin):
        lib = self.lib
        program = ctypes.c_void_p()
        self.check(lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"bench.cu", 0, None, None),
                   "nvrtcCreateProgram")
        try:
            encoded = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            compiled = lib.nvrtcCompileProgram(program, len(options), encoded)
            size = ctypes.c_size_t(0)
            self.check(lib.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "nvrtcGetProgramLogSize")
            log = ctypes.create_string_buffer(size.value)
            self.check(lib.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            if compiled != 0:
                raise RuntimeError(f"nvrtcCompileProgram failed: {log.value.decode(errors='replace')[:300]}")
            self.check(lib.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
            ptx = ctypes.create_string_buffer(size.value)
            self.check(lib.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
            if cubin:
                self.check(lib.nvrtcGetCUBINSize(program, ctypes.byref(size)), "nvrtcGetCUBINSize")
                binary = ctypes.create_string_buffer(size.value)
                self.check(lib.nvrtcGetCUBIN(program, binary), "nvrtcGetCUBIN")
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(program))


def bare_nvrtc(via=None):
    """NVRTC through `via` ("bindings" or "ctypes"); by default cuda.bindings, else ctypes."""
    if via == "ctypes":
        return CtypesNvrtc()
    if via == "bindings":
        return BindingsNvrtc()
    try:
        return BindingsNvrtc()
    except ImportError:
        return CtypesNvrtc()


def nvrtc_libraries():
    """The libnvrtc files this process has mapped (which NVRTC a system really used)."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        path = line.split()[-1] if line.split() else ""
        if "libnvrtc" in path and "builtins" not in path and path not in found:
            found.append(path)
    return found


# ---- workers (each runs in its own process; returns a dict) -----------------------------------------

def cupy_options(spec):
    """xcuda's options for CuPy: CuPy adds its own -arch, so --gpu-architecture is left out."""
    options = [o for o in spec["xcuda_options"] if not o.startswith("--gpu-architecture")]
    return tuple(options + [f"-I{d}" for d in toolkit_include_dirs()])


def cupy_ready():
    """Import CuPy, start CUDA and load CuPy's NVRTC, so that a timed compile is the compile alone."""
    import cupy as cp
    cp.cuda.Device(0).use()
    cp.empty(1, dtype=cp.float32)
    cp.cuda.Device(0).synchronize()
    cp.cuda.nvrtc.getVersion()
    return cp


def cupy_compile(cp, spec):
    kernel = cp.RawKernel(source_text(spec["source"]), SOURCES[spec["source"]][1], options=cupy_options(spec),
                          backend="nvrtc")
    if callable(getattr(kernel, "compile", None)):
        kernel.compile()
        return "compile()"
    kernel.kernel
    return "kernel"


def worker_info(spec):
    info = {"python": platform.python_version(), "toolkit_include_dirs": toolkit_include_dirs()}
    try:
        import xcuda
        info["xcuda"] = xcuda.__version__
        info["xcuda_nvrtc"] = ".".join(map(str, xcuda.nvrtc_version()))
        info["arch"] = spec.get("arch") or xcuda.default_arch()
        module = xcuda.compile(SAXPY_SRC, name="bench_info", arch=info["arch"], std=STD)
        info["xcuda_options"] = list(module.options)
    except Exception as error:
        info["xcuda_error"] = short_error(error)
    try:
        bare = bare_nvrtc()
        info["bare"] = bare.label
        info["bare_via"] = "bindings" if isinstance(bare, BindingsNvrtc) else "ctypes"
        info["bare_nvrtc"] = ".".join(map(str, bare.version()))
    except Exception as error:
        info["bare_error"] = short_error(error)
    try:
        import cupy
        info["cupy"] = cupy.__version__
        try:
            info["cupy_nvrtc"] = ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
        except Exception as error:
            info["cupy_nvrtc"] = f"? ({short_error(error)})"
    except Exception as error:
        info["cupy_error"] = short_error(error)
    try:
        import numpy
        info["numpy"] = numpy.__version__
    except ImportError:
        pass
    return info


def start_cuda():
    """CUDA initialised and device 0's primary context current, through the driver alone: the state xcuda
    (xcuda.zeros(1)) and CuPy (cupy_ready) are in when their cold compiles are timed."""
    lib = ctypes.CDLL("libcuda.so.1")
    device, context = ctypes.c_int(0), ctypes.c_void_p()
    for call, result in (("cuInit", lib.cuInit(0)), ("cuDeviceGet", lib.cuDeviceGet(ctypes.byref(device), 0)),
                         ("cuDevicePrimaryCtxRetain", lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)),
                         ("cuCtxSetCurrent", lib.cuCtxSetCurrent(context))):
        if result != 0:
            raise RuntimeError(f"{call} failed: CUresult {result}")


def worker_bare_cold(spec):
    if spec.get("session"):
        start_cuda()
    bare = bare_nvrtc(spec["via"])
    bare.version()  # loads the library, as importing xcuda does
    source = source_text(spec["source"])
    options = spec["xcuda_options"] + [f"--include-path={d}" for d in toolkit_include_dirs()]
    start = time.perf_counter()
    bare.compile(source, options, spec["arch"].startswith("sm_"))
    return {"ms": (time.perf_counter() - start) * 1e3, "via": bare.label, "lib": nvrtc_libraries()}


def worker_xcuda(spec):
    """xcuda.compile in a new process: cold (empty cache folder) or a disk hit (populated folder)."""
    import xcuda
    if spec["session"]:
        xcuda.zeros(1)
    source = source_text(spec["source"])
    start = time.perf_counter()
    module = xcuda.compile(source, name="bench_" + spec["source"], arch=spec["arch"], std=STD)
    ms = (time.perf_counter() - start) * 1e3
    expected = spec["expect_origin"]
    if module.origin != expected:
        raise RuntimeError(f"origin is '{module.origin}', expected '{expected}'")
    if spec["session"] and not module.loaded:
        raise RuntimeError("the module is not loaded although the session is active")
    load_ms = getattr(module, "load_ms", None)
    return {"ms": ms, "compile_ms": module.compile_ms, "loaded": bool(module.loaded), "lib": nvrtc_libraries(),
            "load_ms": load_ms if load_ms is not None else float("nan"), "nvrtc_loaded": bool(nvrtc_libraries())}


def worker_cupy(spec):
    """CuPy RawKernel in a new process: cold (empty CUPY_CACHE_DIR) or a disk hit (populated)."""
    cp = cupy_ready()
    start = time.perf_counter()
    how = cupy_compile(cp, spec)
    return {"ms": (time.perf_counter() - start) * 1e3, "how": how, "lib": nvrtc_libraries()}


def worker_xcuda_memory(spec):
    """In one process: xcuda.compile again, and %%cuda of an unchanged cell, median of HITS each."""
    import xcuda
    if spec["session"]:
        xcuda.zeros(1)
    source = source_text(spec["source"])
    name = "bench_" + spec["source"]
    first = xcuda.compile(source, name=name, arch=spec["arch"], std=STD)
    again = xcuda.compile(source, name=name, arch=spec["arch"], std=STD)
    result = {"first_origin": first.origin, "origin": again.origin, "loaded": bool(again.loaded)}
    result["compile_ms"] = median_wall_ms(lambda: xcuda.compile(source, name=name, arch=spec["arch"], std=STD), HITS)
    try:
        try:
            from IPython.core.interactiveshell import InteractiveShell
        except ImportError:
            shell = MinimalShell()
            xcuda.load_ipython_extension(shell)
            run_cell = shell.magics["cuda"]
            result["magic_via"] = "no IPython here: the %%cuda function from load_ipython_extension, called directly"
        else:
            shell = InteractiveShell.instance()
            shell.run_line_magic("load_ext", "xcuda")

            def run_cell(line, cell):
                shell.run_cell_magic("cuda", line, cell)

            result["magic_via"] = "run_cell_magic"
        run_cell("", source)  # the first run compiles (its options differ: no --std)
        result["magic_ms"] = median_wall_ms(lambda: run_cell("", source), HITS)
    except Exception as error:
        result["magic_error"] = f"error: {short_error(error)}"
    return result


class MinimalEvents:
    """IPython's shell.events as far as load_ipython_extension uses it (it registers post_run_cell)."""

    def __init__(self):
        self.callbacks = {"post_run_cell": []}

    def register(self, event, function):
        self.callbacks.setdefault(event, []).append(function)


class MinimalShell:
    """What load_ipython_extension needs from an IPython shell, for hosts without IPython."""

    def __init__(self):
        self.user_ns = {}
        self.magics = {}
        self.events = MinimalEvents()

    def register_magic_function(self, function, kind, name):
        self.magics[name] = function


def worker_later(spec):
    """In one process: bare NVRTC, xcuda.compile and a new %%cuda cell in turn, each of a new source.
    spec["pin"]: a CPU to pin the process to first; xcuda-compile, started by the first compile, inherits it,
    so that both sides compile on the same core."""
    if spec.get("pin") is not None:
        os.sched_setaffinity(0, {spec["pin"]})
    import xcuda
    if spec["session"]:
        xcuda.zeros(1)
    bare = bare_nvrtc(spec["via"])
    source = source_text(spec["source"])
    options = spec["xcuda_options"] + [f"--include-path={d}" for d in toolkit_include_dirs()]
    cubin = spec["arch"].startswith("sm_")
    shell = MinimalShell()
    xcuda.load_ipython_extension(shell)
    cell = shell.magics["cuda"]

    def new_source():
        return source + f"\n// later compile {next(LATER_COUNTER)}\n"

    def timed(call):
        """(what call() returned, its wall time in ms)"""
        start = time.perf_counter()
        returned = call()
        return returned, (time.perf_counter() - start) * 1e3

    # The first compile of each: NVRTC's first-call cost, not what this measures.
    bare.compile(new_source(), options, cubin)
    xcuda.compile(new_source(), name="later", arch=spec["arch"], std=STD)
    cell("", new_source())
    samples = {"bare": [], "xcuda": [], "cell": [], "compile_ms": []}

    def run_bare():
        text = new_source()
        samples["bare"].append(timed(lambda: bare.compile(text, options, cubin))[1])

    def run_xcuda():
        text = new_source()
        module, ms = timed(lambda: xcuda.compile(text, name="later", arch=spec["arch"], std=STD))
        if module.origin != "nvrtc":
            raise RuntimeError(f"xcuda.compile of a new source has origin '{module.origin}', not 'nvrtc'")
        samples["xcuda"].append(ms)
        samples["compile_ms"].append(module.compile_ms)

    def run_cell():
        text = new_source()
        samples["cell"].append(timed(lambda: cell("", text))[1])

    for round_number in range(LATER_ROUNDS[spec["source"]]):
        # Every other round in the opposite order, so that no system always follows the same one.
        for run in ((run_bare, run_xcuda, run_cell) if round_number % 2 == 0 else (run_cell, run_xcuda, run_bare)):
            run()
    return {key: statistics.median(values) for key, values in samples.items()} | {
        "rounds": LATER_ROUNDS[spec["source"]], "via": bare.label, "compile_process": compile_process_text(xcuda),
        "pin": spec.get("pin")}


def compile_process_text(xcuda):
    """Where xcuda's compiles ran (xcuda.compile_process()): a fork per compile pays NVRTC's first call every
    time, so a row measured that way says so."""
    where = getattr(xcuda, "compile_process", None)
    if where is None:
        return "not reported by this build"
    where = where()
    if where["mode"] == "worker":
        return (f"xcuda-compile ({where['program']}, {'running' if where['pid'] else 'not running'}, "
                f"{where.get('starts', '?')} worker start(s) in the process)")
    return {"fork": "a fork per compile (no xcuda-compile beside the module)",
            "in-process": "this process (XCUDA_COMPILE_PROCESS=0)"}.get(where["mode"], where["mode"])


def worker_cupy_memory(spec):
    cp = cupy_ready()
    cupy_compile(cp, spec)
    return {"ms": median_wall_ms(lambda: cupy_compile(cp, spec), HITS)}


WORKERS = {"info": worker_info, "bare_cold": worker_bare_cold, "xcuda": worker_xcuda, "cupy": worker_cupy,
           "xcuda_memory": worker_xcuda_memory, "cupy_memory": worker_cupy_memory, "later": worker_later}


def run_worker(spec):
    try:
        result = WORKERS[spec["task"]](spec)
    except Exception as error:  # reported to the parent, which shows it as n/a
        result = {"error": short_error(error)}
    print(RESULT_TAG + json.dumps(result), flush=True)
    return 0


# ---- the parent ------------------------------------------------------------------------------------

def spawn(spec, env_extra):
    """Run one worker process; its result dict, or {"error": ...}."""
    env = dict(os.environ)
    for variable in ("XCUDA_CACHE", "XCUDA_CACHE_DIR", "CUPY_CACHE_DIR", "CUPY_CACHE_IN_MEMORY"):
        env.pop(variable, None)
    env.update(env_extra)
    # The driver's JIT cache off for every system: xcuda's compile processes run with it off (ptxas' report
    # is skipped otherwise), and a cache left warm by an earlier process would spare the others' ptxas.
    env["CUDA_CACHE_DISABLE"] = "1"
    try:
        ran = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
                             capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, env=env)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"worker failed: {short_error(error)}"}
    for line in reversed(ran.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    last = (ran.stderr or ran.stdout).strip().splitlines()
    return {"error": f"worker exited {ran.returncode}: {last[-1] if last else 'no output'}"[:200]}


def value_of(result, key="ms"):
    return NA(result["error"]) if "error" in result else result[key]


class Samples:
    """Per-process results of one row: the median, the spread, or the first error."""

    def __init__(self):
        self.results = []

    def add(self, result):
        self.results.append(result)

    @property
    def error(self):
        errors = [r["error"] for r in self.results if "error" in r]
        return errors[0] if errors else None

    def values(self, key="ms"):
        return [r[key] for r in self.results if "error" not in r]

    def median(self, key="ms"):
        if self.error:
            return NA(self.error)
        values = self.values(key)
        return statistics.median(values) if values else NA("not run")

    def spread(self):
        if self.error or not self.values():
            return "n/a"
        values = self.values()
        return f"{min(values):.1f} to {max(values):.1f}"


def unavailable(info, system, gpu_reason):
    """Why `system` cannot run here, or None."""
    if system in ("xcuda", "xcuda_memory") and "xcuda_options" not in info:
        return info.get("xcuda_error") or f"no xcuda module in {BUILD / 'python'} (set XCUDA_BUILD_DIR)"
    if system.startswith("bare") and "bare_error" in info:
        return f"no NVRTC: {info['bare_error']}"
    if system == "bare ctypes" and info.get("bare_via") != "bindings":
        return "the baseline above already uses ctypes (cuda.bindings is missing)"
    if system.startswith("cupy"):
        if "cupy_error" in info:
            missing = "ModuleNotFound" in info["cupy_error"]
            return f"CuPy not installed: {info['cupy_error']}" if missing else info["cupy_error"]
        if gpu_reason:
            return f"no GPU: {gpu_reason}"
        if "xcuda_options" not in info:
            return "no xcuda options to pass (xcuda failed)"
    return None


def measure(info, gpu, gpu_reason, folder):
    """Run every worker; returns {(row, source): Samples or NA}."""
    arch = info.get("arch", "compute_75")
    base = {"arch": arch, "xcuda_options": info.get("xcuda_options", [])}
    session = gpu is not None
    results = {}
    counter = iter(range(10 ** 6))

    def fresh(prefix):
        path = Path(folder) / f"{prefix}-{next(counter)}"
        path.mkdir()
        return str(path)

    for source in SOURCES:
        spec = dict(base, source=source)
        cold = {name: Samples() for name in ("bare", "bare ctypes", "xcuda", "cupy")}
        xcuda_dirs, cupy_dirs = [], []
        runnable = {name: unavailable(info, name, gpu_reason) is None for name in cold}
        print(f"cold compiles of {SOURCES[source][0]} ({PROCESSES} processes each) ...", flush=True)
        for _ in range(PROCESSES):  # round-robin, so that drift spreads over every system
            if runnable["bare"]:
                cold["bare"].add(spawn(dict(spec, task="bare_cold", via=info.get("bare_via"), session=session),
                                       {"XCUDA_CACHE": "0"}))
            if runnable["bare ctypes"]:
                cold["bare ctypes"].add(spawn(dict(spec, task="bare_cold", via="ctypes", session=session),
                                              {"XCUDA_CACHE": "0"}))
            if runnable["xcuda"]:
                xcuda_dirs.append(fresh("xcuda"))
                cold["xcuda"].add(spawn(dict(spec, task="xcuda", session=session, expect_origin="nvrtc"),
                                        {"XCUDA_CACHE_DIR": xcuda_dirs[-1]}))
            if runnable["cupy"]:
                cupy_dirs.append(fresh("cupy"))
                cold["cupy"].add(spawn(dict(spec, task="cupy"), {"CUPY_CACHE_DIR": cupy_dirs[-1],
                                                                   "XCUDA_CACHE": "0"}))
        for name, samples in cold.items():
            reason = unavailable(info, name, gpu_reason)
            results["cold " + name, source] = NA(reason) if reason else samples

        print(f"cache hits of {SOURCES[source][0]} ...", flush=True)
        disk_plain, disk_loaded, cupy_disk = Samples(), Samples(), Samples()
        for index in range(PROCESSES):
            if runnable["xcuda"]:
                # The cold process i filled xcuda_dirs[i]; a failed cold run leaves it empty (a miss, reported).
                disk_plain.add(spawn(dict(spec, task="xcuda", session=False, expect_origin="disk"),
                                     {"XCUDA_CACHE_DIR": xcuda_dirs[index]}))
                if session:
                    disk_loaded.add(spawn(dict(spec, task="xcuda", session=True, expect_origin="disk"),
                                          {"XCUDA_CACHE_DIR": xcuda_dirs[index]}))
            if runnable["cupy"]:
                cupy_disk.add(spawn(dict(spec, task="cupy"), {"CUPY_CACHE_DIR": cupy_dirs[index],
                                                                "XCUDA_CACHE": "0"}))
        xcuda_reason = unavailable(info, "xcuda", gpu_reason)
        results["disk", source] = NA(xcuda_reason) if xcuda_reason else disk_plain
        results["disk loaded", source] = (NA(xcuda_reason) if xcuda_reason else
                                          NA(f"no GPU: {gpu_reason}") if not session else disk_loaded)
        cupy_reason = unavailable(info, "cupy", gpu_reason)
        results["cupy disk", source] = NA(cupy_reason) if cupy_reason else cupy_disk

        if xcuda_reason:
            results["memory", source] = NA(xcuda_reason)
        else:
            results["memory", source] = spawn(dict(spec, task="xcuda_memory", session=session),
                                              {"XCUDA_CACHE_DIR": fresh("memory")})
        later_reason = xcuda_reason or unavailable(info, "bare", gpu_reason)
        if later_reason:
            results["later", source] = NA(later_reason)
        else:
            print(f"later cold compiles of {SOURCES[source][0]} in one process ...", flush=True)
            # Bare NVRTC through ctypes on the toolkit's libnvrtc.so.13, the library xcuda loads (cuda.bindings
            # may load a pip wheel's NVRTC, another build): the same compiler on both sides.
            results["later", source] = spawn(dict(spec, task="later", session=session, via="ctypes"),
                                             {"XCUDA_CACHE": "0"})
            # The same pinned to one CPU: the compile process then runs on the caller's core (unpinned, the
            # two processes may land on cores of different speed on a shared host).
            pin = later_pin()
            results["later pinned", source] = (
                spawn(dict(spec, task="later", session=session, via="ctypes", pin=pin), {"XCUDA_CACHE": "0"})
                if pin is not None else NA("no CPU to pin to (os.sched_setaffinity is missing)"))
        if cupy_reason:
            results["cupy memory", source] = NA(cupy_reason)
        else:
            results["cupy memory", source] = spawn(dict(spec, task="cupy_memory"),
                                                   {"CUPY_CACHE_DIR": fresh("cupy-memory"), "XCUDA_CACHE": "0"})
    return results


def median_of(entry, key="ms"):
    return entry if isinstance(entry, NA) else entry.median(key)


def spread_of(entry):
    return "n/a" if isinstance(entry, NA) else entry.spread()


def cold_table(results, info):
    """The cold-compile table, the libraries each system mapped, and the table's rows for results.json."""
    rows, records = [], []
    libraries = {}  # system -> the libnvrtc files its processes mapped
    for source, (label, _) in SOURCES.items():
        bare = median_of(results["cold bare", source])
        cupy = median_of(results["cold cupy", source])
        nvrtc_ms = median_of(results["cold xcuda", source], "compile_ms")
        how = "" if not isinstance(results["cold cupy", source], Samples) else next(
            (f" ({r['how']})" for r in results["cold cupy", source].results if "how" in r), "")
        systems = (
            ("bare", f"bare NVRTC ({info.get('bare', 'n/a')}), the baseline", "", ""),
            ("bare ctypes", "bare NVRTC (ctypes on the toolkit's libnvrtc.so.13)", "", ""),
            ("xcuda", "xcuda.compile", None, f"{nvrtc_ms:.1f} ms" if measured(nvrtc_ms) else "n/a"),
            ("cupy", f"CuPy RawKernel{how}", "", ""))
        for key, system, goal, extra in systems:
            entry = results["cold " + key, source]
            if key == "bare ctypes" and isinstance(entry, NA):
                continue  # only shown beside the cuda.bindings baseline
            value = median_of(entry)
            records += cold_records(label, key, system, value, spread_of(entry), extra, bare, cupy, systems)
            if goal is None:
                goal = goal_ratio(value, cupy, COLD_GOAL_VS_CUPY, "CuPy")
            rows.append((label, system, fmt_ms(value), spread_of(entry), extra, ratio(value, bare), ratio(value, cupy),
                         goal))
            if isinstance(entry, Samples):
                for result in entry.results:
                    for path in result.get("lib", []):
                        libraries.setdefault(system.split(",")[0], [])
                        if path not in libraries[system.split(",")[0]]:
                            libraries[system.split(",")[0]].append(path)
    table = markdown_table(["source", "system", f"median of {PROCESSES} processes", "min to max (ms)",
                            "xcuda's compile_ms", "ratio to bare NVRTC", "ratio to CuPy", "goal"], rows)
    used = "; ".join(f"{system}: {', '.join(paths)}" for system, paths in libraries.items())
    return table, f"libnvrtc mapped by each system's processes: {used or 'n/a'}.", records


def cold_records(label, key, system, value, spread, extra, bare, cupy, systems):
    """One system's cold compile as rows of results.json: against bare NVRTC, and xcuda's against CuPy too."""
    names = {k: f"{label}, {text}" for k, text, _, _ in systems}
    note = "; ".join(part for part in (f"{spread} ms" if spread != "n/a" else None,
                                       f"its compile_ms {extra}" if extra and extra != "n/a" else None) if part) or None
    if key == "bare":
        return [result_row(names["bare"], value, "ms", note=note)]
    records = [result_row(names[key], value, "ms", names["bare"], bare, note=note)]
    if key == "xcuda":
        records.append(result_row(names[key], value, "ms", names["cupy"], cupy, f"<= {COLD_GOAL_VS_CUPY:.2f}x"))
    return records


def hit_table(results):
    """The cache-hit table, and its rows for results.json."""
    rows, records = [], []
    for source, (label, _) in SOURCES.items():
        cold_xcuda = median_of(results["cold xcuda", source])
        cold_cupy = median_of(results["cold cupy", source])
        memory = results["memory", source]
        if isinstance(memory, NA):
            compile_ms = magic_ms = memory
            origin = ""
        elif "error" in memory:
            compile_ms = magic_ms = NA(memory["error"])
            origin = ""
        else:
            compile_ms = memory["compile_ms"]
            magic_ms = memory.get("magic_ms", NA(memory.get("magic_error", "not measured")))
            origin = f"; the module compiled first is returned (origin '{memory['origin']}')"
        magic_label = "%%cuda of an unchanged cell (run_cell_magic)"
        if isinstance(memory, dict) and memory.get("magic_via", "run_cell_magic") != "run_cell_magic":
            magic_label = f"%%cuda of an unchanged cell ({memory['magic_via']})"
        cupy_memory = results["cupy memory", source]
        cupy_memory = cupy_memory if isinstance(cupy_memory, NA) else value_of(cupy_memory)
        disk = median_of(results["disk", source])
        disk_loaded = median_of(results["disk loaded", source])
        cupy_disk = median_of(results["cupy disk", source])
        in_process = f"one process, median of {HITS}"
        new_process = f"new process, median of {PROCESSES}"
        for system, measure_text, value, cold, peer, goal in (
                ("xcuda.compile, in-memory hit", in_process + origin, compile_ms, cold_xcuda, cupy_memory, ""),
                (magic_label, in_process, magic_ms, cold_xcuda, cupy_memory,
                 goal_below(magic_ms, MAGIC_GOAL_MS)),
                ("CuPy RawKernel again, in-process hit", in_process, cupy_memory, cold_cupy, cupy_memory, ""),
                ("xcuda.compile, disk hit, no session (cache read only)", new_process, disk, cold_xcuda, NA(""), ""),
                ("xcuda.compile, disk hit incl. module load", new_process + "; session started first",
                 disk_loaded, cold_xcuda, cupy_disk, goal_below(disk_loaded, DISK_GOAL_MS)),
                ("CuPy RawKernel, disk hit incl. module load", new_process + "; CUDA started first",
                 cupy_disk, cold_cupy, cupy_disk, "")):
            speedup = f"{cold / value:.0f}x" if measured(value) and measured(cold) and value else "n/a"
            rows.append((label, system, measure_text, fmt_ms(value), speedup, ratio(value, peer), goal))
            parts = []
            if system.startswith("xcuda.compile, disk hit"):
                parts = disk_hit_parts(label, results["disk loaded" if "module load" in system else "disk", source])
                rows.extend(parts)
            records.append(hit_record(label, system, value, peer, goal, speedup, parts))
    return markdown_table(["source", "system", "measure", "value", "speed-up over the same system's cold compile",
                           "ratio to CuPy's hit of the same kind", "goal"], rows), records


def hit_record(label, system, value, peer, goal, speedup, parts):
    """One cache-hit row of results.json: against CuPy's hit of the same kind, the goal in ms, the disk hit's
    parts (the driver's module load, whether NVRTC was loaded) in its note."""
    system = system.split(" (")[0] if system.startswith("%%cuda") else system
    kind = "CuPy RawKernel, disk hit incl. module load" if "disk" in system else "CuPy RawKernel again, in-process hit"
    compared = not system.startswith("CuPy") and "no session" not in system
    note = "; ".join([f"{speedup} its cold compile"] * (speedup != "n/a") +
                     [f"{part[1].strip()}: {part[3]}" for part in parts]) or None
    return result_row(f"{label}, {system}", value, "ms", f"{label}, {kind}" if compared else None,
                      peer if compared else None, goal.split(":")[0] if goal else None, note)


def later_pin():
    """The CPU the pinned later compiles run on (CPU 3 where allowed, as launch_rounds.py), or None."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    return 3 if 3 in allowed else allowed[-1]


def later_table(results):
    rows = []
    for source, (label, _) in SOURCES.items():
        for key in ("later", "later pinned"):
            rows.extend(later_rows(label, results.get((key, source), NA("not run"))))
    return markdown_table(["source", "system", "measure", "value", "xcuda's compile_ms", "ratio to bare NVRTC",
                           "goal"], rows)


def later_rows(label, entry):
    if isinstance(entry, dict) and "error" in entry:
        entry = NA(entry["error"])
    if isinstance(entry, NA):
        return [(label, "bare NVRTC, xcuda.compile, %%cuda", "n/a", str(entry), "", "", "")]
    bare = entry["bare"]
    pinned = f", pinned to CPU {entry['pin']} (the compile process too)" if entry.get("pin") is not None else ""
    measure_text = f"one process{pinned}, {entry['rounds']} rounds in turn, median"
    return [(label, system, measure_text, fmt_ms(value), extra, ratio(value, bare), goal)
            for system, value, extra, goal in (
                (f"bare NVRTC ({entry['via']}), the baseline", bare, "", ""),
                ("xcuda.compile of a new source", entry["xcuda"], f"{entry['compile_ms']:.1f} ms",
                 goal_ratio(entry["xcuda"], bare, LATER_GOAL_VS_BARE, "bare NVRTC")),
                ("%%cuda of a new cell (the %%cuda function from load_ipython_extension, called directly)",
                 entry["cell"], "", goal_ratio(entry["cell"], bare, LATER_GOAL_VS_BARE, "bare NVRTC")))]


def later_records(results):
    """The later compiles as rows of results.json, each against bare NVRTC of its set, held to LATER_GOAL_VS_BARE."""
    records = []
    for source, (label, _) in SOURCES.items():
        for key in ("later", "later pinned"):
            entry = results.get((key, source), NA("not run"))
            entry = NA(entry["error"]) if isinstance(entry, dict) and "error" in entry else entry
            prefix = f"{label}, pinned to CPU {entry['pin']}, " if isinstance(entry, dict) and entry.get("pin") is not None \
                else f"{label}, pinned, " if key == "later pinned" else f"{label}, "
            base = prefix + "bare NVRTC (ctypes libnvrtc), the baseline"
            bare = entry if isinstance(entry, NA) else entry["bare"]
            rounds = "" if isinstance(entry, NA) else f"{entry['rounds']} rounds in turn, median"
            records += [result_row(base, bare, "ms", note=rounds or None)]
            for system, field, note in (("xcuda.compile of a new source", "xcuda", "compile_ms"),
                                        ("%%cuda of a new cell", "cell", None)):
                value = entry if isinstance(entry, NA) else entry[field]
                note = None if isinstance(entry, NA) or not note else f"its compile_ms {entry[note]:.1f} ms"
                records.append(result_row(prefix + system, value, "ms", base, bare, f"<= {LATER_GOAL_VS_BARE:.2f}x",
                                          note))
    return records


def disk_hit_parts(label, entry):
    """Where a disk hit's time goes: the driver's module load, and whether NVRTC was loaded at all."""
    if not isinstance(entry, Samples) or entry.error:
        return []
    rows = []
    loads = [r["load_ms"] for r in entry.results if r.get("load_ms") == r.get("load_ms") and r.get("loaded")]
    if loads:
        rows.append((label, "  of which the driver's module load (Module.load_ms)",
                     f"median over the {len(loads)} processes", fmt_ms(statistics.median(loads)), "", "", ""))
    loaded = sum(1 for r in entry.results if r.get("nvrtc_loaded"))
    rows.append((label, "  NVRTC loaded into the process", f"in {loaded} of {len(entry.results)} processes",
                 "yes" if loaded else "no", "", "", ""))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the tables (markdown) to this file")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    add_results_option(parser)
    options = parser.parse_args()
    if options.worker:
        return run_worker(json.loads(options.worker))

    gpu, gpu_reason = probe_gpu()
    if gpu_reason:
        print(f"No GPU: {gpu_reason}. The NVRTC rows run; CuPy and the module-load rows show n/a.\n", flush=True)

    with tempfile.TemporaryDirectory(prefix="xcuda-bench-compile-") as folder:
        info = spawn({"task": "info"}, {"XCUDA_CACHE": "0"})
        if "error" in info:
            info = {"xcuda_error": info["error"], "bare_error": info["error"], "cupy_error": info["error"]}
        now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        nvrtc = [f"xcuda's {info['xcuda_nvrtc']}" if "xcuda_nvrtc" in info else None,
                 f"{info['bare']}'s {info['bare_nvrtc']}" if "bare_nvrtc" in info else None,
                 f"CuPy's {info['cupy_nvrtc']}" if "cupy_nvrtc" in info else None]
        header = [
            "# xcuda compile benchmark",
            "",
            f"- date: {now}",
            f"- device: {gpu['name'] + ' (' + gpu['arch'] + ')' if gpu else 'none: ' + gpu_reason}",
            f"- driver: {'CUDA ' + gpu['driver'] if gpu else 'none'}",
            f"- NVRTC: {', '.join(n for n in nvrtc if n) or 'n/a'}",
            f"- CuPy: {info.get('cupy', 'n/a (' + info.get('cupy_error', '?') + ')')}",
            f"- host: {platform.node()}, Python {platform.python_version()}"
            f"{', numpy ' + info['numpy'] if 'numpy' in info else ''}"
            f"{', xcuda ' + info['xcuda'] if 'xcuda' in info else ''}",
            f"- target: {info.get('arch', 'n/a')}; xcuda's options: {' '.join(info.get('xcuda_options', [])) or 'n/a'}"
            f" + --include-path for {', '.join(info.get('toolkit_include_dirs', []))}",
        ]
        sections = []
        show_section(sections, "\n".join(header))
        results = measure(info, gpu, gpu_reason, folder)

    notes = {
        "cold": ("Each value is the compile call inside a fresh process with empty caches (NVRTC's first-call "
                 "cost included, process start excluded). With a GPU, every system starts CUDA before the "
                 "timer (the same start-up state); xcuda's and CuPy's calls include the module load, bare NVRTC only "
                 "compiles. The goal allows 5% "
                 "over CuPy for noise (met when xcuda <= 1.05x CuPy); the min-to-max column is the noise."),
        "hits": ("In-process rows: median of 200 after a first compile in the same process (the %%cuda cell "
                 "has no options, so its first run compiles once more). New-process rows: the cache folder "
                 "was filled by a cold process; the files are in the OS page cache, as when a notebook is "
                 "restarted. The CuPy ratio compares like with like (in-process with in-process, disk with "
                 "disk)."),
    }
    where = sorted({entry["compile_process"] for key, entry in results.items()
                    if key[0].startswith("later") and isinstance(entry, dict) and "compile_process" in entry})
    notes["later"] = ("After a first compile by each system in the same process, each compile is of a source no "
                      "earlier compile saw (a numbered comment at its end), the systems in turn (every other round in the opposite "
                      "order). xcuda's compile runs "
                      "in its compile process; with a GPU its time includes the module load. The goal allows 5% "
                      "over bare NVRTC. xcuda's compiles ran in: " + ("; ".join(where) or "n/a") + ".")
    cold, libraries, cold_rows = cold_table(results, info)
    hits, hit_rows = hit_table(results)
    for title, table, note in (("Cold compile in a new process", cold, notes["cold"] + " " + libraries),
                               ("Compile cache hits", hits, notes["hits"]),
                               ("Later cold compiles in one process", later_table(results), notes["later"])):
        show_section(sections, f"## {title}\n\n{table}\n\n{note}")
    write_report(options.out, sections)
    device, versions = device_text(gpu, "none"), f"NVRTC {', '.join(n for n in nvrtc if n) or 'n/a'}; target " \
        f"{info.get('arch', 'n/a')}. "
    write_results(options.results, *(benchmark_entry(name, title, rows, device, gpu is not None, note=versions + note)
                                      for name, title, rows, note in (
        ("compile-cold", f"Cold compile in a new process, median of {PROCESSES} processes", cold_rows,
         "Each value is the compile call in a fresh process with empty caches (NVRTC's first-call cost in, process "
         "start out); with a GPU every system starts CUDA first, and xcuda's and CuPy's calls include the module load."),
        ("compile-hits", f"Compile cache hits: in memory (median of {HITS}) and on disk (a new process, median of "
         f"{PROCESSES})", hit_rows, "The ratio compares like with like: CuPy's hit of the same kind; Nx is the "
         "speed-up over the same system's cold compile."),
        ("compile-later", "Later cold compiles in one process: each a source no compile saw before",
         later_records(results), "The systems in turn, every other round in the opposite order; xcuda's compile runs "
         "in its compile process and includes the module load. Pinned: the compile process too."))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
