"""docs/environment.md names every XCUDA_* environment variable the code reads, and nothing else.

The scan reads the sources as text (no build needed): C and C++ (magics/, kernel/, tests/fake_driver, the
benchmarks' C), Python (the xcuda package, the tests, the benchmarks, the notebooks' code cells), shell (.ci/,
tests/gpu_host, tests/bench) and CMake. What counts as a read, by language:

- C/C++: `getenv("XCUDA_X")` (std::, secure_getenv too); in a file that calls getenv with something other
  than a literal (a helper that takes the name, a loop over names), every string literal that is exactly a
  name: `number("XCUDA_STAGING_THREADS", ...)`, `{"XCUDA_REPLAY_DIR", "TMPDIR"}`, `return "XCUDA_NCU";`.
- Python: `os.environ.get("XCUDA_X")`, `os.environ["XCUDA_X"]` (not assigned to), `os.getenv`,
  `os.environ.pop`, `"XCUDA_X" in os.environ`; in a file that reads os.environ with something other than a
  literal (`os.environ.get(AUTO_VARIABLE)`), every string literal that is exactly a name.
- shell: `$XCUDA_X`, `${XCUDA_X...}` outside comments.
- CMake: `$ENV{XCUDA_X}`.

What the code sets (setenv, `os.environ[...] =`, `dict(os.environ, XCUDA_X=...)`, `export XCUDA_X=`, an
exact-name literal anywhere in code) must be read somewhere too: a name that is only ever set is a dead
setting or a read this scan misses. A name built from pieces ("XCUDA_" + name, f"XCUDA_{name}",
XCUDA_${name}) cannot be found by its name: such a prefix must be listed in BUILT_NAMES with the names it
makes and why. The table says where each variable is read by file name; that file must exist (anywhere in
the tree: files move between folders) and mention the variable. A variable the product reads (magics/,
kernel/) belongs in the table of the product; one only the tests, benchmarks, fake driver and CI scripts
read belongs in the table of those.
"""
import json
import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "docs" / "environment.md"
THIS = Path(__file__).resolve()

# Folders the scan reads, and the folders below them it skips (build trees, virtual environments, the
# GPU host's copies, recorded tool output).
ROOTS = ("magics", "kernel", "tests", ".ci", "notebooks", "share", "CMakeLists.txt")
SKIPPED = {"__pycache__", "node_modules", "fixtures", ".git", ".gpu", ".devrt", ".whl", "venv"}

# Prefixes from which code builds names at run time: {prefix: (the names it makes, why it builds them)}.
# None today; a prefix the scan finds that is not here fails the test, and so does an entry here whose
# prefix the code no longer builds from.
BUILT_NAMES = {}

NAME = r"XCUDA_[A-Z0-9_]*[A-Z0-9]"
C_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh"}

C_TOUCHES = re.compile(r"\b(?:secure_)?getenv\s*\(|\b(?:un)?setenv\s*\(|\bputenv\s*\(|\benviron\b")
C_READ = re.compile(r"\b(?:secure_)?getenv\s*\(\s*\"(" + NAME + r")\"")
C_INDIRECT = re.compile(r"\b(?:secure_)?getenv\s*\(\s*(?!\")")
C_SET = re.compile(r"\b(?:un)?setenv\s*\(\s*\"(" + NAME + r")\"|\bputenv\s*\(\s*\"(" + NAME + r")=")
C_LITERAL = re.compile(r"\"(" + NAME + r")\"")
C_ENTRY = re.compile(r"\"(" + NAME + r")=")  # "XCUDA_X=" + value: an entry of an environment made for a child

PY_READ = re.compile(r"\bos\.(?:environ\.(?:get|pop)\s*\(|getenv\s*\()\s*[\"'](" + NAME + r")[\"']"
                     r"|\bos\.environ\s*\[\s*[\"'](" + NAME + r")[\"']\s*\](?!\s*=[^=])"
                     r"|[\"'](" + NAME + r")[\"']\s+in\s+os\.environ\b")
PY_INDIRECT = re.compile(r"\bos\.(?:environ\.(?:get|pop)\s*\(|getenv\s*\()\s*(?![\"'])[A-Za-z_]"
                         r"|\bos\.environ\s*\[\s*(?![\"'])[A-Za-z_][\w.]*\s*\](?!\s*=[^=])")
PY_LITERAL = re.compile(r"[\"'](" + NAME + r")[\"']")
PY_KEYWORD = re.compile(r"(?<![\w.\"'])(" + NAME + r")\s*=(?!=)")

