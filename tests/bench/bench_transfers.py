#!/usr/bin/env python3
"""Transfer benchmark: a 256 MiB pageable numpy array copied to and from the device in each of xcuda's
ways (xcuda.transfer_options(pageable=...)), against C++ copies from page-locked, pageable and registered
memory, in one run.

A benchmark, not a test: it prints a table with ratios against baselines measured in the same run and
never asserts on time. Run it on a GPU host (tests/bench/run_gpu.sh builds the module and the C++
baseline and runs it):

    XCUDA_BUILD_DIR=build-host python3 tests/bench/bench_transfers.py [--baseline PATH] [--out PATH]

What is measured
----------------
One float32 numpy array of 2^28 bytes (every page touched), a DeviceArray of the same size:
- H2D `d.copy_from(host)` and D2H `d.copy_to_host(out=host)`: host wall time, median of 10 after 3
  warm-up copies of the same array (so 'auto' has reached its registered state);
- the first copy of a new array: a new array each sample (filled, so its pages exist, outside the timed
  region), median of 5: what a registration costs where it is made;
in each way: auto, registered, per-copy, staged (default threads and buffers, and two larger settings),
driver. GB/s = 2^28 bytes / time. The C++ baseline (tests/bench/launch_baseline.cpp `transfers`) copies
the same size from cuMemAllocHost memory (the bus ceiling), malloc'ed memory, and malloc'ed memory
registered once, and times cuMemHostRegister / cuMemHostUnregister of it. Every copy is checked
(the device copy read back equals the source) before it is timed.

Goal: 40 GB/s or more in each direction for a numpy array copied again (the default way, 'auto').
"""

import argparse
import datetime
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
from bench_common import (NA, add_results_option, attempt, baseline_for, baseline_value,  # noqa: E402
                          benchmark_entry, device_text, markdown_table, measured, probe_gpu, result_row, short_error,
                          show_section, write_report, write_results)

BYTES = 1 << 28
N = BYTES // 4
REPEAT, WARMUP = 10, 3
FRESH_REPEAT = 5
GOAL_GBS = 40.0

# The ways measured, with the staging knobs each uses (the others at their defaults).
WAYS = (
    ("auto", {}),
    ("registered", {}),
    ("per-copy", {}),
    ("staged", {}),
    ("staged", {"staging_threads": 8, "staging_chunk_mb": 16, "staging_buffers": 8}),
    ("staged", {"staging_threads": 16, "staging_chunk_mb": 32, "staging_buffers": 4}),
    ("driver", {}),
)


def gbs(ms):
    return BYTES / (ms * 1e-3) / 1e9


def median_ms(run, repeat=REPEAT, warmup=WARMUP):
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def fresh_ms(prepare, copy):
    """Median time of copy(prepare()) over FRESH_REPEAT, prepare() (a new array) outside the timer."""
    samples = []
    for _ in range(FRESH_REPEAT):
        array = prepare()
        start = time.perf_counter()
        copy(array)
        samples.append((time.perf_counter() - start) * 1e3)
        del array
    return statistics.median(samples)


def way_label(mode, knobs):
    text = f"xcuda, pageable='{mode}'"
    if knobs:
        text += ", " + ", ".join(f"{key}={value}" for key, value in knobs.items())
    return text


