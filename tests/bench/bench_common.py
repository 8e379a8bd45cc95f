"""Helpers the GPU benchmark scripts share: result cells that may be "n/a (reason)", a row's check and
measurement, the median wall time of a call, ratios and goal verdicts, markdown tables, the printed
report and its --out file, a look at the GPU through the driver without xcuda, the C++ baseline
(tests/bench/launch_baseline.cpp: built with nvcc, run in one of its modes, its `key value` lines read), and
the rows of results.json, written atomically with --results and checked against its schema."""
import ctypes
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


class NA:
    """A value that could not be measured, with the reason shown in the table."""

    def __init__(self, reason):
        self.reason = reason

    def __str__(self):
        return f"n/a ({self.reason})"


def measured(value):
    return not isinstance(value, NA)


def short_error(error):
    elist = getattr(error, "elist", None)  # ipyparallel's CompositeError: say what the first engine raised
    if elist:
        ename, evalue = elist[0][0], str(elist[0][1]).strip().splitlines()
        return f"{type(error).__name__} from the engines, the first: {ename}: {evalue[0] if evalue else ''}"[:240]
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:160]


def attempt(check, measure):
    """Run `check` (None when the result is right, else what is wrong; check itself may be None: nothing to
    check), then `measure`; never raises: an error or a wrong result becomes NA with the reason."""
    try:
        wrong = check() if check else None
    except Exception as error:  # a benchmark row must not stop the run
        return NA(f"error: {short_error(error)}")
    if wrong:
        return NA(f"wrong result: {wrong}")
    try:
        return measure()
    except Exception as error:
        return NA(f"error: {short_error(error)}")


def median_wall_ms(run, repeat, warmup=0):
    """Median host wall time (perf_counter) of the synchronous `run()` over `repeat` calls after `warmup`
    untimed ones, in ms."""
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def us_per_launch(batch, synchronize, batches=25, per_batch=1000):
    """Median over `batches` of the host time of `batch()` (which makes `per_batch` asynchronous launches)
    divided by `per_batch`, in us; `synchronize()` before each batch and after the last, outside the timer."""
    samples = []
    for _ in range(batches):
        synchronize()
        start = time.perf_counter()
        batch()
        samples.append((time.perf_counter() - start) / per_batch * 1e6)
    synchronize()
    return statistics.median(samples)


def probe_gpu():
    """(info dict, None) when device 0 is usable, else (None, reason)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None, "no NVIDIA driver (libcuda.so.1) on this machine"
    if lib.cuInit(0) != 0:
        return None, "the NVIDIA driver is present but cuInit failed (no usable GPU)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return None, "the NVIDIA driver found no CUDA device"
    device = ctypes.c_int(0)
    name = ctypes.create_string_buffer(256)
    major, minor, driver = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    lib.cuDeviceGet(ctypes.byref(device), 0)
    lib.cuDeviceGetName(name, 256, device)
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device)  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)  # ..._MINOR
    lib.cuDriverGetVersion(ctypes.byref(driver))
    return {
        "name": name.value.decode(),
        "arch": f"sm_{major.value}{minor.value}",
        "driver": f"{driver.value // 1000}.{driver.value % 1000 // 10}",
    }, None


def ratio(value, base):
    if not (measured(value) and measured(base)) or not base:
        return "n/a"
    return f"{value / base:.2f}x"


def goal_ratio(value, base, limit, base_name):
    """`value / base <= limit`, as met/missed with the margin."""
    if not (measured(value) and measured(base)) or not base:
        return f"<= {limit:.2f}x {base_name}: n/a"
    r = value / base
    verdict = "met" if r <= limit else "missed"
    return f"<= {limit:.2f}x {base_name}: {verdict} ({r:.2f}x, margin {limit - r:+.2f}x)"


def ranges_overlap(a, b):
    """Whether the ranges (min to max) of two sets of rounds overlap: a difference inside the machine's noise."""
    return min(a) <= max(b) and min(b) <= max(a)


def markdown_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def show_section(sections, text):
    """Prints a section of the report (a blank line after it) and keeps it in `sections` for write_report."""
    print(text + "\n", flush=True)
    sections.append(text)


def write_report(path, sections):
    """With --out PATH (path not empty): writes the kept sections there as one markdown file, and says so."""
    if path:
        Path(path).write_text("\n\n".join(sections) + "\n")
        print(f"tables written to {path}")


