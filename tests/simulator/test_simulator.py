"""xcuda on the PTX simulator (XCUDA_DEVICE=simulator, docs/simulator.md), end to end on any machine.

Each scenario of tests/simulator_scenarios.py runs in a child process with XCUDA_DEVICE=simulator,
XCUDA_LIBCUDA unset, and PYTHONPATH at the build's python folder, where libxcuda-sim.so sits beside the
module: the driver layer opens the simulator instead of libcuda.so.1, and everything above it (compile,
module load from PTX, argument packing, copies, launch, copy-back, the fault report) is xcuda's real code.
The instruction families themselves are tested in C++ (tests/cpp/simulator/test_simulator.cpp, xcuda_simulator_tests).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import simulator_scenarios  # noqa: E402

SCRIPT = HERE / "simulator_scenarios.py"


@pytest.fixture(scope="module")
def simulator(build_dir):
    library = build_dir / "python" / "xcuda" / "libxcuda-sim.so"
    if not library.exists():
        pytest.fail(f"{library} was not built: it is a target of the main build (xcuda_sim_driver)")
    return library


def run_scenario(name, build_dir):
    env = dict(os.environ)
    for variable in ("XCUDA_LIBCUDA", "XCUDA_SIM_MAX_STEPS", "XCUDA_DEVICE"):
        env.pop(variable, None)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, str(SCRIPT), name], capture_output=True, text=True, timeout=600, env=env)
    assert ran.returncode == 0, f"scenario {name} failed:\n{ran.stdout[-3000:]}\n{ran.stderr[-6000:]}"
    assert f"scenario held: {name}" in ran.stdout
    return ran.stdout


def test_saxpy_of_a_million_elements_on_the_simulator_matches_numpy(build_dir, simulator):
    run_scenario("saxpy", build_dir)


def test_a_block_reduction_in_shared_memory_sums_every_block_on_the_simulator(build_dir, simulator):
    run_scenario("block_sum", build_dir)


def test_an_out_of_bounds_write_raises_a_cuda_error_naming_thread_block_address_and_line_and_the_session_goes_on(
        build_dir, simulator):
    out = run_scenario("out_of_bounds", build_dir)
    assert "survived: 3" in out


def test_an_instruction_the_simulator_lacks_is_named_and_the_session_goes_on(build_dir, simulator):
    run_scenario("unsupported_instruction", build_dir)


def test_device_printf_output_appears_once_per_thread_by_the_synchronize(build_dir, simulator):
    out = run_scenario("device_printf", build_dir)
    lines = [line for line in out.splitlines() if line.startswith("hello from")]
    assert lines == ["hello from thread 0 of block 0: 10", "hello from thread 1 of block 0: 20",
                     "hello from thread 0 of block 1: 10", "hello from thread 1 of block 1: 20"], out
    assert out.index("hello from thread 1 of block 1") < out.index("after the launch"), out


def test_a_tiled_matmul_a_transpose_a_histogram_and_a_warp_shuffle_sum_match_numpy(build_dir, simulator):
    run_scenario("classic_kernels", build_dir)


def test_a_shared_memory_race_between_two_warps_names_both_threads_the_variable_and_the_lines(build_dir, simulator):
    run_scenario("shared_race", build_dir)


def test_with_the_shared_initcheck_a_read_of_shared_memory_no_thread_wrote_names_the_thread_and_line(build_dir, simulator):
    run_scenario("uninitialised_shared", build_dir)


def test_with_the_global_initcheck_a_read_of_a_device_array_never_written_names_the_argument(build_dir, simulator):
    run_scenario("uninitialised_global", build_dir)


def test_with_the_warp_race_check_warp_synchronous_code_without_syncwarp_is_reported(build_dir, simulator):
    run_scenario("warp_race", build_dir)


def test_a_pipeline_reading_a_cp_async_it_has_not_waited_for_is_reported_with_both_threads_and_lines(build_dir, simulator):
    run_scenario("async_copy_hazard", build_dir)


def test_launch_timings_on_the_simulator_say_they_are_simulated(build_dir, simulator):
    run_scenario("timing_says_simulated", build_dir)


def test_trace_records_one_threads_instructions_register_writes_and_cell_lines(build_dir, simulator):
    run_scenario("trace_one_thread", build_dir)


def test_device_malloc_and_free_match_numpy_honour_the_heap_limit_and_catch_an_overrun(build_dir, simulator):
    run_scenario("device_malloc", build_dir)


def test_a_cooperative_grid_syncs_between_two_phases_as_numpy_computes_them_and_a_grid_too_large_is_refused(
        build_dir, simulator):
    run_scenario("grid_sync", build_dir)


def test_trace_on_a_gpu_driver_says_to_use_the_simulator(build_dir, simulator):
    # The fake driver (tests/fake_driver) stands for a GPU's libcuda.so.1: the driver layer opens it, not
    # the simulator, and xcuda.trace refuses before launching anything.
    env = dict(os.environ)
    env.pop("XCUDA_DEVICE", None)
    env["XCUDA_LIBCUDA"] = str(build_dir / "lib" / "libxcuda_fake_cuda.so")
    env["PYTHONPATH"] = str(build_dir / "python")
    code = ("import xcuda\nm = xcuda.compile('extern \"C\" __global__ void f(int* o) { o[0] = 1; }', name='t')\n"
            "try:\n    xcuda.trace(m.f, (1, 1), xcuda.empty(1, 'int32'))\n"
            "except RuntimeError as e:\n    print('refused:', e)\n")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "refused: xcuda.trace runs a launch on the PTX simulator only: set XCUDA_DEVICE=simulator" in ran.stdout, \
        ran.stdout
    assert "this process runs on a GPU's driver" in ran.stdout, ran.stdout


def test_warps_at_different_syncthreads_complete_one_barrier_warning_once_and_strict_mode_fails_the_launch(
        build_dir, simulator):
    out = run_scenario("two_sided_barrier", build_dir)
    assert "both launches right" in out
    assert out.count("xcuda simulator warning: kernel 'two_sides': warps of block (0,0,0) met at different "
                     "__syncthreads()") == 1, out
    # Both places in the source's own lines (base/cell_lines, as faults are), never the PTX's .file path.
    assert ("in two_sides, the source, line 6; warp 1 (threads (32,0,0) to (63,0,0)) at another barrier, "
            "'bar.sync 0' in two_sides, the source, line 7;") in out, out
    assert " of /" not in out and "/cell" not in out, out
    assert "strict: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED" in out, out
    assert "barrier divergence in block (0,0,0)" in out and "XCUDA_SIM_STRICT_BARRIERS=1" in out, out


def test_a_failed_device_assert_fails_the_launch_with_the_expression_and_line_and_the_session_goes_on(
        build_dir, simulator):
    out = run_scenario("device_assert", build_dir)
    assert "failed: cuLaunchKernel failed: CUDA_ERROR_ASSERT" in out, out
    # The line of the source as compile() had it (base/cell_lines), never the .file path.
    assert ("thread (7,0,0) of block (0,0,0): device assertion `v[threadIdx.x] >= 0` failed, in checked, "
            "the source, line 4") in out, out
    assert "block: [0,0,0], thread: [7,0,0] Assertion `v[threadIdx.x] >= 0` failed." in out, out
    assert "the next launch ran" in out, out


@pytest.mark.gpu
def test_on_the_gpu_warps_at_different_syncthreads_complete_one_barrier_as_the_simulator_models(build_dir):
    # The claim behind the simulator's model (docs/simulator.md, "Undefined in PTX"): the GPU gives the kernel's
    # expected result every time.
    env = dict(os.environ)
    for variable in ("XCUDA_LIBCUDA", "XCUDA_DEVICE"):
        env.pop(variable, None)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    code = ("import numpy as np, xcuda, simulator_scenarios as s\n"
            "m = xcuda.compile(s.TWO_SIDES, name='two_sides_gpu')\n"
            "x = np.arange(64, dtype=np.float32)\n"
            "written = np.where(np.arange(64) < 32, x + 1, x * 2).astype(np.float32)\n"
            "for _ in range(200):\n"
            "    out = np.zeros(64, np.float32)\n"
            "    m.two_sides[8, 64](x, out)\n"
            "    assert np.array_equal(out, written[::-1]), out\n"
            "print('200 launches right')\n")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd=HERE)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "200 launches right" in ran.stdout


def test_every_scenario_has_a_test():
    assert set(simulator_scenarios.SCENARIOS) == {"saxpy", "block_sum", "out_of_bounds", "unsupported_instruction",
                                                  "device_printf", "classic_kernels", "shared_race",
                                                  "timing_says_simulated", "trace_one_thread", "two_sided_barrier",
                                                  "device_assert", "device_malloc", "grid_sync", "uninitialised_shared",
                                                  "uninitialised_global", "warp_race", "async_copy_hazard"}


def test_without_the_simulator_library_beside_the_module_the_reason_names_it(build_dir, simulator, tmp_path):
    # A copy of the package without the simulator: it is looked for beside the extension, and is not there.
    package = tmp_path / "xcuda"
    shutil.copytree(build_dir / "python" / "xcuda", package, ignore=shutil.ignore_patterns("libxcuda-sim.so"))
    env = dict(os.environ)
    env.pop("XCUDA_LIBCUDA", None)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = str(tmp_path)
    code = "import xcuda\ntry:\n    xcuda.device_count()\nexcept xcuda.CudaUnavailableError as e:\n    print('refused:', e)\n"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "refused: " in ran.stdout, ran.stdout
    assert "XCUDA_DEVICE=simulator, but the PTX simulator could not be opened" in ran.stdout, ran.stdout
    assert str(package / "libxcuda-sim.so") in ran.stdout, ran.stdout
