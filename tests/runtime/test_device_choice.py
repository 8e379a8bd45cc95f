"""Which device a process computes on, and why (issue 18): XCUDA_DEVICE, a launcher's local rank,
%cuda_info's and xcuda.device_choice()'s account of it, and DeviceArray pickling.

Each environment runs in a fresh Python process (the session reads the environment once, when the
module is imported), without the launcher variables of the machine running the tests. The choice
logic itself is unit-tested in tests/cpp/runtime/test_placement.cpp; these check what a user sees.
"""
import os
import re
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import xcuda
from conftest import BUILD, GPU_COUNT, HAS_GPU

CHOICE_VARIABLES = ("XCUDA_DEVICE", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK",
                    "CUDA_VISIBLE_DEVICES", "XCUDA_HOST_REGISTRY")


def run_python(code, **env):
    """Runs code in a new /usr/bin/python3 (the tests' interpreter) with only `env` of the choice variables."""
    environment = {k: v for k, v in os.environ.items() if k not in CHOICE_VARIABLES}
    # A GPU's choice, never the PTX simulator's one device, where a machine has no driver (conftest.py).
    environment["XCUDA_DEVICE"] = "gpu"
    environment.update(env)
    environment["PYTHONPATH"] = str(BUILD / "python")
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            env=environment, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_a_device_value_past_int_is_refused_with_its_text_instead_of_picking_device_0():
    out = run_python("""
        import xcuda
        print("current:", xcuda.current_device())
        print("source:", xcuda.device_choice()["source"])
        try:
            xcuda.zeros(1)
        except ValueError as e:
            print("refused:", e)
    """, XCUDA_DEVICE="4294967296")
    assert "current: -1" in out, out
    assert "source: refused" in out, out
    assert "refused: XCUDA_DEVICE='4294967296' is not a device ordinal: expected a whole number from 0 to 2147483647" in out, out


@pytest.mark.parametrize("text", ["-1", "abc", "1.5", " 1"])
def test_malformed_device_values_are_refused_naming_the_value(text):
    out = run_python("""
        import xcuda
        try:
            xcuda.empty(4)
        except ValueError as e:
            print(e)
    """, XCUDA_DEVICE=text)
    assert f"XCUDA_DEVICE='{text}' is not a device ordinal" in out, out


def test_a_malformed_local_rank_is_refused_naming_its_variable():
    out = run_python("""
        import xcuda
        try:
            xcuda.zeros(1)
        except ValueError as e:
            print(e)
    """, SLURM_LOCALID="first")
    assert "SLURM_LOCALID='first' is not a local rank" in out and "set XCUDA_DEVICE" in out, out


def test_set_device_replaces_a_refused_choice():
    out = run_python("""
        import xcuda
        xcuda.set_device(0)
        choice = xcuda.device_choice()
        print(choice["ordinal"], choice["source"], choice["reason"])
    """, XCUDA_DEVICE="abc")
    assert "0 xcuda.set_device xcuda.set_device(0)" in out, out


def test_cuda_info_says_which_device_a_local_rank_chose_and_why():
    out = run_python("""
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "xcuda")
        shell.run_line_magic("cuda_info", "")
    """, OMPI_COMM_WORLD_LOCAL_RANK="3", SLURM_LOCALID="0")
    reason = "local rank 3 (OMPI_COMM_WORLD_LOCAL_RANK=3)"
    assert reason in out and "SLURM_LOCALID=0 ignored: OMPI_COMM_WORLD_LOCAL_RANK comes first" in out, out
    if HAS_GPU:
        assert "chosen by" in out and re.search(rf"device\s+{3 % GPU_COUNT} of {GPU_COUNT}\n", out), out
    else:
        assert "device choice   device 3: " + reason in out, out


def test_cuda_info_shows_a_refused_value_instead_of_a_device():
    out = run_python("""
        import xcuda
        print(xcuda.info())
    """, XCUDA_DEVICE="4294967296")
    assert "refused: XCUDA_DEVICE='4294967296'" in out, out
    assert "device 0" not in out, out


def test_the_default_choice_names_the_variables_it_looked_at():
    out = run_python("""
        import xcuda
        print(xcuda.device_choice())
    """)
    assert "'source': 'default'" in out, out
    assert "OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID and LOCAL_RANK" in out, out


def test_a_process_that_is_not_an_engine_never_writes_an_engine_registry(tmp_path):
    registry = tmp_path / "registry"
    out = run_python("""
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "xcuda")
        import xcuda
        choice = xcuda.device_choice()
        print(choice["engine"], choice["host_slot"], choice["registry"])
    """, XCUDA_HOST_REGISTRY=str(registry))
    assert "None None None" in out, out
    assert not registry.exists()


# ---- pickling: DeviceArray travels as a copy of its contents ------------------------------------------


def test_pickle_records_the_rebuild_function_as_xcuda_from_host():
    data = pickle.dumps(xcuda._from_host)
    assert b"xcuda" in data and b"_from_host" in data
    assert pickle.loads(data) is xcuda._from_host


@pytest.mark.nogpu
def test_a_device_array_unpickled_without_a_gpu_becomes_its_numpy_contents_with_a_warning():
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.warns(xcuda.HostFallbackWarning, match=r"shape \(2, 3\) and dtype float32.*numpy array here"):
        rebuilt = xcuda._from_host(host)
    assert isinstance(rebuilt, np.ndarray) and np.array_equal(rebuilt, host)


@pytest.mark.gpu
def test_a_device_array_pickles_as_a_copy_of_its_contents():
    host = np.arange(1000, dtype=np.float64).reshape(10, 100)
    original = xcuda.to_device(host)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a GPU is here: no fallback to numpy
        copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is xcuda.DeviceArray
    assert copy.shape == (10, 100) and copy.dtype == np.float64
    assert copy.ptr != original.ptr, "the unpickled array shares the original's memory"
    assert np.array_equal(np.asarray(copy), host)
    original.copy_from(np.zeros_like(host))
    assert np.array_equal(np.asarray(copy), host), "writing the original changed the copy"
