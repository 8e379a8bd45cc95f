"""Launches from several threads at once: every result is the launching thread's own.

Each scenario of tests/runtime/concurrent_launch_scenarios.py (4 threads x 200 launches, with numpy arrays,
device arrays or __cuda_array_interface__ objects, on the default stream and on streams of their own,
one kernel or two) runs in a child process against the fake driver (any machine), and marked gpu on a
real GPU with n = 2**20.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import concurrent_launch_scenarios  # noqa: E402

SCRIPT = HERE / "concurrent_launch_scenarios.py"
NAMES = sorted(concurrent_launch_scenarios.SCENARIOS)


def run_scenario(name, build_dir, environment):
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env.update(environment)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(SCRIPT), name], capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, f"scenario {name} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"scenario held: {name}" in ran.stdout


# Each scenario once with each way of passing launch arguments (the launch_arguments_env fixture).
@pytest.mark.parametrize("name", NAMES)
def test_threads_launching_at_once_each_get_their_own_results_fake_driver(name, launch_arguments_env, build_dir):
    library = build_dir / "lib" / "libxcuda_fake_cuda.so"
    if not library.exists():
        pytest.fail(f"{library} was not built: configure with -DXCUDA_BUILD_TESTS=ON")
    run_scenario(name, build_dir, {"XCUDA_LIBCUDA": str(library), **launch_arguments_env})


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_threads_launching_at_once_each_get_their_own_results_on_the_gpu(name, build_dir):
    run_scenario(name, build_dir, {"XCUDA_SCENARIO_N": str(1 << 20)})
