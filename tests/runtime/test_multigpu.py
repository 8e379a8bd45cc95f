"""Several GPUs in one session (issue 8): the current device, where allocations, streams and launches
go, modules loaded on each device, arguments from another device, peer access, and copies between
devices.

Tests marked gpu and multigpu skip with the reason where the driver is missing or finds fewer than two
devices (conftest.py); the device-selection checks that one GPU can answer are marked gpu only, and
the two that need no driver are not marked. Outputs are poisoned (NaN) before each launch, so an
element the kernel did not write fails the check. Peer access cannot be switched off once enabled, so
the test that needs it off runs in a fresh process.
"""
import ctypes
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import xcuda

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }

extern "C" __global__ void fill(float* x, float value, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) x[i] = value; }

// Keeps the device busy for `cycles` clock cycles, then writes 1: queued work that a later call must
// wait for.
extern "C" __global__ void spin(long long cycles, int* done)
{ long long start = clock64(); while (clock64() - start < cycles) {} done[0] = 1; }
"""

SPIN_CYCLES = 100_000_000  # about 50 ms at 2 GHz


def multigpu(test):
    return pytest.mark.gpu(pytest.mark.multigpu(test))


@pytest.fixture(autouse=True)
def device_0_is_current_around_each_gpu_test(request):
    """A GPU test starts with device 0 current and leaves it so, wherever it failed."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    xcuda.set_device(0)
    yield
    xcuda.set_device(0)


@pytest.fixture(scope="module")
def mod():
    return xcuda.compile(SOURCE, name="multigpu_tests")


def random(n, seed):
    return np.random.default_rng(seed).random(n, dtype=np.float32)


def poisoned(n):
    return xcuda.to_device(np.full(n, np.nan, np.float32))


def assert_saxpy(out, a, x, y):
    """out (a DeviceArray or numpy array) is a * x + y; the kernel's fused multiply-add rounds once."""
    np.testing.assert_allclose(np.asarray(out), np.float32(a) * x + y, rtol=1e-6, atol=1e-6)


def peer_or_skip():
    if not xcuda.can_access_peer(0, 1):
        pytest.skip("devices 0 and 1 cannot access each other's memory (no peer access on this machine)")


def _on(device, make):
    """make() with `device` current."""
    with xcuda.device(device):
        return make()


# ---- without a driver ---------------------------------------------------------------------------------


def test_device_mismatch_error_is_a_value_error():
    assert issubclass(xcuda.DeviceMismatchError, ValueError)


def test_a_negative_device_ordinal_is_refused_before_the_driver_is_asked():
    with pytest.raises(ValueError, match="-1"):
        with xcuda.device(-1):
            pass
    with pytest.raises(ValueError, match="-1"):
        xcuda.set_device(-1)


# ---- one GPU --------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_device_0_is_selected_with_set_device_and_a_device_block():
    assert xcuda.device_count() >= 1 and xcuda.current_device() == 0
    with xcuda.device(0):
        assert xcuda.current_device() == 0
        buf = xcuda.zeros(16, np.float32)
        stream = xcuda.Stream()
    assert buf.device == 0 and stream.device == 0 and xcuda.current_device() == 0
    xcuda.synchronize(device=0)
    xcuda.synchronize()


@pytest.mark.gpu
def test_an_absent_device_is_refused_naming_the_device_count():
    count = xcuda.device_count()
    with pytest.raises(ValueError, match=rf"(?s)\b99\b.*\b{count}\b"):
        with xcuda.device(99):
            pass
    with pytest.raises(ValueError, match=rf"(?s)\b99\b.*\b{count}\b"):
        xcuda.set_device(99)
    assert xcuda.current_device() == 0
    buf = xcuda.zeros(4, np.int32)
    assert buf.device == 0 and not np.asarray(buf).any()


@pytest.mark.gpu
def test_a_copy_on_one_device_uses_the_device_method():
    data = random(1000, seed=1)
    src, dst = xcuda.to_device(data), poisoned(1000)
    assert xcuda.copy(dst, src) == "device"
    np.testing.assert_array_equal(np.asarray(dst), data)


@pytest.mark.gpu
def test_copy_refuses_arrays_of_different_sizes_naming_both():
    with pytest.raises(ValueError, match=r"(?s)(40\b.*\b44|44\b.*\b40)"):
        xcuda.copy(xcuda.empty(10, np.float32), xcuda.empty(11, np.float32))


# ---- the current device ---------------------------------------------------------------------------------


@multigpu
def test_a_device_block_selects_its_device_and_restores_the_previous_one():
    with xcuda.device(1):
        assert xcuda.current_device() == 1
        with xcuda.device(0):
            assert xcuda.current_device() == 0
        assert xcuda.current_device() == 1
    assert xcuda.current_device() == 0
    xcuda.set_device(1)
    with xcuda.device(0):
        assert xcuda.current_device() == 0
    assert xcuda.current_device() == 1


