"""TMA multicast, remote mbarriers and the f16/bf16/inc/dec reductions on the PTX simulator (docs/simulator.md, "TMA
multicast and remote mbarriers"), end to end:

- the gpu tests of tests/runtime/test_tma_clusters.py run in a child pytest with XCUDA_DEVICE=simulator, every one;
- what only the simulator says, the session going on after each: a ctaMask naming a block past the cluster, a
  .shared::cluster mbarrier address made by hand (not by mapa) naming a rank past the cluster (the forms PTX lacks,
  such as an arrive on a .shared::cluster barrier that asks for a state, ptxas refuses before the simulator sees them:
  tests/cpp/simulator/test_simulator_tma_clusters.cpp checks the simulator's own refusal);
- four threads launching the multicast and the ring at once, each result against numpy.
"""
import subprocess
import sys
from pathlib import Path

from kernel_runs import run_gpu_tests_on_the_simulator
from test_textures_on_the_simulator import child_env

REPO = Path(__file__).resolve().parent.parent.parent

SCRIPT = r'''
import numpy as np, sys, xcuda
sys.path[:0] = ["tests", "tests/runtime"]  # tests/ holds gpu_arch
from test_tma_clusters import KERNELS
m = xcuda.compile(KERNELS, name="sim_tma_cluster_faults")
a = np.arange(8 * 64, dtype=np.float32).reshape(8, 64)
tm = xcuda.tensor_map(xcuda.to_device(a), box=(8, 32))
out = np.zeros(4 * 256, np.float32)

def refused(launch, *fragments):
    try:
        launch()
    except xcuda.KernelFault as fault:
        raise AssertionError(f"a simulator fault declared the session lost: {fault}")
    except xcuda.CudaError as fault:
        for fragment in fragments:
            assert fragment in str(fault), str(fault)
    else:
        raise AssertionError("ran: " + fragments[0])

refused(lambda: m.multicast_tile.configure(4, 32, cluster=2)(tm, out, 0b101, 0), "CUDA_ERROR_ILLEGAL_ADDRESS",
        "multicasts with a ctaMask of 0x5, which names block rank 2, outside its cluster of 2 blocks (ranks 0 to 1)",
        "multicast_tile")
misuse = xcuda.compile(r"""
__device__ void cluster_sync() { asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory"); }
extern "C" __global__ void arrive_by_hand(unsigned fake_rank)
{
    __shared__ alignas(8) unsigned long long bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" :: "r"(b));
    cluster_sync();
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(b | ((fake_rank + 1u) << 24)) : "memory");
    cluster_sync();
}
""", name="sim_remote_barrier_misuse")
refused(lambda: misuse.arrive_by_hand.configure(2, 64, cluster=2)(5), "CUDA_ERROR_ILLEGAL_ADDRESS",
        "which names block rank 5 of a cluster of 2 blocks (ranks 0 to 1): another block's address comes from mapa.shared::cluster")
m.multicast_tile.configure(4, 32, cluster=2)(tm, out, 0b11, 1)  # the session goes on
assert np.array_equal(out.reshape(4, 256)[2], a[:, 32:].reshape(-1)), out.reshape(4, 256)[2]
print("held")
'''

THREADS = r'''
import threading, numpy as np, sys, xcuda
sys.path[:0] = ["tests", "tests/runtime"]  # tests/ holds gpu_arch
from test_tma_clusters import KERNELS
m = xcuda.compile(KERNELS, name="sim_tma_cluster_threads")
a = np.arange(8 * 64, dtype=np.float32).reshape(8, 64) - 100
tm = xcuda.tensor_map(xcuda.to_device(a), box=(8, 32))
errors = []

def one(k):
    try:
        for _ in range(3):
            mask = (1 << (k % 4)) | 1
            out = np.full(8 * 256, -1, np.float32)
            m.multicast_tile.configure(8, 32, cluster=4)(tm, out, mask, k % 4)
            for block in range(8):
                want = a[:, (block // 4) * 32:(block // 4) * 32 + 32].reshape(-1) if (mask >> (block % 4)) & 1 else -1
                assert np.array_equal(out.reshape(8, 256)[block], np.broadcast_to(want, (256,))), (k, block)
            ring = np.full(2 * 4 * 32, -1, np.int32)
            m.remote_arrive_ring.configure(4, 32, cluster=2)(ring, 2)
            previous = np.array([1, 0, 3, 2])
            want = previous[None, :, None] * 1000 + np.arange(2)[:, None, None] * 100 + np.arange(32)[None, None, :]
            assert np.array_equal(ring.reshape(2, 4, 32), want), k
    except Exception as e:  # reported by the main thread
        errors.append(repr(e))

threads = [threading.Thread(target=one, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
assert not errors, errors
print("held")
'''


def test_the_tma_cluster_gpu_tests_pass_on_the_simulator(build_dir):
    run_gpu_tests_on_the_simulator("tests/runtime/test_tma_clusters.py", build_dir, at_least=8)


def test_multicast_and_remote_barrier_misuses_are_named_and_the_session_goes_on(build_dir):
    ran = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env=child_env(build_dir))
    assert ran.returncode == 0 and "held" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-6000:]


def test_four_threads_launch_multicasts_and_remote_arrives_at_once(build_dir):
    ran = subprocess.run([sys.executable, "-c", THREADS], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env=child_env(build_dir))
    assert ran.returncode == 0 and "held" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-6000:]