SH_READ = re.compile(r"\$\{?(" + NAME + r")\b")
SH_SET = re.compile(r"(?:^|[\s;(])(?:export\s+)?(" + NAME + r")=")
CMAKE_READ = re.compile(r"\$ENV\{(" + NAME + r")\}")

# A name put together at run time: a literal that ends in "_" right before a + or a format field.
BUILT = re.compile(r"[\"'](XCUDA_(?:[A-Z0-9]+_)*)[\"']\s*\+"
                   r"|\bf[\"'][^\"']*?(XCUDA_(?:[A-Z0-9]+_)*)\{"
                   r"|(XCUDA_(?:[A-Z0-9]+_)*)\$\{?[A-Za-z_]"
                   r"|[\"'](XCUDA_(?:[A-Z0-9]+_)*)%s[\"']")


def language(path):
    if path.suffix in C_SUFFIXES:
        return "c"
    if path.suffix == ".py":
        return "python"
    if path.suffix == ".ipynb":
        return "notebook"
    if path.suffix == ".sh":
        return "shell"
    if path.name == "CMakeLists.txt" or path.suffix == ".cmake":
        return "cmake"
    if not path.suffix:
        try:
            first = path.open("rb").readline()
        except OSError:
            return None
        if first.startswith(b"#!") and (b"sh" in first.split(b"/")[-1] or b"bash" in first):
            return "shell"
        if first.startswith(b"#!") and b"python" in first:
            return "python"
    return None


def source_files():
    for root in ROOTS:
        top = REPO / root
        if top.is_file():
            yield top
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d not in SKIPPED and not d.startswith("build")]
            for name in files:
                path = Path(folder) / name
                if path.resolve() != THIS and language(path):
                    yield path


def without_comments(text, kind):
    """The code of a file: C/C++ comments, shell and CMake comment lines, and Python comments left out
    (string literals stay: they hold the names); a notebook's code cells only."""
    if kind == "notebook":
        cells = json.loads(text).get("cells", [])
        text = "\n".join("".join(cell.get("source", "")) for cell in cells if cell.get("cell_type") == "code")
        kind = "python"
    if kind == "c":
        text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        return re.sub(r"(?m)(^|[^:\"])//.*$", r"\1", text)
    if kind in ("shell", "cmake", "python"):
        return re.sub(r"(?m)^\s*#.*$", "", text)
    return text


def line_of(text, index):
    return text.count("\n", 0, index) + 1


def scan_text(text, kind):
    """(reads, sets, built) of one file's text: reads and sets map a name to the first line naming it so;
    built maps a prefix to the line where a name is built from it."""
    code = without_comments(text, kind)
    kind = "python" if kind == "notebook" else kind
    reads, sets, built = {}, {}, {}

    def add(found, pattern, where=code):
        for match in pattern.finditer(where):
            for name in match.groups():
                if name:
                    found.setdefault(name, line_of(where, match.start()))

    if kind == "c":
        add(reads, C_READ)
        add(sets, C_SET)
        if re.search(r"\benviron\b", code):
            add(sets, C_ENTRY)
        if C_TOUCHES.search(code):
            literals = {}
            add(literals, C_LITERAL)
            for name, line in literals.items():
                if name not in reads and name not in sets:
                    (reads if C_INDIRECT.search(code) else sets)[name] = line
    elif kind == "python":
        add(reads, PY_READ)
        literals = {}
        add(literals, PY_LITERAL)
        add(sets, PY_KEYWORD)
        add(reads, SH_READ)  # "$XCUDA_X" in a command line the code runs through a shell
        for name, line in literals.items():
            if name not in reads and name not in sets:
                (reads if PY_INDIRECT.search(code) else sets)[name] = line
    elif kind == "shell":
        add(reads, SH_READ)
        add(sets, SH_SET)
        for match in re.finditer(r"<<-?\s*['\"]?(\w+)['\"]?\n(.*?)\n\1\b", code, re.S):  # Python in a here-document
            inner_reads, inner_sets, inner_built = scan_text(match.group(2), "python")
            for name, line in inner_reads.items():
                reads.setdefault(name, line + line_of(code, match.start(2)) - 1)
            for name, line in inner_sets.items():
                sets.setdefault(name, line + line_of(code, match.start(2)) - 1)
    elif kind == "cmake":
        add(reads, CMAKE_READ)
    add(built, BUILT)
    return reads, sets, built