@multigpu
def test_a_device_block_restores_the_previous_device_after_an_exception():
    with pytest.raises(KeyError):
        with xcuda.device(1):
            raise KeyError("inside")
    assert xcuda.current_device() == 0
    with pytest.raises(ValueError):
        with xcuda.device(1):
            with xcuda.device(99):
                pass
    assert xcuda.current_device() == 0


@multigpu
def test_allocations_and_streams_land_on_the_selected_device():
    host = random(100, seed=2)
    with xcuda.device(1):
        made = [xcuda.to_device(host), xcuda.empty(100, np.float32), xcuda.zeros((4, 5), np.int32),
                xcuda.empty_like(host), xcuda.zeros_like(host)]
        stream = xcuda.Stream()
        event = xcuda.Event()
        event.record(stream)
        event.synchronize()
    assert [array.device for array in made] == [1] * 5 and stream.device == 1
    np.testing.assert_array_equal(made[0].copy_to_host(), host)
    assert not np.asarray(made[2]).any()
    here = [xcuda.to_device(host), xcuda.empty(100, np.float32), xcuda.zeros(3)]
    assert [array.device for array in here] == [0] * 3 and xcuda.Stream().device == 0


@multigpu
def test_set_device_switches_while_arrays_live_on_the_other_device():
    host = random(1000, seed=3)
    on_0 = xcuda.to_device(host)
    xcuda.set_device(1)
    assert xcuda.current_device() == 1
    on_1 = xcuda.zeros(1000, np.float32)
    assert on_0.device == 0 and on_1.device == 1
    np.testing.assert_array_equal(on_0.copy_to_host(), host)  # read while device 1 is current
    xcuda.set_device(0)
    assert not np.asarray(on_1).any()


@multigpu
def test_host_and_device_copies_reach_an_array_on_another_device_than_the_current_one():
    n = 20_000_003  # pageable and large: through the staging buffers
    host = random(n, seed=4)
    with xcuda.device(1):
        on_1 = xcuda.empty(n, np.float32)
    on_1.copy_from(host)  # device 0 is current
    np.testing.assert_array_equal(on_1.copy_to_host(), host)
    on_0 = xcuda.to_device(on_1)  # made on the current device, from device 1
    assert on_0.device == 0 and on_1.device == 1
    np.testing.assert_array_equal(on_0.copy_to_host(), host)
    on_0.copy_from(xcuda.to_device(host[::-1].copy()))
    on_1.copy_from(on_0)
    np.testing.assert_array_equal(on_1.copy_to_host(), host[::-1])


@multigpu
def test_synchronize_with_a_device_waits_for_that_device(mod):
    with xcuda.device(1):
        done = xcuda.zeros(1, np.int32)
        mod.spin[1, 1](SPIN_CYCLES, done)
        event = xcuda.Event()
        event.record()
    assert xcuda.current_device() == 0
    xcuda.synchronize(device=1)
    assert event.query()
    assert xcuda.current_device() == 0
    assert done.copy_to_host()[0] == 1


# ---- launches on several devices --------------------------------------------------------------------------


@multigpu
def test_a_cuda_cell_compiled_once_launches_correctly_on_every_device():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_cell_magic("cuda", "--name multigpu_cell", SOURCE)
    saxpy = shell.user_ns["multigpu_cell"].saxpy
    n = 300_007
    for device in range(xcuda.device_count()):
        x, y = random(n, seed=10 + device), random(n, seed=20 + device)
        with xcuda.device(device):
            # The module loads on this device at its first launch here.
            dx, dy, dout = xcuda.to_device(x), xcuda.to_device(y), poisoned(n)
            saxpy.forall(n)(np.float32(2.5), dx, dy, dout, n)
            host_out = np.full(n, np.nan, np.float32)
            saxpy.forall(n)(np.float32(-1.5), x, y, host_out, n)  # numpy arguments go to this device
        assert dout.device == device
        assert_saxpy(dout, 2.5, x, y)
        assert_saxpy(host_out, -1.5, x, y)
    host_out[:] = np.nan
    saxpy.forall(n)(np.float32(4.0), x, y, host_out, n)  # back on device 0
    assert_saxpy(host_out, 4.0, x, y)


