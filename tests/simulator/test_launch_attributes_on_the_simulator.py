"""Launch attributes on the PTX simulator (issue 45 item 4, issue 46 item 1): kernel.configure(...) reaches the shim's
cuLaunchKernelEx, which runs the launch through cuLaunchKernel's own path; priority and programmatic dependent
launch change nothing there (a launch runs to its end when issued); thread-block clusters run their blocks together
(block_clusters.cpp): per launch (cluster=) and from a kernel's __cluster_dims__ (.reqnctapercluster), with
cooperative_groups' cluster API (cluster.sync(), map_shared_rank, block_rank, num_blocks), in graphs and from
several threads; cuOccupancyMaxActiveClusters answers for the simulated device; the faults and hangs of clusters
are clear errors the session survives.

Each check runs in a child process with XCUDA_DEVICE=simulator (XCUDA_LIBCUDA unset). The gpu tests of
tests/runtime/test_launch_attributes.py (the Programming Guide's histogram, a cluster sum, __cluster_dims__, a graph)
run on the simulator too, from test_round2_on_the_simulator.py.
"""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent

SCRIPT = r'''
import sys
import threading
import numpy as np
import xcuda
sys.path[:0] = ["tests", "tests/runtime"]  # tests/ holds gpu_arch
from test_launch_attributes import CLUSTER_KERNELS, histogram_expected, run_cluster_kernels

m = xcuda.compile(r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void fill(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value + i; }
extern "C" __global__ void __cluster_dims__(2, 1, 1) paired(float* x, float value, unsigned n)
{
  __shared__ float mine;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) mine = value * (cluster.block_rank() + 1);
  cluster.sync();
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = *cluster.map_shared_rank(&mine, 1 - cluster.block_rank());
  cluster.sync();
}
""", name="sim_attributes")
n = 300
expected = lambda v: v + np.arange(n, dtype=np.float32)
x = np.zeros(n, np.float32)
m.fill.configure(3, 128, priority=-1)(x, 1.0, n)
assert np.array_equal(x, expected(1.0)), x
m.fill.configure(3, 128, programmatic=True)(x, 2.0, n)
assert np.array_equal(x, expected(2.0))
m.fill.configure((3, 2), (128, 1), cluster=(1, 1, 1))(x, 3.0, n)
assert np.array_equal(x, expected(3.0))
m.fill.configure(4, 128, cluster=2)(x, 5.0, n)  # a cluster of two blocks that never talk
assert np.array_equal(x, expected(5.0))

def refused(call, error, *fragments):
    try:
        call()
    except error as e:
        for fragment in fragments:
            assert fragment in str(e), (fragment, str(e))
        return
    raise AssertionError("not refused")

# __cluster_dims__(2, 1, 1) from .reqnctapercluster: kernel[grid, block] runs it in clusters of two, each block
# reading its partner's shared memory.
y = np.zeros(512, np.float32)
m.paired[4, 128](y, 1.5, 512)
partner = np.repeat(np.array([2, 1, 2, 1], np.float32) * 1.5, 128)
assert np.array_equal(y, partner), y
assert [m.paired.get_attribute("required_cluster_" + a) for a in ("width", "height", "depth")] == [2, 1, 1]
refused(lambda: m.paired.configure(4, 128, cluster=4)(y, 1.0, 512), ValueError, "__cluster_dims__(2, 1, 1)", "conflicts")

# The cluster kernels of tests/runtime/test_launch_attributes.py (the Programming Guide's histogram, a cluster sum,
# __cluster_dims__(4, 1, 1)) against numpy, and the occupancy answer: 16 blocks of 128 threads, over the cluster.
k = xcuda.compile(CLUSTER_KERNELS, name="sim_cluster_kernels")
run_cluster_kernels(k)
assert k.cluster_sum.max_active_clusters(2, block=128) == 8
assert k.cluster_sum.max_active_clusters(4, block=128) == 4
assert k.where_am_i.max_active_clusters(block=1024) == 1  # 2 blocks of 1024 threads: less than one cluster, yet it runs

# Clusters past the portable 8 blocks need the kernel's non-portable attribute (16 at most).
z = np.zeros(16 * 32, np.float32)
refused(lambda: m.fill.configure(16, 32, cluster=16)(z, 1.0, z.size), xcuda.CudaError, "at most 8")
refused(lambda: k.two_at_most.configure(4, 64, cluster=4)(np.zeros(256, np.int32)), xcuda.CudaError,
        "over its __launch_bounds__'s most blocks per cluster (.maxclusterrank) of 2")
m.fill.set_attribute("non_portable_cluster_size_allowed", 1)
m.fill.configure(16, 32, cluster=16)(z, 1.0, z.size)
assert np.array_equal(z, 1.0 + np.arange(z.size, dtype=np.float32))

# A rank past the cluster through map_shared_rank (mapa) is a fault naming the rank and the line; a cluster barrier
# crossed with __syncthreads() is a hang, named; the session goes on after both.
out = np.zeros(64, np.int32)
refused(lambda: k.wrong_rank.configure(2, 32, cluster=2)(out), xcuda.CudaError, "block rank 2 of its cluster, which has 2 blocks",
        "mapa", "line ", "not sticky")
refused(lambda: k.crossed_barriers.configure(2, 64, cluster=2)(out), xcuda.CudaError, "a barrier that can never complete in the cluster",
        "the cluster barrier", "64 of the cluster's 128 threads")

# Cluster launches from four threads at once, each with its own arrays.
failures = []
def histogram(seed):
    try:
        values = np.random.default_rng(seed).integers(-3, 70, size=3000).astype(np.int32)
        bins = np.zeros(64, np.int32)
        k.clusterHist_kernel.configure(4, 64, shared_mem=16 * 4, cluster=4)(bins, 64, 16, values, values.size)
        assert np.array_equal(bins, histogram_expected(values, 64)), seed
    except Exception as e:  # reported by the main thread
        failures.append(repr(e))
threads = [threading.Thread(target=histogram, args=(s,)) for s in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not failures, failures

m.fill[3, 128](x, 4.0, n)  # the session keeps working
assert np.array_equal(x, expected(4.0))
print("held")
'''


def test_launch_attributes_and_clusters_run_on_the_simulator(build_dir):
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0 and "held" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-6000:]