def cuda_home():
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            return Path(os.environ[variable])
    nvcc = shutil.which("nvcc")
    return Path(nvcc).resolve().parent.parent if nvcc else Path("/usr/local/cuda")


def build_baseline(folder):
    """Compile launch_baseline.cpp with nvcc into `folder`; returns (path, None) or (None, reason)."""
    home = cuda_home()
    nvcc = shutil.which("nvcc") or str(home / "bin" / "nvcc")
    target = Path(folder) / "launch_baseline"
    command = [nvcc, "-O2", "-std=c++17", "-o", str(target), str(HERE / "launch_baseline.cpp"),
               "-lcuda", "-lnvrtc", "-Xlinker", "-rpath", "-Xlinker", str(home / "lib64")]
    try:
        built = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"nvcc failed: {short_error(error)}"
    if built.returncode != 0:
        last = (built.stderr or built.stdout).strip().splitlines()
        return None, f"nvcc failed: {last[-1] if last else built.returncode}"
    return target, None


def run_baseline(path, mode=None):
    """The baseline's `key value` lines (in `mode`: None, "transfers" or "graphs") as a dict, or an NA."""
    try:
        ran = subprocess.run([str(path)] + ([mode] if mode else []), capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        return NA(f"baseline failed: {short_error(error)}")
    if ran.returncode != 0:
        last = (ran.stderr or ran.stdout).strip().splitlines()
        return NA(f"baseline failed: {last[-1] if last else ran.returncode}"[:200])
    values = {}
    for line in ran.stdout.splitlines():
        key, _, value = line.strip().partition(" ")
        try:
            values[key] = float(value)
        except ValueError:
            values[key] = value
    return values


def baseline_for(option, folder, gpu_reason, mode=None):
    """The baseline's results: from the prebuilt executable `option` (--baseline) or one built into
    `folder`; an NA saying why when it cannot be built or run (no GPU: built only)."""
    if option:
        path, reason = Path(option), None
        if not path.is_file():
            path, reason = None, f"no baseline at {option}"
    else:
        path, reason = build_baseline(folder)
    if reason:
        return NA(reason)
    if gpu_reason:
        print(f"C++ baseline {'found' if option else 'built'} ({path}); not run without a GPU.\n")
        return NA(f"no GPU: {gpu_reason}")
    print(f"running the C++ baseline {path} {mode or ''} ...", flush=True)
    return run_baseline(path, mode)


def baseline_value(baseline, key):
    """One value of a baseline's results, or the NA saying why there is none."""
    if not isinstance(baseline, dict):
        return baseline
    return baseline.get(key, NA(f"baseline printed no {key}"))


# ---- results.json: the current figures of every benchmark --------------------------------------------
#
# tests/bench/results.json holds one entry per benchmark table (the latest run of each) and
# tests/bench/assemble_results.py makes RESULTS.md from it. A script writes its entries only when asked
# (--results [PATH]; without a path, the committed file): the tests run the scripts in small modes and
# must not rewrite it. SCHEMA below is written into the file and says what each field means;
# validate_results() holds a file to it.

RESULTS_JSON = HERE / "results.json"
SCHEMA = {
    "version": 1,
    "file": {
        "schema": "this description",
        "benchmarks": "one entry per benchmark table, in the order RESULTS.md shows them",
    },
    "benchmark": {
        "name": "a short key, unique in the file: a script replaces the entry of that name",
        "title": "the table's heading",
        "script": "the script under tests/bench that writes this entry, or null for a measurement made by hand",
        "command": "how it was run",
        "machine": "where it ran (host, CPUs)",
        "device": "the GPU with its driver, or what stood in for one (none, the fake driver, the PTX simulator)",
        "gpu_host": "true when measured on the lent GPU host",
        "date": "when it ran, YYYY-MM-DD HH:MM UTC",
        "commit": "the tree measured (a commit, '+' when it had uncommitted changes), or null when unknown",
        "note": "optional: how to read the table, in a sentence or two",
        "rows": "the measurements: a list of rows",
    },
    "row": {
        "name": "what was measured (the system and the case)",
        "value": "a number, or null when it could not be measured (the note says why)",
        "unit": "the value's unit",
        "baseline": "the name of the row of the same table that ratio divides by, or null",
        "ratio": "value / the baseline row's value (a number), or null",
        "goal": "null, or OP LIMIT[x| UNIT] (OP one of <=, >=, <, >): a limit ending in x bounds the ratio "
                "(the value when the row has no baseline and its unit is x); one with a unit bounds the value",
        "met": "whether the goal holds (null: no goal, or not measured)",
        "note": "optional: the spread, the rounds, or why there is no value",
    },
}
GOAL = re.compile(r"^(<=|>=|<|>) (-?\d+(?:\.\d+)?)(x| \S.*)$")


def parse_goal(goal):
    """(operator, limit, unit) of a goal's text; unit "x" for a bound on the ratio. ValueError when malformed."""
    match = GOAL.match(goal or "")
    if not match:
        raise ValueError(f"goal {goal!r} is not OP LIMIT[x| UNIT]")
    return match.group(1), float(match.group(2)), match.group(3).strip()


def goal_margin(row):
    """(margin, unit) of a row's goal: positive is room left, negative the amount missed by; None without a
    goal or a measured value. unit is "x" for a bound on the ratio."""
    if not row.get("goal"):
        return None
    op, limit, unit = parse_goal(row["goal"])
    measured_value = row["ratio"] if unit == "x" and row.get("baseline") is not None else row["value"]
    if measured_value is None:
        return None
    return (limit - measured_value if op.startswith("<") else measured_value - limit), unit


def holds(op, margin):
    return margin >= 0 if op in ("<=", ">=") else margin > 0


def result_row(name, value, unit, baseline=None, base=None, goal=None, note=None):
    """A row of results.json. value and base may be NA (then null, and the reason goes into the note); base is
    the value of the baseline row, whose name is `baseline`; goal is its text ("<= 1.10x", "< 5 ms")."""
    why = [str(value)] if isinstance(value, NA) else \
        [f"no ratio: {base.reason}"] if isinstance(base, NA) and baseline is not None else []
    value = float(value) if measured(value) and value is not None else None
    base = float(base) if measured(base) and base is not None else None
    row = {"name": name, "value": value, "unit": unit, "baseline": baseline,
           "ratio": value / base if baseline is not None and value is not None and base else None, "goal": goal,
           "met": None}
    margin = goal_margin(row)
    if margin is not None:
        row["met"] = holds(parse_goal(goal)[0], margin[0])
    notes = [text for text in [note] + why if text]
    if notes:
        row["note"] = "; ".join(notes)
    return row


def goal_met(goal, value, base):
    """Whether value / base holds to goal ("<= 1.05x"), judged as result_row judges a row's."""
    return result_row("", value, "", "", base, goal=goal)["met"]


def fastest(values):
    """(name, value) of the smallest measured value of {name: value, NA or None}, or None when none was."""
    timed = {name: value for name, value in values.items() if value is not None and measured(value)}
    return min(timed.items(), key=lambda item: item[1]) if timed else None


def below_peers_row(name, value, unit, peers, suffix=""):
    """The row that holds `value` below every peer: its ratio to the fastest measured peer (whose row is named
    that peer's name + suffix) bounded by < 1.00x; None when no peer was measured."""
    best = fastest(peers)
    if best is None:
        return None
    return result_row(name, value, unit, best[0] + suffix, best[1], "< 1.00x", "the fastest Python peer")


def git_commit():
    """The tree measured: $XCUDA_BENCH_COMMIT (for a copy without git), else git's short commit with '+'
    when tracked files have changed, else None."""
    if os.environ.get("XCUDA_BENCH_COMMIT"):
        return os.environ["XCUDA_BENCH_COMMIT"]
    try:
        commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=30)
        changed = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if commit.returncode != 0:
        return None
    return commit.stdout.strip() + ("+" if changed.returncode == 0 and changed.stdout.strip() else "")


