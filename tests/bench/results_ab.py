"""Before/after of any benchmark script that has --results, in alternating processes of two or more builds.

    python3 tests/bench/results_ab.py BUILD_BEFORE BUILD_AFTER [MORE_BUILDS...] [--rounds 3]
        [--labels e91cc44,main] [--out PATH] -- SCRIPT [SCRIPT_ARGS...]

Each round runs SCRIPT once per build, each in a fresh process with XCUDA_BUILD_DIR set to the build and its
python/ first on PYTHONPATH, and with --results pointing at a file of its own; every other round the builds
run in the opposite order, so that no build always follows the same one. The rows of every run's results
file (results.json's format) are gathered by benchmark and row name, and each row is shown per build as the
median of the rounds with their range, the median's ratio to the first build's, and "level with" where the
rounds' ranges overlap (inside the machine's noise). A row with a baseline in its own run also shows the
median of that in-run ratio per build: both sides of it ran in the same process, so it drifts less with the
machine's load than the values do. Nothing is asserted on any time; the script exits 0 once every run did.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import markdown_table, ranges_overlap  # noqa: E402


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", help="build folders (the first is the one the ratios are to)")
    parser.add_argument("--rounds", type=int, default=3, help="every build once per round (default 3)")
    parser.add_argument("--labels", help="names of the builds in the table, comma-separated (default: the folders)")
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    if "--" not in argv:
        parser.error("the benchmark script goes after '--': results_ab.py BUILD_A BUILD_B -- SCRIPT [ARGS...]")
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    args.command = argv[split + 1:]
    if not args.command:
        parser.error("no benchmark script after '--'")
    if len(args.builds) < 2:
        parser.error("two or more build folders are needed")
    missing = [b for b in args.builds if not (Path(b) / "python").is_dir()]
    if missing:
        parser.error(f"not a build folder (no python/ in it): {', '.join(missing)}")
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    args.labels = args.labels.split(",") if args.labels else list(args.builds)
    if len(args.labels) != len(args.builds):
        parser.error(f"{len(args.labels)} labels for {len(args.builds)} builds")
    return args


def run_once(build, command, results_path):
    """SCRIPT of `command` with `build`'s module; the rows of its results file, {(benchmark, row): row}."""
    build = str(Path(build).resolve())
    env = dict(os.environ, XCUDA_BUILD_DIR=build,
               PYTHONPATH=os.pathsep.join(p for p in (build + "/python", os.environ.get("PYTHONPATH")) if p))
    ran = subprocess.run([sys.executable, *command, "--results", str(results_path)], env=env,
                         capture_output=True, text=True)
    if ran.returncode != 0 or not Path(results_path).exists():
        sys.exit(f"results_ab: {' '.join(command)} with {build} exited {ran.returncode} "
                 f"{'' if Path(results_path).exists() else 'without writing its results '}:\n{ran.stderr[-3000:]}")
    data = json.loads(Path(results_path).read_text())
    rows = {}
    for entry in data["benchmarks"]:
        for row in entry["rows"]:
            # A second row of the same name has another baseline (launch_floor.py's "..., xcuda" against the C
            # loop and against the floor): keyed apart, or the later would hide the earlier.
            name = row["name"]
            if (entry["name"], name) in rows:
                name = f"{name} (against {row['baseline']})"
            rows[entry["name"], name] = row
    return rows


def run_rounds(builds, rounds, command, folder):
    """{(benchmark, row): {build index: [rows over rounds]}}, the builds in turn, every other round reversed."""
    samples = {}
    order = list(range(len(builds)))
    for round_ in range(rounds):
        for index in (order if round_ % 2 == 0 else order[::-1]):
            started = time.perf_counter()
            rows = run_once(builds[index], command, Path(folder) / f"round{round_}-build{index}.json")
            print(f"round {round_ + 1}, {builds[index]}: {len(rows)} rows in {time.perf_counter() - started:.0f} s",
                  flush=True)
            for key, row in rows.items():
                samples.setdefault(key, {}).setdefault(index, []).append(row)
    return samples


def spread(values, digits):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def digits_for(values):
    return 1 if max(abs(v) for v in values) >= 10 else 3


def verdict_of(values, base):
    """'level with' where the rounds' ranges overlap, else whether the values are higher or lower than the base's."""
    if ranges_overlap(values, base):
        return "level with"
    return ("higher" if statistics.median(values) > statistics.median(base) else "lower") + " beyond the spread"


def table_rows(samples, labels):
    """One line per (row, build): the median and range, the ratio to the first build's median and the verdict,
    and the median in-run ratio to the row's own baseline."""
    lines = []
    for (benchmark, name), by_build in samples.items():
        values = {i: [r["value"] for r in rows if r["value"] is not None] for i, rows in by_build.items()}
        if not values.get(0):
            continue
        unit = by_build[0][0]["unit"]
        digits = digits_for(values[0])
        for index, label in enumerate(labels):
            mine = values.get(index)
            if not mine:
                lines.append((benchmark, name, label, "n/a", unit, "", "", ""))
                continue
            ratios = [r["ratio"] for r in by_build[index] if r.get("ratio") is not None]
            versus = "" if index == 0 else f"{statistics.median(mine) / statistics.median(values[0]):.2f}x"
            verdict = "" if index == 0 else verdict_of(mine, values[0])
            lines.append((benchmark, name, label, spread(mine, digits), unit, versus, verdict,
                          spread(ratios, 2) if ratios else ""))
    return lines


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="xcuda-results-ab-") as folder:
        samples = run_rounds(args.builds, args.rounds, args.command, folder)
    headers = ("benchmark", "row", "build", f"median (min-max) of {args.rounds} rounds", "unit",
               f"/ {args.labels[0]}", "verdict", "in-run ratio to the row's baseline")
    table = markdown_table(headers, table_rows(samples, args.labels))
    print("\n" + table)
    if args.out:
        Path(args.out).write_text(f"`results_ab.py {' '.join(sys.argv[1:] if argv is None else argv)}`\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
