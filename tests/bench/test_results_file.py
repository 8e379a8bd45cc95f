"""tests/bench/results.json and RESULTS.md: the file holds to its schema, RESULTS.md is what the generator makes
of it (and at most 400 lines), and the scripts' shared writer replaces one benchmark's entry atomically.
No build and no GPU needed: the figures are the committed ones, or made up."""
import copy
import json
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import assemble_results  # noqa: E402
import bench_common  # noqa: E402


@pytest.fixture(scope="module")
def committed():
    return json.loads((BENCH / "results.json").read_text())


def test_the_committed_results_hold_to_their_schema(committed):
    assert bench_common.validate_results(committed) == []


def test_results_md_is_what_the_generator_makes_of_results_json(committed):
    expected = assemble_results.render(committed)
    assert (BENCH / "RESULTS.md").read_text() == expected, \
        "tests/bench/RESULTS.md is not current: run python3 tests/bench/assemble_results.py"


def test_results_md_has_at_most_400_lines():
    lines = (BENCH / "RESULTS.md").read_text().count("\n")
    assert lines <= assemble_results.MAX_LINES, f"RESULTS.md has {lines} lines"


def test_results_json_is_written_one_row_a_line(committed):
    assert (BENCH / "results.json").read_text() == bench_common.dumps_results(committed)


def test_every_table_names_its_script_and_the_script_writes_results(committed):
    for entry in committed["benchmarks"]:
        if entry["script"] is None:
            continue
        script = BENCH.parent.parent / entry["script"]
        assert script.is_file(), f"{entry['name']}: no {entry['script']}"
        assert "add_results_option" in script.read_text(), f"{entry['script']} does not write results.json"


def row(name, value, **fields):
    return dict({"name": name, "value": value, "unit": "us", "baseline": None, "ratio": None, "goal": None,
                 "met": None}, **fields)


def data_with(rows):
    return {"schema": bench_common.SCHEMA, "benchmarks": [
        {"name": "b", "title": "t", "script": None, "command": "c", "machine": "m", "device": "d", "gpu_host": False,
         "date": "2026-12-06 10:00 UTC", "commit": None, "rows": rows}]}


GOOD = [row("C++", 4.0), row("xcuda", 4.2, baseline="C++", ratio=1.05, goal="<= 1.10x", met=True),
        row("cell", 3.0, unit="ms", goal="< 5 ms", met=True), row("speed-up", 1.94, unit="x", goal=">= 1.90x", met=True),
        row("missing", None, note="n/a (no GPU)")]


def test_a_consistent_table_validates_and_renders_its_margins():
    assert bench_common.validate_results(data_with(copy.deepcopy(GOOD))) == []
    text = assemble_results.render(data_with(copy.deepcopy(GOOD)))
    assert "| xcuda | 4.2 us | C++ | 1.05x | <= 1.10x | met | +0.05x |  |" in text
    assert "| cell | 3 ms |  |  | < 5 ms | met | +2 ms |  |" in text
    assert "| speed-up | 1.94x |  |  | >= 1.90x | met | +0.04x |  |" in text
    assert "| missing | n/a |  |  |  |  |  | n/a (no GPU) |" in text


@pytest.mark.parametrize("broken, complaint", [
    (lambda rows: rows[1].update(ratio=1.5), "is not 4.2 / 4.0"),
    (lambda rows: rows[1].update(met=False), "met is False, but the margin is"),
    (lambda rows: rows[1].update(baseline="C"), "is no row of this table"),
    (lambda rows: rows[2].update(goal="< 5 s"), "in another unit"),
    (lambda rows: rows[2].update(goal="under 5 ms"), "is not OP LIMIT"),
    (lambda rows: rows[2].update(met=None), "needs met true or false"),
    (lambda rows: rows[4].pop("note"), "no value and no note"),
    (lambda rows: rows[0].pop("unit"), "fields missing ['unit']"),
    (lambda rows: rows[0].update(value="4.0"), "wrong types of ['value']"),
    (lambda rows: rows.append(dict(rows[1])), "a second row 'xcuda' against 'C++'"),
])
def test_a_broken_table_is_refused_saying_what_is_wrong(broken, complaint):
    rows = copy.deepcopy(GOOD)
    broken(rows)
    problems = bench_common.validate_results(data_with(rows))
    assert any(complaint in problem for problem in problems), problems


