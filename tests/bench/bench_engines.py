#!/usr/bin/env python3
"""Engines benchmark of xcuda: SAXPY over ipyparallel engines, one per GPU, against one engine, in one run.

A benchmark, not a test: it prints tables with ratios against the one-engine baseline measured in the
same run and never asserts on time. Run it on the 2-GPU host, from the repository root:

    source .devrt/runtime-env.sh        # the packed Debian runtime, with python3-ipyparallel in it
    XCUDA_BUILD_DIR=$PWD/build python3 tests/bench/bench_engines.py [--log2n 28] [--out PATH]

XCUDA_BUILD_DIR (default <repo>/build) is the build folder whose python/ holds the `xcuda` module; the
engines find it through PYTHONPATH, which this script sets for them.

What is measured
----------------
A local ipyparallel cluster of --engines engines (default 2) on 127.0.0.1, with its own profile folder
and xcuda engine registry: each engine takes the next slot on the host and so its own GPU (slot modulo
the GPU count; the header lists each engine's device, its GPU's UUID and whether it shares it). Each
engine loads xcuda and compiles SAXPY (out = a * x + y, float32, block 256) itself. x and y, n = 2^log2n
random floats, are drawn once on the client and sent with xcuda.parallel.scatter.

1. Resident data. (a) One engine holds all of n on its GPU. (b) Every engine holds n / engines on its
   own GPU. One call = one ipyparallel apply to every engine of the configuration (sent to all at once,
   then waited for) running --launches launches of SAXPY and xcuda.synchronize() there. Before timing,
   each configuration's result is checked against numpy over all n elements (out poisoned with NaN
   first, gathered with xcuda.parallel.gather); a wrong result is reported and not timed.
   Per configuration: the median over --repeat calls (after 2 warm-up calls) of the client's wall
   time of a call (what a %%px cell costs, one round trip included), and of the slowest engine's own
   wall time of its launches and synchronisation (perf_counter on the engine: the GPUs' work without
   the round trip). Speed-up = (a) / (b). Goal: >= 1.8x on two GPUs, for the client's wall time.
2. Round trip: the median of an empty apply to one engine and to all engines: what each call pays
   besides the GPU work (--launches amortises it).
3. End to end: scatter x and y from the client, one launch, gather out; median of 3 after 1 warm-up,
   one engine against all. No goal: the copies (host -> network -> host -> device and back) dominate.

Without a GPU the script says so, still starts the engines and compiles on them (NVRTC needs no
driver), prints the tables with every row n/a and exits 0. With fewer GPUs than engines, the engines
share GPUs: the rows are measured and the header says so, and the goal is n/a.
"""

import argparse
import datetime
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(HERE))
from bench_common import (NA, add_results_option, attempt, benchmark_entry, device_text, markdown_table,  # noqa: E402
                          measured, probe_gpu, result_row, short_error, show_section, write_report, write_results)

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""
A = np.float32(2.0)
BLOCK = 256
BYTES_PER_ELEMENT = 12  # x and y read, out written
WARMUP = 2
E2E_REPEAT, E2E_WARMUP = 3, 1
SPEEDUP_GOAL = 1.8
START_S = 300
CALL_S = 600
CHOICE_VARIABLES = ("XCUDA_DEVICE", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK")


# ---- run on the engines (sent by value; their globals are the engine's namespace) --------------------


def _engine_setup(source):
    """Loads xcuda into the engine's shell, compiles SAXPY there; returns its device choice."""
    import xcuda
    from IPython import get_ipython

    shell = get_ipython()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "", source)
    return xcuda.device_choice()


def _engine_poison():
    """out = NaN everywhere (an element the kernel does not write then fails the check)."""
    global out
    import numpy
    import xcuda

    out = xcuda.to_device(numpy.full(x.size, numpy.nan, numpy.float32))  # noqa: F821 (the engine's x)


