"""Launch attributes: thread-block clusters per launch (kernel.configure(grid, block, cluster=...)), a kernel's
__cluster_dims__, cluster occupancy, priority and programmatic dependent launch, in graphs too (issue 45 item 4).

- against the fake driver (tests/fake_driver): every scenario of tests/runtime/launch_attribute_scenarios.py in
  a child process (which attributes reach cuLaunchKernelEx, the refusals and their messages, threads);
- marked gpu: the Programming Guide's distributed-shared-memory histogram, a cluster reduction, a ring through
  distributed shared memory with a split barrier and the cluster registers on a 3-D grid
  (cooperative_groups::this_cluster(), cluster.sync(), map_shared_rank, barrier_arrive/wait) against numpy on a GPU
  of compute capability 9.0 or newer (skipped, saying so, on older GPUs); the same tests run on the PTX simulator
  (tests/simulator/test_round2_on_the_simulator.py).
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import xcuda
from gpu_arch import needs_compute_capability

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "launch_attribute_scenarios.py"
sys.path.insert(0, str(HERE))
import launch_attribute_scenarios  # noqa: E402
sys.path.insert(0, str(HERE.parent))
from fake_scenario_runs import run_against_the_fake_driver  # noqa: E402


@pytest.mark.parametrize("name", sorted(launch_attribute_scenarios.SCENARIOS))
def test_scenario_against_the_fake_driver(name, launch_arguments_env, build_dir):
    run_against_the_fake_driver(SCRIPT, name, build_dir, launch_arguments_env, drop=("XCUDA_FAKE_CC_MAJOR",))


# The cluster kernels (tests/cpp/fixtures/cluster_kernels.cu, which the simulator's C++ tests compile too): the CUDA
# C++ Programming Guide's distributed shared memory histogram (section "Distributed Shared Memory") as printed there,
# a cluster-wide sum (each block sums its slice into its shared memory, block 0 of the cluster reads the others'
# through map_shared_rank), __cluster_dims__(4, 1, 1), a ring through a split barrier, the cluster registers.
CLUSTER_KERNELS = (HERE.parent / "cpp" / "fixtures" / "cluster_kernels.cu").read_text()


def histogram_expected(values, nbins):
    return np.bincount(np.clip(values, 0, nbins - 1), minlength=nbins).astype(np.int32)


def run_cluster_kernels(m):
    """The three kernels' results against numpy; shared by the GPU test and the simulator's."""
    rng = np.random.default_rng(45)
    cluster, bins_per_block = 4, 32
    nbins = cluster * bins_per_block
    values = rng.integers(-5, nbins + 5, size=5000).astype(np.int32)
    bins = xcuda.zeros(nbins, np.int32)
    m.clusterHist_kernel.configure(8, 128, shared_mem=bins_per_block * 4, cluster=cluster)(
        bins, nbins, bins_per_block, values, values.size)
    assert np.array_equal(bins.copy_to_host(), histogram_expected(values, nbins))

    x = rng.integers(-8, 8, size=1000).astype(np.float32)  # small integers: every order of sums is exact
    sums = np.zeros(4, np.float32)
    m.cluster_sum.configure(8, 128, cluster=(2, 1, 1))(x, sums, x.size)
    padded = np.concatenate([x, np.zeros(1024 - x.size, np.float32)])
    assert np.array_equal(sums, padded.reshape(4, 256).sum(axis=1))

    out = np.zeros(8 * 4, np.uint32)
    m.where_am_i[8, 32](out)
    b = np.arange(8)
    expected = np.stack([b % 4, np.full(8, 4), b % 4, np.full(8, 4)], axis=1).reshape(-1).astype(np.uint32)
    assert np.array_equal(out, expected)

    ring_out, work = np.zeros(8, np.uint32), np.zeros(8 * 64, np.uint32)
    m.ring.configure(8, 64, cluster=4)(ring_out, work)
    assert np.array_equal(ring_out, [3, 0, 1, 2, 3, 0, 1, 2]), ring_out
    assert np.array_equal(work, np.tile(np.arange(64, dtype=np.uint32) * 3 + 1, 8))

    grid, dims = (4, 2, 2), (2, 1, 2)
    registers = np.zeros(16 * 12, np.uint32)
    m.cluster_registers.configure(grid, 32, cluster=dims)(registers)
    z, y, x = np.meshgrid(*(np.arange(g) for g in reversed(grid)), indexing="ij")
    block = [x.ravel(), y.ravel(), z.ravel()]
    local = [b % d for b, d in zip(block, dims)]
    across = [g // d for g, d in zip(grid, dims)]
    want = np.stack([local[0] + dims[0] * (local[1] + dims[1] * local[2]), np.full(16, 4), *local,
                     np.full(16, dims[0]), np.full(16, dims[2]), *(b // d for b, d in zip(block, dims)),
                     np.full(16, across[0] * 100 + across[1] * 10 + across[2]), np.ones(16)],
                    axis=1).reshape(-1).astype(np.uint32)
    assert np.array_equal(registers, want), registers.reshape(16, 12)


@pytest.mark.gpu
def test_cluster_histogram_sum_and_cluster_dims_on_the_gpu():
    needs_compute_capability(9, "thread-block clusters")
    m = xcuda.compile(CLUSTER_KERNELS, name="cluster_kernels_gpu")
    run_cluster_kernels(m)
    assert m.where_am_i.max_active_clusters() > 0
    assert m.cluster_sum.max_active_clusters(2, block=128) >= m.cluster_sum.max_active_clusters(4, block=128) > 0
    with pytest.raises(ValueError, match="conflicts"):
        m.where_am_i.configure(8, 32, cluster=2)(np.zeros(32, np.uint32))


@pytest.mark.gpu
def test_cluster_launch_captured_in_a_graph_keeps_its_cluster_on_the_gpu():
    needs_compute_capability(9, "thread-block clusters")
    m = xcuda.compile(CLUSTER_KERNELS, name="cluster_kernels_graph")
    x = xcuda.to_device(np.arange(1024, dtype=np.float32) % 7)
    sums = xcuda.zeros(4, np.float32)
    with xcuda.graph() as g:
        m.cluster_sum.configure(8, 128, cluster=2)(x, sums, 1024)
    g.launch()
    xcuda.synchronize()
    assert np.array_equal(sums.copy_to_host(), (np.arange(1024) % 7).astype(np.float32).reshape(4, 256).sum(axis=1))


@pytest.mark.gpu
def test_priority_and_programmatic_launches_run_on_the_gpu():
    m = xcuda.compile(r"""
extern "C" __global__ void fill(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value; }
""", name="priority_gpu")
    x = xcuda.zeros(1000, np.float32)
    s = xcuda.Stream()
    m.fill.configure(4, 256, stream=s, priority=-1)(x, 1.0, 1000)
    m.fill.configure(4, 256, stream=s, programmatic=True)(x, 2.0, 1000)
    s.synchronize()
    assert np.all(x.copy_to_host() == 2.0)
