"""Kernel > Interrupt outside a compile: during compile-cache disk hits, module loads and staged copies of
pageable numpy arrays, the cell ends with KeyboardInterrupt and the session goes on, in the xcuda kernel and
in ipykernel with `%load_ext xcuda`. (Interrupts during NVRTC compiles: test_compile_interrupts.py; during
GPU waits: test_reliability.py, on a GPU.)

No GPU needed: the kernels run against the fake driver (tests/fake_driver, XCUDA_LIBCUDA), which loads
modules and copies through xcuda's page-locked staging buffers as a driver would, so the loop below spends
its time in exactly those places: reading and checking a cache entry, loading its module, and the staging
threads' copies.
"""
import os
import subprocess
import sys

import pytest
from jupyter_client.manager import start_new_kernel

from conftest import BUILD, execute_asking_again, interrupted_reply, text_of

DELAYS = (0.05, 0.3, 0.8)
PER_ROUND = 100
SOURCES = PER_ROUND * len(DELAYS)
# A fresh source each, so that each is a disk hit (and a module load) in a new process; each interrupted
# round has sources of its own, so that every round starts with disk hits.
SOURCE = 'extern "C" __global__ void k{i}(float* x, int n) {{ int j = threadIdx.x; if (j < n) x[j] = {i}.0f; }}\n'
SETUP = "import numpy as np, xcuda\nbig = np.arange(6 * 1024 * 1024, dtype=np.float32)  # 24 MiB: staged copies"
# The round's sources again and again for a minute: how long one pass takes depends on the machine (a
# fast one ran 200 copies in under 0.8 s, so that the interrupt came after the cell had ended), but only a
# lost interrupt lets the cell end by itself.
LOOP = """
import time
i = -1
end = time.monotonic() + 60
while time.monotonic() < end:
    for i in range({first}, {first} + {per_round}):
        m = xcuda.compile({source!r}.format(i=i), name=f"hit{{i}}")  # a disk hit, and its module loaded
        d = xcuda.to_device(big)
        d.copy_to_host(out=big)
"""


@pytest.fixture(scope="module")
def warm_disk_cache(tmp_path_factory, fake_driver):
    """A private cache folder that holds every source of the loop, filled by another process."""
    folder = tmp_path_factory.mktemp("interrupt-cache")
    folder.chmod(0o700)
    environment = dict(os.environ, XCUDA_CACHE_DIR=str(folder), XCUDA_LIBCUDA=str(fake_driver))
    fill = ("import xcuda\n"
            f"for i in range({SOURCES}):\n"
            f"    assert xcuda.compile({SOURCE!r}.format(i=i), name=f'hit{{i}}').origin == 'nvrtc'\n")
    ran = subprocess.run([sys.executable, "-c", fill], env=environment, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    return environment


@pytest.fixture(scope="module")
def fake_driver():
    library = BUILD / "lib" / "libxcuda_fake_cuda.so"
    if not library.exists():
        pytest.fail(f"{library} was not built: configure with -DXCUDA_BUILD_TESTS=ON")
    return library


@pytest.mark.parametrize("kernel_name", ["xcuda", "python3"])
def test_interrupts_during_disk_hits_module_loads_and_staged_copies_end_the_cell(kernel_name, warm_disk_cache):
    manager, client = start_new_kernel(kernel_name=kernel_name, startup_timeout=60, env=warm_disk_cache)
    try:
        if kernel_name == "python3":
            reply, _ = execute_asking_again(client, "%load_ext xcuda")
            assert reply["status"] == "ok", reply
        reply, _ = execute_asking_again(client, SETUP)
        assert reply["status"] == "ok", reply
        # The interrupts come early in the loop, at several moments.
        stopped_at = []
        for round_, delay in enumerate(DELAYS):
            loop = LOOP.format(first=round_ * PER_ROUND, per_round=PER_ROUND, source=SOURCE)
            reply = interrupted_reply(manager, client, loop, delay)
            assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", (delay, reply)
            assert manager.is_alive()
            reply, messages = execute_asking_again(client, f"print('alive after {delay}: at', i)")
            assert reply["status"] == "ok" and f"alive after {delay}: at" in text_of(messages), (delay, reply)
            stopped_at.append(int(text_of(messages).split("at")[-1]))
        # Each interrupt came inside its round's loop, not before it.
        assert all(r * PER_ROUND <= at < (r + 1) * PER_ROUND for r, at in enumerate(stopped_at)), stopped_at
        # Nothing half-done is left: the cache answers from disk, copies are exact, the staging works on.
        check = ("import numpy as np, xcuda\n"
                 f"m = xcuda.compile({SOURCE!r}.format(i={SOURCES - 1}), name='last')\n"
                 "a = np.random.default_rng(0).random(6 * 1024 * 1024).astype(np.float32)\n"
                 "b = np.empty_like(a)\n"
                 "xcuda.to_device(a).copy_to_host(out=b)\n"
                 "print('origin', m.origin, 'exact', bool((a == b).all()), xcuda.transfer_stats()['copies']['staged'] > 0)")
        reply, messages = execute_asking_again(client, check)
        assert reply["status"] == "ok", reply
        assert "exact True True" in text_of(messages), text_of(messages)
        assert "origin disk" in text_of(messages) or "origin memory" in text_of(messages), text_of(messages)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
