"""Big dynamic shared memory, function attributes (kernel.set_attribute), cooperative launches, raw
addresses (xcuda.Pointer) and offset views of device arrays (d[n:], d.view(dtype)): issue 25, items 2, 3, 6.

- against the fake driver (tests/fake_driver): every scenario of tests/runtime/launch_feature_scenarios.py
  in a child process with XCUDA_LIBCUDA pointing at it (the host logic: when the attribute is raised,
  which launch call is made, the refusals and their messages);
- marked gpu: the same behaviour on a real GPU, with results checked against numpy; the ones the PTX
  simulator can run also run there in CI (tests/simulator/test_round2_on_the_simulator.py);
- without a driver: what needs none (xcuda.Pointer's own checks, which objects are taken for addresses,
  the detection of grid sync).
"""
import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xcuda
from conftest import HAS_GPU
from thread_runs import run_in_threads  # tests/thread_runs.py

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "launch_feature_scenarios.py"
sys.path.insert(0, str(HERE))
import launch_feature_scenarios  # noqa: E402


# Each scenario once with each way of passing launch arguments (the launch_arguments_env fixture).
@pytest.mark.parametrize("name", sorted(launch_feature_scenarios.SCENARIOS))
def test_scenario_against_the_fake_driver(name, launch_arguments_env, build_dir):
    library = build_dir / "lib" / "libxcuda_fake_cuda.so"
    assert library.exists(), f"{library} was not built: configure with -DXCUDA_BUILD_TESTS=ON"
    env = dict(os.environ)
    env.pop("XCUDA_DEVICE", None)
    env.update(launch_arguments_env)
    env["XCUDA_LIBCUDA"] = str(library)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(SCRIPT), name], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, f"scenario {name} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"scenario held: {name}" in ran.stdout


# ---- no driver needed ----

def test_numpy_uintp_and_ctypes_void_p_are_addresses_and_a_plain_int_is_still_refused():
    m = xcuda.compile(VIEWS, name="views_addresses", arch="compute_80")
    out = np.zeros(4, np.float32)

    def reaches_the_gpu(call):  # the argument was taken: only the launch needs a driver
        if HAS_GPU:
            return
        with pytest.raises(xcuda.CudaUnavailableError):
            call()

    reaches_the_gpu(lambda: m.add_offset[1, 4](np.uintp(0x7000_0000_0000), out, 4))
    reaches_the_gpu(lambda: m.add_offset[1, 4](ctypes.c_void_p(0x7000_0000_0000), out, 4))
    reaches_the_gpu(lambda: m.add_offset[1, 4](ctypes.c_void_p(None), out, 4))  # NULL, as None is
    with pytest.raises(TypeError, match=r"an int is not taken for an address by accident.*xcuda.Pointer\(4096\)"):
        m.add_offset[1, 4](4096, out, 4)
    with pytest.raises(TypeError, match=r"xcuda.Pointer\(4096\)"):
        m.add_offset[1, 4](np.int64(4096), out, 4)  # a signed numpy integer is a number, not an address
    with pytest.raises(TypeError, match="'a' \\(float\\) takes a number, got c_void_p"):
        m.scale[1, 4](out, ctypes.c_void_p(3), 4)  # an address is for pointer parameters only


def test_grid_sync_is_detected_from_the_ptx_and_only_there():
    m = xcuda.compile(launch_feature_scenarios.GRID_SYNC, name="grid_sync_detection")
    assert m.fill.uses_grid_sync and m.fill.cooperative
    assert not m.chain_step.uses_grid_sync and not m.chain_step.cooperative
    # this_grid() without sync() reads no grid workspace: an ordinary launch.
    only_rank = xcuda.compile(r"""
#include <cooperative_groups.h>
extern "C" __global__ void rank(unsigned long long* out)
{ out[cooperative_groups::this_grid().thread_rank()] = 1; }
""", name="grid_rank_only")
    assert not only_rank.rank.uses_grid_sync and not only_rank.rank.cooperative


def test_the_cooperative_setting_forces_or_returns_to_automatic():
    m = xcuda.compile(launch_feature_scenarios.GRID_SYNC, name="grid_sync_setting")
    m.chain_step.cooperative = True
    assert m.chain_step.cooperative
    m.chain_step.cooperative = None
    assert not m.chain_step.cooperative
    m.fill.cooperative = False
    assert not m.fill.cooperative and m.fill.uses_grid_sync