def command_line(argv=None):
    """How this script was run, as a command from the repository root: its --out and --results left out."""
    argv = list(sys.argv if argv is None else argv)
    words, skip = [], False
    for word in argv[1:]:
        if skip and not (skip == "optional" and word.startswith("-")):  # the option's value
            skip = False
            continue
        skip = {"--out": "required", "--results": "optional"}.get(word, False)
        if not skip and not word.startswith(("--out=", "--results=")):
            words.append(word)
    try:
        script = str(Path(argv[0]).resolve().relative_to(HERE.parent.parent))
    except ValueError:
        script = argv[0]
    return " ".join(["python3", script] + words)


def machine_text():
    return f"{platform.node()}, {os.cpu_count()} CPUs"


def device_text(gpu, otherwise):
    """probe_gpu()'s device in words, or `otherwise` (what stood in for a GPU) when there was none."""
    return f"{gpu['name']} ({gpu['arch']}), driver CUDA {gpu['driver']}" if gpu else otherwise


def benchmark_entry(name, title, rows, device, gpu_host, script=None, command=None, note=None):
    """One benchmark's entry of results.json, measured now on this machine."""
    entry = {"name": name, "title": title,
             "script": script or str(Path(sys.argv[0]).resolve().relative_to(HERE.parent.parent)),
             "command": command or command_line(), "machine": machine_text(), "device": device,
             "gpu_host": bool(gpu_host), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
             "commit": git_commit(), "rows": rows}
    if note:
        entry["note"] = note
    return entry


