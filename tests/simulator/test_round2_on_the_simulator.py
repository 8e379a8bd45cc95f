"""The gpu tests of issue 25's runtime items (module variables, big shared memory, function attributes,
offset views and raw addresses, and the second set of public programs), of issue 45's own programs (llm.c's bf16
kernels with their headers among them) and of launch attributes (thread-block clusters) run on the PTX simulator in CI.

Each file runs in a child pytest with XCUDA_DEVICE=simulator (XCUDA_LIBCUDA unset), as
test_runtime_on_the_simulator.py does for tests/runtime/test_gpu.py; every gpu test runs except those in
CANNOT, each for the reason given.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent

sys.path.insert(0, str(REPO / "tests" / "compile" / "programs2"))
from round2_programs import PROGRAMS  # noqa: E402

CANNOT = {
    **{f"tests/compile/test_programs2.py::test_every_program_runs_as_its_host_code_would[{p.name}]": p.simulator
       for p in PROGRAMS if p.simulator is not True},
    "tests/runtime/test_launch_features.py::test_a_replay_of_a_launch_with_big_shared_memory_opts_in_too":
        "xcuda-replay loads the bundle's CUBIN, and the simulator runs PTX only (docs/simulator.md)",
    "tests/runtime/test_launch_features.py::test_a_replay_sees_the_module_variables_and_syncs_its_grid":
        "xcuda-replay loads the bundle's CUBIN, and the simulator runs PTX only (docs/simulator.md)",
}

FILES = {
    "tests/runtime/test_module_variables.py": 8,
    "tests/runtime/test_launch_features.py": 8,  # with the cooperative launch (grid-wide sync)
    "tests/compile/test_programs2.py": 5,
    "tests/compile/test_programs3.py": 12,  # issue 45's own set of twelve: every one runs on the simulator
    "tests/compile/test_family_programs.py": 7,  # issue 45's families (SGEMM, llm.c, flash, CUB, CG, PMPP), bmsk
    "tests/compile/test_llmc_headers.py": 1,  # llm.c's train_gpt2.cu bf16 kernels with their llmc/ headers
    "tests/runtime/test_launch_attributes.py": 3,  # thread-block clusters, distributed shared memory, graphs
}


@pytest.mark.parametrize("target", sorted(FILES))
def test_the_gpu_tests_pass_on_the_simulator(target, build_dir):
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env["XCUDA_DEVICE"] = "simulator"
    env["XCUDA_BUILD_DIR"] = str(build_dir)
    deselect = [arg for name in CANNOT if name.startswith(target) for arg in ("--deselect", name)]
    ran = subprocess.run([sys.executable, "-m", "pytest", target, "-m", "gpu", "-q", "-p", "no:cacheprovider",
                          "-rs", *deselect], cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    summary = ran.stdout.strip().splitlines()[-1] if ran.stdout.strip() else ""
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-3000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= FILES[target], summary
    assert "skipped" not in summary and "failed" not in summary and "error" not in summary, summary
