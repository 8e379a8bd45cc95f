"""The binding only converts (issue 47, docs/architecture.md): its C++ draws nothing and holds no global state.

- No C++ file of magics/python imports IPython or matplotlib: progress bars, plots, IPython's displays and
  errors are the xcuda package's Python (xcuda/progress.py, plots.py, shell.py, magics.py).
- No C++ file of magics/python reaches for a process-wide state (the old `state()` / `process_session()`):
  the notebook's core state (frontend/notebook_session) is handed to what needs it.
- The core (magics/src) has no Python in it: no pybind11 or Python.h include.
"""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BINDING = REPO / "magics" / "python"
CORE = REPO / "magics" / "src"


def cpp_files(folder):
    return sorted(p for p in folder.rglob("*") if p.suffix in (".cpp", ".hpp", ".h", ".cc"))


def code_lines(path):
    """(number, line) of the file's code, comments and string-only lines left in: imports are code."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        yield number, line


def offences(pattern, files):
    found = []
    for path in files:
        for number, line in code_lines(path):
            if re.search(pattern, line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    return found


def test_the_bindings_cpp_imports_neither_ipython_nor_matplotlib():
    assert cpp_files(BINDING), "no C++ found in magics/python"
    found = offences(r'import\(\s*"(IPython|matplotlib)', cpp_files(BINDING))
    assert not found, "draw in the xcuda package's Python instead:\n" + "\n".join(found)


def test_the_binding_reaches_for_no_process_wide_state():
    found = offences(r"\b(state|process_session)\(\)|\bprocess_state\b", cpp_files(BINDING))
    assert not found, "hand the notebook_session to what needs it:\n" + "\n".join(found)


def test_the_core_has_no_python_in_it():
    found = offences(r'#\s*include\s*[<"](pybind11/|Python\.h)', cpp_files(CORE))
    assert not found, "the core takes callbacks; Python belongs to magics/python:\n" + "\n".join(found)
