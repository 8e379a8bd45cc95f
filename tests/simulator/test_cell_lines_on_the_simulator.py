"""The same source line has one number everywhere (issue 51, item 4): a compile error, kernel.lines(), the
--ptx view, the simulator's fault and the editor mark it publishes, and xcuda.trace all count lines as the
editor does (the %%cuda line is line 1) and name the cell as IPython does (Cell In[N]). One test: any view
that drifts by one fails it. Runs cell_lines_scenario.py in a child process on the simulator.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
STORE_LINE = 5  # `out[i] = 1.0f;` in cell_lines_scenario.CELL, the %%cuda line being line 1


@pytest.fixture(scope="module")
def numbers(build_dir):
    if not (build_dir / "python" / "xcuda" / "libxcuda-sim.so").exists():
        pytest.fail("libxcuda-sim.so was not built: it is a target of the main build (xcuda_sim_driver)")
    env = dict(os.environ)
    for variable in ("XCUDA_LIBCUDA", "XCUDA_SIM_MAX_STEPS"):
        env.pop(variable, None)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(HERE / "cell_lines_scenario.py")], capture_output=True, text=True,
                         timeout=600, env=env)
    assert ran.returncode == 0, f"{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    line = [l for l in ran.stdout.splitlines() if l.startswith("numbers: ")]
    assert line, ran.stdout[-3000:]
    return json.loads(line[0][len("numbers: "):])


def test_every_message_and_view_gives_a_source_line_the_editors_number(numbers):
    shown = {view: numbers[view] for view in ("compile_error", "lines_view", "ptx_by_line", "fault", "mark", "trace")}
    assert shown == dict.fromkeys(shown, STORE_LINE), numbers


def test_messages_name_the_cell_as_ipython_does_and_never_a_path(numbers):
    assert numbers["compile_error_cell"] == numbers["compile_error_count"]
    assert numbers["fault_cell"] == numbers["cell_count"] == numbers["mark_cell"]  # the %%cuda cell, not the launch's
    assert not numbers["fault_names_a_path"]