def test_a_pointer_is_an_explicit_address():
    assert xcuda.Pointer(4096).address == 4096
    assert xcuda.Pointer(np.uintp(8192)).address == 8192
    assert (xcuda.Pointer(4096) + 16).address == 4112
    assert int(xcuda.Pointer(0x10)) == 16 and repr(xcuda.Pointer(0x10)) == "xcuda.Pointer(0x10)"
    assert xcuda.Pointer(2 ** 64 - 1).address == 2 ** 64 - 1
    with pytest.raises(ValueError, match="not negative"):
        xcuda.Pointer(-8)
    with pytest.raises(ValueError, match="64 bits"):
        xcuda.Pointer(2 ** 64)
    with pytest.raises(TypeError, match="int or numpy.uintp"):
        xcuda.Pointer(1.5)


# ---- on a GPU (and on the PTX simulator) ----

VIEWS = r"""
extern "C" __global__ void scale(float* x, float a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }
extern "C" __global__ void add_offset(const float* x, float* out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = x[i] + 0.5f; }
extern "C" __global__ void low_words(const unsigned* words, unsigned* out, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = words[2 * i]; }
"""

BIG_SHARED_SUM = r"""
// Each block stages 16384 floats (64 KiB) in dynamic shared memory and sums them in reverse order.
extern "C" __global__ void staged_sum(const float* in, float* out)
{
    extern __shared__ float tile[];
    const int per_block = 16384;
    const float* mine = in + blockIdx.x * per_block;
    for (int i = threadIdx.x; i < per_block; i += blockDim.x) tile[i] = mine[i];
    __syncthreads();
    if (threadIdx.x == 0)
    {
        float s = 0.0f;
        for (int i = per_block - 1; i >= 0; --i) s += tile[i];
        out[blockIdx.x] = s;
    }
}
"""


@pytest.mark.gpu
def test_offset_views_pass_the_address_of_their_first_row():
    m = xcuda.compile(VIEWS, name="views_gpu")
    host = np.arange(1000, dtype=np.float32)
    d = xcuda.to_device(host)
    tail = d[100:]
    assert tail.shape == (900,) and tail.ptr == d.ptr + 400 and tail.byte_offset == 400 and tail.is_view and not d.is_view
    m.scale[4, 256](tail, 2.0, 900)
    expected = host.copy()
    expected[100:] *= 2
    assert np.array_equal(d.copy_to_host(), expected)
    middle = d[10:20]
    assert np.array_equal(middle.copy_to_host(), expected[10:20])
    middle.copy_from(np.full(10, -1, np.float32))
    expected[10:20] = -1
    assert np.array_equal(d.copy_to_host(), expected)
    # A view of a view, negative bounds, and an empty slice, as numpy reads them.
    inner = d[100:][-50:]
    assert inner.ptr == d.ptr + 950 * 4 and np.array_equal(inner.copy_to_host(), expected[950:])
    assert d[500:400].shape == (0,)
    # Rows of a 2-D array.
    grid = xcuda.to_device(np.arange(12, dtype=np.float32).reshape(4, 3))
    assert np.array_equal(grid[1:3].copy_to_host(), np.arange(12, dtype=np.float32).reshape(4, 3)[1:3])


@pytest.mark.gpu
def test_a_view_keeps_its_parent_alive():
    m = xcuda.compile(VIEWS, name="views_alive")
    d = xcuda.to_device(np.ones(512, np.float32))
    tail = d[256:]
    del d
    import gc
    gc.collect()
    m.scale[1, 256](tail, 3.0, 256)
    assert np.all(tail.copy_to_host() == 3.0)


@pytest.mark.gpu
def test_a_dtype_view_reinterprets_the_bytes():
    m = xcuda.compile(VIEWS, name="views_dtype")
    values = np.arange(64, dtype=np.uint64) * (2 ** 32 + 3)
    d = xcuda.to_device(values)
    words = d.view(np.uint32)
    assert words.shape == (128,) and words.ptr == d.ptr
    out = xcuda.zeros(64, np.uint32)
    m.low_words[1, 64](words, out, 64)
    assert np.array_equal(out.copy_to_host(), values.view(np.uint32)[0::2])
    with pytest.raises(ValueError, match="not a multiple"):
        xcuda.to_device(np.zeros(3, np.uint8)).view(np.uint16)
    with pytest.raises(ValueError, match="step 1"):
        d[::2]
    with pytest.raises(TypeError, match="slice"):
        d[3]


