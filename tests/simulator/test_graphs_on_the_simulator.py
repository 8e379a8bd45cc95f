"""CUDA graphs on the PTX simulator: the graph scenarios of tests/runtime/graph_transfer_scenarios.py (written for
the fake driver and, marked gpu, a GPU) run with XCUDA_DEVICE=simulator, where the simulator's stream capture
(magics/simulator/sim_graphs.cpp) records real kernels and copies and replays them (docs/simulator.md). Before
it, each failed at its first `with xcuda.graph()` with "this NVIDIA driver has no cuStreamBeginCapture".
The scenarios check the results of the replays (a chain of launches, new arguments for a node, captured
copies), the refusals inside a block and that a capture belongs to its stream across threads.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "runtime" / "graph_transfer_scenarios.py"
GRAPH_SCENARIOS = [
    "a_graph_replays_its_launches_in_order",
    "a_launch_node_takes_new_arguments_without_capturing_again",
    "what_a_graph_cannot_hold_raises_inside_the_block",
    "a_capture_belongs_to_its_stream_across_threads",
    "copies_with_page_locked_memory_are_captured",
    "a_graph_keeps_the_memory_its_launches_use",
]


@pytest.mark.parametrize("name", GRAPH_SCENARIOS)
def test_graph_scenario_on_the_simulator(name, build_dir):
    env = dict(os.environ)
    for variable in ("XCUDA_LIBCUDA", "XCUDA_PAGEABLE", "XCUDA_STAGING", "XCUDA_SIM_MAX_STEPS", "XCUDA_SIM_MEMORY"):
        env.pop(variable, None)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(SCRIPT), name], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, f"scenario {name} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"scenario held: {name}" in ran.stdout
