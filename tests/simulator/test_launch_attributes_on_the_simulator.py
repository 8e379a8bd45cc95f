"""Launch attributes on the PTX simulator (issue 45 item 4): kernel.configure(...) reaches the shim's
cuLaunchKernelEx, which runs the launch through cuLaunchKernel's own path; priority and programmatic dependent
launch change nothing there (a launch runs to its end when issued), a cluster of one block is an ordinary launch,
and thread-block clusters of more blocks (per launch, or a kernel's __cluster_dims__, which the simulator reads
from .reqnctapercluster) are refused naming why: the simulator does not run a cluster's blocks together yet.

Each check runs in a child process with XCUDA_DEVICE=simulator (XCUDA_LIBCUDA unset).
"""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent

SCRIPT = r'''
import numpy as np
import xcuda

m = xcuda.compile(r"""
extern "C" __global__ void fill(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value + i; }
extern "C" __global__ void __cluster_dims__(2, 1, 1) paired(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value; }
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

def refused(call, error, *fragments):
    try:
        call()
    except error as e:
        for fragment in fragments:
            assert fragment in str(e), (fragment, str(e))
        return
    raise AssertionError("not refused")

y = np.zeros(n, np.float32)
clusters = "does not run thread-block clusters of more than one block"
refused(lambda: m.fill.configure(4, 128, cluster=2)(y, 1.0, n), xcuda.CudaError, clusters, "cluster=(2, 1, 1)")
refused(lambda: m.paired[4, 128](y, 1.0, n), xcuda.CudaError, clusters, "__cluster_dims__(2, 1, 1)")
# .reqnctapercluster reaches the core's checks through cuFuncGetAttribute.
assert [m.paired.get_attribute("required_cluster_" + a) for a in ("width", "height", "depth")] == [2, 1, 1]
refused(lambda: m.paired.configure(4, 128, cluster=4)(y, 1.0, n), ValueError, "__cluster_dims__(2, 1, 1)", "conflicts")
refused(lambda: m.fill.max_active_clusters(2), xcuda.CudaError, clusters)
assert np.all(y == 0)
m.fill[3, 128](x, 4.0, n)  # the session keeps working
assert np.array_equal(x, expected(4.0))
print("held")
'''


def test_launch_attributes_run_or_are_refused_on_the_simulator(build_dir):
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0 and "held" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-6000:]
