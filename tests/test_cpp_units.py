"""Runs the C++ unit tests (GoogleTest: signature parser, launch plans, options, diagnostics, compile
cache, NVRTC; and the PTX simulator's instruction families) from the build tree, so the one pytest
command covers them too."""
import subprocess

import pytest


def test_cpp_unit_tests_pass(build_dir):
    binary = build_dir / "bin" / "xcuda_core_tests"
    if not binary.exists():
        pytest.fail(f"{binary} was not built: configure with -DXCUDA_BUILD_TESTS=ON and GoogleTest installed")
    result = subprocess.run([str(binary), "--gtest_brief=1"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "PASSED" in result.stdout


def test_simulator_unit_tests_pass(build_dir):
    binary = build_dir / "bin" / "xcuda_simulator_tests"
    if not binary.exists():
        pytest.fail(f"{binary} was not built: configure with -DXCUDA_BUILD_TESTS=ON and GoogleTest installed")
    result = subprocess.run([str(binary), "--gtest_brief=1"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "PASSED" in result.stdout