def test_a_broken_file_is_refused(committed):
    broken = copy.deepcopy(committed)
    broken["benchmarks"][0]["date"] = "yesterday"
    broken["benchmarks"][1]["name"] = broken["benchmarks"][0]["name"]
    del broken["benchmarks"][2]["rows"][0]["value"]
    problems = "\n".join(bench_common.validate_results(broken))
    assert "is not YYYY-MM-DD HH:MM UTC" in problems and "a second benchmark of that name" in problems
    assert "fields missing ['value']" in problems
    assert bench_common.validate_results({"benchmarks": []}) != []


def test_the_checker_says_when_results_md_is_not_current(tmp_path, committed, capsys):
    results, markdown = tmp_path / "results.json", tmp_path / "RESULTS.md"
    results.write_text(bench_common.dumps_results(committed))
    markdown.write_text(assemble_results.render(committed) + "an edit by hand\n")
    arguments = ["--results", str(results), "--markdown", str(markdown), "--check"]
    assert run_assemble(arguments) == 1
    assert run_assemble(arguments[:-1]) == 0 and run_assemble(arguments) == 0
    assert markdown.read_text() == (BENCH / "RESULTS.md").read_text()


def run_assemble(arguments):
    saved = sys.argv
    sys.argv = ["assemble_results.py"] + arguments
    try:
        return assemble_results.main()
    finally:
        sys.argv = saved


def entry(name, value, date="2026-12-06 10:00 UTC"):
    return {"name": name, "title": name, "script": None, "command": "c", "machine": "m", "device": "d",
            "gpu_host": False, "date": date, "commit": None, "rows": [row("r", value)]}


def test_writing_a_benchmark_replaces_its_entry_in_place_and_keeps_the_others(tmp_path):
    path = tmp_path / "results.json"
    bench_common.update_results(path, entry("a", 1.0), entry("b", 2.0))
    bench_common.update_results(path, entry("a", 3.0), entry("c", 4.0))
    data = json.loads(path.read_text())
    assert [(b["name"], b["rows"][0]["value"]) for b in data["benchmarks"]] == [("a", 3.0), ("b", 2.0), ("c", 4.0)]
    assert data["schema"] == bench_common.SCHEMA and os.listdir(tmp_path) == ["results.json"]


def test_an_entry_that_breaks_the_schema_is_not_written(tmp_path):
    path = tmp_path / "results.json"
    bench_common.update_results(path, entry("a", 1.0))
    before = path.read_text()
    with pytest.raises(ValueError, match="is not YYYY-MM-DD HH:MM UTC"):
        bench_common.update_results(path, entry("a", 2.0, date="today"))
    assert path.read_text() == before and os.listdir(tmp_path) == ["results.json"]


def test_merging_a_runs_results_replaces_the_entries_of_the_same_names(tmp_path, committed):
    results, markdown, run = tmp_path / "results.json", tmp_path / "RESULTS.md", tmp_path / "run.json"
    results.write_text(bench_common.dumps_results(committed))
    first = committed["benchmarks"][0]
    newer = dict(first, date="2026-12-06 11:00 UTC", commit="abc1234")
    bench_common.update_results(run, newer)
    assert run_assemble(["--merge", str(run), "--results", str(results), "--markdown", str(markdown)]) == 0
    merged = json.loads(results.read_text())["benchmarks"]
    assert merged[0]["commit"] == "abc1234" and len(merged) == len(committed["benchmarks"])
    assert "2026-12-06 11:00 UTC · abc1234" in markdown.read_text()


def test_a_result_row_computes_its_ratio_and_verdict_and_says_why_a_value_is_missing():
    made = bench_common.result_row("xcuda", 4.4, "us", "C++", 4.0, "<= 1.05x")
    assert made["ratio"] == pytest.approx(1.1) and made["met"] is False
    assert bench_common.result_row("cell", 2.0, "ms", goal="< 5 ms")["met"] is True
    missing = bench_common.result_row("cupy", bench_common.NA("CuPy not installed"), "us", "C++", 4.0, "<= 1.05x")
    assert missing["value"] is None and missing["met"] is None and missing["note"] == "n/a (CuPy not installed)"


def test_the_command_leaves_out_where_the_tables_went():
    argv = ["tests/bench/bench_gpu.py", "--out", "/tmp/x.md", "--results", "--baseline", "b"]
    assert bench_common.command_line([str(BENCH / "bench_gpu.py")] + argv[1:]) == \
        "python3 tests/bench/bench_gpu.py --baseline b"
    assert bench_common.command_line(["x.py", "--results", "/tmp/r.json", "--n", "5"]).endswith("x.py --n 5")