@pytest.mark.gpu
def test_a_raw_address_is_taken_only_through_pointer():
    m = xcuda.compile(VIEWS, name="views_pointer")
    host = np.arange(300, dtype=np.float32)
    d = xcuda.to_device(host)
    out = xcuda.zeros(200, np.float32)
    # ptr + offset, as code written for cuda.core or PyCUDA passes it.
    m.add_offset[1, 256](xcuda.Pointer(d.ptr + 100 * 4), out, 200)
    assert np.array_equal(out.copy_to_host(), host[100:] + 0.5)
    m.add_offset[1, 256](xcuda.Pointer(np.uintp(d.ptr)), out, 200)
    assert np.array_equal(out.copy_to_host(), host[:200] + 0.5)
    with pytest.raises(TypeError, match=r"xcuda.Pointer\(" + str(d.ptr) + r"\)"):
        m.add_offset[1, 256](d.ptr, out, 200)
    # numpy.uintp and ctypes.c_void_p say "address" themselves, as PyCUDA code passes them (issue 45, item 6).
    m.add_offset[1, 256](np.uintp(d.ptr + 50 * 4), out, 200)
    assert np.array_equal(out.copy_to_host(), host[50:250] + 0.5)
    m.add_offset[1, 256](ctypes.c_void_p(d.ptr + 20 * 4), xcuda.Pointer(out.ptr), 200)
    assert np.array_equal(out.copy_to_host(), host[20:220] + 0.5)
    m.add_offset[1, 256](xcuda.Pointer(d.ptr), ctypes.c_void_p(out.ptr), 200)
    assert np.array_equal(out.copy_to_host(), host[:200] + 0.5)


@pytest.mark.gpu
def test_dynamic_shared_memory_above_48_kib_raises_the_kernels_limit():
    m = xcuda.compile(BIG_SHARED_SUM, name="big_shared_gpu")
    blocks = 6
    host = (np.random.default_rng(3).random(blocks * 16384) * 4).astype(np.float32).round()
    out = np.zeros(blocks, np.float32)
    m.staged_sum[blocks, 256, None, 65536](host, out)
    assert np.array_equal(out, host.reshape(blocks, 16384).sum(axis=1))
    assert m.staged_sum.get_attribute("max_dynamic_shared_size_bytes") >= 65536
    with pytest.raises(ValueError, match=r"10000000 bytes exceeds .* opt-in maximum of \d+ bytes"):
        m.staged_sum[blocks, 256, None, 10_000_000](host, out)


@pytest.mark.gpu
def test_function_attributes_are_set_and_read_back():
    m = xcuda.compile(BIG_SHARED_SUM, name="attributes_gpu")
    m.staged_sum.set_attribute("preferred_shared_memory_carveout", 50)
    assert m.staged_sum.get_attribute("preferred_shared_memory_carveout") == 50
    m.staged_sum.set_attribute("MaxDynamicSharedMemorySize", 70000)
    assert m.staged_sum.get_attribute("max_dynamic_shared_size_bytes") == 70000
    with pytest.raises(ValueError, match="preferred_shared_memory_carveout"):
        m.staged_sum.set_attribute("carveout", 50)


@pytest.mark.gpu
def test_launches_with_big_shared_memory_from_several_threads():
    m = xcuda.compile(BIG_SHARED_SUM, name="big_shared_threads")
    host = np.ones(4 * 16384, np.float32)
    results = [None] * 6

    def run(k):
        out = np.zeros(4, np.float32)
        m.staged_sum[4, 128, None, 65536 + 1024 * k](host, out)
        results[k] = out

    run_in_threads(run, 6)
    for out in results:
        assert np.array_equal(out, np.full(4, 16384, np.float32))


