#!/usr/bin/env python3
"""CPU-side benchmark of the xcuda Jupyter kernel against ipykernel: startup, round trip, %%cuda overhead.

A benchmark, not a test: it prints a table with ratios against ipykernel measured in the same run and
never asserts on time. No GPU is needed (without one %%cuda compiles to PTX for compute_75). Run it with
the Python that has jupyter_client and ipykernel (here Debian's /usr/bin/python3):

    XCUDA_BUILD_DIR=build /usr/bin/python3 tests/bench/bench_kernel.py [--starts 5] [--out PATH]

XCUDA_BUILD_DIR (default <repo>/build) is the build folder: its share/jupyter holds the xcuda kernelspec
(prepended to JUPYTER_PATH) and its python/ the `xcuda` module used to read the NVRTC options
(XCUDA_PYTHONPATH, which the kernel honours too, comes first when set). Without the xcuda kernelspec
the xcuda rows are skipped with the reason.

What is measured
----------------
Both kernels are started through jupyter_client in the same run, alternating (the first of each pair
alternates too), --starts times each (default 5):
- startup: from KernelManager.start_kernel() to the first kernel_info reply (wait_for_ready); median.
- `1+1` round trip: execute_interactive until the reply and the idle status; 200 per start, median of
  all.
- xcuda only, per start: the first %%cuda SAXPY cell of the kernel (cold: the process's first NVRTC
  compile), 5 new cells (warm NVRTC: each source differs by a comment, so each is a real compile),
  and the last of them repeated 20 times unchanged (a hit in the in-memory compile cache). Every
  source carries a fresh nonce, so no cache from an earlier start or run can answer.
- bare NVRTC: the same SAXPY source compiled through ctypes on libnvrtc (create, compile with the
  options xcuda used plus the toolkit include folders it adds, get PTX, and CUBIN for sm_XX targets,
  destroy: what xcuda's own timing covers), in a fresh child process after each xcuda start: the first
  compile of the process (cold; median over the starts) and the median of 20 later ones, each a fresh
  variant (warm). Measured outside xcuda so that none of xcuda's work is in it. For a cross-check the
  table also shows xcuda's own compile_ms of the cells, read from the kernel.
- %%cuda overhead above NVRTC: cell round trip minus the bare NVRTC time (cold minus cold, warm minus
  warm); for the unchanged cell nothing is compiled, so its overhead is its whole round trip.
- print loop: `for i in range(100000): print(i)` in both kernels, twice per start: from the execute
  request to the reply and the idle status (every stream message received by then); lines per second
  (100,000 / that time) and the number of stream messages the client received. Every line must arrive,
  in order: a run that loses or reorders one is reported as such.

Goals: xcuda startup and `1+1` round trip no slower than ipykernel (ratio <= 1.00); %%cuda overhead
above NVRTC < 5 ms. The print loop has no goal: it is shown beside ipykernel.
"""

import argparse
import ctypes
import ctypes.util
import glob
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()
sys.path.insert(0, str(HERE))
from bench_common import (NA, add_results_option, benchmark_entry, device_text, probe_gpu, result_row,  # noqa: E402
                          write_results)


def shown_path(path):
    """A path inside the repository as relative to it (tables are kept in the repository)."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)

SAXPY_SRC = r"""extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""

ROUND_TRIPS = 200
PRINT_LINES = 100_000
PRINT_RUNS = 2
NEW_CELLS = 5
CACHED_REPEATS = 20
NVRTC_WARM = 20
OVERHEAD_GOAL_MS = 5.0
DEFAULT_OPTIONS = ["--gpu-architecture=compute_75", "--std=c++17"]


def variant(tag):
    """The SAXPY source with a comment that makes it unique (a fresh compile-cache key)."""
    return f"// {tag} {uuid.uuid4().hex}\n{SAXPY_SRC}"


# ---- bare NVRTC, in a child process ----------------------------------------------------------------

