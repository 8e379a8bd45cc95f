#!/usr/bin/env python3
"""Soak: many compile/launch cycles in one session, with host (and device) memory sampled.

    XCUDA_BUILD_DIR=build /usr/bin/python3 tests/bench/soak.py [--cpu-cycles 10000] [--gpu-cycles 2000]

CPU part (any machine): a %%cuda cell re-run --cpu-cycles times in one IPython shell, unchanged (the
module comes back from the registry) and alternating between two variants (a new module object from the
compile cache each time, the old one released). GPU part (skipped with the reason without a GPU):
--gpu-cycles cycles of compile (alternating variants), launch on fresh data, and a check of the result.
Prints the resident set size (and the device's free memory) every tenth of the run, and the growth from
the first sample after warm-up to the last. A script, not a test: it prints, and asserts nothing.
"""
import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve() / "python"))

import numpy as np  # noqa: E402
import xcuda  # noqa: E402

CELL = 'extern "C" __global__ void soak(float* out, const float* in, int n)\n' \
       '{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = in[i] * SCALE; }\n'


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def table(title, rows, columns):
    print(f"\n### {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")


def cpu_soak(cycles):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    for mode in ("unchanged cell", "alternating variants"):
        rows, start = [], time.perf_counter()
        base = None
        for i in range(cycles):
            scale = 2 if mode == "unchanged cell" else 2 + i % 2
            shell.run_cell_magic("cuda", f"--arch compute_75 -DSCALE={scale}", CELL)
            if i == cycles // 10:
                base = rss_mb()
            if (i + 1) % (cycles // 10) == 0:
                rows.append((i + 1, f"{rss_mb():.1f}", xcuda.session_stats()["registered_modules"]))
        elapsed = time.perf_counter() - start
        table(f"CPU: {cycles} re-runs of one %%cuda cell, {mode} ({elapsed:.1f} s, "
              f"{elapsed / cycles * 1e3:.3f} ms each); host RSS growth after warm-up: {rss_mb() - base:+.1f} MB",
              rows, ["runs", "RSS MB", "registered modules"])


def gpu_soak(cycles):
    if not xcuda.driver_available():
        print("\n### GPU part skipped: no usable NVIDIA GPU on this machine")
        return
    rows, start, base_rss, base_free = [], time.perf_counter(), None, None
    n = 1 << 20
    rng = np.random.default_rng(0)
    for i in range(cycles):
        scale = 2 + i % 2
        module = xcuda.compile(CELL, name="soak", defines=[f"SCALE={scale}"])
        data = rng.random(n, dtype=np.float32)
        src = xcuda.to_device(data)
        out = xcuda.empty(n, np.float32)
        module.soak.forall(n)(out, src, n)
        if not np.array_equal(out.copy_to_host(), data * np.float32(scale)):
            print(f"cycle {i}: WRONG RESULT")
            return
        if i == cycles // 10:
            base_rss, base_free = rss_mb(), xcuda.memory_info()[0]
        if (i + 1) % (cycles // 10) == 0:
            rows.append((i + 1, f"{rss_mb():.1f}", f"{xcuda.memory_info()[0] / 2**20:.0f}",
                         xcuda.session_stats()["loaded_modules"], xcuda.session_stats()["buffers"]))
    elapsed = time.perf_counter() - start
    free_now = xcuda.memory_info()[0]
    table(f"GPU: {cycles} compile-launch-check cycles ({elapsed:.1f} s); after warm-up: host RSS "
          f"{rss_mb() - base_rss:+.1f} MB, device free memory {(free_now - base_free) / 2**20:+.0f} MiB",
          rows, ["cycles", "RSS MB", "device free MiB", "loaded modules", "live buffers"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-cycles", type=int, default=10000)
    parser.add_argument("--gpu-cycles", type=int, default=2000)
    args = parser.parse_args()
    print(f"# xcuda soak, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python {sys.version.split()[0]}")
    cpu_soak(args.cpu_cycles)
    gpu_soak(args.gpu_cycles)


if __name__ == "__main__":
    main()
