#!/usr/bin/env python3
"""Multi-GPU benchmark of xcuda: SAXPY split across every device against one device, and copies
between devices, in one run.

A benchmark, not a test: it prints tables with ratios against baselines measured in the same run and
never asserts on time. Run it on a GPU host (tests/bench/run_gpu.sh builds the module and runs it last):

    XCUDA_BUILD_DIR=build-host python3 tests/bench/bench_multigpu.py [--log2n 28] [--out PATH]

XCUDA_BUILD_DIR (default <repo>/build) is the build folder whose python/ holds the `xcuda` module.
--log2n sets n = 2^log2n (default 28: 1 GiB per float32 array). --out also writes the tables (markdown)
to a file.

What is measured
----------------
SAXPY, out = a * x + y, float32, block 256, one element per thread. x and y are random, drawn once into
page-locked host arrays; every configuration's result is checked once against numpy on a sample (65536
random elements plus the first and last element of every slice) before it is timed, with the outputs
poisoned (NaN) first. A wrong result is reported as such and not timed.

1. Data resident on the devices. (a) One GPU: all n on device 0, the default stream; median over 20
   launches (after 3 warm-up ones) of the host wall time around launch + xcuda.synchronize(), and of
   CUDA events recorded around the launch. The same launch on a Stream of device 0, with the code of (b)
   given one slice, separates the cost of the streams from that of the split. (b) All devices: n split
   evenly, slice d allocated on device d (`with xcuda.device(d)`), each device launched on its own Stream,
   all launched first and then all synchronised; median wall time, and the median of the slowest
   device's event time. Speed-up = (a) / (b). Goal: >= 0.95x the number of devices (1.90x on two).
2. End to end from page-locked host arrays (xcuda.empty_pinned, each device's slices allocated with that
   device current): H2D of x and y, the launch, D2H of out; median of 10 after 2 warm-up runs. One device:
   all n through device 0. All devices: the H2D copies of every device at once (one thread per device:
   DeviceArray.copy_from releases the GIL), then the launches on every device's stream, then the D2H
   copies at once; and the same with the copies of one device after another from one thread. Speed-up
   against one device; no goal (the host's memory bandwidth is shared).
3. xcuda.copy of 256 MiB: on device 0 ("device"), between devices 0 and 1 in both directions with
   method="staged" and method="peer", and with the method xcuda chooses; then the peer and chosen rows
   again after xcuda.enable_peer_access(0, 1). Median wall time of 10 copies after 2 (xcuda.copy returns
   when the copy has finished); GB/s counts the bytes copied once. Ratio against staged, same direction.

With one device the multi-GPU rows show n/a with the reason and the rest runs. Without a GPU the script
says so, compiles the kernels with xcuda (NVRTC needs no driver), prints the tables with every row n/a
and exits 0.
"""

import argparse
import ctypes
import datetime
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(HERE))
from bench_common import (NA, add_results_option, attempt, benchmark_entry, markdown_table, measured,  # noqa: E402
                          median_wall_ms, probe_gpu, ratio, result_row, write_results,
                          short_error, show_section, write_report)

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

extern "C" __global__ void fill(float* x, float value, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}
"""

A = np.float32(2.0)
BLOCK = 256
BYTES_PER_ELEMENT = 12  # x and y read, out written
REPEAT, WARMUP = 20, 3
E2E_REPEAT, E2E_WARMUP = 10, 2
COPY_BYTES = 256 << 20
COPY_REPEAT, COPY_WARMUP = 10, 2
SAMPLE = 1 << 16
SPEEDUP_GOAL_PER_DEVICE = 0.95


# ---- results and timing ----------------------------------------------------------------------------


def grid_for(n):
    return -(-n // BLOCK)


def fmt(value, unit, digits=3):
    return str(value) if not measured(value) else f"{value:.{digits}f} {unit}"


def gbs(nbytes, ms):
    return f"{nbytes / (ms * 1e-3) / 1e9:.0f}" if measured(ms) and ms else "n/a"


def rate(nbytes, ms, where=""):
    """The GB/s of a measured time, for a row's note; None when it was not measured."""
    return f"{gbs(nbytes, ms)} GB/s{where}" if measured(ms) and ms else None


