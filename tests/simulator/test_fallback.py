"""No GPU, nothing set: the PTX simulator, said once (issue 51, item 1).

Each case runs in a child process of its own (the driver layer chooses once per process). Without a driver
the child has neither XCUDA_DEVICE nor XCUDA_LIBCUDA (the suite's default XCUDA_DEVICE=gpu is removed), so
those cases need a machine without a driver (marked nogpu). The cases of a driver that fails its cuInit put
a folder with the fake driver under the name libcuda.so.1 first on LD_LIBRARY_PATH: the driver layer finds
it as it finds a real one (not through XCUDA_LIBCUDA, which names a library and refuses the fallback), and
XCUDA_FAKE_CUINIT makes its cuInit fail, on any machine.
"""
import os
import subprocess
import sys
import textwrap

import pytest

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
'''
NOTICE = "so kernels run on the PTX simulator"


def run_child(build_dir, code, **env_changes):
    env = dict(os.environ)
    for name in ("XCUDA_DEVICE", "XCUDA_LIBCUDA"):
        env.pop(name, None)
    env.update(env_changes)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    script = "import numpy as np, xcuda\nSAXPY = " + repr(SAXPY) + "\n" + textwrap.dedent(code)
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    return ran.stdout, ran.stderr


def fake_driver_on_the_loader_path(build_dir, tmp_path):
    folder = tmp_path / "driver"
    folder.mkdir()
    (folder / "libcuda.so.1").symlink_to(build_dir / "lib" / "libxcuda_fake_cuda.so")
    return str(folder) + os.pathsep + os.environ.get("LD_LIBRARY_PATH", "")


# Indented as the tests' own code that follows it (run_child dedents the whole).
LAUNCH = """
        m = xcuda.compile(SAXPY, name="m")
        n = 3000
        x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        out = np.zeros(n, np.float32)
"""


@pytest.mark.nogpu
def test_without_a_driver_the_first_launch_runs_on_the_simulator_and_says_so_once(build_dir):
    out, err = run_child(build_dir, LAUNCH + """
        print("compiled:", repr(m.saxpy))
        import sys; sys.stderr.write("-- before the launch --\\n")
        m.saxpy[(n + 127) // 128, 128](2.0, x, y, out, n)
        print("exact:", np.array_equal(out, np.float32(2) * x + y))
        m.saxpy[(n + 127) // 128, 128](2.0, x, y, out, n)
        d = xcuda.to_device(x)
        print("simulated:", xcuda.simulated())
        print(xcuda.info())
        print(xcuda.status({"d": d}))
        print("choice:", xcuda.device_choice())
    """)
    # Compiling does not fall back: the cell compiles for compute_75 and the launch says it.
    assert "compute_75 PTX" in out, out
    before, after = err.split("-- before the launch --")
    assert NOTICE not in before, err
    assert after.count(NOTICE) == 1, err
    assert "no NVIDIA driver was found, so kernels run on the PTX simulator" in after, err
    assert "XCUDA_DEVICE=gpu" in after and "xcuda.use_gpu()" in after, err
    assert "exact: True" in out and "simulated: True" in out, out
    # %cuda_info / xcuda.info(): who chose, no made-up driver, the simulated model
    assert "chosen by                the fallback: no NVIDIA driver was found and XCUDA_DEVICE is unset" in out, out
    assert "no driver (simulator)" in out and "driver                   CUDA" not in out, out
    assert "xcuda PTX simulator (sm_90 model)" in out and "runs on                  the PTX simulator" in out, out
    # %cuda_status: what the simulator runs
    assert "compute_75 PTX (the PTX simulator runs it)" in out and "CUBIN" not in out, out
    assert "'source': 'simulator fallback'" in out, out


@pytest.mark.nogpu
def test_info_first_falls_back_and_says_so_in_its_output(build_dir):
    out, err = run_child(build_dir, """
        print(xcuda.info())
        print(xcuda.info())
    """)
    assert err.count(NOTICE) == 1, err
    assert out.count("no driver (simulator)") == 2, out


@pytest.mark.nogpu
def test_the_fallback_from_several_threads_at_once_happens_once(build_dir):
    out, err = run_child(build_dir, LAUNCH + """
        import threading
        results, errors, simulated = [], [], []
        barrier = threading.Barrier(8)
        def first_gpu_operation(i):
            try:
                barrier.wait()
                simulated.append(xcuda.simulated())  # the driver layer's own question, outside the session's lock
                mine = np.zeros(n, np.float32)
                m.saxpy[(n + 127) // 128, 128](float(i), x, y, mine, n)
                results.append(np.array_equal(mine, np.float32(i) * x + y))
            except Exception as e:
                errors.append(repr(e))
        threads = [threading.Thread(target=first_gpu_operation, args=(i,)) for i in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print("errors:", errors)
        print("results:", results)
        print("simulated:", simulated)
        print("choice:", xcuda.device_choice()["source"])
    """)
    assert "errors: []" in out and "results: " + str([True] * 8) in out, out
    assert "simulated: " + str([True] * 8) in out, out
    assert err.count(NOTICE) == 1, err
    assert "choice: simulator fallback" in out, out


@pytest.mark.nogpu
def test_XCUDA_DEVICE_gpu_refuses_the_fallback(build_dir):
    out, err = run_child(build_dir, LAUNCH + """
        print("simulated:", xcuda.simulated())
        try:
            m.saxpy[(n + 127) // 128, 128](2.0, x, y, out, n)
            print("launched")
        except xcuda.CudaUnavailableError as e:
            print("refused:", e)
        print("choice:", xcuda.device_choice()["reason"])
    """, XCUDA_DEVICE="gpu")
    assert "launched" not in out and NOTICE not in err, out + err
    assert "refused: CUDA is not available: no NVIDIA driver was found" in out, out
    assert "XCUDA_DEVICE=gpu asks for a GPU, so xcuda does not fall back to the PTX simulator" in out, out
    assert "xcuda.use_simulator()" in out, out
    assert "simulated: False" in out, out
    assert "choice: the default: XCUDA_DEVICE is unset" not in out, out
    assert "; XCUDA_DEVICE=gpu: a GPU, never the PTX simulator" in out, out


@pytest.mark.nogpu
def test_use_gpu_without_a_driver_is_refused_and_the_session_stays_on_the_simulator(build_dir):
    out, err = run_child(build_dir, LAUNCH + """
        try:
            xcuda.use_gpu()
            print("switched")
        except xcuda.CudaUnavailableError as e:
            print("refused:", e)
        m.saxpy[(n + 127) // 128, 128](2.0, x, y, out, n)
        print("exact:", np.array_equal(out, np.float32(2) * x + y))
        try:
            xcuda.use_gpu()
        except ValueError as e:
            print("refused again:", e)
    """)
    assert "switched" not in out, out
    assert "refused: CUDA is not available: xcuda.use_gpu() refused: no NVIDIA driver was found" in out, out
    assert "exact: True" in out, out
    assert "refused again: xcuda.use_gpu(): the PTX simulator already holds this session's device arrays" in out, out
    assert "XCUDA_DEVICE=gpu" in out, out


def test_use_simulator_confirms_what_it_chose_and_info_names_who_chose(build_dir):
    fake = str(build_dir / "lib" / "libxcuda_fake_cuda.so")
    out, err = run_child(build_dir, """
        xcuda.use_simulator()
        xcuda.use_simulator()
        print(xcuda.info())
    """, XCUDA_LIBCUDA=fake)
    assert out.startswith("xcuda.use_simulator(): this session's kernels run on the PTX simulator"), out
    assert "xcuda.use_simulator(): already on the PTX simulator (chosen by xcuda.use_simulator())" in out, out
    assert "chosen by                xcuda.use_simulator(): the PTX simulator's one device" in out, out
    assert NOTICE not in err, err


def test_use_gpu_goes_back_from_the_simulator_before_its_first_context(build_dir):
    fake = str(build_dir / "lib" / "libxcuda_fake_cuda.so")
    out, err = run_child(build_dir, """
        xcuda.use_simulator()
        print("simulated:", xcuda.simulated())
        xcuda.use_gpu()
        print("simulated:", xcuda.simulated())
        print(xcuda.info())
        xcuda.use_gpu()
    """, XCUDA_LIBCUDA=fake)
    assert "simulated: True" in out and "simulated: False" in out, out
    assert "xcuda.use_gpu(): this session's kernels run on the GPU" in out, out
    # back on the (fake) driver: its device and version, chosen as if nothing had chosen the simulator
    info = out.split("simulated: False")[1]
    assert "xcuda PTX simulator" not in info and "driver                   CUDA 13.0" in info, out
    assert "chosen by                the default" in info, out
    assert "xcuda.use_gpu(): already on the NVIDIA driver's GPU" in info, out


def test_XCUDA_DEVICE_simulator_is_named_as_the_chooser(build_dir):
    out, err = run_child(build_dir, "print(xcuda.info())\n", XCUDA_DEVICE="simulator")
    assert "chosen by                XCUDA_DEVICE=simulator: the PTX simulator's one device" in out, out
    assert NOTICE not in err, err


def test_a_driver_that_finds_no_device_falls_back(build_dir, tmp_path):
    out, err = run_child(build_dir, LAUNCH + """
        m.saxpy[(n + 127) // 128, 128](2.0, x, y, out, n)
        print("exact:", np.array_equal(out, np.float32(2) * x + y))
        print(xcuda.info())
    """, LD_LIBRARY_PATH=fake_driver_on_the_loader_path(build_dir, tmp_path), XCUDA_FAKE_CUINIT="100")
    assert "exact: True" in out, out
    assert "the NVIDIA driver found no CUDA device, so kernels run on the PTX simulator" in err, err
    assert "the fallback: the NVIDIA driver found no CUDA device and XCUDA_DEVICE is unset" in out, out


@pytest.mark.parametrize("result, error", [("999", "CudaError"), ("803", "CudaUnavailableError")])
def test_any_other_driver_failure_stays_an_error_naming_use_simulator(build_dir, tmp_path, result, error):
    # 999: CUDA_ERROR_UNKNOWN; 803: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (a driver that cannot be used)
    # An allocation, not a launch: NVRTC would open the fake (the loader path's libcuda.so.1) too.
    out, err = run_child(build_dir, """
        try:
            xcuda.to_device(np.zeros(3, np.float32))
            print("launched")
        except xcuda.CudaError as e:
            print("error:", type(e).__name__, e)
        except xcuda.CudaUnavailableError as e:
            print("error:", type(e).__name__, e)
        print("simulated:", xcuda.simulated())
    """, LD_LIBRARY_PATH=fake_driver_on_the_loader_path(build_dir, tmp_path), XCUDA_FAKE_CUINIT=result)
    assert "launched" not in out and NOTICE not in err, out + err
    assert f"error: {error} " in out and "xcuda.use_simulator()" in out, out
    assert "simulated: False" in out, out
