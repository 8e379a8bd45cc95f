"""Host instructions per launch and per unchanged %%cuda cell, counted by valgrind's callgrind against the
fake driver: the launch path's and the cell path's own cost on any machine, with no GPU and no timing noise.

    python3 tests/bench/launch_instructions.py BUILD [BUILD ...]   # e.g. build /work/build-base
    XCUDA_LAUNCH_ARGUMENTS=buffer python3 tests/bench/launch_instructions.py BUILD   # arguments as one buffer

For each build folder (its python/ module) it runs, in a child process under callgrind, a loop of
`kernel[g, b](...)` launches, for SAXPY with DeviceArrays and for a kernel of 16 float scalars and 16
DeviceArrays, both as the launch benchmark writes them (bench_gpu.py), with the subscript inside the loop;
then the same loop over the Python floor (launch_floor.c's `subscript(launcher)[g, b](...)`: a C subscript
that returns a C function taking the same arguments, reading none of them and calling cuLaunchKernel with
arguments packed beforehand); and an unchanged %%cuda cell re-run in a plain IPython shell (magic_ab.py's
measure). Each count is a difference of whole runs: (LOW, LOW), (HIGH, LOW) and (LOW, HIGH) launches of
(xcuda, the floor), and LOW / 10 and HIGH / 10 cells, so start-up and compile cancel out. The fake driver's
cuLaunchKernel (it runs the kernel on the host) is subtracted from both loops. What is left:

  - per launch: Python's loop and call, xcuda's binding and core, the fake driver's cheap calls
    (cuCtxGetCurrent);
  - the Python floor: Python's loop and call around a binding that does nothing;
  - xcuda's own: the two's difference, what issue 48's goals bound.

Two things keep the runs comparable, and are checked: the disk cache is filled and NVRTC's version memo
(compile/nvrtc_version_memo) written by a warm-up run under valgrind itself, since valgrind's environment
(LD_LIBRARY_PATH=/usr/lib/debug on Debian) is part of the memo's fingerprint and a memo written outside it
made the first counted run alone load NVRTC (7 million instructions: the figures up to 2026-12-07 read low
by about 700 per launch); and every counted run must load the same shared objects, or the script stops
saying which differ. The fake driver is the first build's lib/libxcuda_fake_cuda.so for every build (so
every build calls the same one); the floor's helper is built with `cc` (launch_floor.py's build_floor).

Prints a markdown table: instructions per launch and the ratio to the first build (with --results [PATH] also
into results.json, as the entry launch-instructions, or launch-instructions-buffer with
XCUDA_LAUNCH_ARGUMENTS=buffer; give --results after the builds). Instruction counts
predict time only roughly (cache misses and branch mispredictions are not in them): the GPU host's
launch benchmark in alternating processes is the measure of time; this one says where the instructions
went and whether a change removed some.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import add_results_option, benchmark_entry, result_row, write_results  # noqa: E402
from launch_floor import build_floor  # noqa: E402

LOW, HIGH = 2000, 12000

CHILD = r'''
import struct
import sys
import numpy as np
import xcuda
which, count, floor_count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if which == "cell":
    from IPython.core.interactiveshell import InteractiveShell
    cell = ('extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n'
            "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }\n")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "", cell)  # the compile
    shell.run_cell_magic("cuda", "", cell)  # the first hit
    for _ in range(count // 10):
        shell.run_cell_magic("cuda", "", cell)
    raise SystemExit(0)
SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
"""
MANY = ('extern "C" __global__ void many(' + ", ".join(f"float s{k}" for k in range(16)) + ", " +
        ", ".join(f"const float* p{k}" for k in range(15)) + ", float* p15)\n{ if (threadIdx.x == 0) p15[0] = s0; }\n")
n = 1
if which == "saxpy":
    module = xcuda.compile(SAXPY, name="count_saxpy")
    args = (2.0, xcuda.to_device(np.ones(n, np.float32)), xcuda.to_device(np.ones(n, np.float32)),
            xcuda.empty(n, np.float32), n)
    packed = [struct.pack("f", 2.0)] + [struct.pack("Q", a.ptr) for a in args[1:4]] + [struct.pack("Q", n)]