def scan_tree():
    """(reads, sets, built), each {name or prefix: [(relative path, line), ...]} over the tree."""
    reads, sets, built = defaultdict(list), defaultdict(list), defaultdict(list)
    for path in source_files():
        kind = language(path)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if "XCUDA_" not in text:
            continue
        relative = path.relative_to(REPO).as_posix()
        for found, into in zip(scan_text(text, kind), (reads, sets, built)):
            for name, line in found.items():
                into[name].append((relative, line))
    return reads, sets, built


# ---- the table ---------------------------------------------------------------------------------------

PRODUCT_SECTIONS = ("Read by xcuda", "Set by xcuda for its own processes")
TESTS_SECTION = "Read by the tests, benchmarks, fake driver and CI scripts"
PRODUCT_FOLDERS = ("magics/", "kernel/")


def table_rows(text):
    """{name: (section, [file names of its "read by" column])} of docs/environment.md's tables."""
    rows, section = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        match = re.match(r"\|\s*`(" + NAME + r")`\s*\|([^|]*)\|", line)
        if match:
            assert match.group(1) not in rows, f"{match.group(1)} has two rows in {TABLE.name}"
            rows[match.group(1)] = (section, re.findall(r"`([^`]+)`", match.group(2)))
    return rows


@pytest.fixture(scope="module")
def scanned():
    return scan_tree()


@pytest.fixture(scope="module")
def table():
    return table_rows(TABLE.read_text())


def places(found):
    return ", ".join(f"{path}:{line}" for path, line in found[:3]) + (" ..." if len(found) > 3 else "")


def test_every_variable_the_code_reads_has_a_row(scanned, table):
    reads = scanned[0]
    missing = [f"{name} (read at {places(reads[name])})" for name in sorted(reads) if name not in table]
    assert not missing, f"{TABLE.relative_to(REPO)} lacks: " + "; ".join(missing)


def test_every_row_names_a_variable_some_code_still_reads(scanned, table):
    reads = scanned[0]
    stale = [name for name in sorted(table) if name not in reads]
    assert not stale, f"rows of {TABLE.relative_to(REPO)} that no code reads any more: {', '.join(stale)}"


def test_every_variable_the_code_sets_is_read_somewhere(scanned):
    reads, sets = scanned[0], scanned[1]
    unread = [f"{name} (set at {places(sets[name])})" for name in sorted(sets) if name not in reads]
    assert not unread, ("set but never read (a dead setting, or a read this scan does not see: teach it): "
                        + "; ".join(unread))


def test_names_built_from_a_prefix_are_listed(scanned):
    built = scanned[2]
    unlisted = [f"{prefix!r} at {places(built[prefix])}" for prefix in sorted(built) if prefix not in BUILT_NAMES]
    assert not unlisted, ("names are built at run time from these prefixes: list the names each makes, and "
                          "why, in BUILT_NAMES: " + "; ".join(unlisted))
    gone = [prefix for prefix in BUILT_NAMES if prefix not in built]
    assert not gone, f"BUILT_NAMES lists prefixes the code no longer builds names from: {gone}"


def test_the_built_names_have_rows(table):
    missing = [name for names, _ in BUILT_NAMES.values() for name in names if name not in table]
    assert not missing, f"{TABLE.relative_to(REPO)} lacks the built names {missing}"


def test_each_row_sits_in_the_table_of_who_reads_it(scanned, table):
    reads = scanned[0]
    wrong = []
    for name, (section, _) in sorted(table.items()):
        product = any(path.startswith(PRODUCT_FOLDERS) for path, _ in reads.get(name, []))
        if product and section not in PRODUCT_SECTIONS:
            wrong.append(f"{name}: read by the product ({places(reads[name])}), listed under {section!r}")
        elif not product and section != TESTS_SECTION and name in reads:
            wrong.append(f"{name}: read only by {places(reads[name])}, listed under {section!r}")
    assert not wrong, "; ".join(wrong)


def test_each_file_a_row_names_reads_that_variable(scanned, table):
    reads = scanned[0]
    wrong = []
    for name, (_, files) in sorted(table.items()):
        assert files, f"{name}'s row names no file that reads it"
        for file in files:
            readers = [path for path, _ in reads.get(name, [])
                       if (path == file if "/" in file else path.rsplit("/", 1)[-1] == file)]
            if not readers:
                wrong.append(f"{name}: {file}")
    assert not wrong, "files named in the read-by column that do not read the variable (moved or renamed?): " + \
        "; ".join(wrong)


