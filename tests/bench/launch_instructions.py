"""Host instructions per launch and per unchanged %%cuda cell, counted by valgrind's callgrind against the
fake driver: the launch path's and the cell path's own cost on any machine, with no GPU and no timing noise.

    python3 tests/bench/launch_instructions.py BUILD [BUILD ...]   # e.g. build /work/build-base
    XCUDA_LAUNCH_ARGUMENTS=buffer python3 tests/bench/launch_instructions.py BUILD   # arguments as one buffer

For each build folder (its python/ module) it runs, in a child process under callgrind, a loop of
`kernel[g, b](...)` launches twice (LOW and HIGH launches; the difference removes start-up and compile),
for SAXPY with DeviceArrays and for a kernel of 16 float scalars and 16 DeviceArrays, both as the launch
benchmark writes them (bench_gpu.py), with the subscript inside the loop; and of an unchanged %%cuda cell
re-run in a plain IPython shell (LOW / 10 and HIGH / 10 times: magic_ab.py's measure). The fake driver's cuLaunchKernel
(it runs the kernel on the host) is subtracted: what is left is Python's loop and call, xcuda's binding and
core, and the fake driver's cheap calls (cuCtxGetCurrent). The fake driver is the first build's
lib/libxcuda_fake_cuda.so for every build (so every build calls the same one).

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

LOW, HIGH = 2000, 12000

CHILD = r'''
import sys
import numpy as np
import xcuda
which, count = sys.argv[1], int(sys.argv[2])
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
    kernel = xcuda.compile(SAXPY, name="count_saxpy").saxpy
    args = (2.0, xcuda.to_device(np.ones(n, np.float32)), xcuda.to_device(np.ones(n, np.float32)),
            xcuda.empty(n, np.float32), n)
else:
    kernel = xcuda.compile(MANY, name="count_many").many
    args = tuple(float(k) for k in range(16)) + tuple(xcuda.to_device(np.ones(n, np.float32)) for _ in range(16))
kernel[1, 1](*args)  # the first launch's look-ups stay out of the count
xcuda.synchronize()

def loop(kernel=kernel, args=args, grid=1, block=1):
    for _ in range(count):
        kernel[grid, block](*args)

loop()
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


def per_launch(build, fake, which, scratch):
    per = 10 if which == "cell" else 1  # the child runs count / 10 cells
    results = []
    # XCUDA_FAKE_PARAM_INFO: the fake reports its known kernels' layouts (saxpy's and many's), which the
    # buffer way (XCUDA_LAUNCH_ARGUMENTS=buffer, passed through) needs; with pointers it only adds the
    # first launch's check.
    env = dict(os.environ, XCUDA_LIBCUDA=str(fake), PYTHONPATH=str(Path(build) / "python"), PYTHONHASHSEED="0",
               XCUDA_FAKE_PARAM_INFO="1",
               XCUDA_CACHE_DIR=str(Path(scratch) / f"cache-{Path(build).name}-{which}"))
    # Once outside callgrind, to fill the disk cache: the counted runs then both load the module from it,
    # with no compile to wait for (a wait's polling would count differently in each run).
    warm = subprocess.run([sys.executable, "-c", CHILD, which, "0"], env=env, capture_output=True, text=True)
    if warm.returncode != 0:
        raise SystemExit(f"the child failed under {build}:\n{warm.stderr[-3000:]}")
    for count in (LOW, HIGH):
        out = Path(scratch) / f"cg-{which}-{count}.out"
        ran = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c",
                              CHILD, which, str(count)], env=env, capture_output=True, text=True)
        if ran.returncode != 0:
            raise SystemExit(f"the child failed under {build}:\n{ran.stderr[-3000:]}")
        results.append(counts(out))
    (total_low, launch_low), (total_high, launch_high) = results
    return ((total_high - total_low) - (launch_high - launch_low)) / ((HIGH - LOW) / per)


# Issue 48's bounds on the first build named (the tree under test): instructions per launch.
GOALS = {"SAXPY": "<= 600 instructions per launch", "16 + 16": "<= 1300 instructions per launch"}


def results_rows(rows, names):
    """The counts as rows of results.json, each build's against the first build's; the first build's launch
    rows carry GOALS."""
    records = []
    for index, what, unit in ((1, "SAXPY", "instructions per launch"), (2, "16 + 16", "instructions per launch"),
                              (3, "unchanged %%cuda cell", "instructions per cell")):
        first = f"{what}, {names[0]}"
        records.append(result_row(first, round(rows[0][index]), unit, goal=GOALS.get(what)))
        records += [result_row(f"{what}, {name}", round(row[index]), unit, first, round(rows[0][index]))
                    for name, row in zip(names[1:], rows[1:])]
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
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for build in builds:
            rows.append((build, per_launch(build, fake, "saxpy", scratch), per_launch(build, fake, "many", scratch),
                         per_launch(build, fake, "cell", scratch)))
    print("| build | instructions per launch, SAXPY | ratio | instructions per launch, 16 scalars + 16 pointers | "
          "ratio | instructions per unchanged %%cuda cell | ratio |")
    print("|---|---|---|---|---|---|---|")
    for build, saxpy, many, cell in rows:
        print(f"| {build} | {saxpy:,.0f} | {saxpy / rows[0][1]:.2f}x | {many:,.0f} | {many / rows[0][2]:.2f}x | "
              f"{cell:,.0f} | {cell / rows[0][3]:.2f}x |")
    buffer = os.environ.get("XCUDA_LAUNCH_ARGUMENTS") == "buffer"
    write_results(options.results, benchmark_entry(
        "launch-instructions" + ("-buffer" if buffer else ""),
        "Host instructions per launch and per unchanged %%cuda cell" + (", arguments as one buffer" if buffer else "")
        + ": callgrind against the fake driver, its cuLaunchKernel left out",
        results_rows(rows, options.builds), f"the fake driver (lib/{fake.name})",
        False, note="The ratio is to the first build named; instruction counts predict time only roughly."))


if __name__ == "__main__":
    main(sys.argv[1:])
