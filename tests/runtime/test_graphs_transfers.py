"""CUDA graphs from Python (`with xcuda.graph() as g`) and pageable numpy transfers (registered in place,
staged, per copy), in three settings:

- against the fake driver (tests/fake_driver, built with the tests): every scenario of
  tests/runtime/graph_transfer_scenarios.py in a child process with XCUDA_LIBCUDA pointing at it. These run on
  any machine and check xcuda's host side: which route each copy takes, that a registration never
  outlives its memory (the fake counts memory unmapped while registered), the capture bookkeeping,
  replays, argument updates, and the refusals inside a block;
- marked gpu: the same scenarios on a real GPU (skipped with the reason where there is none);
- without any driver: what needs no GPU (argument checks, misuse explained, entering a graph).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import xcuda

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import graph_transfer_scenarios  # noqa: E402

SCENARIO_NAMES = sorted(graph_transfer_scenarios.SCENARIOS)
# What needs the fake driver's own knobs (a cap on device memory) runs against it only.
GPU_SCENARIO_NAMES = sorted(graph_transfer_scenarios.GPU_SCENARIOS)
SCRIPT = HERE / "graph_transfer_scenarios.py"


def run_scenario(name, build_dir, environment):
    env = dict(os.environ)
    for variable in ("XCUDA_PAGEABLE", "XCUDA_STAGING", "XCUDA_STAGING_THREADS", "XCUDA_STAGING_SPIN_US",
                     "XCUDA_STAGING_STREAM", "XCUDA_LIBCUDA", "XCUDA_TEMPORARY_CACHE_MB", "XCUDA_FAKE_DEVICE_MB"):
        env.pop(variable, None)
    env.update(environment)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(SCRIPT), name], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, f"scenario {name} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"scenario held: {name}" in ran.stdout


@pytest.fixture(scope="module")
def fake_driver(build_dir):
    library = build_dir / "lib" / "libxcuda_fake_cuda.so"
    if not library.exists():
        pytest.fail(f"{library} was not built: configure with -DXCUDA_BUILD_TESTS=ON")
    return library


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_scenario_against_the_fake_driver(name, build_dir, fake_driver):
    run_scenario(name, build_dir, {"XCUDA_LIBCUDA": str(fake_driver)})


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_SCENARIO_NAMES)
def test_scenario_on_the_gpu(name, build_dir):
    run_scenario(name, build_dir, {})


@pytest.mark.nogpu
def test_entering_a_graph_without_a_gpu_raises_and_leaves_no_capture_open():
    with pytest.raises(xcuda.CudaUnavailableError):
        with xcuda.graph():
            pass
    # A second block meets the same reason, not "already open"; compiling still works.
    with pytest.raises(xcuda.CudaUnavailableError):
        with xcuda.graph():
            pass
    assert xcuda.compile(graph_transfer_scenarios.SOURCE, name="no_gpu_graph").chain_step.name == "chain_step"


def test_a_graph_used_before_its_capture_says_what_to_do():
    g = xcuda.graph()
    assert g.state == "not captured" and len(g) == 0 and g.nodes == [] and g.stream is None
    with pytest.raises(xcuda.GraphCaptureError, match=r"with xcuda.graph\(\) as g:"):
        g.launch()
    with pytest.raises(xcuda.GraphCaptureError, match="never captured"):
        g.update(0, 1.0)
    assert "not captured" in repr(g)
    assert issubclass(xcuda.GraphCaptureError, RuntimeError)


def test_transfer_options_check_their_values_and_report_the_settings():
    defaults = xcuda.transfer_options()
    assert defaults["pageable"] in ("auto", "registered", "per-copy", "staged", "driver")
    with pytest.raises(ValueError, match="'auto', 'registered', 'per-copy', 'staged' or 'driver', not 'fast'"):
        xcuda.transfer_options(pageable="fast")
    with pytest.raises(ValueError, match="staging_threads must be at least 1"):
        xcuda.transfer_options(staging_threads=0)
    try:
        changed = xcuda.transfer_options(pageable="staged", staging_threads=3, staging_chunk_mb=16, staging_buffers=6,
                                         registration_limit_mb=256)
        assert (changed["pageable"], changed["staging_threads"], changed["staging_chunk_mb"],
                changed["staging_buffers"], changed["registration_limit_mb"]) == ("staged", 3, 16, 6, 256)
        stats = xcuda.transfer_stats()
        assert stats["pageable"] == "staged" and set(stats["copies"]) == {"staged", "registered", "page_locked", "driver",
                                                                           "zero_chunks", "known_zero_pieces", "scanned",
                                                                           "prepared", "scan_unread_pieces"}
        assert "hits" in stats["registrations"]
    finally:
        xcuda.transfer_options(pageable=defaults["pageable"], staging_threads=defaults["staging_threads"],
                               staging_chunk_mb=defaults["staging_chunk_mb"],
                               staging_buffers=defaults["staging_buffers"],
                               registration_limit_mb=defaults["registration_limit_mb"])