def measure_xcuda(xcuda):
    """{label: (h2d_gbs, d2h_gbs, fresh_h2d_gbs, fresh_d2h_gbs, registrations made)}."""
    defaults = xcuda.transfer_options()
    restore = {key: defaults[key] for key in ("pageable", "staging_threads", "staging_chunk_mb", "staging_buffers")}
    source = np.random.default_rng(0).random(N, dtype=np.float32)
    device = xcuda.empty(N, np.float32)
    back = np.zeros(N, np.float32)
    rows = {}
    try:
        for mode, knobs in WAYS:
            xcuda.transfer_options(**dict(restore, pageable=mode, **knobs))
            before = xcuda.transfer_stats()["registrations"]["registrations"]

            def check():
                back[:] = 0
                device.copy_from(source)
                device.copy_to_host(out=back)
                return None if np.array_equal(back, source) else "the copy read back differs from its source"

            def new_source():
                return source.copy()

            def new_destination():
                array = np.empty(N, np.float32)
                array.fill(0)  # every page exists before the timer starts
                return array

            h2d = attempt(check, lambda: gbs(median_ms(lambda: device.copy_from(source))))
            d2h = attempt(None, lambda: gbs(median_ms(lambda: device.copy_to_host(out=back))))
            fresh_h2d = attempt(None, lambda: gbs(fresh_ms(new_source, device.copy_from)))
            fresh_d2h = attempt(None, lambda: gbs(fresh_ms(new_destination, lambda a: device.copy_to_host(out=a))))
            made = xcuda.transfer_stats()["registrations"]["registrations"] - before
            rows[way_label(mode, knobs)] = (h2d, d2h, fresh_h2d, fresh_d2h, made)
    finally:
        xcuda.transfer_options(**restore)
    return rows


def table(baseline, rows, default_label):
    pinned_h2d = baseline_value(baseline, "copy_h2d_pinned_gbs")
    pinned_d2h = baseline_value(baseline, "copy_d2h_pinned_gbs")

    def fmt(value):
        return f"{value:.1f}" if measured(value) else str(value)

    def of_bus(value, ceiling):
        return f"{value / ceiling:.2f}x" if measured(value) and measured(ceiling) and ceiling else "n/a"

    lines = []
    for name, key in (("C++ cuMemcpy from/to cuMemAllocHost memory (the bus ceiling)", "pinned"),
                      ("C++ cuMemcpy from/to malloc'ed memory", "pageable"),
                      ("C++ cuMemcpy from/to malloc'ed memory registered once", "registered")):
        h2d = baseline_value(baseline, f"copy_h2d_{key}_gbs")
        d2h = baseline_value(baseline, f"copy_d2h_{key}_gbs")
        lines.append((name, fmt(h2d), fmt(d2h), "", "", of_bus(h2d, pinned_h2d), of_bus(d2h, pinned_d2h), "", ""))
    for name, (h2d, d2h, fresh_h2d, fresh_d2h, made) in rows.items():
        goal = ""
        if measured(h2d) and measured(d2h):
            verdict = "met" if min(h2d, d2h) >= GOAL_GBS else "missed"
            goal = f">= {GOAL_GBS:.0f} GB/s each way: {verdict} (H2D {h2d:.1f}, D2H {d2h:.1f})"
        else:
            goal = f">= {GOAL_GBS:.0f} GB/s each way: n/a"
        if name == default_label:
            goal += " (the default)"
        lines.append((name, fmt(h2d), fmt(d2h), fmt(fresh_h2d), fmt(fresh_d2h), of_bus(h2d, pinned_h2d),
                      of_bus(d2h, pinned_d2h), str(made) if isinstance(made, int) else "", goal))
    registration = ""
    register_ms, unregister_ms = baseline_value(baseline, "register_ms"), baseline_value(baseline, "unregister_ms")
    if measured(register_ms) and measured(unregister_ms):
        registration = (f"\n\ncuMemHostRegister of the 256 MiB took {register_ms:.2f} ms and cuMemHostUnregister "
                        f"{unregister_ms:.2f} ms (C++, median of 5): registering for one copy and unregistering "
                        f"after it costs {register_ms + unregister_ms:.2f} ms against "
                        f"{BYTES / (pinned_h2d * 1e9) * 1e3:.2f} ms for the copy at the bus ceiling."
                        if measured(pinned_h2d) else "")
    return markdown_table(["way", "H2D GB/s (same array again)", "D2H GB/s (same array again)",
                           "H2D GB/s (a new array)", "D2H GB/s (a new array)", "H2D of bus ceiling",
                           "D2H of bus ceiling", "registrations made", "goal"], lines) + registration


BASELINES = (("C++ cuMemcpy, cuMemAllocHost memory (the bus ceiling)", "pinned"),
             ("C++ cuMemcpy, malloc'ed memory", "pageable"),
             ("C++ cuMemcpy, malloc'ed memory registered once", "registered"))


