"""The GPU tests of the runtime layer that mean something on the simulator run there too, in CI.

tests/runtime/test_gpu.py (marked gpu) runs in a child pytest with XCUDA_DEVICE=simulator (XCUDA_LIBCUDA
unset): tests/conftest.py then counts the simulator's one device as the GPU, so the gpu marker does not
skip, and xcuda opens libxcuda-sim.so. Every test runs except those in CANNOT, each for the reason
given (docs/simulator.md repeats them). tests/runtime/test_launch_arguments.py has no test marked gpu
(its launch tests need no driver), so nothing of it is here.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent

CANNOT = {
    "test_the_default_target_is_the_gpus_own_arch": "it checks that the device's name says NVIDIA",
    "test_shutdown_releases_the_primary_context_and_later_work_starts_a_new_session":
        "it asks libcuda.so.1 itself (ctypes) for the primary context's state",
    "test_xcuda_device_names_a_device_that_must_exist":
        "it sets XCUDA_DEVICE to device numbers, and XCUDA_DEVICE=simulator is what selects the simulator",
    "test_ptxas_and_driver_resources_agree":
        "the simulator's register count is the PTX's virtual registers, not ptxas's allocation",
    "test_occupancy_names_the_limiting_resource": "the simulator's occupancy is nominal (from the thread count)",
}


@pytest.mark.parametrize("arguments", ["pointers", "buffer"])
def test_the_runtimes_gpu_tests_pass_on_the_simulator_but_those_it_cannot_mean(build_dir, arguments):
    """Once with each way of passing launch arguments (XCUDA_LAUNCH_ARGUMENTS): every launch of those tests,
    scalars of each width, by-value structs, templates and CUB included, also as one packed buffer."""
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env["XCUDA_DEVICE"] = "simulator"
    env["XCUDA_LAUNCH_ARGUMENTS"] = arguments
    env["XCUDA_BUILD_DIR"] = str(build_dir)
    target = "tests/runtime/test_gpu.py"
    deselect = [arg for name in CANNOT for arg in ("--deselect", f"{target}::{name}")]
    ran = subprocess.run([sys.executable, "-m", "pytest", target, "-m", "gpu", "-q", "-p", "no:cacheprovider",
                          "-rs", *deselect], cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    summary = ran.stdout.strip().splitlines()[-1] if ran.stdout.strip() else ""
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-3000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 25, summary
    assert "skipped" not in summary and "failed" not in summary and "error" not in summary, summary
    assert f"{len(CANNOT)} deselected" in summary, summary  # each name in CANNOT is still a test there