def load_nvrtc():
    candidates = ["libnvrtc.so.13", ctypes.util.find_library("nvrtc")]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            candidates += sorted(glob.glob(os.path.join(root, "lib64", "libnvrtc.so.*")))
    errors = []
    for candidate in filter(None, candidates):
        try:
            return ctypes.CDLL(candidate)
        except OSError as error:
            errors.append(str(error))
    raise OSError("libnvrtc not found: " + "; ".join(errors))


def nvrtc_compile_ms(nvrtc, source, options):
    """One compile as xcuda times it: create, compile, PTX (and CUBIN for sm_XX), destroy; in ms."""
    def check(result, call):
        if result != 0:
            nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError(f"{call} failed: {nvrtc.nvrtcGetErrorString(result).decode()}")

    encoded = [option.encode() for option in options]
    argv = (ctypes.c_char_p * len(encoded))(*encoded)
    program = ctypes.c_void_p()
    size = ctypes.c_size_t()
    start = time.perf_counter()
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"cell.cu", 0, None, None),
          "nvrtcCreateProgram")
    check(nvrtc.nvrtcCompileProgram(program, len(encoded), argv), "nvrtcCompileProgram")
    check(nvrtc.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
    check(nvrtc.nvrtcGetPTX(program, ctypes.create_string_buffer(size.value)), "nvrtcGetPTX")
    if any(option.split("=")[-1].startswith("sm_") for option in options if "arch" in option):
        check(nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size)), "nvrtcGetCUBINSize")
        check(nvrtc.nvrtcGetCUBIN(program, ctypes.create_string_buffer(size.value)), "nvrtcGetCUBIN")
    check(nvrtc.nvrtcDestroyProgram(ctypes.byref(program)), "nvrtcDestroyProgram")
    return (time.perf_counter() - start) * 1e3


def nvrtc_child(options):
    """Runs in a fresh process: prints {"cold_ms", "warm_ms"} as JSON."""
    nvrtc = load_nvrtc()
    cold = nvrtc_compile_ms(nvrtc, variant("cold"), options)
    warm = [nvrtc_compile_ms(nvrtc, variant("warm"), options) for _ in range(NVRTC_WARM)]
    print(json.dumps({"cold_ms": cold, "warm_ms": statistics.median(warm)}))


def xcuda_compile_options():
    """The NVRTC options xcuda uses for a %%cuda cell here (read from xcuda.compile), and where from."""
    # The module the kernel loads: $XCUDA_PYTHONPATH when set (as the kernel itself honours it), else the build's.
    for folder in reversed([str(BUILD / "python")] + [p for p in os.environ.get("XCUDA_PYTHONPATH", "").split(os.pathsep) if p]):
        sys.path.insert(0, folder)
    try:
        import xcuda
        module = xcuda.compile(variant("options"))
        options, origin = list(module.options), f"xcuda {xcuda.__version__}, target {module.arch}"
    except Exception as error:  # the options are only needed to make the comparison like for like
        options, origin = DEFAULT_OPTIONS, f"default options (xcuda unavailable: {type(error).__name__}: {error})"
    # xcuda adds the toolkit's include folders to every compile (not listed in module.options): the
    # first of $CUDA_HOME, $CUDA_PATH, /usr/local/cuda with include/crt, and its include/cccl.
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.isdir(os.path.join(root, "include", "crt")):
            include = os.path.join(root, "include")
            options.append(f"--include-path={include}")
            if os.path.isdir(os.path.join(include, "cccl")):
                options.append(f"--include-path={os.path.join(include, 'cccl')}")
            break
    return options, origin


def bare_nvrtc(options):
    """Cold and warm bare NVRTC times from a child process, or a reason string."""
    child = subprocess.run([sys.executable, __file__, "--nvrtc-child", json.dumps(options)],
                           capture_output=True, text=True, timeout=300)
    if child.returncode != 0:
        lines = (child.stderr or child.stdout).strip().splitlines()
        return f"NVRTC child failed: {lines[-1] if lines else child.returncode}"
    return json.loads(child.stdout.strip().splitlines()[-1])


# ---- kernels -----------------------------------------------------------------------------------

