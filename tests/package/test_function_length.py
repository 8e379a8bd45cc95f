"""No function of the checkout is longer than 150 lines (issue 47): lizard (PyPI) measures every C++ and Python
function in magics/, kernel/ and tests/; the test fails naming each one over the limit, and reports the ten
longest every time (printed, so `pytest -s` shows it, in the failure message, and written to
<build>/function-lengths.txt).

What is measured: the checked-in sources lizard reads as C, C++ (.c, .cpp, .hpp) or Python (.py). What is not:
- generated code. None is checked in: it is written into the build folders (build/, build-*/), which these
  paths do not contain and .gitignore names: kernel/python/*.py embedded into C++ headers
  (kernel/python/embedded_python.hpp.in -> build/kernel-generated/*.hpp), the module and the package copied
  into build/python/xcuda/, the wheel's build (build/wheel/);
- recorded tool output and sample sources that are test data, not our code (tests/fixtures/ and
  tests/cpp/fixtures/: PTX, SASS, .cu, csv and text), and CUDA sources (.cu), which lizard does not read.
A function's length is lizard's: from its first line to its last, comments and blank lines included.

lizard comes from the test venv (build/venv, or $XCUDA_TEST_VENV: `.ci/setup --tests` installs it there),
else from the Python running the tests; without it the test skips saying so, except under CI (CI set, as
`.ci/run` runs): there `.ci/setup --tests` installed it, and its absence fails the test rather than hide the check.
"""
import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD, REPO

LIMIT = 150
MEASURED = ("magics", "kernel", "tests")
LANGUAGES = ("cpp", "python")  # lizard's C/C++ reader takes .c, .cpp and .hpp
# Folders never measured, whatever they hold: generated code and build trees, bytecode, recorded tool output.
EXCLUDED = ("*/build/*", "*/build-*/*", "*/__pycache__/*", "tests/fixtures/*", "tests/cpp/fixtures/*")
VENV = Path(os.environ.get("XCUDA_TEST_VENV") or BUILD / "venv")


def _has_lizard(python):
    if not Path(python).exists():
        return False
    return subprocess.run([str(python), "-c", "import lizard"], capture_output=True).returncode == 0


def _lizard_python():
    for python in (VENV / "bin" / "python", Path(sys.executable)):
        if _has_lizard(python):
            return python
    return None


LIZARD_PYTHON = _lizard_python()
if LIZARD_PYTHON is None and os.environ.get("CI"):
    raise RuntimeError(f"lizard is missing from the test venv ({VENV}) under CI: `.ci/setup --tests` installs it")
pytestmark = pytest.mark.skipif(
    LIZARD_PYTHON is None,
    reason=f"lizard is not installed in the test venv ({VENV}) nor in {sys.executable}: "
           "`.ci/setup --tests` installs it into the venv, or `pip install lizard`")


def function_lengths():
    """[(length, 'path:line name')] of every function lizard finds in MEASURED, longest first."""
    command = [str(LIZARD_PYTHON), "-m", "lizard", "--csv"]
    for language in LANGUAGES:
        command += ["-l", language]
    for pattern in EXCLUDED:
        command += ["-x", pattern]
    result = subprocess.run(command + list(MEASURED), cwd=str(REPO), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"lizard failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    functions = []
    # NLOC, CCN, token, PARAM, length, location, file, function, long name, start, end
    for row in csv.reader(io.StringIO(result.stdout)):
        if len(row) < 11 or not row[4].isdigit():
            continue
        functions.append((int(row[4]), f"{row[6]}:{row[9]} {row[7]}"))
    return sorted(functions, key=lambda function: -function[0])


def test_no_function_is_longer_than_150_lines():
    functions = function_lengths()
    assert len(functions) > 1000, f"lizard found only {len(functions)} functions: is it reading the sources?"
    longest = "\n".join(f"  {length:4d}  {where}" for length, where in functions[:10])
    report = f"The ten longest of {len(functions)} functions (lines):\n{longest}\n"
    print(report)
    if BUILD.is_dir():
        (BUILD / "function-lengths.txt").write_text(report)
    over = [f"  {length:4d}  {where}" for length, where in functions if length > LIMIT]
    assert not over, (f"{len(over)} function(s) over {LIMIT} lines: split each into named parts.\n" + "\n".join(over) +
                      "\n" + report)
