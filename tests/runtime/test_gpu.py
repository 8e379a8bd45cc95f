"""The CUDA session, device arrays, launches, streams and timing, on a real GPU.

Marked gpu: on a machine without an NVIDIA driver they skip with the reason. Inputs are random and
outputs poisoned (NaN) before each launch, so an element the kernel did not write fails the check.
"""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import xcuda

pytestmark = pytest.mark.gpu

SOURCE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }

extern "C" __global__ void echo(signed char a, unsigned char b, short c, unsigned short d, int e, unsigned f,
                                long long g, unsigned long long h, float i, double j, bool k, __half l,
                                long long* ints, double* floats)
{
    ints[0] = a; ints[1] = b; ints[2] = c; ints[3] = d; ints[4] = e; ints[5] = f; ints[6] = g;
    ints[7] = (long long)h; ints[8] = k;
    floats[0] = i; floats[1] = j; floats[2] = __half2float(l);
}

extern "C" __global__ void __launch_bounds__(128) bounded(float* x) { x[threadIdx.x] = 1.0f; }

extern "C" __global__ void add_struct(float4 v, float* out) { out[0] = v.x + v.y + v.z + v.w; }

__global__ void cpp_linkage(int* out, int value) { out[0] = value; }
"""


@pytest.fixture(scope="module")
def mod():
    return xcuda.compile(SOURCE, name="gpu_tests")


def random(n, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).random(n).astype(dtype)


def test_the_default_target_is_the_gpus_own_arch(mod):
    arch = xcuda.default_arch()
    assert arch.startswith("sm_")
    assert mod.arch == arch and mod.cubin is not None and ".entry saxpy" in mod.ptx
    text = repr(xcuda.info())
    assert "NVIDIA" in text and arch in text and "free of" in text and "NVRTC" in text


def test_device_arrays_round_trip_every_dtype():
    for dtype in (np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32, np.float64, np.bool_):
        host = (np.random.default_rng(1).random((3, 5)) * 100).astype(dtype)
        buf = xcuda.to_device(host)
        assert buf.shape == (3, 5) and buf.dtype == dtype and buf.nbytes == host.nbytes and buf.ptr != 0
        np.testing.assert_array_equal(buf.copy_to_host(), host)
        np.testing.assert_array_equal(np.asarray(buf), host)
    zeros = xcuda.zeros((4, 4), np.float64)
    np.testing.assert_array_equal(np.asarray(zeros), np.zeros((4, 4)))
    empty = xcuda.empty_like(np.zeros(7, np.int16))
    assert empty.shape == (7,) and empty.dtype == np.int16
    empty.copy_from(np.arange(7))
    np.testing.assert_array_equal(np.asarray(empty), np.arange(7))
    with pytest.raises(ValueError, match="needs 7 elements"):
        empty.copy_from(np.arange(8))


def test_large_transfers_round_trip_through_the_staging_buffers(mod):
    # Above the staging threshold, and not a multiple of its 8 MiB chunks.
    n = 20_000_003
    host = random(n, seed=12)
    buf = xcuda.to_device(host)
    back = np.full(n, np.nan, np.float32)
    buf.copy_to_host(out=back)
    np.testing.assert_array_equal(back, host)
    buf.copy_from(host[::-1].copy())
    np.testing.assert_array_equal(np.asarray(buf), host[::-1])
    out = np.full(n, np.nan, np.float32)
    mod.saxpy.forall(n)(2.0, host, host, out, n)
    np.testing.assert_array_equal(out, np.float32(2.0) * host + host)


def test_page_locked_host_arrays_copy_directly_and_work_as_arguments(mod):
    n = 3_000_001
    host = xcuda.empty_pinned(n, np.float32)
    assert isinstance(host, np.ndarray) and host.shape == (n,) and host.flags.writeable
    host[:] = random(n, seed=13)
    buf = xcuda.to_device(host)
    back = xcuda.zeros_pinned(n, np.float32)
    assert not back.any()
    buf.copy_to_host(out=back)
    np.testing.assert_array_equal(back, host)
    out = xcuda.empty_pinned(n, np.float32)
    mod.saxpy.forall(n)(2.0, host, host, xcuda.Out(out), n)
    np.testing.assert_array_equal(out, np.float32(2.0) * host + host)


def test_device_arrays_export_cuda_array_interface_v3():
    buf = xcuda.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    cai = buf.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
    assert cai["data"] == (buf.ptr, False) and cai["strides"] is None


def test_saxpy_with_device_arrays_is_correct(mod):
    n = 1 << 20
    x, y = random(n, seed=2), random(n, seed=3)
    dx, dy = xcuda.to_device(x), xcuda.to_device(y)
    dout = xcuda.to_device(np.full(n, np.nan, np.float32))
    mod.saxpy[xcuda.grid_for(n, 256), 256](np.float32(2.5), dx, dy, dout, n)
    out = dout.copy_to_host()
    assert np.linalg.norm(out - (2.5 * x.astype(np.float64) + y)) / np.linalg.norm(2.5 * x + y) < 1e-6


def test_saxpy_with_numpy_arrays_copies_the_output_back_and_leaves_inputs(mod):
    n = 100_003  # not a multiple of the block
    x, y = random(n, seed=4), random(n, seed=5)
    x_before, y_before = x.copy(), y.copy()
    out = np.full(n, np.nan, np.float32)
    mod.saxpy.forall(n)(2.0, x, y, out, n)
    assert np.allclose(out, 2.0 * x + y)
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(y, y_before)


def test_out_skips_the_copy_in_and_in_skips_the_copy_back(mod):
    n = 5000
    x, y = random(n, seed=10), random(n, seed=11)
    out = np.full(n, np.nan, np.float32)
    mod.saxpy.forall(n)(2.0, xcuda.In(x), y, xcuda.Out(out), n)
    assert np.allclose(out, 2.0 * x + y)
    untouched = np.full(n, 7.0, np.float32)
    mod.saxpy.forall(n)(2.0, x, y, xcuda.In(untouched), n)
    assert (untouched == 7.0).all()


def test_copy_from_a_device_array_copies_on_the_device():
    source = xcuda.to_device(np.arange(10, dtype=np.float32))
    target = xcuda.empty(10, np.float32)
    target.copy_from(source)
    np.testing.assert_array_equal(np.asarray(target), np.arange(10))
    with pytest.raises(ValueError, match="40 bytes"):
        target.copy_from(xcuda.empty(11, np.float32))


def test_a_non_contiguous_numpy_output_is_written_back(mod):
    n = 1000
    x, y = random(n, seed=6), random(n, seed=7)
    backing = np.full(2 * n, np.nan, np.float32)
    out = backing[::2]
    mod.saxpy.forall(n)(3.0, x, y, out, n)
    assert np.allclose(backing[::2], 3.0 * x + y)
    assert np.isnan(backing[1::2]).all()


def test_scalars_reach_the_kernel_at_their_declared_width(mod):
    ints = np.zeros(9, np.int64)
    floats = np.zeros(3, np.float64)
    mod.echo[1, 1](-100, 250, -30000, 65000, -2_000_000_000, 4_000_000_000, -(1 << 62), (1 << 64) - 1,
                   np.float32(1.25), 0.1, True, 0.5, ints, floats)
    assert list(ints[:7]) == [-100, 250, -30000, 65000, -2_000_000_000, 4_000_000_000, -(1 << 62)]
    assert ints[7] == -1  # 2**64-1 read back through a signed cast
    assert ints[8] == 1
    assert list(floats) == [1.25, 0.1, 0.5]
    mod.echo[1, 1](np.int8(-1), np.uint8(1), np.int16(2), np.uint16(3), np.int32(4), np.uint32(5), np.int64(6),
                   np.uint64(7), 8, np.float64(9.5), np.bool_(False), np.float16(1.5), ints, floats)
    assert list(ints) == [-1, 1, 2, 3, 4, 5, 6, 7, 0] and list(floats) == [8.0, 9.5, 1.5]


def test_by_value_structs_pass_as_bytes(mod):
    out = np.zeros(1, np.float32)
    mod.add_struct[1, 1](np.array([1, 2, 3, 4], np.float32).tobytes(), out)
    assert out[0] == 10.0


def test_cpp_kernels_launch_through_their_mangled_names(mod):
    out = np.zeros(1, np.int32)
    mod.cpp_linkage[1, 1](out, 42)
    assert out[0] == 42


def test_any_cuda_array_interface_object_is_a_pointer_argument(mod):
    class Foreign:
        def __init__(self, buf):
            self.__cuda_array_interface__ = buf.__cuda_array_interface__

    n = 4096
    x = random(n, seed=8)
    dx, dout = xcuda.to_device(x), xcuda.zeros(n, np.float32)
    mod.saxpy.forall(n)(1.0, Foreign(dx), Foreign(dx), Foreign(dout), n)
    assert np.allclose(dout.copy_to_host(), 2 * x)
    with pytest.raises(TypeError, match="needs float32 elements"):
        mod.saxpy.forall(n)(1.0, Foreign(xcuda.zeros(n, np.int32)), dx, dout, n)


@pytest.mark.parametrize(
    "config, fragment",
    [
        ((1, 2048), "block x = 2048 exceeds the device's limit of 1024"),
        ((1, (32, 32, 2)), "block of 2048 threads exceeds"),
        ((1, (1, 1, 128)), "block z = 128 exceeds"),
        (((1, 70000), 32), "grid y = 70000 exceeds"),
        ((1, 32, None, 10_000_000), "dynamic shared memory"),
    ],
)
def test_launches_over_device_limits_raise_before_launching(mod, config, fragment):
    x = xcuda.zeros(32, np.float32)
    with pytest.raises(ValueError, match=fragment):
        mod.saxpy[config](1.0, x, x, x, 32)


def test_launch_bounds_limit_the_block(mod):
    x = xcuda.zeros(256, np.float32)
    mod.bounded[1, 128](x)
    with pytest.raises(ValueError, match="__launch_bounds__"):
        mod.bounded[1, 256](x)


def test_streams_and_events_order_and_time_work(mod):
    n = 1 << 22
    x = xcuda.to_device(random(n, seed=9))
    out = xcuda.empty(n, np.float32)
    stream = xcuda.Stream()
    start, end = xcuda.Event(), xcuda.Event()
    start.record(stream)
    mod.saxpy[xcuda.grid_for(n), 256, stream](2.0, x, x, out, n)
    end.record(stream)
    stream.synchronize()
    assert stream.query() and end.query()
    assert start.elapsed_time(end) > 0
    assert np.allclose(out.copy_to_host(), 3 * x.copy_to_host())
    assert stream.__cuda_stream__() == (0, stream.handle)
    xcuda.synchronize()


def test_kernel_time_reports_the_median_and_bandwidth(mod):
    n = 1 << 22
    x, out = xcuda.to_device(random(n)), xcuda.empty(n, np.float32)
    timing = mod.saxpy.time(xcuda.grid_for(n), 256, 2.0, x, x, out, n, repeat=20)
    assert len(timing.samples_ms) == 20 and timing.min_ms <= timing.median_ms <= timing.max_ms
    assert timing.nbytes == 3 * 4 * n and timing.bandwidth_gbs > 0
    if xcuda.simulated():  # tests/simulator/test_runtime_on_the_simulator.py: a simulated time gives no bandwidth
        assert "GB/s" not in repr(timing) and "[simulated" in repr(timing) and "no bandwidth" in repr(timing)
    else:
        assert "GB/s" in repr(timing)


def test_cuda_timeit_and_status_magics(mod, capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.user_ns.update(saxpy=mod.saxpy, x=xcuda.zeros(1024, np.float32), n=1024)
    shell.run_line_magic("cuda_timeit", "-r 10 saxpy[4, 256](2.0, x, x, x, n)")
    shell.run_line_magic("cuda_status", "")
    out = capsys.readouterr().out
    assert "saxpy: median" in out and "over 10 launches" in out
    assert "gpu_tests" in out and "(1024,)" in out and "float32" in out


def test_buffers_are_freed_when_the_last_reference_goes():
    gc.collect()
    free_before, _ = xcuda.memory_info()
    buf = xcuda.empty(1 << 30, np.uint8)
    free_during, _ = xcuda.memory_info()
    assert free_before - free_during >= 1 << 30
    stats = xcuda.session_stats()
    assert stats["buffer_bytes"] >= 1 << 30
    del buf
    free_after, _ = xcuda.memory_info()
    assert free_after >= free_before - (64 << 20)


def test_an_allocation_above_free_memory_raises_out_of_memory():
    free, total = xcuda.memory_info()
    with pytest.raises(xcuda.OutOfMemoryError) as error:
        xcuda.empty(total * 2, np.uint8)
    assert error.value.requested == total * 2 and error.value.free > 0
    assert "free on the device" in str(error.value)
    small = xcuda.zeros(16)
    assert np.asarray(small).sum() == 0


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_rerunning_a_cell_a_thousand_times_leaks_no_module_and_no_host_memory():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    cell = 'extern "C" __global__ void rerun(int* out) { out[0] = VALUE; }\n'
    out = np.zeros(1, np.int32)

    def run(i):
        # Alternating definitions: every run builds and loads a new module (from the compile cache).
        shell.run_cell_magic("cuda", f"-DVALUE={i % 2}", cell)
        shell.user_ns["rerun"][1, 1](out)
        assert out[0] == i % 2

    for i in range(50):
        run(i)
    gc.collect()
    modules_before = xcuda.session_stats()["loaded_modules"]
    rss_before = _rss_bytes()
    free_before, _ = xcuda.memory_info()
    for i in range(1000):
        run(i)
    gc.collect()
    assert xcuda.session_stats()["loaded_modules"] <= modules_before
    assert _rss_bytes() - rss_before < 16 << 20
    free_after, _ = xcuda.memory_info()
    assert free_before - free_after < 16 << 20


def _run_python(code, **env):
    environment = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=environment, timeout=120)


def test_shutdown_releases_the_primary_context_and_later_work_starts_a_new_session():
    result = _run_python(f"""
        import ctypes, sys
        sys.path.insert(0, {str(os.path.dirname(xcuda.__file__))!r})
        import numpy as np, xcuda
        m = xcuda.compile('extern "C" __global__ void one(int* x) {{ x[0] = 1; }}')
        buf = xcuda.zeros(4, np.int32)
        m.one[1, 1](buf)
        xcuda._shutdown()
        cuda = ctypes.CDLL("libcuda.so.1")
        flags, active = ctypes.c_uint(), ctypes.c_int()
        cuda.cuDevicePrimaryCtxGetState(0, ctypes.byref(flags), ctypes.byref(active))
        print("active after shutdown:", active.value)
        try:
            np.asarray(buf)
        except RuntimeError as e:
            print("old buffer:", e)
        fresh = xcuda.zeros(4, np.int32)
        m.one[1, 1](fresh)
        print("relaunch:", np.asarray(fresh)[0])
        pinned = xcuda.zeros_pinned(1000, np.float64)
        xcuda._shutdown()
        pinned[:] = 2.5
        print("pinned after shutdown:", pinned.sum())
    """)
    assert result.returncode == 0, result.stderr
    assert "active after shutdown: 0" in result.stdout
    assert "old buffer: device buffer of 16 bytes on device 0 is gone" in result.stdout
    assert "relaunch: 1" in result.stdout
    assert "pinned after shutdown: 2500.0" in result.stdout


def test_xcuda_device_names_a_device_that_must_exist():
    result = _run_python(f"""
        import sys
        sys.path.insert(0, {str(os.path.dirname(xcuda.__file__))!r})
        import xcuda
        try:
            xcuda.zeros(1)
        except xcuda.CudaUnavailableError as e:
            print(e)
    """, XCUDA_DEVICE="99")
    assert "device 99 does not exist" in result.stdout, result.stdout + result.stderr


INSPECT = r"""
extern "C" __global__ void big_tile(float* x)
{
    __shared__ float tile[12 * 1024];  // 48 KiB: shared memory limits the blocks per SM
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = tile[(threadIdx.x + 1) % 128];
}
extern "C" __global__ void light(float* x) { x[threadIdx.x] += 1.0f; }
template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }
"""


@pytest.fixture(scope="module")
def inspect_mod():
    return xcuda.compile(INSPECT, name="gpu_inspect", instantiate=["axpy<float>", "axpy<double>"])


def test_ptxas_and_driver_resources_agree(mod, inspect_mod):
    for kernel in (mod.saxpy, mod.echo, inspect_mod.big_tile, inspect_mod.light, inspect_mod["axpy<double>"]):
        driver, ptxas = kernel.resources, kernel.ptxas_resources
        assert driver.source == "driver" and ptxas.source == "ptxas"
        assert driver.arch == ptxas.arch
        assert driver.registers == ptxas.registers, (kernel, driver, ptxas)
        assert driver.static_shared == ptxas.static_shared, (kernel, driver, ptxas)
        assert driver.local_bytes == ptxas.local_bytes, (kernel, driver, ptxas)
        assert driver.max_threads_per_block > 0
    assert inspect_mod.big_tile.resources.static_shared == 48 * 1024


def test_occupancy_names_the_limiting_resource(inspect_mod):
    shared_bound = inspect_mod.big_tile.occupancy(128)
    assert shared_bound.limiter == "shared memory"
    assert 0 < shared_bound.occupancy < 1 and shared_bound.active_blocks_per_sm >= 1
    thread_bound = inspect_mod.light.occupancy(1024)
    assert thread_bound.limiter == "threads per SM" and thread_bound.occupancy == 1.0
    block_bound = inspect_mod.light.occupancy(32)
    assert block_bound.limiter == "blocks per SM"
    assert thread_bound.suggested_block > 0 and "limited by" in repr(thread_bound)
    with pytest.raises(ValueError, match="exceeds"):
        inspect_mod.light.occupancy(4096)


def test_template_instances_launch_with_their_own_types(inspect_mod):
    n = 1000
    for name, dtype in (("axpy<float>", np.float32), ("axpy<double>", np.float64)):
        x = np.arange(n, dtype=dtype)
        y = np.ones(n, dtype=dtype)
        inspect_mod[name].forall(n)(2.0, x, y, n)
        np.testing.assert_allclose(y, 1 + 2 * x)
    with pytest.raises(TypeError, match="needs float64 elements"):
        inspect_mod["axpy<double>"].forall(n)(2.0, np.zeros(n, np.float32), np.zeros(n, np.float32), n)


def test_a_module_for_another_gpu_is_inspected_as_compiled_and_launches_through_a_compile_for_this_gpu():
    here = xcuda.default_arch()
    other = "sm_90" if here.startswith("sm_8") else "sm_80"  # a CUBIN this GPU cannot load
    module = xcuda.compile(SOURCE, name="other_gpu", arch=other)
    assert not module.loaded
    assert module.arch == other
    assert module.saxpy.ptxas_resources.registers > 0
    x = xcuda.to_device(np.arange(32, dtype=np.float32))
    out = xcuda.zeros(32, np.float32)
    module.saxpy[1, 32](2.0, x, x, out, 32)  # compiled once more, for this device's arch, and loaded
    assert module.loaded
    assert module.arch == other  # what the views show stays what was asked for
    np.testing.assert_allclose(out.copy_to_host(), 3 * np.arange(32, dtype=np.float32))


def test_a_cub_block_reduction_from_a_cuda_cell_sums_correctly():
    from cuda_sources import CUB_REDUCTION

    module = xcuda.compile(CUB_REDUCTION, name="gpu_cub")
    n = 128 * 50 + 17
    values = random(n, seed=14)
    sums = np.full(51, np.nan, np.float32)
    module.block_sum[51, 128](values, sums, n)
    expected = np.add.reduceat(values.astype(np.float64), np.arange(0, n, 128))
    np.testing.assert_allclose(sums, expected, rtol=1e-5)


PACKED = r"""
#include <cuda_fp16.h>
struct odd { char c; double d; short s; };  // 24 bytes: padding inside and at its end
extern "C" __global__ void packed_echo(signed char a, odd o, __half h, short s, double* floats, long long* ints,
                                       float4 v, unsigned char last)
{
    ints[0] = a; ints[1] = o.c; ints[2] = o.s; ints[3] = s; ints[4] = last;
    floats[0] = o.d; floats[1] = __half2float(h); floats[2] = v.x + 10 * v.y + 100 * v.z + 1000 * v.w;
}
"""


def packed_echo_holds(kernel, seed):
    """One launch of packed_echo (or a copy of it) with values from seed; the kernel's reading of every parameter checked.

    Its parameters sit at 0, 8, 32, 34, 40, 48, 64 and 80 (81 bytes, gaps after a, after s and before v):
    a buffer laid out any other way, or of another size, gives other values or a refused launch."""
    import struct

    rng = np.random.default_rng(seed)
    a, c, s_in, s, last = (int(v) for v in (rng.integers(-128, 128), rng.integers(-128, 128),
                                            rng.integers(-30000, 30000), rng.integers(-30000, 30000),
                                            rng.integers(0, 256)))
    d = float(rng.integers(1, 1000)) / 8
    v = rng.integers(0, 10, 4).astype(np.float32)
    ints = np.full(5, -999, np.int64)
    floats = np.full(3, np.nan)
    kernel[1, 1](a, struct.pack("<b7xdh6x", c, d, s_in), 0.25 * (seed % 8), s, floats, ints,
                             v.tobytes(), last)
    assert list(ints) == [a, c, s_in, s, last], (seed, list(ints))
    assert list(floats) == [d, 0.25 * (seed % 8), float(v[0] + 10 * v[1] + 100 * v[2] + 1000 * v[3])], (seed, floats)


def test_arguments_passed_as_one_buffer_reach_the_kernel_as_pointers_do():
    module = xcuda.compile(PACKED, name="gpu_packed")
    before = xcuda.launch_options()["arguments"]
    try:
        for mode in ("pointers", "buffer", "pointers", "buffer"):
            assert xcuda.launch_options(arguments=mode) == {"arguments": mode}
            for seed in range(3):
                packed_echo_holds(module.packed_echo, seed)
        # The first launch of a kernel in buffer mode is laid out by the driver's offsets too.
        fresh = xcuda.compile(PACKED.replace("packed_echo", "packed_echo_fresh"), name="gpu_packed_fresh")
        packed_echo_holds(fresh.packed_echo_fresh, 7)
        # SAXPY from numpy arrays (the copies in and back around a buffer launch) and device arrays.
        n = 5000
        x, y = random(n, seed=21), random(n, seed=22)
        out = np.full(n, np.nan, np.float32)
        module_saxpy = xcuda.compile(SOURCE, name="gpu_packed_saxpy").saxpy
        module_saxpy.forall(n)(2.5, x, y, out, n)
        np.testing.assert_allclose(out, 2.5 * x + y, rtol=1e-6)
        dout = xcuda.zeros(n, np.float32)
        module_saxpy.forall(n)(np.float32(-1.0), xcuda.to_device(x), xcuda.to_device(y), dout, n)
        np.testing.assert_allclose(dout.copy_to_host(), y - x, rtol=1e-6)
    finally:
        xcuda.launch_options(arguments=before)


def test_launches_from_several_threads_stay_right_while_another_thread_switches_the_way_arguments_pass():
    from thread_runs import run_in_threads

    kernel = xcuda.compile(PACKED.replace("packed_echo", "packed_echo_threads"), name="gpu_packed_threads").packed_echo_threads
    before = xcuda.launch_options()["arguments"]

    def work(index):
        for round_ in range(12):
            if index < 2:  # two threads switching, out of step
                xcuda.launch_options(arguments=("buffer", "pointers")[(round_ + index) % 2])
            else:
                packed_echo_holds(kernel, index * 100 + round_)

    try:
        run_in_threads(work, 5)
    finally:
        xcuda.launch_options(arguments=before)


def test_xcuda_launch_arguments_chooses_the_way_at_start_and_a_bad_value_is_named_at_the_first_launch():
    script = textwrap.dedent("""
        import numpy as np, xcuda
        m = xcuda.compile('extern "C" __global__ void one(int* out, int v) { out[0] = v; }', name="env_way")
        print("way", xcuda.launch_options()["arguments"])
        out = np.zeros(1, np.int32)
        try:
            m.one[1, 1](out, 5)
            print("launched", out[0])
        except ValueError as error:
            print("refused", error)
            print(xcuda.launch_options(arguments="pointers"))
            m.one[1, 1](out, 6)
            print("launched", out[0])
    """)
    seen = {}
    for value in ("buffer", "pointers", "stack"):
        env = dict(os.environ, XCUDA_LAUNCH_ARGUMENTS=value)
        ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
        assert ran.returncode == 0, ran.stderr[-3000:]
        seen[value] = ran.stdout
    assert "way buffer\nlaunched 5" in seen["buffer"], seen["buffer"]
    assert "way pointers\nlaunched 5" in seen["pointers"], seen["pointers"]
    refused = seen["stack"]
    assert "way pointers\nrefused XCUDA_LAUNCH_ARGUMENTS: 'stack' is not a way of passing launch arguments" in refused
    assert "'pointers'" in refused and "'buffer'" in refused and "launched 6" in refused, refused