def execute(client, code, user_expressions=None):
    """Run `code`, wait for the reply and the idle status; returns (seconds, reply content)."""
    start = time.perf_counter()
    reply = client.execute_interactive(code, output_hook=lambda message: None, timeout=120,
                                       user_expressions=user_expressions or {})
    elapsed = time.perf_counter() - start
    content = reply["content"]
    if content["status"] != "ok":
        raise RuntimeError(f"{code.splitlines()[0]!r} failed: {content.get('ename')}: {content.get('evalue')}")
    return elapsed, content


def print_loop(client):
    """`for i in range(PRINT_LINES): print(i)`: (seconds to the reply and idle, stream messages received);
    raises when a line is lost or out of order."""
    chunks = []
    messages = [0]

    def hook(message):
        if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
            messages[0] += 1
            chunks.append(message["content"]["text"])

    start = time.perf_counter()
    reply = client.execute_interactive(f"for i in range({PRINT_LINES}): print(i)", output_hook=hook, timeout=300)
    elapsed = time.perf_counter() - start
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"the print loop failed: {reply['content'].get('ename')}")
    text = "".join(chunks)
    if text != "".join(f"{i}\n" for i in range(PRINT_LINES)):
        lines = text.count("\n")
        raise RuntimeError(f"the print loop's output arrived incomplete or out of order ({lines} of {PRINT_LINES} lines)")
    return elapsed, messages[0]


def compile_ms_in_kernel(client):
    """xcuda's own NVRTC time of the last %%cuda cell (saxpy.module.compile_ms), read from the kernel."""
    _, content = execute(client, "", {"ms": "saxpy.module.compile_ms"})
    value = content["user_expressions"]["ms"]
    return float(value["data"]["text/plain"]) if value.get("status") == "ok" else None


def one_start(kernel_name, samples):
    """Start `kernel_name`, measure into `samples` (lists of ms), shut it down."""
    from jupyter_client import KernelManager

    manager = KernelManager(kernel_name=kernel_name)
    start = time.perf_counter()
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        samples["startup"].append((time.perf_counter() - start) * 1e3)
        execute(client, "1+1")  # the first execute of a kernel is not a round trip we want
        for _ in range(ROUND_TRIPS):
            samples["round_trip"].append(execute(client, "1+1")[0] * 1e3)
        for _ in range(PRINT_RUNS):
            seconds, messages = print_loop(client)
            samples["print_seconds"].append(seconds)
            samples["print_messages"].append(messages)
        if kernel_name != "python3":
            samples["cell_cold"].append(execute(client, "%%cuda\n" + variant("cold"))[0] * 1e3)
            samples["compile_cold"].append(compile_ms_in_kernel(client))
            for _ in range(NEW_CELLS):
                cell = "%%cuda\n" + variant("warm")
                samples["cell_warm"].append(execute(client, cell)[0] * 1e3)
                samples["compile_warm"].append(compile_ms_in_kernel(client))
            for _ in range(CACHED_REPEATS):
                samples["cell_cached"].append(execute(client, cell)[0] * 1e3)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)