def goal_at_least(speedup, limit):
    """`speedup >= limit`, as met/missed with the margin."""
    if not measured(speedup):
        return f">= {limit:.2f}x: n/a"
    verdict = "met" if speedup >= limit else "missed"
    return f">= {limit:.2f}x: {verdict} ({speedup:.2f}x, margin {speedup - limit:+.2f}x)"


def speedup(base, value):
    if not (measured(base) and measured(value)) or not value:
        return NA("not measured")
    return base / value


def list_devices():
    """[(name, arch, total bytes)] for every device, through the driver (the header needs no xcuda)."""
    lib = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    devices = []
    for ordinal in range(count.value):
        device, name = ctypes.c_int(0), ctypes.create_string_buffer(256)
        major, minor, total = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_size_t(0)
        lib.cuDeviceGet(ctypes.byref(device), ordinal)
        lib.cuDeviceGetName(name, 256, device)
        lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device)  # COMPUTE_CAPABILITY_MAJOR
        lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)  # ..._MINOR
        lib.cuDeviceTotalMem_v2(ctypes.byref(total), device)
        devices.append((name.value.decode(), f"sm_{major.value}{minor.value}", total.value))
    return devices


# ---- the benchmark -----------------------------------------------------------------------------------


class Part:
    """One device's slice [lo, hi): its stream, device arrays, page-locked host slices and events."""

    def __init__(self, xcuda, device, lo, hi, x=None, y=None, out=None):
        self.device, self.lo, self.hi, self.n = device, lo, hi, hi - lo
        self.grid = grid_for(self.n)
        with xcuda.device(device):
            self.stream = xcuda.Stream()
            self.start, self.end = xcuda.Event(), xcuda.Event()
            self.x = x if x is not None else xcuda.empty(self.n, np.float32)
            self.y = y if y is not None else xcuda.empty(self.n, np.float32)
            self.out = out if out is not None else xcuda.empty(self.n, np.float32)


