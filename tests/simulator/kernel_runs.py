"""Running a script of kernels (exact_kernels.py, float_kernels.py) in a child process on the simulator or on the
GPU, and the scripts' side of it: save the outputs with numpy and say which device ran them.

A child process, because the device is chosen when xcuda first uses the driver: XCUDA_DEVICE=simulator must be
in the environment before that, and the GPU's run must not have it.
"""
import os
import subprocess
import sys

import numpy as np


def run_kernels(script, build_dir, target, simulator):
    """Runs `script` (a path) with XCUDA_DEVICE=simulator or without, saving to `target`; its outputs by name."""
    env = dict(os.environ)
    for variable in ("XCUDA_LIBCUDA", "XCUDA_DEVICE", "XCUDA_SIM_MAX_STEPS"):
        env.pop(variable, None)
    # Without the simulator: the GPU, never the simulator's fallback where there is none (conftest.py).
    env["XCUDA_DEVICE"] = "simulator" if simulator else "gpu"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(script), str(target)], capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, f"{ran.stdout[-2000:]}\n{ran.stderr[-4000:]}"
    assert ("xcuda PTX simulator" in ran.stdout) == simulator, ran.stdout
    return dict(np.load(target))


def save(results, target):
    """A script's end: its outputs saved to `target`, and the device that ran them named."""
    import xcuda

    np.savez(target, **results)
    print("device:", next(line.split(None, 1)[1] for line in str(xcuda.info()).splitlines()
                          if line.strip().startswith("name")))
    print("saved", ", ".join(f"{k} ({v.nbytes} bytes)" for k, v in results.items()))


def run_gpu_tests_on_the_simulator(target, build_dir, at_least):
    """Runs the `gpu`-marked tests of `target` (a path from the repository's root) in a child pytest with
    XCUDA_DEVICE=simulator; asserts at least `at_least` passed and none skipped or failed."""
    import re
    from pathlib import Path
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env["XCUDA_DEVICE"] = "simulator"
    env["XCUDA_BUILD_DIR"] = str(build_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(build_dir) / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, "-m", "pytest", target, "-m", "gpu", "-q", "-p", "no:cacheprovider", "-rs"],
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=900, env=env)
    summary = ran.stdout.strip().splitlines()[-1] if ran.stdout.strip() else ""
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-3000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= at_least, summary
    assert "skipped" not in summary and "failed" not in summary and "error" not in summary, summary
