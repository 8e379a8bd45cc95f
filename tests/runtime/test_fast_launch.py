"""The launch fast path (a Launcher's cache of argument type signatures, magics/python/py_fast_launch.cpp):
hits and misses with changing argument types, values still checked on a hit, captures, several threads.
Each scenario of tests/runtime/fast_launch_scenarios.py runs in a child process against the fake driver
(any machine), once with each way of passing launch arguments; the one that needs the kernel to run for real
(None pointers, scalar kinds) on the PTX simulator; marked gpu, every fake-driver scenario on a GPU."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fast_launch_scenarios  # noqa: E402

SCRIPT = HERE / "fast_launch_scenarios.py"


def run_scenario(name, build_dir, environment):
    env = dict(os.environ)
    env.pop("XCUDA_DEVICE", None)
    env.pop("XCUDA_LIBCUDA", None)
    env.update(environment)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(SCRIPT), name], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, f"scenario {name} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"scenario held: {name}" in ran.stdout


@pytest.mark.parametrize("name", sorted(fast_launch_scenarios.SCENARIOS))
def test_fast_launch_scenario_against_the_fake_driver(name, launch_arguments_env, build_dir):
    library = build_dir / "lib" / "libxcuda_fake_cuda.so"
    assert library.exists(), f"{library} was not built: configure with -DXCUDA_BUILD_TESTS=ON"
    run_scenario(name, build_dir, {"XCUDA_LIBCUDA": str(library), **launch_arguments_env})


@pytest.mark.parametrize("name", sorted(fast_launch_scenarios.ON_THE_SIMULATOR))
@pytest.mark.parametrize("arguments", ["pointers", "buffer"])
def test_fast_launch_scenario_on_the_simulator(name, arguments, build_dir):
    run_scenario(name, build_dir, {"XCUDA_DEVICE": "simulator", "XCUDA_LAUNCH_ARGUMENTS": arguments})


# The same scenarios with a GPU's driver: the memo's addresses, the general path's errors and the threads
# against real device memory (a stale address there is memory the driver may still hold, not a fault).
@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(fast_launch_scenarios.SCENARIOS))
def test_fast_launch_scenario_on_the_gpu(name, build_dir):
    run_scenario(name, build_dir, {})