def _engine_launches(a, launches):
    """`launches` SAXPY launches over the engine's resident x, y, out, then a synchronize; returns the
    engine's own wall time of that in seconds."""
    import time

    import xcuda

    n = x.size  # noqa: F821 (the engine's x, y, out and saxpy)
    launch = saxpy[(n + 255) // 256, 256]  # noqa: F821
    start = time.perf_counter()
    for _ in range(launches):
        launch(a, x, y, out, n)  # noqa: F821
    xcuda.synchronize()
    return time.perf_counter() - start


def _engine_nothing():
    return None


def _engine_forget():
    for name in ("x", "y", "out"):
        globals().pop(name, None)


def _engine_state():
    import xcuda

    return xcuda.device_choice()


# ---- the client side ---------------------------------------------------------------------------------


def median_of(run, repeat, warmup):
    for _ in range(warmup):
        run()
    return statistics.median(run() for _ in range(repeat))


class Configuration:
    """Engines holding n between them: its view, and how to run and time a call there."""

    def __init__(self, ipp, client, engines, label):
        self.view = client[list(engines)]
        self.engines = list(engines)
        self.label = label
        self.ipp = ipp

    def apply(self, function, *args):
        """function(*args) on every engine at once; their results in engine order."""
        return self.view.apply_async(self.ipp.interactive(function), *args).get(timeout=CALL_S)

    def place(self, xcuda, x, y):
        self.apply(_engine_forget)
        xcuda.parallel.scatter(self.view, "x", x, timeout=CALL_S)
        xcuda.parallel.scatter(self.view, "y", y, timeout=CALL_S)

    def check(self, xcuda, expected):
        """None when one launch over the resident data gives `expected`, else what is wrong."""
        self.apply(_engine_poison)
        self.apply(_engine_launches, A, 1)
        got = xcuda.parallel.gather(self.view, "out", timeout=CALL_S)
        wrong = np.count_nonzero(~np.isclose(got, expected, rtol=1e-6, atol=1e-6))
        return f"{wrong} of {expected.size} elements differ from numpy" if wrong else None

    def time_call(self, launches):
        """(client wall ms, slowest engine's own ms) of one call of `launches` launches on every engine."""
        start = time.perf_counter()
        engine_s = self.apply(_engine_launches, A, launches)
        return (time.perf_counter() - start) * 1e3, max(engine_s) * 1e3


def resident(bench, configurations, options):
    """Rows: each configuration's medians, then the speed-ups against the first (one engine)."""
    rows, results = [], []
    for config in configurations:
        def check(config=config):
            config.place(bench.xcuda, bench.x, bench.y)
            return config.check(bench.xcuda, bench.expected)

        def measure(config=config):
            for _ in range(WARMUP):
                config.time_call(options.launches)
            calls = [config.time_call(options.launches) for _ in range(options.repeat)]
            return statistics.median(c[0] for c in calls), statistics.median(c[1] for c in calls)

        result = NA(bench.reason) if bench.reason else attempt(check, measure)
        results.append(result)
        first = f"{configurations[0].label}: SAXPY on resident data, client wall per call"
        bench.records.append(result_row(
            f"{config.label}: SAXPY on resident data, client wall per call", result[0] if measured(result) else result,
            "ms", None if config is configurations[0] else first,
            results[0][0] if measured(results[0]) else results[0],
            note=f"the slowest engine {result[1]:.2f} ms" if measured(result) else None))
        per_engine = bench.n // len(config.engines)
        if measured(result):
            wall, engine = result
            launched = BYTES_PER_ELEMENT * bench.n * options.launches
            rows.append([config.label, len(config.engines), f"{per_engine:,}", f"{wall:.2f}", f"{engine:.2f}",
                         f"{engine / options.launches:.3f}", f"{launched / (engine * 1e-3) / 1e9:.0f}"])
        else:
            rows.append([config.label, len(config.engines), f"{per_engine:,}", str(result), "n/a", "n/a", "n/a"])
    base = results[0]
    speedups = []
    for config, result in zip(configurations[1:], results[1:]):
        name = f"{config.label} against {configurations[0].label}"
        if measured(base) and measured(result):
            wall_ratio, engine_ratio = base[0] / result[0], base[1] / result[1]
            speedups.append([name, f"{wall_ratio:.2f}x", f"{engine_ratio:.2f}x", bench.goal(wall_ratio)])
        else:
            missing = result if not measured(result) else base
            wall_ratio = engine_ratio = missing
            speedups.append([name, str(missing), "n/a", bench.goal(None)])
        bench.records.append(result_row(
            f"{name}: speed-up, client wall", wall_ratio, "x", goal=None if bench.shared else f">= {SPEEDUP_GOAL:.2f}x",
            note="; ".join(n for n in (f"the engines' own: {engine_ratio:.2f}x" if measured(engine_ratio) else None,
                                       f"no goal: {bench.shared}" if bench.shared else None) if n) or None))
    table = markdown_table(["configuration", "engines", "n per engine", "client wall per call (ms)",
                            "slowest engine per call (ms)", "per launch (ms)", "GB/s (all engines)"], rows)
    ratios = markdown_table(["speed-up, resident data", "client wall", "engines' own",
                             f"goal >= {SPEEDUP_GOAL}x (client wall)"], speedups)
    return (f"{table}\n\nOne call = {options.launches} launches and a synchronize on each engine of the "
            f"configuration, sent to all at once; median of {options.repeat} calls after {WARMUP}.\n\n{ratios}")


def round_trips(bench, configurations):
    rows = []
    for config in configurations:
        value = attempt(None, lambda config=config: median_of(
            lambda: _timed_ms(lambda: config.apply(_engine_nothing)), 20, 3))
        rows.append([config.label, f"{value:.2f}" if measured(value) else str(value)])
        bench.records.append(result_row(f"an empty apply to {config.label}: round trip", value, "ms"))
    return markdown_table(["empty apply to", "median round trip (ms)"], rows)


def _timed_ms(run):
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1e3


def end_to_end(bench, configurations):
    rows, results = [], []
    for config in configurations:
        if bench.reason:
            result = NA(bench.reason)
        else:
            def run(config=config):
                config.place(bench.xcuda, bench.x, bench.y)
                config.apply(_engine_poison)  # out, on each engine's GPU (place() forgot the old one)
                config.apply(_engine_launches, A, 1)
                return bench.xcuda.parallel.gather(config.view, "out", timeout=CALL_S)

            def measure(run=run):
                return median_of(lambda: _timed_ms(run), E2E_REPEAT, E2E_WARMUP)

            result = attempt(lambda run=run: None if np.allclose(run(), bench.expected, rtol=1e-6, atol=1e-6)
                             else "the gathered out differs from numpy", measure)
        results.append(result)
        bench.records.append(result_row(f"scatter x, y + 1 launch + gather out, {config.label}", result, "ms",
                                        None if config is configurations[0] else
                                        f"scatter x, y + 1 launch + gather out, {configurations[0].label}", results[0]))
        rows.append([config.label, f"{result:.0f}" if measured(result) else str(result),
                     f"{results[0] / result:.2f}x" if measured(result) and measured(results[0]) else "n/a"])
    return markdown_table(["scatter x, y + 1 launch + gather out", "median wall (ms)", "speed-up against one engine"],
                          rows)


class Bench:
    def __init__(self, n, reason, xcuda):
        self.n = n
        self.reason = reason  # why nothing can be timed, or None
        self.xcuda = xcuda
        self.shared = None  # why the engines share GPUs, or None
        self.records = []  # the tables' rows for results.json
        rng = np.random.default_rng(18)
        self.x = rng.random(n, dtype=np.float32)
        self.y = rng.random(n, dtype=np.float32)
        self.expected = A * self.x + self.y

    def goal(self, ratio):
        if ratio is None:
            return "n/a"
        if self.shared:
            return f"n/a ({self.shared})"
        verdict = "met" if ratio >= SPEEDUP_GOAL else "missed"
        return f"{verdict} ({ratio:.2f}x, margin {ratio - SPEEDUP_GOAL:+.2f}x)"


def start_cluster(ipp, engines, root):
    os.environ["PYTHONPATH"] = os.pathsep.join([str(BUILD / "python")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    os.environ["XCUDA_HOST_REGISTRY"] = str(Path(root) / "registry")
    for name in CHOICE_VARIABLES:
        os.environ.pop(name, None)  # each engine takes a slot, and so a GPU of its own
    cluster = ipp.Cluster(n=engines, profile_dir=str(Path(root) / "profile"), controller_ip="127.0.0.1",
                          log_level=logging.WARNING)
    client = cluster.start_and_connect_sync()
    client.wait_for_engines(engines, timeout=START_S)
    return cluster, client


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=28, help="n = 2^LOG2N elements (default 28)")
    parser.add_argument("--engines", type=int, default=2, help="engines in the multi-engine configuration (default 2)")
    parser.add_argument("--launches", type=int, default=100, help="launches per timed call (default 100)")
    parser.add_argument("--repeat", type=int, default=10, help="timed calls per configuration (default 10)")
    parser.add_argument("--out", help="also write the tables (markdown) to this file")
    add_results_option(parser)
    options = parser.parse_args()
    try:
        import ipyparallel as ipp
    except ImportError as error:
        print(f"ipyparallel is not importable ({error}): on Debian install python3-ipyparallel; on the GPU host "
              "pack it with EXTRA_PACKAGES=\"python3-ipyparallel\" pack-runtime.sh .devrt", file=sys.stderr)
        return 1
    import xcuda

    gpu, gpu_reason = probe_gpu()
    n = 1 << options.log2n
    if gpu_reason:
        print(f"No GPU: {gpu_reason}. Nothing can be timed here; the engines only compile, and every row "
              "shows n/a.\n", flush=True)
        n = min(n, 1 << 20)  # the data is drawn and sent for nothing: keep it small
    started = time.perf_counter()
    bench = Bench(n, gpu_reason, xcuda)
    sections = []
    with tempfile.TemporaryDirectory(prefix="xcuda-bench-engines-") as root:
        cluster = client = None
        try:
            cluster, client = start_cluster(ipp, options.engines, root)
            engines = list(client.ids)
            choices = client[engines].apply_async(ipp.interactive(_engine_setup), SAXPY).get(timeout=CALL_S)
            configurations = [Configuration(ipp, client, engines[:1], "one engine"),
                              Configuration(ipp, client, engines, f"{len(engines)} engines")]
            if not gpu_reason:
                # A context on every engine: each records its GPU's UUID, and says who else is on it.
                client[engines].execute("import xcuda as _x; _probe = _x.zeros(1)").get(timeout=CALL_S)
                choices = client[engines].apply_async(ipp.interactive(_engine_state)).get(timeout=CALL_S)
                uuids = [c["gpu_uuid"] for c in choices]
                if len(set(uuids)) < len(uuids):
                    bench.shared = f"{len(engines)} engines on {len(set(uuids))} GPU(s)"
            placed = "; ".join(f"engine {e}: device {c['ordinal']} ({c['source']}"
                               f"{', ' + c['gpu_uuid'] if c.get('gpu_uuid') else ''}"
                               f"{', shares it with ' + str(len(c['shared_with'])) + ' other(s)' if c.get('shared_with') else ''})"
                               for e, c in zip(engines, choices))
            now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
            header = [
                "# xcuda engines benchmark (ipyparallel)",
                "",
                f"- date: {now}",
                f"- GPU: {gpu['name']} ({gpu['arch']}), driver CUDA {gpu['driver']}" if gpu else f"- GPU: none: {gpu_reason}",
                f"- engines: {placed}",
                f"- host: {platform.node()}, Python {platform.python_version()}, numpy {np.__version__}, "
                f"ipyparallel {ipp.__version__}, xcuda {xcuda.__version__}",
                f"- SAXPY n = 2^{int(np.log2(n))} float32 ({n * 4 / 2**20:g} MiB per array), block {BLOCK}",
            ]
            if bench.shared:
                header.append(f"- the engines share GPUs ({bench.shared}): the goal is n/a")
            show_section(sections, "\n".join(header))
            show_section(sections, f"## SAXPY, data resident on the engines' GPUs\n\n{resident(bench, configurations, options)}")
            show_section(sections, f"## Round trip of a call\n\n{round_trips(bench, configurations)}")
            show_section(sections, f"## End to end from the client\n\n{end_to_end(bench, configurations)}")
        except Exception as error:
            print(f"the benchmark stopped: {short_error(error)}", file=sys.stderr)
            raise
        finally:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.stop_cluster_sync()
    print(f"(measured in {time.perf_counter() - started:.0f} s)")
    write_report(options.out, sections)
    write_results(options.results, benchmark_entry(
        "engines", f"SAXPY on ipyparallel engines, one engine against {options.engines}", bench.records,
        device_text(gpu, "none"), gpu is not None,
        note=f"n = 2^{int(np.log2(n))} float32; one call = {options.launches} launches and a synchronize on each "
             f"engine, median of {options.repeat} calls after {WARMUP}."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