def results_rows(baseline, rows, default_label):
    """The table as rows of results.json: each way and direction against the bus ceiling of that direction,
    xcuda's held to GOAL_GBS; a new array's figure and the registrations in the note."""
    ceiling = {direction: (f"{BASELINES[0][0]}, {direction}", baseline_value(baseline, f"copy_{direction.lower()}_pinned_gbs"))
               for direction in ("H2D", "D2H")}
    records = []
    for name, key in BASELINES:
        for direction in ("H2D", "D2H"):
            value = baseline_value(baseline, f"copy_{direction.lower()}_{key}_gbs")
            records.append(result_row(f"{name}, {direction}", value, "GB/s") if key == "pinned" else
                           result_row(f"{name}, {direction}", value, "GB/s", *ceiling[direction]))
    for name, (h2d, d2h, fresh_h2d, fresh_d2h, made) in rows.items():
        for direction, value, fresh in (("H2D", h2d, fresh_h2d), ("D2H", d2h, fresh_d2h)):
            notes = [f"a new array: {fresh:.1f} GB/s" if measured(fresh) else None]
            if direction == "H2D" and isinstance(made, int):
                notes += [f"{made} registrations made", "the default" if name == default_label else None]
            records.append(result_row(f"{name}, {direction}", value, "GB/s", *ceiling[direction],
                                      f">= {GOAL_GBS:.0f} GB/s", "; ".join(n for n in notes if n) or None))
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a prebuilt launch_baseline executable (default: build it with nvcc)")
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    add_results_option(parser)
    options = parser.parse_args()
    gpu, gpu_reason = probe_gpu()
    if gpu_reason:
        print(f"No GPU: {gpu_reason}. Nothing can be timed here; every row shows n/a.\n", flush=True)
    with tempfile.TemporaryDirectory(prefix="xcuda-bench-transfers-") as folder:
        baseline = baseline_for(options.baseline, folder, gpu_reason, "transfers")

    xcuda = None
    rows = {}
    default_label = way_label("auto", {})
    try:
        import xcuda as loaded
        xcuda = loaded
        default_label = way_label(xcuda.transfer_options()["pageable"], {})
    except ImportError as error:
        gpu_reason = gpu_reason or f"no xcuda module in {BUILD / 'python'}: {short_error(error)}"
    if xcuda is not None and not gpu_reason:
        try:
            rows = measure_xcuda(xcuda)
        except Exception as error:
            rows = {way_label(m, k): (NA(f"error: {short_error(error)}"),) * 4 + ("",) for m, k in WAYS}
    else:
        rows = {way_label(m, k): (NA(gpu_reason),) * 4 + ("",) for m, k in WAYS}

    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    cores = os.cpu_count()
    header = [
        "# xcuda transfer benchmark",
        "",
        f"- date: {now}",
        f"- device: {gpu['name'] + ' (' + gpu['arch'] + ')' if gpu else 'none: ' + gpu_reason}",
        f"- host: {platform.node()}, {cores} CPU cores, Python {platform.python_version()}, numpy {np.__version__}"
        + (f", xcuda {xcuda.__version__}" if xcuda else ""),
        f"- C++ baseline: {'ran' if isinstance(baseline, dict) else baseline}",
        f"- one float32 array of {BYTES >> 20} MiB; same array: median of {REPEAT} after {WARMUP} warm-up copies; "
        f"a new array: median of {FRESH_REPEAT}",
    ]
    sections = []
    show_section(sections, "\n".join(header))
    show_section(sections, "## A 256 MiB numpy array to and from the device, by way of copying\n\n" +
                 table(baseline, rows, default_label))
    write_report(options.out, sections)
    write_results(options.results, benchmark_entry(
        "transfers", "Pageable transfers: a 256 MiB numpy array to and from the device, by way of copying",
        results_rows(baseline, rows, default_label), device_text(gpu, "none"), gpu is not None,
        note=f"The same array again: median of {REPEAT} after {WARMUP} warm-up copies; a new array: median of "
             f"{FRESH_REPEAT}."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
