"""The by-hand mutation check tests/simulator/simulator_mutations.py: that none of its entries has gone stale (each edit's
text once in its file, every label once), and that a run stopped in the middle of a mutation puts the source back: by
SIGTERM at once, and after SIGKILL from the journal the next run reads. The interrupted runs mutate a file of their own
in a temporary folder, never the simulator, and their build is a stand-in that waits to be stopped."""
import importlib
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
mutations = importlib.import_module("simulator_mutations")

CHILD = r'''
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import simulator_mutations as m
m.JOURNAL = Path(sys.argv[2])
calls = []
def build(jobs):
    calls.append(jobs)
    if len(calls) == 1:  # the mutated source's build: wait to be stopped; the final build after it returns at once
        print("building", flush=True)
        time.sleep(300)
m.build = build
m.run_all([("z: a stand-in", sys.argv[3], "value = 1", "value = 2", "none.*")], 1)
'''


def test_every_mutation_edits_text_found_once_in_its_file_and_labels_are_unique():
    assert mutations.stale() == []
    assert len({mutations.label(e) for e in mutations.M}) == len(mutations.M)


def test_a_stale_entry_and_a_repeated_label_are_named(tmp_path):
    source = tmp_path / "source.cpp"
    source.write_text("int x = 1;\nint x = 1;\n")
    problems = mutations.stale([("q9: one", str(source), "int y", "int z", "t.*"),
                                ("q9: two", str(source), ("int x = 1;",), ("int x = 2;",), "t.*")])
    assert problems[0].startswith("q9: edit 1 of ") and "found 0 times (wants once): 'int y'" in problems[0]
    assert problems[1] == "q9: the label is used by another entry too"
    assert "found 2 times" in problems[2]


def _interrupted_run(tmp_path, stop):
    source, journal = tmp_path / "source.cpp", tmp_path / "mutations.journal"
    source.write_text("int value = 1;\n")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(HERE), str(journal), str(source)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "building\n", child.stderr.read()
        assert source.read_text() == "int value = 2;\n" and journal.exists()
        child.send_signal(stop)
        child.wait(timeout=60)
    finally:
        child.kill()
        child.wait()
    return source, journal


def test_sigterm_during_a_mutations_build_restores_the_source_and_removes_the_journal(tmp_path):
    source, journal = _interrupted_run(tmp_path, signal.SIGTERM)
    assert source.read_text() == "int value = 1;\n"
    assert not journal.exists()


def test_after_sigkill_the_journal_restores_the_source(tmp_path, monkeypatch):
    source, journal = _interrupted_run(tmp_path, signal.SIGKILL)
    assert source.read_text() == "int value = 2;\n" and journal.exists()
    monkeypatch.setattr(mutations, "JOURNAL", journal)
    assert mutations.restore_journal()
    assert source.read_text() == "int value = 1;\n"
    assert not journal.exists()
    assert not mutations.restore_journal()


@pytest.mark.parametrize("old, new", [(("a", "b"), ("c",)), ("a", ("b", "c"))])
def test_an_entry_with_unequal_edit_lists_is_refused(old, new):
    with pytest.raises(ValueError, match="q8: (2 texts to replace, 1 replacements|1 texts to replace, 2 replacements)"):
        mutations.edits(("q8: uneven", "f.cpp", old, new, "t.*"))