def add_results_option(parser):
    parser.add_argument("--results", nargs="?", const=str(RESULTS_JSON), metavar="PATH",
                        help="write this run's tables into PATH (results.json's format; without PATH the "
                             "repository's tests/bench/results.json), replacing their earlier entries")


def dumps_results(data):
    """results.json's text: one line per row, so that a change of figures is a change of lines."""
    benchmarks = []
    for entry in data["benchmarks"]:
        fields = [f"   {json.dumps(key)}: {json.dumps(value)}" for key, value in entry.items() if key != "rows"]
        rows = ",\n".join(f"    {json.dumps(row)}" for row in entry["rows"])
        benchmarks.append("  {\n" + ",\n".join(fields) + ',\n   "rows": [\n' + rows + "\n   ]\n  }")
    schema = json.dumps(data["schema"], indent=1).replace("\n", "\n ")
    return '{\n "schema": ' + schema + ',\n "benchmarks": [\n' + ",\n".join(benchmarks) + "\n ]\n}\n"


def read_results(path):
    path = Path(path)
    if not path.exists():
        return {"schema": SCHEMA, "benchmarks": []}
    return json.loads(path.read_text())


def update_results(path, *entries):
    """Replace (or add, at the end) each entry of the benchmark of its name in the results file at `path`,
    atomically: the file is read, changed, written to a temporary file beside it and renamed over it, so a
    reader sees the whole old file or the whole new one. An entry that does not hold to SCHEMA is refused
    (ValueError) before anything is written."""
    path = Path(path)
    data = read_results(path)
    data["schema"] = SCHEMA
    for entry in entries:
        names = [b["name"] for b in data["benchmarks"]]
        if entry["name"] in names:
            data["benchmarks"][names.index(entry["name"])] = entry
        else:
            data["benchmarks"].append(entry)
    problems = validate_results(data)
    if problems:
        raise ValueError(f"not written to {path}: " + "; ".join(problems))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(dumps_results(data))
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    print(f"results of {', '.join(e['name'] for e in entries)} written to {path}")


def write_results(option, *entries):
    """With --results (option not None): update_results there."""
    if option:
        update_results(option, *entries)


BENCHMARK_TYPES = {"name": str, "title": str, "script": (str, type(None)), "command": str, "machine": str,
                   "device": str, "gpu_host": bool, "date": str, "commit": (str, type(None)), "rows": list}
ROW_TYPES = {"name": str, "value": (int, float, type(None)), "unit": str, "baseline": (str, type(None)),
             "ratio": (int, float, type(None)), "goal": (str, type(None)), "met": (bool, type(None))}


def close(a, b):
    """Equal up to the rounding of figures written with two or three decimals."""
    return abs(a - b) <= max(0.006, 0.006 * abs(b))