def xcuda_kernelspec():
    """(None, None) when the xcuda kernelspec is usable, else (None, reason)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec("xcuda")
    except NoSuchKernel:
        return f"no xcuda kernelspec in {BUILD / 'share' / 'jupyter'} (build the kernel, or set XCUDA_BUILD_DIR)"
    if not Path(spec.argv[0]).exists():
        return f"the kernelspec names {spec.argv[0]}, which does not exist (build the kernel first)"
    return None


# ---- the table -----------------------------------------------------------------------------------

def median_text(values):
    values = [v for v in values if v is not None]
    return (statistics.median(values), f"{statistics.median(values):.2f} ms") if values else (None, "n/a")


def table_rows(samples, failures, skip_xcuda, nvrtc, n_starts):
    """The table's rows (text cells) and, from the same figures, its rows for results.json."""
    def cell(name, key):
        if name == "xcuda" and skip_xcuda:
            return None, f"n/a ({skip_xcuda})"
        if name in failures:
            return None, f"n/a (kernel failed: {failures[name]})"
        return median_text(samples[name][key])

    def ratio(a, b):
        return f"{a / b:.2f}x" if a is not None and b else "n/a"

    def no_slower(a, b):
        if a is None or not b:
            return "xcuda <= ipykernel: n/a"
        r = a / b
        return f"xcuda <= ipykernel: {'met' if r <= 1.0 else 'missed'} ({r:.2f}x, margin {1.0 - r:+.2f}x)"

    def under_goal(value):
        if value is None:
            return f"< {OVERHEAD_GOAL_MS:.0f} ms: n/a"
        return (f"< {OVERHEAD_GOAL_MS:.0f} ms: {'met' if value < OVERHEAD_GOAL_MS else 'missed'} "
                f"({value:.2f} ms, margin {OVERHEAD_GOAL_MS - value:+.2f} ms)")

    rows = []
    for key, label in (("startup", f"startup to first kernel_info reply (median of {n_starts})"),
                       ("round_trip", f"`1+1` execute round trip (median of {ROUND_TRIPS} x {n_starts})")):
        (xv, xt), (pv, pt) = cell("xcuda", key), cell("python3", key)
        rows.append((label, xt, pt, ratio(xv, pv), no_slower(xv, pv)))

    def print_cell(name, key):
        values = [] if (name == "xcuda" and skip_xcuda) or name in failures else samples[name][key]
        return statistics.median(values) if values else None

    x_seconds, p_seconds = print_cell("xcuda", "print_seconds"), print_cell("python3", "print_seconds")
    x_messages, p_messages = print_cell("xcuda", "print_messages"), print_cell("python3", "print_messages")
    rate = lambda seconds: f"{PRINT_LINES / seconds:,.0f} lines/s ({seconds * 1e3:.0f} ms)" if seconds else "n/a"  # noqa: E731
    count = lambda value: f"{value:.0f}" if value is not None else "n/a"  # noqa: E731
    rows += [
        (f"`for i in range({PRINT_LINES}): print(i)`, to reply and idle, every line received in order "
         f"(median of {PRINT_RUNS} x {n_starts})", rate(x_seconds), rate(p_seconds),
         ratio(PRINT_LINES / x_seconds if x_seconds else None, PRINT_LINES / p_seconds if p_seconds else None)
         + " (lines/s)" if x_seconds and p_seconds else "n/a", ""),
        ("  stream messages the client received for it", count(x_messages), count(p_messages),
         ratio(x_messages, p_messages) if x_messages is not None and p_messages else "n/a", ""),
    ]

    if isinstance(nvrtc, dict) and not nvrtc["cold_ms"]:
        nvrtc = skip_xcuda or failures.get("xcuda") or "not measured"
    nvrtc_cold = statistics.median(nvrtc["cold_ms"]) if isinstance(nvrtc, dict) else None
    nvrtc_warm = statistics.median(nvrtc["warm_ms"]) if isinstance(nvrtc, dict) else None
    nvrtc_text = (lambda v: f"{v:.2f} ms") if isinstance(nvrtc, dict) else (lambda v: f"n/a ({nvrtc})")
    cold, cold_text = cell("xcuda", "cell_cold")
    warm, warm_text = cell("xcuda", "cell_warm")
    cached, cached_text = cell("xcuda", "cell_cached")
    _, compile_cold_text = cell("xcuda", "compile_cold")
    compile_warm, compile_warm_text = cell("xcuda", "compile_warm")
    round_trip, _ = cell("xcuda", "round_trip")
    minus = lambda a, b: a - b if a is not None and b is not None else None  # noqa: E731
    fmt = lambda v: f"{v:.2f} ms" if v is not None else "n/a"  # noqa: E731
    rows += [
        (f"%%cuda SAXPY, first cell of the kernel (cold NVRTC), round trip (median of {n_starts})",
         cold_text, "", "", ""),
        (f"  bare NVRTC, first compile of a process (ctypes, median of {n_starts})", nvrtc_text(nvrtc_cold), "", "", ""),
        ("  xcuda's own compile_ms of that cell (cross-check)", compile_cold_text, "", "", ""),
        ("  %%cuda overhead above NVRTC, cold", fmt(minus(cold, nvrtc_cold)), "", "",
         under_goal(minus(cold, nvrtc_cold))),
        (f"%%cuda SAXPY, new cell (warm NVRTC), round trip (median of {NEW_CELLS} x {n_starts})",
         warm_text, "", "", ""),
        (f"  bare NVRTC, warm (ctypes, median of {NVRTC_WARM} per start, median over starts)", nvrtc_text(nvrtc_warm), "", "", ""),
        ("  xcuda's own compile_ms of those cells (cross-check)", compile_warm_text, "", "", ""),
        ("  %%cuda overhead above NVRTC, warm", fmt(minus(warm, nvrtc_warm)), "", "",
         under_goal(minus(warm, nvrtc_warm))),
        # NVRTC's own time differs between a tight loop in a quiet process and cells spaced by round
        # trips in the kernel: the same cells' compile_ms separates xcuda's overhead from NVRTC's.
        ("  %%cuda overhead above the same cells' NVRTC time (round trip - compile_ms)",
         fmt(minus(warm, compile_warm)), "", "", under_goal(minus(warm, compile_warm))),
        (f"%%cuda SAXPY, unchanged cell (compile cache hit), round trip (median of {CACHED_REPEATS} x {n_starts})",
         cached_text, "", "", under_goal(cached)),
        ("  of which above the `1+1` round trip", fmt(minus(cached, round_trip)), "", "", ""),
    ]
    return rows, results_rows(cell, print_cell, nvrtc_cold, nvrtc_warm, minus)


