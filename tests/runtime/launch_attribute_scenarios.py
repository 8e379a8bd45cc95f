"""Scenarios of launch attributes (kernel.configure(..., cluster=, priority=, programmatic=), issue 45 item 4)
against the fake driver (tests/fake_driver), each run in a process of its own by
tests/runtime/test_launch_attributes.py.

The fake's cuLaunchKernelEx runs the launch as cuLaunchKernel does and records the attributes of the last
one (xcuda_fake_counter: ex_launches, last_cluster_x/y/z, last_has_priority, last_priority (may be negative:
read with priority()), last_programmatic, last_cooperative); a kernel named `clustered` stands for one compiled with __cluster_dims__(2, 1, 1);
XCUDA_FAKE_CC_MAJOR=8 makes it a GPU without clusters. Its `fill` kernel writes `value` to x[0..n).

    python3 tests/runtime/launch_attribute_scenarios.py NAME     # exits 0 when the scenario holds
"""
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xcuda  # noqa: E402
from launch_feature_scenarios import counter, expect  # noqa: E402
from thread_runs import run_in_threads  # noqa: E402  (tests/thread_runs.py)

FILL_ONLY = r"""
extern "C" __global__ void fill(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value; }
"""
FILL = FILL_ONLY + r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value; }
"""


def priority():
    """The last launch's priority, None when it gave none (read raw: a priority may be negative)."""
    library = ctypes.CDLL(os.environ["XCUDA_LIBCUDA"])
    library.xcuda_fake_counter.restype = ctypes.c_long
    return library.xcuda_fake_counter(b"last_priority") if counter("last_has_priority") else None


def last_cluster():
    return tuple(counter("last_cluster_" + axis) for axis in "xyz")


def cluster_launch():
    m = xcuda.compile(FILL, name="cluster_launch")
    n = 1000
    x = xcuda.zeros(n, np.float32)
    before = counter("ex_launches")
    launcher = m.fill.configure(4, 256, cluster=2)
    assert "cluster=(2, 1, 1)" in repr(launcher), repr(launcher)
    launcher(x, 3.0, n)
    assert counter("ex_launches") == before + 1
    assert last_cluster() == (2, 1, 1)
    assert priority() is None and counter("last_programmatic") == 0
    assert np.all(x.copy_to_host() == 3.0)
    m.fill.configure((4, 2), (128, 2), cluster=(2, 2, 1))(x, 4.0, n)
    assert last_cluster() == (2, 2, 1)
    assert np.all(x.copy_to_host() == 4.0)
    # A launch without attributes stays cuLaunchKernel.
    m.fill[4, 256](x, 5.0, n)
    assert counter("ex_launches") == before + 2
    assert np.all(x.copy_to_host() == 5.0)


def priority_and_programmatic():
    m = xcuda.compile(FILL, name="priority_launch")
    n = 256
    x = xcuda.zeros(n, np.float32)
    s = xcuda.Stream()
    m.fill.configure(1, 256, stream=s, priority=-1, programmatic=True)(x, 2.0, n)
    s.synchronize()
    assert priority() == -1 and counter("last_programmatic") == 1 and last_cluster() == (0, 0, 0)
    assert np.all(x.copy_to_host() == 2.0)
    m.fill.configure(1, 256, priority=0)(x, 6.0, n)
    assert priority() == 0 and counter("last_programmatic") == 0
    assert np.all(x.copy_to_host() == 6.0)


