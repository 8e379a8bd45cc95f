"""NVRTC runs in xcuda-compile, a long-lived process beside the module (compile/compile_worker): warm after
its first request, no copy of the notebook's process per compile; a worker that dies is replaced by the next
compile. No GPU needed."""
import os
import subprocess
import sys
import textwrap

import xcuda

MODULE_DIR = os.path.dirname(xcuda.__file__)

SCRIPT = textwrap.dedent(f"""
    import os, signal, sys, time
    sys.path.insert(0, {MODULE_DIR!r})
    import xcuda

    def workers():
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{{pid}}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{{pid}}/comm") as comm:
                    name = comm.read().strip()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and name == "xcuda-compile":
                found.append(int(pid))
        return found

    def compile(tag):
        return xcuda.compile('extern "C" __global__ void k(int* x) {{ x[0] = %d; }}\\n' % tag, arch="compute_75")

    compile(1)
    first = workers()
    with open(f"/proc/{{first[0]}}/environ", "rb") as environ:
        worker_environment = environ.read().split(b"\\0")
    # Where a driver is installed, its JIT cache would skip ptxas for PTX seen before, and with it the
    # verbose report that kernel.resources reads: the worker runs with the cache off, whatever was set.
    assert b"CUDA_CACHE_DISABLE=1" in worker_environment and b"CUDA_CACHE_DISABLE=0" not in worker_environment
    compile(2)
    assert workers() == first, (first, workers())   # the same worker serves every compile
    os.kill(first[0], signal.SIGKILL)
    time.sleep(0.2)
    module = compile(3)                               # a dead worker is replaced by the next compile
    second = workers()
    print(len(first), len(second), second != first, module.origin, sorted(module.kernels))
""")


def test_one_worker_serves_every_compile_and_a_dead_one_is_replaced():
    environment = dict(os.environ, XCUDA_CACHE="0", CUDA_CACHE_DISABLE="0")
    environment.pop("XCUDA_COMPILE_PROCESS", None)
    ran = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["1", "1", "True", "nvrtc", "['k']"]


def test_the_worker_program_is_built_beside_the_module():
    worker = os.path.join(MODULE_DIR, "xcuda-compile")
    assert os.access(worker, os.X_OK), f"{worker} is missing: it is built with the module"