def results_rows(cell, print_cell, nvrtc_cold, nvrtc_warm, minus):
    """The figures of the table as rows of results.json: xcuda's against ipykernel's, the %%cuda overheads held to
    OVERHEAD_GOAL_MS."""
    records = []
    for key, label in (("startup", "startup to the first kernel_info reply"), ("round_trip", "`1+1` execute round trip")):
        ipykernel, xcuda = cell("python3", key)[0], cell("xcuda", key)[0]
        records.append(figure_row(f"{label}, ipykernel", ipykernel, "ms"))
        records.append(figure_row(f"{label}, xcuda", xcuda, "ms", f"{label}, ipykernel", ipykernel, "<= 1.00x"))
    label = f"print loop of {PRINT_LINES:,} lines, to reply and idle"
    rate = {name: PRINT_LINES / seconds if seconds else None
            for name, seconds in (("ipykernel", print_cell("python3", "print_seconds")),
                                  ("xcuda", print_cell("xcuda", "print_seconds")))}
    records.append(figure_row(f"{label}, ipykernel", rate["ipykernel"], "lines/s"))
    records.append(figure_row(f"{label}, xcuda", rate["xcuda"], "lines/s", f"{label}, ipykernel", rate["ipykernel"],
                       note="every line received, in order"))
    cold, warm, cached = (cell("xcuda", key)[0] for key in ("cell_cold", "cell_warm", "cell_cached"))
    compile_cold, compile_warm, round_trip = (cell("xcuda", key)[0] for key in ("compile_cold", "compile_warm",
                                                                                 "round_trip"))
    goal = f"< {OVERHEAD_GOAL_MS:g} ms"
    records += [figure_row("%%cuda SAXPY, first cell of the kernel (cold NVRTC), round trip", cold, "ms"),
                figure_row("bare NVRTC, first compile of a process (ctypes)", nvrtc_cold, "ms"),
                figure_row("xcuda's own compile_ms of that cell", compile_cold, "ms", note="a cross-check"),
                figure_row("%%cuda overhead above NVRTC, cold", minus(cold, nvrtc_cold), "ms", goal=goal),
                figure_row("%%cuda SAXPY, new cell (warm NVRTC), round trip", warm, "ms"),
                figure_row("bare NVRTC, warm (ctypes)", nvrtc_warm, "ms"),
                figure_row("xcuda's own compile_ms of those cells", compile_warm, "ms", note="a cross-check"),
                figure_row("%%cuda overhead above NVRTC, warm", minus(warm, nvrtc_warm), "ms", goal=goal),
                figure_row("%%cuda overhead above the same cells' compile_ms", minus(warm, compile_warm), "ms", goal=goal),
                figure_row("%%cuda SAXPY, unchanged cell (compile cache hit), round trip", cached, "ms", goal=goal),
                figure_row("the unchanged cell above the `1+1` round trip", minus(cached, round_trip), "ms")]
    return records


