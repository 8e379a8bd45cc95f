"""Scenarios of big dynamic shared memory, function attributes, cooperative launches and module variables
against the fake driver (tests/fake_driver), each run in a process of its own by tests/runtime/test_launch_features.py.

The fake refuses, as a GPU does, a launch asking for more dynamic shared memory than the function's
limit (49152 bytes until cuFuncSetAttribute raises it) and a cooperative grid of more than 32 blocks
(8 per SM x 4 SMs); it counts cuFuncSetAttribute calls and cooperative launches, and gives a module's
variables zeroed memory of the size its CUBIN's symbol table says (cuModuleGetGlobal). Its `fill` kernel
writes `value` to x[0..n), so a launch that ran can be seen.

    python3 tests/runtime/launch_feature_scenarios.py NAME     # exits 0 when the scenario holds
"""
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xcuda  # noqa: E402
from thread_runs import run_in_threads  # noqa: E402  (tests/thread_runs.py)

BIG_SHARED = r"""
extern "C" __global__ void fill(float* x, float value, unsigned n)
{
    extern __shared__ float staging[];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    staging[threadIdx.x] = value;
    __syncthreads();
    if (i < n) x[i] = staging[threadIdx.x];
}
"""

GRID_SYNC = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void fill(float* x, float value, unsigned n)
{
    cg::grid_group grid = cg::this_grid();
    for (unsigned i = grid.thread_rank(); i < n; i += grid.size()) x[i] = 0.0f;
    grid.sync();
    for (unsigned i = grid.thread_rank(); i < n; i += grid.size()) x[i] += value;
}
extern "C" __global__ void chain_step(float* x, float a, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * a + 1.0f; }
"""


def counter(name):
    library = ctypes.CDLL(os.environ["XCUDA_LIBCUDA"])
    library.xcuda_fake_counter.restype = ctypes.c_long
    value = library.xcuda_fake_counter(name.encode())
    assert value >= 0, name
    return value


def expect(error_type, *fragments):
    class Expect:
        def __enter__(self):
            return self

        def __exit__(self, kind, value, traceback):
            assert kind is not None, f"expected {error_type.__name__}"
            assert issubclass(kind, error_type), (kind, value)
            for fragment in fragments:
                assert fragment in str(value), (fragment, str(value))
            self.message = str(value)
            return True
    return Expect()


def big_shared():
    m = xcuda.compile(BIG_SHARED, name="big_shared")
    n = 1000
    x = xcuda.zeros(n, np.float32)
    before = counter("attribute_sets")
    # 64 KiB: above the 48 KiB every kernel gets, below the device's opt-in maximum (232448 bytes).
    m.fill[4, 256, None, 65536](x, 3.0, n)
    assert counter("attribute_sets") == before + 1
    assert np.all(x.copy_to_host() == 3.0)
    assert m.fill.get_attribute("max_dynamic_shared_size_bytes") == 65536
    # The limit is raised once; a smaller or equal request changes nothing.
    m.fill[4, 256, None, 65536](x, 4.0, n)
    m.fill[4, 256, None, 50000](x, 5.0, n)
    assert counter("attribute_sets") == before + 1
    assert np.all(x.copy_to_host() == 5.0)
    with expect(ValueError, "300000 bytes", "232448 bytes", "opt-in maximum", "'fill'"):
        m.fill[4, 256, None, 300000](x, 6.0, n)
    assert np.all(x.copy_to_host() == 5.0)  # nothing ran
    # Not raised beyond what was asked: the attribute stays at the largest launch's need.
    assert m.fill.get_attribute("MaxDynamicSharedMemorySize") == 65536
    # From several threads at once: each launch raises (or finds raised) the limit it needs.
    outs = [xcuda.zeros(n, np.float32) for _ in range(8)]

    def launch(k):
        for _ in range(5):
            m.fill[4, 256, None, 70000 + 1000 * k](outs[k], float(k), n)

    run_in_threads(launch, 8)
    for k in range(8):
        assert np.all(outs[k].copy_to_host() == float(k)), k
    assert m.fill.get_attribute("max_dynamic_shared_size_bytes") >= 77000


def attributes():
    m = xcuda.compile(BIG_SHARED, name="attributes")
    k = m.fill
    before = counter("attribute_sets")
    k.set_attribute("preferred_shared_memory_carveout", 50)
    assert k.get_attribute("preferred_shared_memory_carveout") == 50
    assert counter("attribute_sets") == before + 1
    k.set_attribute("cudaFuncAttributePreferredSharedMemoryCarveout", 25)  # the runtime's spelling
    assert k.get_attribute("PREFERRED_SHARED_MEMORY_CARVEOUT") == 25
    k.set_attribute("required_cluster_width", 2)
    assert k.get_attribute("CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH") == 2
    assert k.attributes_set == {"preferred_shared_memory_carveout": 25, "required_cluster_width": 2}
    with expect(ValueError, "'nonsense'", "preferred_shared_memory_carveout",
                "max_dynamic_shared_size_bytes", "required_cluster_width"):
        k.set_attribute("nonsense", 1)
    with expect(ValueError, "'num_regs'", "read-only"):
        k.set_attribute("num_regs", 1)
    with expect(ValueError, "0..100", "150"):
        k.set_attribute("preferred_shared_memory_carveout", 150)
    with expect(ValueError, "300000 bytes", "232448"):
        k.set_attribute("max_dynamic_shared_size_bytes", 300000)
    # A refused value is forgotten: the kernel keeps the ones set before.
    assert k.attributes_set == {"preferred_shared_memory_carveout": 25, "required_cluster_width": 2}
    # Set before a launch: the launch with that much shared memory needs no further raise.
    k.set_attribute("max_dynamic_shared_size_bytes", 100000)
    sets = counter("attribute_sets")
    x = xcuda.zeros(256, np.float32)
    k[1, 256, None, 100000](x, 2.0, 256)
    assert np.all(x.copy_to_host() == 2.0)
    assert counter("attribute_sets") == sets
    assert k.get_attribute("num_regs") == 16  # read-only ones read fine


def cooperative():
    m = xcuda.compile(GRID_SYNC, name="grid_sync")
    assert m.fill.uses_grid_sync and m.fill.cooperative
    assert not m.chain_step.uses_grid_sync and not m.chain_step.cooperative
    assert m.fill.max_cooperative_blocks(256) == 32  # 8 per SM x 4 SMs
    n = 8000  # the fake's fill writes one element per thread: 32 blocks x 256 threads cover it
    x = xcuda.zeros(n, np.float32)
    before = counter("cooperative_launches")
    m.fill[32, 256](x, 7.0, n)
    assert counter("cooperative_launches") == before + 1
    assert np.all(x.copy_to_host() == 7.0)
    with expect(ValueError, "33 blocks", "at most 32 blocks", "8 per SM x 4 SMs", "grid-stride"):
        m.fill[33, 256](x, 8.0, n)
    assert counter("cooperative_launches") == before + 1
    # A kernel without grid sync launches as usual, unless asked.
    y = xcuda.to_device(np.ones(n, np.float32))
    m.chain_step[(n + 255) // 256, 256](y, 2.0, n)
    assert counter("cooperative_launches") == before + 1
    m.chain_step.cooperative = True
    m.chain_step[32, 256](y, 2.0, n)
    assert counter("cooperative_launches") == before + 2
    assert np.all(y.copy_to_host() == 7.0)  # (1 * 2 + 1) * 2 + 1
    with expect(ValueError, "at most 32 blocks"):
        m.chain_step[64, 256](y, 2.0, n)
    m.chain_step.cooperative = None
    assert not m.chain_step.cooperative
    m.fill.cooperative = False  # forced off: cuLaunchKernel (on a GPU its grid.sync() would trap)
    m.fill[64, 256](x, 1.0, n)
    assert counter("cooperative_launches") == before + 2


VARIABLES = r"""
__constant__ float c_Kernel[17];
namespace tables { __device__ int d_table[4]; }
extern "C" __global__ void fill(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value + c_Kernel[0] + tables::d_table[0]; }
"""


def module_variables():
    m = xcuda.compile(VARIABLES, name="fake_variables")
    k = m.get_global("c_Kernel")
    assert np.array_equal(k.get(), np.zeros(17, np.float32))
    k.set(np.arange(17, dtype=np.float32))
    assert np.array_equal(k.get(), np.arange(17, dtype=np.float32))
    m.globals["tables::d_table"] = [5, 6, 7, 8]
    assert list(m.globals.d_table.get()) == [5, 6, 7, 8]
    # The fake's fill writes `value` into x[0..n): here into the constant itself, through its device address.
    m.fill[1, 32](k, 2.5, 17)
    assert np.all(k.get() == 2.5)
    assert k.ptr == k.__cuda_array_interface__["data"][0] != 0
    with expect(ValueError, "68 bytes", "4 elements (16 bytes)"):
        k.set(np.zeros(4, np.float32))
    # From several threads: each write lands whole.

    def run(v):
        for _ in range(50):
            m.globals.d_table = np.full(4, v, np.int32)
            got = m.globals.d_table.get()
            assert len(set(got.tolist())) == 1, got

    run_in_threads(run, 6)


def attributes_from_threads():
    m = xcuda.compile(BIG_SHARED, name="attributes_threads")
    k = m.fill
    outs = [xcuda.zeros(256, np.float32) for _ in range(6)]

    def run(t):
        for i in range(20):
            k.set_attribute("preferred_shared_memory_carveout", (t * 20 + i) % 101)
            k[1, 256, None, 60000 + 100 * t](outs[t], float(t), 256)
            assert 0 <= k.get_attribute("preferred_shared_memory_carveout") <= 100

    run_in_threads(run, 6)
    for t in range(6):
        assert np.all(outs[t].copy_to_host() == float(t))
    assert list(k.attributes_set) == ["preferred_shared_memory_carveout"]


def replay_big_shared():
    # xcuda-replay (kernel.profile and kernel.sanitize run it under ncu and compute-sanitizer) opts in to
    # more than 48 KiB as the session did: the fake would refuse its launch otherwise.
    import pathlib
    import shutil
    import subprocess
    import tempfile

    m = xcuda.compile(BIG_SHARED, name="replay_big_shared")
    x = xcuda.zeros(256, np.float32)
    folder = m.fill[1, 256, None, 65536].replay_bundle(x, 9.0, 256)
    output = tempfile.mkdtemp()
    try:
        replay = pathlib.Path(xcuda.__file__).parent / "xcuda-replay"
        ran = subprocess.run([str(replay), "--output", output, folder], capture_output=True, text=True)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        results = [np.frombuffer(p.read_bytes(), np.float32) for p in sorted(pathlib.Path(output).glob("region-*.out"))]
        assert any(r.shape == (256,) and np.all(r == 9.0) for r in results), results
    finally:
        shutil.rmtree(folder)
        shutil.rmtree(output)


def replay_module_variables_and_cooperative():
    # A replay bundle carries the module's variables as the launch saw them and the cooperative flag:
    # xcuda-replay writes the values after loading the module and launches cooperatively, against the fake
    # (whose cuModuleGetGlobal sizes come from the CUBIN: a size the bundle disagrees with would fail).
    import pathlib
    import shutil
    import subprocess

    replay = pathlib.Path(xcuda.__file__).parent / "xcuda-replay"
    m = xcuda.compile(VARIABLES, name="replay_variables")
    m.globals.c_Kernel = np.arange(17, dtype=np.float32)
    m.globals["tables::d_table"] = [5, 6, 7, 8]
    x = xcuda.zeros(32, np.float32)
    folder = pathlib.Path(m.fill[1, 32].replay_bundle(x, 1.0, 32))
    try:
        manifest = (folder / "launch").read_text().splitlines()
        globals_ = [line.split() for line in manifest if line.startswith("global ")]
        assert [g[2] for g in globals_] == ["68", "16"], manifest
        assert "cooperative 1" not in manifest
        by_size = {int(g[2]): (folder / f"global-{g[1]}.bin").read_bytes() for g in globals_}
        assert np.array_equal(np.frombuffer(by_size[68], np.float32), np.arange(17, dtype=np.float32))
        assert np.frombuffer(by_size[16], np.int32).tolist() == [5, 6, 7, 8]
        ran = subprocess.run([str(replay), str(folder)], capture_output=True, text=True)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    finally:
        shutil.rmtree(folder)
    g = xcuda.compile(GRID_SYNC, name="replay_grid_sync")
    folder = pathlib.Path(g.fill[32, 256].replay_bundle(x, 2.0, 32))
    try:
        assert "cooperative 1" in (folder / "launch").read_text().splitlines()
        ran = subprocess.run([str(replay), str(folder)], capture_output=True, text=True)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    finally:
        shutil.rmtree(folder)


def scalar_values_reach_the_kernel():
    """Every kind of Python and numpy scalar for a float and an unsigned parameter: the kernel sees its value
    (the launch path reads Python floats and numpy float32/float64 by their exact type, the rest generally)."""
    m = xcuda.compile("extern \"C\" __global__ void fill(float* x, float value, unsigned n)\n"
                      "{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value; }",
                      name="scalar_values")
    x = xcuda.zeros(8, np.float32)
    values = [2.5, np.float32(-1.25), np.float64(3.75), np.float16(0.5), np.longdouble(6.5), 7, np.int64(-3),
              np.float32("inf"), np.float64("-inf"), float("nan"), np.float32(3.4028234e38)]
    for value in values:
        for n in (8, np.uint32(8), np.int64(8)):
            x.copy_from(np.zeros(8, np.float32))
            m.fill[1, 8](x, value, n)
            got = x.copy_to_host()
            expected = np.full(8, np.float32(value))
            assert np.array_equal(got, expected, equal_nan=True), (type(value).__name__, value, type(n).__name__, got)
    for too_big in (1e39, np.float64(-1e39), np.longdouble(1e39)):
        with expect(ValueError, "overflows float32"):
            m.fill[1, 8](x, too_big, 8)


SCENARIOS = {f.__name__: f for f in (big_shared, attributes, cooperative, module_variables, attributes_from_threads,
                                     replay_big_shared, replay_module_variables_and_cooperative,
                                     scalar_values_reach_the_kernel)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
    print("scenario held:", sys.argv[1])