else:
    module = xcuda.compile(MANY, name="count_many")
    args = tuple(float(k) for k in range(16)) + tuple(xcuda.to_device(np.ones(n, np.float32)) for _ in range(16))
    packed = [struct.pack("f", a) for a in args[:16]] + [struct.pack("Q", a.ptr) for a in args[16:]]
kernel = getattr(module, which)
kernel[1, 1](*args)  # the first launch's look-ups stay out of the count
xcuda.synchronize()
sys.path.insert(0, sys.argv[5])
from launch_floor import load_floor
floor = load_floor(sys.argv[4])
floor_kernel = floor.subscript(floor.make_launcher(module.cubin, which, 1, 1, packed))
floor_kernel[1, 1](*args)

def loop(kernel=kernel, args=args, grid=1, block=1):
    for _ in range(count):
        kernel[grid, block](*args)

def floor_loop(kernel=floor_kernel, args=args, grid=1, block=1):
    for _ in range(floor_count):
        kernel[grid, block](*args)

loop()
floor_loop()
xcuda.synchronize()
'''


def counts(out_file):
    """(total instructions, inclusive instructions of the fake cuLaunchKernel) from a callgrind file."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out_file)],
                          capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"^\s*([\d,]+).*PROGRAM TOTALS", text, re.M).group(1).replace(",", ""))
    launch = 0
    for line in text.splitlines():
        if re.search(r":cuLaunchKernel \[.*libxcuda_fake_cuda", line):
            launch = max(launch, int(line.split()[0].replace(",", "")))
    return total, launch


def shared_objects(out_file):
    """The shared objects a callgrind file names (the program and every library it ran code of)."""
    return set(re.findall(r"^c?ob=\(\d+\) (.+)$", Path(out_file).read_text(errors="replace"), re.M))


def check_same_objects(files):
    """Stops unless every run loaded the same shared objects: a library one run loads and another does not
    (NVRTC, when its version memo was not usable) is start-up cost the difference would count per launch."""
    first = shared_objects(files[0])
    for other in files[1:]:
        objects = shared_objects(other)
        if objects != first:
            raise SystemExit(f"{files[0].name} and {other.name} ran code of different libraries "
                             f"({sorted(first ^ objects)}): their difference is not the launches' alone")


def per_launch(build, fake, floor, which, scratch):
    """For a launch workload: (per launch, the Python floor per launch, xcuda's own = their difference);
    for the cell: (per cell, None, None)."""
    # XCUDA_FAKE_PARAM_INFO: the fake reports its known kernels' layouts (saxpy's and many's), which the
    # buffer way (XCUDA_LAUNCH_ARGUMENTS=buffer, passed through) needs; with pointers it only adds the
    # first launch's check.
    env = dict(os.environ, XCUDA_LIBCUDA=str(fake), PYTHONPATH=str(Path(build) / "python"), PYTHONHASHSEED="0",
               XCUDA_FAKE_PARAM_INFO="1",
               XCUDA_CACHE_DIR=str(Path(scratch) / f"cache-{Path(build).name}-{which}"))
    child = [sys.executable, "-c", CHILD, which]
    tail = [str(floor), str(Path(__file__).resolve().parent)]
    # Once outside valgrind (the compile, into the disk cache), once under it (NVRTC's version memo for
    # valgrind's environment): the counted runs then all load the module from the cache alike.
    for prefix in ([], ["valgrind", "--tool=none"]):
        warm = subprocess.run(prefix + child + ["0", "0"] + tail, env=env, capture_output=True, text=True)
        if warm.returncode != 0:
            raise SystemExit(f"the child failed under {build}:\n{warm.stderr[-3000:]}")
    runs = [(LOW, LOW), (HIGH, LOW)] + ([(LOW, HIGH)] if which != "cell" else [])
    results, files = [], []
    for launches, floor_launches in runs:
        out = Path(scratch) / f"cg-{Path(build).name}-{which}-{launches}-{floor_launches}.out"
        ran = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + child +
                             [str(launches), str(floor_launches)] + tail, env=env, capture_output=True, text=True)
        if ran.returncode != 0:
            raise SystemExit(f"the child failed under {build}:\n{ran.stderr[-3000:]}")
        results.append(counts(out))
        files.append(out)
    check_same_objects(files)

    def difference(later):
        (total_low, launch_low), (total_high, launch_high) = results[0], results[later]
        return ((total_high - total_low) - (launch_high - launch_low)) / ((HIGH - LOW) / (10 if which == "cell" else 1))
    if which == "cell":
        return difference(1), None, None
    return difference(1), difference(2), difference(1) - difference(2)


# Issue 48's bounds on the first build named (the tree under test): xcuda's own instructions per launch.
GOALS = {"SAXPY": "<= 600 instructions per launch", "16 + 16": "<= 1300 instructions per launch"}
WORKLOADS = (("saxpy", "SAXPY"), ("many", "16 + 16"))


def results_rows(rows, names):
    """The counts as rows of results.json, each build's against the first build's; the first build's rows of
    xcuda's own carry GOALS."""
    records = []
    for _, what in WORKLOADS:
        for part, key, goal in (("xcuda's own", 2, True), ("per launch", 0, False), ("Python floor", 1, False)):
            unit = "instructions per launch"
            first = f"{what}, {part}, {names[0]}"
            value = round(rows[0][key][what])
            records.append(result_row(first, value, unit, goal=GOALS[what] if goal else None))
            records += [result_row(f"{what}, {part}, {name}", round(row[key][what]), unit, first, value)
                        for name, row in zip(names[1:], rows[1:])]
    first = f"unchanged %%cuda cell, {names[0]}"
    records.append(result_row(first, round(rows[0][3]), "instructions per cell"))
    records += [result_row(f"unchanged %%cuda cell, {name}", round(row[3]), "instructions per cell", first,
                           round(rows[0][3])) for name, row in zip(names[1:], rows[1:])]
    return records


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", help="build folders (their python/ modules)")
    add_results_option(parser)
    options = parser.parse_args(argv)
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind); nothing was measured")
    builds = [Path(b).resolve() for b in options.builds]
    fake = builds[0] / "lib" / "libxcuda_fake_cuda.so"
    if not fake.exists():
        raise SystemExit(f"{fake} does not exist: configure the first build with -DXCUDA_BUILD_TESTS=ON")
    rows = []  # per build: ({workload: per launch}, {workload: floor}, {workload: xcuda's own}, per cell)
    with tempfile.TemporaryDirectory() as scratch:
        floor = build_floor(Path(scratch) / "floor")
        for build in builds:
            parts = ({}, {}, {})
            for which, what in WORKLOADS:
                for part, value in zip(parts, per_launch(build, fake, floor, which, scratch)):
                    part[what] = value
            rows.append(parts + (per_launch(build, fake, floor, "cell", scratch)[0],))
    print("| build | SAXPY: xcuda's own | per launch | Python floor | 16 + 16: xcuda's own | per launch | "
          "Python floor | unchanged %%cuda cell |")
    print("|---|---|---|---|---|---|---|---|")
    for build, (per, floors, own, cell) in zip(builds, rows):
        cells = [f"{part[what]:,.0f}" for _, what in WORKLOADS for part in (own, per, floors)]
        print(f"| {build} | " + " | ".join(cells) + f" | {cell:,.0f} |")
    buffer = os.environ.get("XCUDA_LAUNCH_ARGUMENTS") == "buffer"
    write_results(options.results, benchmark_entry(
        "launch-instructions" + ("-buffer" if buffer else ""),
        "Host instructions per launch and per unchanged %%cuda cell" + (", arguments as one buffer" if buffer else "")
        + ": callgrind against the fake driver, its cuLaunchKernel left out",
        results_rows(rows, options.builds), f"the fake driver (lib/{fake.name})",
        False, note="Per launch: Python's loop, its call and xcuda's work (the fake cuLaunchKernel left out); the "
                    "Python floor: the same loop around a C function that does nothing but launch; xcuda's own: the "
                    "difference. The ratio is to the first build named; instruction counts predict time only roughly."))


if __name__ == "__main__":
    main(sys.argv[1:])
