#!/usr/bin/env python3
"""Launch host cost against C++ and every Python peer over alternating rounds, pinned and unpinned.

    python3 tests/bench/launch_rounds.py --baseline build-host/bench/launch_baseline [--rounds 5] [--core 3]
                                         [--out FILE]

Issue 27's goal 1 is a median over rounds, not one process: each round runs bench_gpu.py's launch
measurements (`--launch-json`: the C++ driver-API loop in its own process, then xcuda, cuda.core,
cuda.bindings with prepacked kernelParams, CuPy and PyTorch's add in one Python process, their batches
interleaved) twice, once pinned to one core (`taskset -c CORE`, the C++ loop too) and once not, the order
of the two swapped every round. It prints each process' figures, then per pinning the median over the
rounds with min and max, the ratio to the C++ loop's median, and the goals: <= 1.0x C++ for SAXPY and
<= 1.1x for 16 scalars + 16 pointers, and below every Python peer (PyTorch's add counted for SAXPY), by
the medians and in how many rounds within the same process. A benchmark, not a test: it asserts nothing;
differences inside the spread of the rounds are "level with".
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_common import (add_results_option, benchmark_entry, below_peers_row, device_text, probe_gpu,  # noqa: E402
                          result_row, write_results)

CPP = "C++ cuLaunchKernel"
XCUDA = "xcuda kernel[g, b](...)"
# bench_gpu.py's rows of the other way of passing arguments (xcuda.launch_options): judged by the same goals.
OTHER_WAY = XCUDA + ", arguments as "
GOALS = {1: 1.0, 16: 1.1}
# Rows that are xcuda's own variants or the baseline, not peers.
NOT_PEERS = ("xcuda", "C++")


def one_round(baseline, pinned, core):
    """{(system, arguments): us or None} from one bench_gpu.py --launch-json process."""
    with tempfile.TemporaryDirectory(prefix="xcuda-rounds-") as folder:
        target = Path(folder) / "launch.json"
        command = [sys.executable, str(HERE / "bench_gpu.py"), "--baseline", baseline, "--launch-json", str(target)]
        if pinned:
            command = ["taskset", "-c", str(core)] + command
        ran = subprocess.run(command, capture_output=True, text=True, timeout=900)
        if ran.returncode != 0 or not target.exists():
            tail = (ran.stderr or ran.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"bench_gpu.py --launch-json failed (exit {ran.returncode}): {tail}")
        rows = json.loads(target.read_text())
    return {(row["system"], row["arguments"]): row["us"] for row in rows}, \
        {(row["system"], row["arguments"]): row["why"] for row in rows if row["us"] is None}


def below_peers(values, args, system=XCUDA):
    """(system below every measured peer, the fastest peer's name, its value) within one set of values."""
    peers = {s: v for (s, a), v in values.items() if a == args and v is not None and not s.startswith(NOT_PEERS)}
    mine = values.get((system, args))
    if mine is None or not peers:
        return None, None, None
    name, best = min(peers.items(), key=lambda item: item[1])
    return mine < best, name, best


def medians_of(per_round):
    """{(system, arguments): the median over the rounds, None when no round measured it}, in the rounds' order."""
    keys = list(dict.fromkeys(key for values in per_round for key in values))
    medians = {}
    for key in keys:
        samples = [values[key] for values in per_round if values.get(key) is not None]
        medians[key] = statistics.median(samples) if samples else None
    return medians


def judged(system):
    return system == XCUDA or system.startswith(OTHER_WAY)


def results_rows(rounds_by_pinning, reasons, rounds):
    """The medians as rows of results.json: each against the C++ loop of its pinning, and xcuda's own rows against
    GOALS and against the fastest Python peer."""
    rows = []
    for pinning, per_round in rounds_by_pinning.items():
        medians = medians_of(per_round)
        for (system, args), median in medians.items():
            what = "SAXPY" if args == 1 else "16 + 16"
            name, cpp = f"{pinning}, {system}, {what}", f"{pinning}, {CPP}, {what}"
            samples = [values[system, args] for values in per_round if values.get((system, args)) is not None]
            note = (f"{min(samples):.2f}-{max(samples):.2f} over {rounds} rounds" if samples else
                    f"n/a ({reasons.get((system, args), 'not measured')})")
            if system == CPP:
                rows.append(result_row(name, median, "us", note=note))
                continue
            goal = f"<= {GOALS[args]:.2f}x" if judged(system) else None
            rows.append(result_row(name, median, "us", cpp, medians.get((CPP, args)), goal, note))
            if judged(system):
                peers = {s: v for (s, a), v in medians.items() if a == args and not s.startswith(NOT_PEERS)}
                peer = below_peers_row(name, median, "us", {f"{pinning}, {s}": v for s, v in peers.items()},
                                       f", {what}")
                if peer:
                    wins = sum(1 for values in per_round if below_peers(values, args, system)[0])
                    peer["note"] += f"; below it in {wins} of {len(per_round)} rounds"
                    rows.append(peer)
    return rows


def report(rounds_by_pinning, reasons, rounds):
    lines = [f"| pinning | system | arguments | median us (min-max, {rounds} rounds) | ratio to C++ | goal |",
             "|---|---|---|---|---|---|"]
    verdicts = []
    for pinning, per_round in rounds_by_pinning.items():
        medians = medians_of(per_round)
        keys = list(medians)
        for key in keys:
            system, args = key
            cpp = medians.get((CPP, args))
            samples = [values[key] for values in per_round if values.get(key) is not None]
            if not samples:
                lines.append(f"| {pinning} | {system} | {args} | n/a ({reasons.get(key, 'not measured')}) |  |  |")
                continue
            ratio = f"{medians[key] / cpp:.2f}x" if cpp else ""
            goal = ""
            if judged(system):
                limit = GOALS[args]
                met = cpp is not None and medians[key] <= limit * cpp
                goal = f"<= {limit:.1f}x C++: {'met' if met else 'missed'}"
                below, name, best = below_peers(medians, args, system)
                wins = sum(1 for values in per_round if below_peers(values, args, system)[0])
                if below is not None:
                    goal += (f"; < every Python peer by the medians: {'met' if below else 'missed'} (fastest "
                             f"{name} {best:.2f} us, {(medians[key] / best - 1) * 100:+.0f}%); below it in "
                             f"{wins} of {len(per_round)} rounds")
                way = f" ({system[len(OTHER_WAY):]})" if system.startswith(OTHER_WAY) else ""
                verdicts.append(f"{pinning}, {'SAXPY' if args == 1 else '16 scalars + 16 pointers'}{way}: {goal}")
            lines.append(f"| {pinning} | {system} | {args} | {medians[key]:.2f} ({min(samples):.2f}-{max(samples):.2f}) "
                         f"| {ratio} | {goal} |")
    return "\n".join(lines), verdicts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the launch_baseline executable (run_gpu.sh builds it)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--core", type=int, default=3, help="the core the pinned processes run on")
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    add_results_option(parser)
    options = parser.parse_args()
    if options.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not Path(options.baseline).is_file():
        parser.error(f"--baseline {options.baseline}: no such file (tests/bench/run_gpu.sh builds it)")
    if not shutil.which("taskset"):
        parser.error("taskset is not installed (util-linux): the pinned rounds need it")
    if options.core >= (os.cpu_count() or 1):
        parser.error(f"--core {options.core}: this machine has {os.cpu_count()} cores")

    rounds_by_pinning = {"pinned": [], "unpinned": []}
    reasons = {}
    for number in range(options.rounds):
        order = ("pinned", "unpinned") if number % 2 == 0 else ("unpinned", "pinned")
        for pinning in order:
            values, why = one_round(options.baseline, pinning == "pinned", options.core)
            reasons.update(why)
            rounds_by_pinning[pinning].append(values)
            shown = ", ".join(f"{s} ({a}) {v:.2f}" for (s, a), v in values.items() if v is not None)
            print(f"round {number + 1}, {pinning}: {shown} us", flush=True)
    table, verdicts = report(rounds_by_pinning, reasons, options.rounds)
    text = (f"# Launch host cost over {options.rounds} alternating rounds (launch_rounds.py; pinned: taskset -c "
            f"{options.core})\n\n{table}\n\n" + "\n".join(f"- {v}" for v in verdicts) + "\n")
    print()
    print(text)
    if options.out:
        Path(options.out).write_text(text)
    gpu, _ = probe_gpu()
    write_results(options.results, benchmark_entry(
        "launch-rounds", f"Launch host cost over {options.rounds} alternating rounds, pinned (taskset -c "
        f"{options.core}) and not: medians", results_rows(rounds_by_pinning, reasons, options.rounds),
        device_text(gpu, "none"), gpu is not None,
        note="Each round runs bench_gpu.py's launch rows in new processes, pinned and not, the order swapped every "
             "round; issue 27's goal 1 is judged by these medians."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
