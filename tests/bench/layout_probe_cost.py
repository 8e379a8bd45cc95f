#!/usr/bin/env python3
"""What the layout probe (issue 25, item 4) costs a compile: a benchmark, not a test.

The probe is appended to a cell whose kernels take structs (by value or behind a pointer), so NVRTC
compiles a few more lines in the same unit. This script compiles the same struct cell with the probe
(XCUDA_LAYOUT_PROBE unset) and without it (XCUDA_LAYOUT_PROBE=0), each in a fresh process with the disk
cache off, and a distinct comment per compile so the memory cache never answers; it prints the median
compile time of each and their ratio. It asserts nothing about time.

    /usr/bin/python3 tests/bench/layout_probe_cost.py [--rounds 7]
"""
import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build"))

CELL = r"""
struct Vec3 { float x, y, z; };
struct Particle { Vec3 position, velocity; float mass; int id; };
struct Params { double dt; float damping; int steps; Vec3 gravity; };
extern "C" __global__ void step(Particle* particles, Params params, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle p = particles[i];
    for (int s = 0; s < params.steps; ++s) {
        p.velocity.x = (p.velocity.x + params.gravity.x * (float)params.dt) * params.damping;
        p.velocity.y = (p.velocity.y + params.gravity.y * (float)params.dt) * params.damping;
        p.velocity.z = (p.velocity.z + params.gravity.z * (float)params.dt) * params.damping;
        p.position.x += p.velocity.x * (float)params.dt;
        p.position.y += p.velocity.y * (float)params.dt;
        p.position.z += p.velocity.z * (float)params.dt;
    }
    particles[i] = p;
}
"""

WORKER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import xcuda
cell = sys.argv[2]
xcuda.compile("// warm-up\n" + cell, arch="compute_80")
times = []
for i in range(int(sys.argv[3])):
    start = time.perf_counter()
    m = xcuda.compile(f"// round {i}\n" + cell, arch="compute_80")
    times.append(time.perf_counter() - start)
    probed = "xcuda_probe" in m.ptx
print(repr((times, probed)))
"""


def run(probe, rounds):
    env = dict(os.environ, XCUDA_CACHE="0")
    if not probe:
        env["XCUDA_LAYOUT_PROBE"] = "0"
    else:
        env.pop("XCUDA_LAYOUT_PROBE", None)
    out = subprocess.run([sys.executable, "-c", WORKER, str(BUILD / "python"), CELL, str(rounds)],
                         env=env, capture_output=True, text=True, check=True).stdout
    times, probed = eval(out.strip().splitlines()[-1])  # noqa: S307 (our own worker's repr)
    assert probed == probe, "the probe setting did not take effect"
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    without = run(False, rounds)
    with_probe = run(True, rounds)
    print(f"| compile of a 3-struct cell (compute_80, median of {rounds}) | ms |")
    print("|---|---|")
    print(f"| without the probe (XCUDA_LAYOUT_PROBE=0) | {without * 1e3:.1f} |")
    print(f"| with the probe | {with_probe * 1e3:.1f} |")
    print(f"| ratio | {with_probe / without:.2f}x |")


if __name__ == "__main__":
    main()
