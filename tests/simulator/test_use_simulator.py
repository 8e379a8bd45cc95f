"""xcuda.use_simulator(): choosing the PTX simulator in a running session (issue 24, item 1).

Each case runs in a child process of its own (the driver is chosen once per process), without
XCUDA_DEVICE: on a machine without a driver (XCUDA_LIBCUDA at a missing file) a launch fails naming
the simulator, then use_simulator() makes the same module launch there; with the fake driver, a
session that has made a context refuses to switch and keeps working.
"""
import os
import subprocess
import sys
import textwrap

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
'''


def run_child(build_dir, code, libcuda):
    env = dict(os.environ)
    env.pop("XCUDA_DEVICE", None)
    env["XCUDA_LIBCUDA"] = libcuda
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    script = "import numpy as np, xcuda\nSAXPY = " + repr(SAXPY) + "\n" + textwrap.dedent(code)
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    return ran.stdout


def test_without_a_driver_the_session_switches_to_the_simulator_and_keeps_its_modules(build_dir, tmp_path):
    out = run_child(build_dir, """
        import threading
        m = xcuda.compile(SAXPY, name="m")            # compiled before the switch: kept
        n = 5000
        x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        out = np.zeros(n, np.float32)
        try:
            m.saxpy[(n + 127) // 128, 128](2.0, x, y, out, n)
            print("launched without a driver")
        except Exception as e:
            print("before:", type(e).__name__, "simulator" in str(e))
        errors = []
        def switch():
            try:
                xcuda.use_simulator()
            except Exception as e:
                errors.append(e)
        threads = [threading.Thread(target=switch) for _ in range(6)]
        for t in threads: t.start()
        for t in threads: t.join()
        print("errors:", errors)
        m.saxpy[(n + 127) // 128, 128](2.0, x, y, out, n)
        print("exact:", np.array_equal(out, np.float32(2) * x + y))
        print("info:", "simulator" in str(xcuda.info()).lower())
        xcuda.use_simulator()                         # again: harmless
        d = xcuda.to_device(x)
        print("device array:", np.array_equal(d.copy_to_host(), x))
    """, str(tmp_path / "no-libcuda.so.1"))
    assert "before: CudaUnavailableError True" in out, out  # the error names the simulator
    assert "launched without a driver" not in out, out
    assert "errors: []" in out, out
    assert "exact: True" in out and "info: True" in out and "device array: True" in out, out


def test_a_session_with_a_context_on_the_gpu_refuses_to_switch_and_goes_on(build_dir):
    fake = str(build_dir / "lib" / "libxcuda_fake_cuda.so")
    out = run_child(build_dir, """
        d = xcuda.to_device(np.arange(10, dtype=np.float32))   # makes the context
        try:
            xcuda.use_simulator()
            print("switched")
        except Exception as e:
            print("refused:", type(e).__name__, str(e))
        print("still:", np.array_equal(d.copy_to_host(), np.arange(10, dtype=np.float32)))
    """, fake)
    assert "switched" not in out, out
    assert "refused:" in out and "XCUDA_DEVICE=simulator" in out and "before the first launch" in out, out
    assert "still: True" in out, out