class Bench:
    def __init__(self, n, reason):
        self.n = n
        self.records = []  # the tables' rows for results.json
        self.reason = reason  # why nothing can be timed, or None
        self.multi_reason = reason
        self.xcuda = None
        self.count = 0
        try:
            import xcuda
        except ImportError as error:
            self.reason = self.multi_reason = f"no xcuda module in {BUILD / 'python'}: {short_error(error)}"
            return
        self.xcuda = xcuda
        try:
            module = xcuda.compile(SOURCE, name="bench_multigpu")
            self.saxpy, self.fill = module.saxpy, module.fill
        except Exception as error:
            self.reason = self.multi_reason = f"xcuda.compile failed: {short_error(error)}"
            return
        if self.reason:
            return
        self.count = xcuda.device_count()
        if self.count < 2:
            self.multi_reason = f"one device: the multi-GPU rows need two or more, this machine has {self.count}"
        try:
            self.setup()
        except Exception as error:  # e.g. a build without the multi-GPU API: every row says why
            self.reason = self.multi_reason = f"set-up failed: {short_error(error)}"

    def setup(self):
        xcuda, n = self.xcuda, self.n
        print(f"setting up: n = 2^{n.bit_length() - 1} float32, x and y drawn into page-locked memory ...", flush=True)
        xcuda.set_device(0)
        rng = np.random.default_rng(0)
        self.px = xcuda.empty_pinned(n, np.float32)
        self.py = xcuda.empty_pinned(n, np.float32)
        self.pout = xcuda.empty_pinned(n, np.float32)
        rng.random(dtype=np.float32, out=self.px)
        rng.random(dtype=np.float32, out=self.py)
        bounds = [n * d // max(self.count, 1) for d in range(self.count + 1)]
        self.sample = np.unique(np.concatenate([rng.integers(0, n, SAMPLE), bounds[:-1], np.array(bounds[1:]) - 1]))
        self.x0, self.y0 = xcuda.to_device(self.px), xcuda.to_device(self.py)
        self.out0 = xcuda.empty(n, np.float32)
        self.whole = Part(xcuda, 0, 0, n, self.x0, self.y0, self.out0)
        self.whole.hout = self.pout
        self.parts = []
        for d in range(self.count):
            part = Part(xcuda, d, bounds[d], bounds[d + 1])
            with xcuda.device(d):  # page-locked for the context that will copy from them
                part.hx = xcuda.empty_pinned(part.n, np.float32)
                part.hy = xcuda.empty_pinned(part.n, np.float32)
                part.hout = xcuda.empty_pinned(part.n, np.float32)
            part.hx[:], part.hy[:] = self.px[part.lo:part.hi], self.py[part.lo:part.hi]
            part.x.copy_from(part.hx)
            part.y.copy_from(part.hy)
            self.parts.append(part)
        self.pool = ThreadPoolExecutor(max_workers=self.count)
        for d in range(self.count):
            xcuda.synchronize(device=d)

    # -- helpers

    @property
    def all_devices(self):
        return f"all {self.count} devices" if self.count >= 2 else "all devices"

    def poison(self, array):
        with self.xcuda.device(array.device):
            self.fill[grid_for(array.size), BLOCK](array, np.float32(np.nan), array.size)

    def compare(self, host, lo=0):
        """None when `host` (elements lo..lo+len) matches numpy on the sample, else what is wrong."""
        index = self.sample[(self.sample >= lo) & (self.sample < lo + len(host))]
        expected = A * self.px[index] + self.py[index]
        got = host[index - lo]
        bad = ~np.isclose(got, expected, rtol=1e-5, atol=1e-6)
        if bad.any():
            i = int(index[np.argmax(bad)])
            return f"out[{i}] = {got[np.argmax(bad)]!r}, expected {expected[np.argmax(bad)]!r}"
        return None

    def launch(self, parts):
        for p in parts:
            with self.xcuda.device(p.device):
                self.saxpy[p.grid, BLOCK, p.stream](A, p.x, p.y, p.out, p.n)

    def run_parts(self, parts):
        self.launch(parts)
        for p in parts:
            p.stream.synchronize()

    def slowest_event_ms(self, parts):
        """Median over REPEAT of the slowest device's event time, every device launched concurrently."""
        samples = []
        for i in range(WARMUP + REPEAT):
            for p in parts:
                with self.xcuda.device(p.device):
                    p.start.record(p.stream)
                    self.saxpy[p.grid, BLOCK, p.stream](A, p.x, p.y, p.out, p.n)
                    p.end.record(p.stream)
            times = [p.start.elapsed_time(p.end) for p in parts]
            if i >= WARMUP:
                samples.append(max(times))
        return statistics.median(samples)

    def check_parts(self, parts, run):
        """Poison every slice's output, run, and compare them all."""
        for p in parts:
            self.poison(p.out)
        run()
        for p in parts:
            p.out.copy_to_host(out=p.hout)
            wrong = self.compare(p.hout, p.lo)
            if wrong:
                return f"device {p.device}: {wrong}"
        return None

    # -- 1. data resident

    def resident(self):
        labels = ("(a) device 0, all n, default stream: launch + synchronize, wall",
                  "(a) device 0, all n: CUDA events",
                  "device 0, all n, on a Stream (the code of (b), one slice): wall",
                  f"(b) {self.all_devices}, n split, own streams, concurrent: wall",
                  f"(b) {self.all_devices}: the slowest device's CUDA events")
        if self.reason:
            return self.resident_table([(label, NA(self.reason), "n/a", "") for label in labels])
        xcuda, saxpy, n = self.xcuda, self.saxpy, self.n
        grid = grid_for(n)
        x0, y0, out0 = self.x0, self.y0, self.out0

        def one():
            saxpy[grid, BLOCK](A, x0, y0, out0, n)

        def one_synchronized():
            one()
            xcuda.synchronize()

        def events():
            start, end = xcuda.Event(), xcuda.Event()
            samples = []
            for i in range(WARMUP + REPEAT):
                start.record()
                one()
                end.record()
                if i >= WARMUP:
                    samples.append(start.elapsed_time(end))
            return statistics.median(samples)

        def check_one():
            self.poison(out0)
            one_synchronized()
            out0.copy_to_host(out=self.pout)
            return self.compare(self.pout)

        a_wall = attempt(check_one, lambda: median_wall_ms(one_synchronized, REPEAT, WARMUP))
        a_events = attempt(None, events)
        single = [self.whole]
        one_stream = attempt(lambda: self.check_parts(single, lambda: self.run_parts(single)),
                             lambda: median_wall_ms(lambda: self.run_parts(single), REPEAT, WARMUP))
        if self.multi_reason:
            b_wall = b_events = NA(self.multi_reason)
        else:
            parts = self.parts
            b_wall = attempt(lambda: self.check_parts(parts, lambda: self.run_parts(parts)),
                             lambda: median_wall_ms(lambda: self.run_parts(parts), REPEAT, WARMUP))
            b_events = attempt(None, lambda: self.slowest_event_ms(parts))
        goal = goal_at_least(speedup(a_wall, b_wall), SPEEDUP_GOAL_PER_DEVICE * max(self.count, 2))
        return self.resident_table([
            (labels[0], a_wall, "1.00x (baseline)", ""),
            (labels[1], a_events, "1.00x (baseline for events)", ""),
            (labels[2], one_stream, ratio(a_wall, one_stream), ""),
            (labels[3], b_wall, ratio(a_wall, b_wall), goal),
            (labels[4], b_events, f"{ratio(a_events, b_events)} (against (a) events)", ""),
        ])

    def resident_table(self, rows):
        nbytes = BYTES_PER_ELEMENT * self.n
        (a_wall, a), (a_events, events), (one, one_ms), (b_wall, b), (b_events, b_events_ms) = \
            ((label, ms) for label, ms, _, _ in rows)
        limit = SPEEDUP_GOAL_PER_DEVICE * max(self.count, 2)
        self.records += [result_row(a_wall, a, "ms", note=rate(nbytes, a)),
                         result_row(a_events, events, "ms", note=rate(nbytes, events)),
                         result_row(one, one_ms, "ms", a_wall, a, note=rate(nbytes, one_ms)),
                         result_row(b_wall, b, "ms", a_wall, a, note=rate(nbytes, b)),
                         result_row("(b) against (a): speed-up, wall", speedup(a, b), "x", goal=f">= {limit:.2f}x"),
                         result_row(b_events, b_events_ms, "ms", a_events, events, note=rate(nbytes, b_events_ms))]
        return markdown_table(["run", "median", "GB/s (12 B/element)", "speed-up against (a)", "goal"],
                              [(label, fmt(ms, "ms"), gbs(nbytes, ms), ratio_text, goal)
                               for label, ms, ratio_text, goal in rows])

    # -- 2. end to end

    def end_to_end(self):
        labels = ("one device: H2D x, y (all n), launch, D2H out",
                  "all devices: H2D at once (a thread per device), launches, D2H at once",
                  "all devices: copies one device after another (one thread), launches concurrent")
        if self.reason:
            return self.e2e_table([(label, NA(self.reason), "n/a") for label in labels])
        xcuda, saxpy, n = self.xcuda, self.saxpy, self.n
        grid = grid_for(n)

        def one():
            self.x0.copy_from(self.px)
            self.y0.copy_from(self.py)
            saxpy[grid, BLOCK](A, self.x0, self.y0, self.out0, n)
            self.out0.copy_to_host(out=self.pout)

        def check_one():
            self.poison(self.out0)
            self.pout[:] = np.nan
            one()
            return self.compare(self.pout)

        def upload(p):
            p.x.copy_from(p.hx)
            p.y.copy_from(p.hy)

        def download(p):
            p.stream.synchronize()
            p.out.copy_to_host(out=p.hout)

        def threaded():
            list(self.pool.map(upload, self.parts))
            self.launch(self.parts)
            list(self.pool.map(download, self.parts))

        def serial():
            for p in self.parts:
                upload(p)
            self.launch(self.parts)
            for p in self.parts:
                download(p)

        def check(run):
            for p in self.parts:
                self.poison(p.out)
                p.hout[:] = np.nan
            run()
            for p in self.parts:
                wrong = self.compare(p.hout, p.lo)
                if wrong:
                    return f"device {p.device}: {wrong}"
            return None

        base = attempt(check_one, lambda: median_wall_ms(one, E2E_REPEAT, E2E_WARMUP))
        if self.multi_reason:
            all_threads = all_serial = NA(self.multi_reason)
        else:
            all_threads = attempt(lambda: check(threaded), lambda: median_wall_ms(threaded, E2E_REPEAT, E2E_WARMUP))
            all_serial = attempt(lambda: check(serial), lambda: median_wall_ms(serial, E2E_REPEAT, E2E_WARMUP))
        return self.e2e_table([(labels[0], base, "1.00x (baseline)"), (labels[1], all_threads, ratio(base, all_threads)),
                               (labels[2], all_serial, ratio(base, all_serial))])

    def e2e_table(self, rows):
        nbytes = BYTES_PER_ELEMENT * self.n
        base, base_ms = rows[0][:2]
        self.records += [result_row(f"end to end, {label}", ms, "ms", None if label == base else f"end to end, {base}",
                                    base_ms, note=rate(nbytes, ms, " over the bus")) for label, ms, _ in rows]
        return markdown_table(["run", "median", "GB/s over the bus (12 B/element)", "speed-up vs one device"],
                              [(label, fmt(ms, "ms"), gbs(nbytes, ms), ratio_text) for label, ms, ratio_text in rows])

    # -- 3. copies

    def copies(self):
        cases = [("0 -> 0 (same device), method=None", 0, 0, None)]
        for method in ("staged", "peer", None):
            cases += [(f"0 -> 1, method={method!r}", 0, 1, method), (f"1 -> 0, method={method!r}", 1, 0, method)]
        cases += [(f"{a} -> {b}, method={m!r}, after enable_peer_access(0, 1)", a, b, m)
                  for m in ("peer", None) for a, b in ((0, 1), (1, 0))]
        if self.reason:
            return self.copy_table([(label, a, b, NA(self.reason), "") for label, a, b, _ in cases])
        xcuda = self.xcuda
        m = COPY_BYTES // 4
        data = xcuda.empty_pinned(m, np.float32)
        np.random.default_rng(1).random(dtype=np.float32, out=data)
        arrays = {}
        for d in range(min(self.count, 2)):
            with xcuda.device(d):
                arrays[d] = (xcuda.to_device(data), xcuda.empty(m, np.float32))
        back = xcuda.empty_pinned(m, np.float32)
        peer_reason = None  # why the rows after enable_peer_access cannot run
        peer_asked = False
        rows = []
        for label, source, target, method in cases:
            if source != target and self.multi_reason:
                rows.append((label, source, target, NA(self.multi_reason), ""))
                continue
            if "enable_peer_access" in label and not peer_asked:
                peer_asked = True
                if not xcuda.can_access_peer(0, 1):
                    peer_reason = "xcuda.can_access_peer(0, 1) is False"
                else:
                    try:
                        xcuda.enable_peer_access(0, 1)
                    except Exception as error:
                        peer_reason = f"enable_peer_access failed: {short_error(error)}"
            if "enable_peer_access" in label and peer_reason:
                rows.append((label, source, target, NA(peer_reason), ""))
                continue
            src = arrays[source][0]
            dst = arrays[target][1] if source != target else xcuda.empty(m, np.float32)
            used = {}

            def copy(dst=dst, src=src, method=method, used=used):
                used["method"] = xcuda.copy(dst, src, method=method)

            def check(dst=dst, copy=copy):
                self.poison(dst)
                copy()
                dst.copy_to_host(out=back)
                differ = back != data
                if differ.any():
                    i = int(np.argmax(differ))
                    return f"element {i} is {back[i]!r}, the source has {data[i]!r}"
                return None

            ms = attempt(check, lambda: median_wall_ms(copy, COPY_REPEAT, COPY_WARMUP))
            rows.append((label, source, target, ms, used.get("method", "")))
        return self.copy_table(rows)

    def copy_table(self, rows):
        staged = {(a, b): ms for label, a, b, ms, _ in rows if label.endswith("method='staged'")}
        names = {(a, b): f"xcuda.copy {label}" for label, a, b, ms, _ in rows if label.endswith("method='staged'")}
        self.records += [result_row(f"xcuda.copy {label}", ms, "ms",
                                    None if a == b or label.endswith("'staged'") else names[a, b], staged.get((a, b)),
                                    note="; ".join(n for n in (method, rate(COPY_BYTES, ms)) if n) or None)
                         for label, a, b, ms, method in rows]
        return markdown_table(
            ["xcuda.copy of 256 MiB", "method used", "median", "GB/s (bytes copied)", "speed-up against staged, same direction"],
            [(label, method or "n/a", fmt(ms, "ms"), gbs(COPY_BYTES, ms), ratio(staged[a, b], ms) if a != b else "")
             for label, a, b, ms, method in rows])


def versions():
    parts = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    xcuda = sys.modules.get("xcuda")
    if xcuda:
        parts.append(f"xcuda {getattr(xcuda, '__version__', '?')} (NVRTC {'.'.join(map(str, xcuda.nvrtc_version()))})")
    return ", ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=28, help="n = 2^LOG2N elements (default 28)")
    parser.add_argument("--out", help="also write the tables (markdown) to this file")
    add_results_option(parser)
    options = parser.parse_args()
    n = 1 << options.log2n

    gpu, gpu_reason = probe_gpu()
    if gpu_reason:
        print(f"No GPU: {gpu_reason}. Nothing can be timed here; the kernels are only compiled, and every "
              "row shows n/a.\n", flush=True)
        devices = []
    else:
        devices = list_devices()
    started = time.perf_counter()
    bench = Bench(n, gpu_reason)
    if bench.count == 1:
        print(f"Only one CUDA device: the multi-GPU rows are skipped (n/a): {bench.multi_reason}.\n", flush=True)

    peer = "n/a"
    if bench.count >= 2:
        try:
            peer = "yes" if bench.xcuda.can_access_peer(0, 1) else "no"
        except Exception as error:
            peer = f"n/a ({short_error(error)})"
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    listed = "; ".join(f"{i}: {name} ({arch}, {total / 2**30:.0f} GiB)" for i, (name, arch, total) in enumerate(devices))
    header = [
        "# xcuda multi-GPU benchmark",
        "",
        f"- date: {now}",
        f"- devices: {len(devices)}: {listed}" if devices else f"- devices: none: {gpu_reason}",
        f"- driver: {'CUDA ' + gpu['driver'] if gpu else 'none'}",
        f"- peer access 0 <-> 1 (xcuda.can_access_peer): {peer}",
        f"- host: {platform.node()}, {versions()}",
        f"- SAXPY n = 2^{options.log2n} float32 ({n * 4 / 2**20:g} MiB per array), block {BLOCK}",
    ]
    if bench.reason and not gpu_reason:
        header.append(f"- not run: {bench.reason}")
    sections = []
    show_section(sections, "\n".join(header))
    for title, group in ((f"SAXPY, data resident, n = 2^{options.log2n}: one GPU (a) against all devices (b)",
                          bench.resident),
                         (f"End to end from page-locked host arrays, n = 2^{options.log2n}", bench.end_to_end),
                         ("Copies between devices (xcuda.copy)", bench.copies)):
        table = group()
        show_section(sections, f"## {title}\n\n{table}")
    print(f"(measured in {time.perf_counter() - started:.0f} s)")
    write_report(options.out, sections)
    write_results(options.results, benchmark_entry(
        "multigpu", f"Two GPUs: SAXPY n = 2^{options.log2n} split across the devices, end to end, and "
        f"{COPY_BYTES >> 20} MiB copies between them", bench.records,
        f"{listed}; peer access: {peer}; driver CUDA {gpu['driver']}" if gpu else "none", gpu is not None,
        note=f"{versions()}; block {BLOCK}."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