# ---- the scan itself, on made-up sources ------------------------------------------------------------------

def test_the_scan_finds_reads_in_each_language():
    c = scan_text('const char* a = std::getenv("XCUDA_A");\n// getenv("XCUDA_COMMENTED")\n'
                  'if (secure_getenv("XCUDA_B")) {}\nsetenv("XCUDA_C", "1", 1);\n', "c")
    assert set(c[0]) == {"XCUDA_A", "XCUDA_B"} and set(c[1]) == {"XCUDA_C"}
    python = scan_text('import os\nos.environ.get("XCUDA_A")\nos.environ["XCUDA_B"]\nos.environ["XCUDA_C"] = "1"\n'
                       'os.getenv(\'XCUDA_D\', "")\nif "XCUDA_E" in os.environ: pass\nos.environ.pop("XCUDA_F")\n'
                       'env = dict(os.environ, XCUDA_G="0")\n# os.environ.get("XCUDA_COMMENTED")\n'
                       'command = "run \\"$XCUDA_H\\""\n', "python")
    assert set(python[0]) == {"XCUDA_A", "XCUDA_B", "XCUDA_D", "XCUDA_E", "XCUDA_F", "XCUDA_H"}
    assert {"XCUDA_C", "XCUDA_G"} <= set(python[1])
    shell = scan_text('#!/bin/bash\n# $XCUDA_COMMENTED\nbuild=${XCUDA_A:-build}\necho "$XCUDA_B"\n'
                      'export XCUDA_C=1\ncmake -DXCUDA_OPTION=ON\n', "shell")
    assert set(shell[0]) == {"XCUDA_A", "XCUDA_B"} and set(shell[1]) == {"XCUDA_C"}
    assert set(scan_text("set(x $ENV{XCUDA_A})\n# $ENV{XCUDA_COMMENTED}\n", "cmake")[0]) == {"XCUDA_A"}


def test_the_scan_follows_names_handed_to_a_helper_that_reads_the_environment():
    c = scan_text('std::string env(const char* name) { const char* v = std::getenv(name); return v ? v : ""; }\n'
                  'int threads = number("XCUDA_A", 4);\nfor (const char* v : {"XCUDA_B", "TMPDIR"}) {}\n'
                  'std::string message = "XCUDA_C=" + value + " is wrong";\n', "c")
    assert set(c[0]) == {"XCUDA_A", "XCUDA_B"}
    python = scan_text('import os\nAUTO = "XCUDA_A"\nif os.environ.get(AUTO, "1") == "0": pass\n', "python")
    assert set(python[0]) == {"XCUDA_A"}
    # The same literals without an indirect read are names handed to another process (set), not reads.
    assert set(scan_text('int threads = number("XCUDA_A", 4);\nsetenv("XCUDA_B", "", 1);\n', "c")[0]) == set()


def test_the_scan_finds_names_built_from_a_prefix():
    assert set(scan_text('std::string v = std::getenv(("XCUDA_" + name).c_str());\n', "c")[2]) == {"XCUDA_"}
    assert set(scan_text('os.environ.get(f"XCUDA_STAGING_{knob.upper()}")\n', "python")[2]) == {"XCUDA_STAGING_"}
    assert set(scan_text('echo "${XCUDA_SIM_${what}}"\n', "shell")[2]) == {"XCUDA_SIM_"}
    assert set(scan_text('os.environ["XCUDA_%s" % name]\n', "python")[2]) == {"XCUDA_"}


def test_the_scan_reads_a_notebooks_code_cells_only():
    notebook = json.dumps({"cells": [
        {"cell_type": "markdown", "source": ['os.environ.get("XCUDA_IN_PROSE")']},
        {"cell_type": "code", "source": ["import os\n", 'os.environ.get("XCUDA_A")']}]})
    assert set(scan_text(notebook, "notebook")[0]) == {"XCUDA_A"}


def test_the_table_parser_reads_names_sections_and_files():
    text = ("## Read by xcuda\n\n| variable | read by | values | what |\n| --- | --- | --- | --- |\n"
            "| `XCUDA_A` | `a.cpp`, `b.py` (kernel) | `0` | x |\n\n## Other\n\n| `XCUDA_B` | `.ci/setup` | | y |\n")
    assert table_rows(text) == {"XCUDA_A": ("Read by xcuda", ["a.cpp", "b.py"]), "XCUDA_B": ("Other", [".ci/setup"])}