def cluster_refusals():
    m = xcuda.compile(FILL, name="cluster_refusals")
    n = 1000
    x = xcuda.zeros(n, np.float32)
    before = counter("ex_launches")
    with expect(ValueError, "grid x = 3", "not a multiple", "cluster (2, 1, 1)"):
        m.fill.configure(3, 256, cluster=2)(x, 1.0, n)
    with expect(ValueError, "grid y = 3", "not a multiple"):
        m.fill.configure((2, 3), 64, cluster=(1, 2))(x, 1.0, n)
    with expect(ValueError, "cluster"):
        m.fill.configure(4, 256, cluster=(0, 1, 1))
    with expect(TypeError, "cluster"):
        m.fill.configure(4, 256, cluster="2")
    with expect(TypeError, "priority must be an int"):
        m.fill.configure(4, 256, priority="high")
    assert counter("ex_launches") == before
    # __cluster_dims__(2, 1, 1): another cluster is refused, the same is the kernel's own (not passed again).
    with expect(ValueError, "__cluster_dims__(2, 1, 1)", "cluster=(4, 1, 1)", "conflicts"):
        m.clustered.configure(4, 256, cluster=4)(x, 1.0, n)
    with expect(ValueError, "grid x = 3", "not a multiple of the cluster's 2"):
        m.clustered.configure(3, 256, priority=1)(x, 1.0, n)
    assert counter("ex_launches") == before
    m.clustered.configure(4, 256, cluster=2)(x, 7.0, n)  # the fake runs only `fill` of these: counted, not run
    assert counter("ex_launches") == before + 1 and last_cluster() == (0, 0, 0)
    # The session keeps working.
    m.fill[4, 256](x, 8.0, n)
    assert np.all(x.copy_to_host() == 8.0)


def gpu_without_clusters():
    os.environ["XCUDA_FAKE_CC_MAJOR"] = "8"
    m = xcuda.compile(FILL_ONLY, name="old_gpu")  # sm_80 has no __cluster_dims__
    n = 256
    x = xcuda.zeros(n, np.float32)
    with expect(ValueError, "thread-block clusters need compute capability 9.0", "is 8.0", "without cluster="):
        m.fill.configure(2, 128, cluster=2)(x, 1.0, n)
    with expect(ValueError, "programmatic dependent launch need", "9.0"):
        m.fill.configure(2, 128, programmatic=True)(x, 1.0, n)
    with expect(ValueError, "compute capability 9.0"):
        m.fill.max_active_clusters(2, 128)
    m.fill.configure(2, 128, priority=1)(x, 9.0, n)
    assert priority() == 1
    assert np.all(x.copy_to_host() == 9.0)


def cluster_occupancy():
    m = xcuda.compile(FILL, name="cluster_occupancy")
    # The fake: 8 blocks per SM x 4 SMs, over the cluster's blocks.
    assert m.fill.max_active_clusters(2, 256) == 16
    assert m.fill.max_active_clusters((2, 2, 1), block=128) == 8
    assert m.clustered.max_active_clusters() == 16
    with expect(ValueError, "needs a cluster"):
        m.fill.max_active_clusters()
    with expect(ValueError, "__cluster_dims__(2, 1, 1)", "conflicts"):
        m.clustered.max_active_clusters(4)


def cluster_in_graph():
    m = xcuda.compile(FILL, name="cluster_graph")
    n = 1000
    x = xcuda.zeros(n, np.float32)
    before = counter("ex_launches")
    with xcuda.graph() as g:
        m.fill.configure(4, 256, cluster=2)(x, 5.0, n)
    assert counter("ex_launches") == before + 1 and last_cluster() == (2, 1, 1)
    assert "cluster=(2, 1, 1)" in g.nodes[0]["text"], g.nodes
    g.launch()
    xcuda.synchronize()
    assert np.all(x.copy_to_host() == 5.0)
    g.update(0, x, 6.0, n)
    g.launch()
    xcuda.synchronize()
    assert np.all(x.copy_to_host() == 6.0)
    with expect(ValueError, "grid x = 3", "not a multiple"):
        g.update(0, x, 7.0, n, grid=3)


def cluster_launches_from_threads():
    m = xcuda.compile(FILL, name="cluster_threads")
    n = 512
    outs = [xcuda.zeros(n, np.float32) for _ in range(4)]

    def work(i):
        launcher = m.fill.configure(4, 128, cluster=(2, 1, 1), priority=i % 2)
        for k in range(50):
            launcher(outs[i], float(i * 100 + k), n)
            assert np.all(outs[i].copy_to_host() == float(i * 100 + k))
    run_in_threads(work, 4)