@multigpu
def test_launches_on_each_devices_own_stream_split_the_work_correctly(mod):
    devices = xcuda.device_count()
    n = 1 << 22
    x, y = random(n, seed=30), random(n, seed=31)
    bounds = [n * d // devices for d in range(devices + 1)]
    parts = []
    for d in range(devices):
        lo, hi = bounds[d], bounds[d + 1]
        with xcuda.device(d):
            parts.append((d, lo, hi, xcuda.Stream(), xcuda.to_device(x[lo:hi]), xcuda.to_device(y[lo:hi]),
                          poisoned(hi - lo)))
    for d, lo, hi, stream, dx, dy, dout in parts:
        with xcuda.device(d):
            mod.saxpy[xcuda.grid_for(hi - lo, 256), 256, stream](np.float32(3.0), dx, dy, dout, hi - lo)
    for _, _, _, stream, _, _, _ in parts:
        stream.synchronize()
    out = np.concatenate([dout.copy_to_host() for *_, dout in parts])
    assert_saxpy(out, 3.0, x, y)


MISMATCH_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import xcuda

def outcome(call):
    try:
        call()
    except Exception as error:
        return {"type": type(error).__name__, "mismatch": isinstance(error, xcuda.DeviceMismatchError),
                "value_error": isinstance(error, ValueError), "message": str(error)}
    return None

saxpy = xcuda.compile(sys.argv[2], name="mismatch").saxpy
n = 4096
rng = np.random.default_rng(0)
x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
nan = np.full(n, np.nan, np.float32)
with xcuda.device(1):
    x1, y1, out1 = xcuda.to_device(x), xcuda.to_device(y), xcuda.to_device(nan)
x0, y0, out0 = xcuda.to_device(x), xcuda.to_device(y), xcuda.to_device(nan)
report = {"x on 1, launch on 0": outcome(lambda: saxpy.forall(n)(2.0, x1, y0, out0, n))}
with xcuda.device(1):
    report["out on 0, launch on 1"] = outcome(lambda: saxpy.forall(n)(2.0, x1, y1, out0, n))
    report["device after the error"] = xcuda.current_device()
report["nothing written"] = bool(np.isnan(out0.copy_to_host()).all() and np.isnan(out1.copy_to_host()).all())
saxpy.forall(n)(2.0, x0, y0, out0, n)
report["device 0 still launches"] = bool(np.allclose(out0.copy_to_host(), np.float32(2) * x + y))
with xcuda.device(1):
    saxpy.forall(n)(2.0, x1, y1, out1, n)
report["device 1 still launches"] = bool(np.allclose(out1.copy_to_host(), np.float32(2) * x + y))
print(json.dumps(report))
"""


@multigpu
def test_an_argument_on_another_device_raises_device_mismatch_and_the_session_keeps_working():
    # A fresh process: peer access, once another test enabled it, would let these launches through.
    result = subprocess.run([sys.executable, "-c", MISMATCH_SCRIPT, os.path.dirname(xcuda.__file__), SOURCE],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    for case, argument, lives_on, launched_on in (("x on 1, launch on 0", "x", 1, 0),
                                                  ("out on 0, launch on 1", "out", 0, 1)):
        error = report[case]
        assert error is not None, f"{case}: the launch did not raise"
        assert error["mismatch"] and error["value_error"], error
        message = error["message"]
        assert f"'{argument}'" in message, message
        assert f"device {lives_on}" in message and f"device {launched_on}" in message, message
        assert "xcuda.copy" in message and "xcuda.device(" in message and "enable_peer_access" in message, message
    assert report["device after the error"] == 1
    assert report["nothing written"]
    assert report["device 0 still launches"] and report["device 1 still launches"]


@multigpu
def test_a_stream_of_another_device_raises_device_mismatch(mod):
    n = 1024
    x, out = xcuda.to_device(random(n, seed=40)), poisoned(n)
    with xcuda.device(1):
        other = xcuda.Stream()
    with pytest.raises(xcuda.DeviceMismatchError) as error:
        mod.saxpy[xcuda.grid_for(n, 256), 256, other](1.0, x, x, out, n)
    message = str(error.value)
    assert "stream" in message.lower() and "device 1" in message and re.search(r"\b0\b", message), message
    assert np.isnan(np.asarray(out)).all()
    with xcuda.device(1):
        x1, out1 = xcuda.to_device(random(n, seed=40)), poisoned(n)
        mod.saxpy[xcuda.grid_for(n, 256), 256, other](1.0, x1, x1, out1, n)
    other.synchronize()
    assert_saxpy(out1, 1.0, random(n, seed=40), random(n, seed=40))


# ---- peer access ----------------------------------------------------------------------------------------


@multigpu
def test_after_enable_peer_access_a_launch_reads_and_writes_the_other_devices_memory(mod):
    peer_or_skip()
    assert xcuda.can_access_peer(1, 0)
    xcuda.enable_peer_access(0, 1)
    xcuda.enable_peer_access(0, 1)  # idempotent
    xcuda.enable_peer_access(1, 0)
    n = 1 << 20
    x, y = random(n, seed=50), random(n, seed=51)
    with xcuda.device(1):
        x1, out1 = xcuda.to_device(x), poisoned(n)
    y0, out0 = xcuda.to_device(y), poisoned(n)
    mod.saxpy.forall(n)(np.float32(2.0), x1, y0, out1, n)  # on device 0: reads x and writes out on device 1
    xcuda.synchronize()
    assert_saxpy(out1, 2.0, x, y)
    with xcuda.device(1):
        mod.saxpy.forall(n)(np.float32(-3.0), x1, y0, out0, n)  # on device 1: reads y and writes out on device 0
        xcuda.synchronize()
    assert_saxpy(out0, -3.0, x, y)


@multigpu
def test_enable_peer_access_raises_cuda_error_where_the_hardware_cannot():
    if xcuda.can_access_peer(0, 1):
        pytest.skip("devices 0 and 1 can access each other's memory: nothing to refuse here")
    with pytest.raises(xcuda.CudaError):
        xcuda.enable_peer_access(0, 1)
    with pytest.raises(ValueError, match="peer"):
        xcuda.copy(xcuda.empty(4, np.float32), _on(1, lambda: xcuda.empty(4, np.float32)), method="peer")


# ---- copies between devices -----------------------------------------------------------------------------


@multigpu
@pytest.mark.parametrize("method", [None, "staged", "peer"])
def test_copy_between_devices_gives_identical_data_and_names_its_method(method):
    if method == "peer":
        peer_or_skip()
    expected = method or ("peer" if xcuda.can_access_peer(0, 1) else "staged")
    n = 20_000_003  # 80 MB: several staging chunks, and no multiple of one
    data = random(n, seed=60)
    for source, target in ((0, 1), (1, 0)):
        src = _on(source, lambda: xcuda.to_device(data))
        dst = _on(target, lambda: poisoned(n))
        assert xcuda.copy(dst, src, method=method) == expected
        assert dst.device == target
        np.testing.assert_array_equal(dst.copy_to_host(), data)


@multigpu
@pytest.mark.parametrize("method", ["staged", "peer"])
def test_a_copy_between_devices_waits_for_earlier_work_on_both(mod, method):
    if method == "peer":
        peer_or_skip()
    n = 1 << 22
    x, y = random(n, seed=70), random(n, seed=71)
    src, dx, dy = poisoned(n), xcuda.to_device(x), xcuda.to_device(y)
    done0 = xcuda.zeros(1, np.int32)
    with xcuda.device(1):
        dst, done1 = poisoned(n), xcuda.zeros(1, np.int32)
    xcuda.synchronize(device=0)
    xcuda.synchronize(device=1)
    # Queued, not finished: on device 0 a spin, then the kernel that writes the source; on device 1 a
    # spin, then a fill of the target that the copy must overwrite.
    mod.spin[1, 1](SPIN_CYCLES, done0)
    mod.saxpy.forall(n)(np.float32(2.0), dx, dy, src, n)
    with xcuda.device(1):
        mod.spin[1, 1](SPIN_CYCLES, done1)
        mod.fill.forall(n)(dst, np.float32(-7.0), n)
    assert xcuda.copy(dst, src, method=method) == method
    assert_saxpy(dst, 2.0, x, y)


@multigpu
def test_copy_between_devices_refuses_different_sizes_naming_both():
    with xcuda.device(1):
        bigger = xcuda.empty(11, np.float32)
    with pytest.raises(ValueError, match=r"(?s)(40\b.*\b44|44\b.*\b40)"):
        xcuda.copy(xcuda.empty(10, np.float32), bigger)
    with pytest.raises(ValueError, match=r"(?s)(40\b.*\b44|44\b.*\b40)"):
        xcuda.copy(bigger, xcuda.empty(10, np.float32), method="staged")


# ---- reports ------------------------------------------------------------------------------------------


def _device_names():
    lib = ctypes.CDLL("libcuda.so.1")
    names = []
    for ordinal in range(xcuda.device_count()):
        device, name = ctypes.c_int(0), ctypes.create_string_buffer(256)
        lib.cuDeviceGet(ctypes.byref(device), ordinal)
        lib.cuDeviceGetName(name, 256, device)
        names.append(name.value.decode())
    return names


@multigpu
def test_info_lists_every_device_and_marks_the_current_one(capsys):
    names = _device_names()

    def device_rows(report):
        return [row for table in report.tables for row in table["rows"]
                if any(name in str(cell) for cell in row for name in names)]

    for device in range(len(names)):
        _on(device, xcuda.zeros(1).copy_to_host)  # every context open: the free memory shown holds still
    on_0 = xcuda.info()
    on_1 = _on(1, xcuda.info)
    text = repr(on_0)
    assert all(name in text for name in names) and xcuda.default_arch() in text
    assert len(device_rows(on_0)) >= len(names), text
    assert repr(on_1) != text, "the current-device marking did not move:\n" + text
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "xcuda")
    shell.run_line_magic("cuda_info", "")
    shown = capsys.readouterr().out
    assert sum(shown.count(name) for name in set(names)) >= len(names), shown
