"""Runs the C++ unit tests (GoogleTest) from the build tree, one pytest item per C++ test, so that a
failure names the C++ test: xcuda_core_tests (signature parser, launch plans and argument blocks,
options, diagnostics, compile cache, NVRTC, views), xcuda_launch_tests (the launch transaction
against the fake driver) and xcuda_simulator_tests (the PTX simulator's instruction families). Their sources
lie in a folder per layer of magics/src (base/, signature/, compile/, runtime/, views/, frontend/,
simulator/; tests/README.md); the programs are found by name in the build's bin/.

Each binary runs once (a session fixture, with --gtest_output=json); each item reads its own result.
"""
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
BUILD = Path(os.environ.get("XCUDA_BUILD_DIR", REPO / "build")).resolve()
BINARIES = ("xcuda_core_tests", "xcuda_launch_tests", "xcuda_simulator_tests")


def listed_tests(binary):
    """'Suite.name' of every test the binary has, or [] when it was not built (reported by its item)."""
    path = BUILD / "bin" / binary
    if not path.exists():
        return []
    listing = subprocess.run([str(path), "--gtest_list_tests"], capture_output=True, text=True, timeout=120)
    names, suite = [], None
    for line in listing.stdout.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    return names


ITEMS = [(binary, name) for binary in BINARIES for name in listed_tests(binary)]


@pytest.fixture(scope="session")
def gtest_results():
    """binary -> {'Suite.name': (status, result, failure text)} from one run of each binary."""
    results = {}
    for binary in BINARIES:
        path = BUILD / "bin" / binary
        if not path.exists():
            continue
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "report.json"
            ran = subprocess.run([str(path), "--gtest_brief=1", f"--gtest_output=json:{report}"],
                                 capture_output=True, text=True, timeout=600)
            if not report.exists():
                pytest.fail(f"{binary} wrote no report (exit {ran.returncode}):\n{ran.stdout[-4000:]}{ran.stderr[-2000:]}")
            data = json.loads(report.read_text())
        by_name = {}
        for suite in data.get("testsuites", []):
            for case in suite.get("testsuite", []):
                failures = "\n".join(f.get("failure", "") for f in case.get("failures", []))
                by_name[f"{suite['name']}.{case['name']}"] = (case.get("status"), case.get("result"), failures)
        results[binary] = by_name
    return results


@pytest.mark.parametrize("binary", BINARIES)
def test_cpp_test_program_was_built_and_has_tests(binary):
    path = BUILD / "bin" / binary
    assert path.exists(), f"{path} was not built: configure with -DXCUDA_BUILD_TESTS=ON and GoogleTest installed"
    assert listed_tests(binary), f"{binary} lists no test"


@pytest.mark.parametrize("binary,name", ITEMS, ids=[f"{b}:{n}" for b, n in ITEMS])
def test_cpp(binary, name, gtest_results):
    status, result, failures = gtest_results[binary].get(name, (None, None, "not in the report"))
    if result == "SKIPPED":
        pytest.skip(f"{name} skipped itself: " + (failures or "see its GTEST_SKIP message"))
    assert status == "RUN" and result == "COMPLETED" and not failures, f"{name}: {result}\n{failures}"