def replay_carries_attributes():
    # A replay bundle (xcuda-replay, which kernel.profile and kernel.sanitize run) writes the launch's attributes
    # down and xcuda-replay launches with them through cuLaunchKernelEx; the fake's launch log
    # (XCUDA_FAKE_LAUNCH_LOG, written by the child) shows what reached the driver there.
    import pathlib
    import shutil
    import subprocess
    import tempfile

    replay = pathlib.Path(xcuda.__file__).parent / "xcuda-replay"
    m = xcuda.compile(FILL, name="cluster_replay")
    x = xcuda.zeros(32, np.float32)
    log = pathlib.Path(tempfile.mkdtemp()) / "launches"
    env = dict(os.environ, XCUDA_FAKE_LAUNCH_LOG=str(log))
    cases = [(m.fill.configure(4, 8, cluster=2, priority=-1, programmatic=True),
              ["cluster 2 1 1", "priority -1", "programmatic 1"],
              "cuLaunchKernelEx fill cluster=2,1,1 priority=-1 programmatic=1 cooperative=0"),
             (m.fill.configure((2, 2), (8, 1), cluster=(2, 2, 1)), ["cluster 2 2 1"],
              "cuLaunchKernelEx fill cluster=2,2,1 priority=none programmatic=0 cooperative=0"),
             (m.fill.configure(4, 8, priority=3), ["priority 3"],
              "cuLaunchKernelEx fill cluster=0,0,0 priority=3 programmatic=0 cooperative=0"),
             (m.fill[4, 8], [], "cuLaunchKernel fill")]
    try:
        for launcher, records, launched in cases:
            folder = pathlib.Path(launcher.replay_bundle(x, 7.0, 32))
            try:
                manifest = (folder / "launch").read_text().splitlines()
                attribute_lines = [line for line in manifest if line.split()[0] in ("cluster", "priority", "programmatic")]
                assert attribute_lines == records, manifest
                log.unlink(missing_ok=True)
                output = folder / "out"
                output.mkdir()
                ran = subprocess.run([str(replay), "--output", str(output), str(folder)], capture_output=True,
                                     text=True, env=env)
                assert ran.returncode == 0, ran.stdout + ran.stderr
                assert log.read_text().splitlines() == [launched], (log.read_text(), launched)
                assert np.all(np.frombuffer((output / "region-0.out").read_bytes(), np.float32) == 7.0)
            finally:
                shutil.rmtree(folder)
    finally:
        shutil.rmtree(log.parent)
    # A bundle a hostile hand edited: a cluster axis of 0 is refused by name, before any launch.
    folder = pathlib.Path(m.fill.configure(4, 8, cluster=2).replay_bundle(x, 1.0, 32))
    try:
        manifest = folder / "launch"
        manifest.write_text(manifest.read_text().replace("cluster 2 1 1", "cluster 2 0 1"))
        ran = subprocess.run([str(replay), str(folder)], capture_output=True, text=True)
        assert ran.returncode != 0 and "a cluster needs three axes of 1 to 1024" in ran.stderr, ran.stdout + ran.stderr
    finally:
        shutil.rmtree(folder)


def replay_refuses_a_cluster_on_a_gpu_without_clusters():
    # A GPU of compute capability 8: the bundle is refused as the launch would be, naming the reason.
    os.environ["XCUDA_FAKE_CC_MAJOR"] = "8"
    m = xcuda.compile(FILL_ONLY, name="cluster_replay_cc8")
    x = xcuda.zeros(16, np.float32)
    with expect(ValueError, "thread-block clusters need compute capability 9.0"):
        m.fill.configure(2, 8, cluster=2).replay_bundle(x, 1.0, 16)


SCENARIOS = {f.__name__: f for f in (cluster_launch, priority_and_programmatic, cluster_refusals, gpu_without_clusters,
                                     cluster_occupancy, cluster_in_graph, cluster_launches_from_threads,
                                     replay_carries_attributes, replay_refuses_a_cluster_on_a_gpu_without_clusters)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
    print("scenario held:", sys.argv[1])