def figure_row(name, value, unit, baseline=None, base=None, goal=None, note=None):
    """result_row with None (not measured) as NA: a row without a value says so."""
    return result_row(name, NA("not measured") if value is None else value, unit, baseline,
                      NA("not measured") if base is None and baseline else base, goal, note)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5, help="kernel starts per kernel (default 5)")
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    add_results_option(parser)
    parser.add_argument("--nvrtc-child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.nvrtc_child:
        nvrtc_child(json.loads(options.nvrtc_child))
        return 0

    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(BUILD / "share" / "jupyter")] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p])
    try:
        import jupyter_client  # noqa: F401
    except ImportError:
        print(f"bench_kernel.py needs jupyter_client and ipykernel; {sys.executable} has no jupyter_client "
              "(run it with /usr/bin/python3 on Debian)")
        return 2

    skip_xcuda = xcuda_kernelspec()
    if skip_xcuda:
        print(f"xcuda rows skipped: {skip_xcuda}\n", flush=True)
    nvrtc_options, options_from = xcuda_compile_options()
    nvrtc = {"cold_ms": [], "warm_ms": []}

    keys = ("startup", "round_trip", "cell_cold", "compile_cold", "cell_warm", "compile_warm", "cell_cached",
            "print_seconds", "print_messages")
    samples = {"xcuda": {k: [] for k in keys}, "python3": {k: [] for k in keys}}
    failures = {}
    kernels = ["python3"] + ([] if skip_xcuda else ["xcuda"])
    for start in range(options.starts):
        for name in (kernels if start % 2 == 0 else kernels[::-1]):
            if name in failures:
                continue
            print(f"start {start + 1}/{options.starts}: {name}", flush=True)
            try:
                one_start(name, samples[name])
                if name == "xcuda":
                    bare = bare_nvrtc(nvrtc_options)
                    if isinstance(bare, str):
                        nvrtc = bare
                    elif isinstance(nvrtc, dict):
                        nvrtc["cold_ms"].append(bare["cold_ms"])
                        nvrtc["warm_ms"].append(bare["warm_ms"])
            except Exception as error:  # report the kernel as n/a and go on with the other one
                failures[name] = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"[:160]
                print(f"  {name} failed: {failures[name]}", flush=True)

    rows, records = table_rows(samples, failures, skip_xcuda, nvrtc, options.starts)
    header = [
        "# xcuda kernel benchmark (CPU side)",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Python {sys.version.split()[0]} ({sys.executable}), jupyter_client {jupyter_client.__version__}",
        f"- NVRTC options: {' '.join(nvrtc_options)} ({options_from})",
        f"- kernelspecs: xcuda from {shown_path(BUILD / 'share' / 'jupyter')}, ipykernel `python3`",
    ]
    table = ["| measure | xcuda | ipykernel (python3) | xcuda / ipykernel | goal |", "|---|---|---|---|---|"]
    table += ["| " + " | ".join(row) + " |" for row in rows]
    text = "\n".join(header) + "\n\n" + "\n".join(table) + "\n"
    print("\n" + text)
    if options.out:
        Path(options.out).write_text(text)
        print(f"table written to {options.out}")
    gpu, _ = probe_gpu()
    write_results(options.results, benchmark_entry(
        "kernel-cpu", "The kernel against ipykernel: start-up, round trip, print loop, %%cuda above NVRTC", records,
        device_text(gpu, f"none ({' '.join(nvrtc_options[:1])})"), gpu is not None,
        note=f"Python {sys.version.split()[0]}, jupyter_client {jupyter_client.__version__}; medians over "
             f"{options.starts} starts of each kernel."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