GRID_REDUCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// Two phases separated by a grid-wide sync: each block writes its partial sum, then block 0 adds them.
extern "C" __global__ void grid_reduce(const float* in, float* partial, float* total, int n)
{
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ float s[256];
    float v = 0.0f;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) v += in[i];
    s[threadIdx.x] = v;
    block.sync();
    for (int k = blockDim.x / 2; k > 0; k >>= 1)
    {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        block.sync();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (grid.thread_rank() == 0)
    {
        float t = 0.0f;
        for (int b = 0; b < gridDim.x; ++b) t += partial[b];
        *total = t;
    }
}
"""


@pytest.mark.gpu
def test_a_kernel_with_grid_sync_launches_cooperatively():
    m = xcuda.compile(GRID_REDUCE, name="grid_reduce_gpu")
    k = m.grid_reduce
    assert k.uses_grid_sync and k.cooperative
    most = k.max_cooperative_blocks(256)
    assert most >= 1
    n = 1 << 20
    host = np.random.default_rng(5).integers(0, 8, n).astype(np.float32)  # integer sums: exact in any order
    grid = min(most, 64)
    partial = xcuda.zeros(grid, np.float32)
    total = xcuda.zeros(1, np.float32)
    k[grid, 256](host, partial, total, n)
    assert total.copy_to_host()[0] == host.sum(dtype=np.float64)
    with pytest.raises(ValueError, match=rf"{most + 1} blocks: at most {most} blocks of 256 threads"):
        k[most + 1, 256](host, partial, total, n)


@pytest.mark.gpu
def test_a_replay_of_a_launch_with_big_shared_memory_opts_in_too(tmp_path):
    # xcuda-replay (what kernel.profile and kernel.sanitize run under ncu and compute-sanitizer) raises the
    # limit as the session did, or its launch would fail.
    m = xcuda.compile(BIG_SHARED_SUM, name="big_shared_replay")
    host = np.arange(2 * 16384, dtype=np.float32) % 7
    out = xcuda.zeros(2, np.float32)
    results = replayed(m.staged_sum[2, 256, None, 65536].replay_bundle(host, out), tmp_path)
    expected = host.reshape(2, 16384).sum(axis=1)
    assert any(r.shape == (2,) and np.array_equal(r, expected) for r in results), results


SCALED_BY_CONSTANT = r"""
__constant__ float c_scale[2];
extern "C" __global__ void scale(const float* x, float* out, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = c_scale[0] * x[i] + c_scale[1]; }
"""


def replayed(folder, into):
    """Runs xcuda-replay on a bundle folder (then removed) with its outputs into `into`; returns each
    region after the replay as float32 values."""
    import shutil

    into.mkdir(exist_ok=True)
    try:
        replay = Path(xcuda.__file__).parent / "xcuda-replay"
        ran = subprocess.run([str(replay), "--output", str(into), folder], capture_output=True, text=True)
    finally:
        shutil.rmtree(folder)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return [np.frombuffer(p.read_bytes(), np.float32) for p in sorted(into.glob("region-*.out"))]


@pytest.mark.gpu
def test_a_replay_sees_the_module_variables_and_syncs_its_grid(tmp_path):
    # What kernel.profile and kernel.sanitize run: xcuda-replay must compute what the session computes, so
    # the __constant__ values set from Python travel in the bundle, and a grid-syncing kernel replays
    # cooperatively (a plain launch of it fails on a GPU).
    m = xcuda.compile(SCALED_BY_CONSTANT, name="replay_constant")
    m.globals.c_scale = np.array([3.0, 0.5], np.float32)
    x = np.arange(1024, dtype=np.float32)
    out = xcuda.zeros(1024, np.float32)
    results = replayed(m.scale[4, 256].replay_bundle(x, out, 1024), tmp_path / "a")
    assert any(r.shape == (1024,) and np.array_equal(r, 3.0 * x + 0.5) for r in results), results

    g = xcuda.compile(launch_feature_scenarios.GRID_SYNC, name="replay_grid_sync_gpu")
    n = 1 << 16
    y = xcuda.zeros(n, np.float32)
    results = replayed(g.fill[min(g.fill.max_cooperative_blocks(256), 32), 256].replay_bundle(y, 4.0, n), tmp_path / "b")
    assert any(r.shape == (n,) and np.all(r == 4.0) for r in results), results