def validate_row(where, row, by_name):
    problems = []
    missing = [k for k in ROW_TYPES if k not in row]
    extra = [k for k in row if k not in ROW_TYPES and k != "note"]
    if missing or extra:
        return [f"{where}: fields missing {missing}, unknown {extra}"]
    wrong = [k for k, kind in ROW_TYPES.items()
             if not isinstance(row[k], kind) or (k in ("value", "ratio") and isinstance(row[k], bool))]
    if wrong or not isinstance(row.get("note", ""), str):
        return [f"{where}: wrong types of {wrong or ['note']}"]
    if row["value"] is None and not row.get("note"):
        problems.append(f"{where}: no value and no note saying why")
    if row["baseline"] is not None:
        base = by_name.get(row["baseline"])
        if base is None:
            problems.append(f"{where}: baseline {row['baseline']!r} is no row of this table")
        elif base.get("unit") != row["unit"]:
            problems.append(f"{where}: unit {row['unit']!r}, its baseline's {base.get('unit')!r}")
        elif row["ratio"] is not None and isinstance(base.get("value"), (int, float)) and base["value"] and \
                row["value"] is not None and not close(row["ratio"], row["value"] / base["value"]):
            problems.append(f"{where}: ratio {row['ratio']} is not {row['value']} / {base['value']}")
    elif row["ratio"] is not None:
        problems.append(f"{where}: a ratio without a baseline")
    if row["ratio"] is not None and row["value"] is None:
        problems.append(f"{where}: a ratio without a value")
    if row["goal"] is None:
        if row["met"] is not None:
            problems.append(f"{where}: met without a goal")
        return problems
    try:
        op, limit, unit = parse_goal(row["goal"])
    except ValueError as error:
        return problems + [f"{where}: {error}"]
    if unit == "x" and row["baseline"] is None and row["unit"] != "x":
        problems.append(f"{where}: goal {row['goal']!r} bounds a ratio, and the row has no baseline")
    if unit != "x" and unit != row["unit"]:
        problems.append(f"{where}: goal {row['goal']!r} is in another unit than the value ({row['unit']})")
    margin = goal_margin(row)
    if margin is None:
        if row["met"] is not None:
            problems.append(f"{where}: met is {row['met']} with nothing measured")
    elif row["met"] is None:
        problems.append(f"{where}: a measured row with a goal needs met true or false")
    elif row["met"] != holds(op, margin[0]) and not close(margin[0] + limit, limit):
        problems.append(f"{where}: met is {row['met']}, but the margin is {margin[0]:+.3f}")
    return problems


def validate_results(data):
    """What is wrong with a results file's content against SCHEMA, as a list of sentences ([] when nothing)."""
    if not isinstance(data, dict) or set(data) != {"schema", "benchmarks"} or not isinstance(data["benchmarks"], list):
        return ["the file is not an object of exactly 'schema' and 'benchmarks' (a list)"]
    problems = [] if data["schema"] == SCHEMA else ["its schema is not bench_common.SCHEMA"]
    seen = set()
    for index, entry in enumerate(data["benchmarks"]):
        where = f"benchmark {index} ({entry.get('name', '?') if isinstance(entry, dict) else '?'})"
        if not isinstance(entry, dict):
            problems.append(f"{where}: not an object")
            continue
        missing = [k for k in BENCHMARK_TYPES if k not in entry]
        extra = [k for k in entry if k not in BENCHMARK_TYPES and k != "note"]
        wrong = [k for k, kind in BENCHMARK_TYPES.items() if k in entry and not isinstance(entry[k], kind)]
        if missing or extra or wrong:
            problems.append(f"{where}: fields missing {missing}, unknown {extra}, of a wrong type {wrong}")
            continue
        if entry["name"] in seen:
            problems.append(f"{where}: a second benchmark of that name")
        seen.add(entry["name"])
        if not re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$", entry["date"]):
            problems.append(f"{where}: date {entry['date']!r} is not YYYY-MM-DD HH:MM UTC")
        if not entry["rows"]:
            problems.append(f"{where}: no rows")
        by_name, pairs = {}, set()
        for row in entry["rows"]:
            if isinstance(row, dict) and isinstance(row.get("name"), str):
                by_name.setdefault(row["name"], row)
        for number, row in enumerate(entry["rows"]):
            row_where = f"{where}, row {number + 1}"
            if not isinstance(row, dict):
                problems.append(f"{row_where}: not an object")
                continue
            problems += validate_row(f"{row_where} ({row.get('name')})", row, by_name)
            pair = (row.get("name"), row.get("baseline"))
            if pair in pairs:
                problems.append(f"{row_where}: a second row {pair[0]!r} against {pair[1]!r}")
            pairs.add(pair)
    return problems
