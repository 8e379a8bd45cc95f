"""NVRTC runs in xcuda-compile, a long-lived process beside the module (compile/compile_worker): warm after
its first request, no copy of the notebook's process per compile; a worker that dies is replaced by the next
compile. No GPU needed."""
import os
import subprocess
import sys
import textwrap

import xcuda
from conftest import SLOW_SOURCE

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

    where = xcuda.compile_process()
    assert where["mode"] == "worker" and where["program"] == os.path.join({MODULE_DIR!r}, "xcuda-compile"), where
    compile(1)
    first = workers()
    assert xcuda.compile_process()["pid"] == first[0], (xcuda.compile_process(), first)
    assert xcuda.compile_process()["starts"] == 1, xcuda.compile_process()
    cache = [t for t in xcuda.status().tables if t["title"] == "Compile cache"][0]
    assert cache["columns"][-1] == "NVRTC runs in" and cache["rows"][0][-1] == f"xcuda-compile (pid {{first[0]}})", cache
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
    assert xcuda.compile_process()["pid"] == second[0], (xcuda.compile_process(), second)
    assert xcuda.compile_process()["starts"] == 2, xcuda.compile_process()
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


WHERE_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import xcuda
    module = xcuda.compile('extern "C" __global__ void k(int* x) { x[0] = 1; }\\n', arch="compute_75")
    where = xcuda.compile_process()
    print(where["mode"], where["program"], where["pid"], where["starts"], module.origin,
          xcuda.__file__.startswith(sys.argv[1]))
""")


def test_compile_process_says_a_fork_without_the_worker_and_in_process_when_asked(tmp_path):
    # The module folder again, without xcuda-compile: a fork of the process per compile.
    (tmp_path / "xcuda").mkdir()
    for entry in os.listdir(MODULE_DIR):
        if entry != "xcuda-compile":
            (tmp_path / "xcuda" / entry).symlink_to(os.path.join(MODULE_DIR, entry))
    environment = dict(os.environ, XCUDA_CACHE="0")
    environment.pop("XCUDA_COMPILE_PROCESS", None)

    def where(folder, **extra):
        ran = subprocess.run([sys.executable, "-c", WHERE_SCRIPT, str(folder)], capture_output=True, text=True,
                             env=dict(environment, **extra), timeout=120)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout.split()

    assert where(tmp_path) == ["fork", "None", "None", "0", "nvrtc", "True"]
    assert where(os.path.dirname(MODULE_DIR), XCUDA_COMPILE_PROCESS="0") == ["in-process", "None", "None", "0",
                                                                             "nvrtc", "True"]


THREADS_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    sys.path.insert(0, sys.argv[1])
    import xcuda

    slow = sys.argv[2]  # conftest.SLOW_SOURCE: a compile of many seconds
    seen, errors, compiled = [], [], []

    def compiles(tag):
        try:
            for round in range(3):
                source = 'extern "C" __global__ void k(int* x) { x[0] = %d; }\\n' % (tag * 10 + round)
                compiled.append(xcuda.compile(source, arch="compute_75").origin)
        except Exception as error:
            errors.append(repr(error))

    def asks():
        try:
            for _ in range(300):
                seen.append((lambda where: (where["mode"], where["pid"], where["starts"]))(xcuda.compile_process()))
        except Exception as error:
            errors.append(repr(error))

    threads = [threading.Thread(target=compiles, args=(tag,)) for tag in range(4)]
    threads += [threading.Thread(target=asks) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pid = xcuda.compile_process()["pid"]
    # While a long compile runs in another thread, compile_process() answers (it does not wait for it).
    starting = threading.Event()
    long_compile = threading.Thread(target=lambda: (starting.set(), xcuda.compile(slow, arch="compute_75")))
    long_compile.start()
    starting.wait()
    time.sleep(0.3)  # into the compile (seconds long): not a timing assertion, only an order of events
    during = xcuda.compile_process()
    still_compiling = long_compile.is_alive()
    long_compile.join()
    print(len(errors), errors[:1], len(compiled), set(compiled), len(seen),
          all(mode == "worker" and got in (None, pid) and starts in (0, 1) for mode, got, starts in seen),
          during["pid"] == pid, still_compiling)
""")


def test_compile_process_from_several_threads_while_they_compile():
    environment = dict(os.environ, XCUDA_CACHE="0")
    environment.pop("XCUDA_COMPILE_PROCESS", None)
    ran = subprocess.run([sys.executable, "-c", THREADS_SCRIPT, os.path.dirname(MODULE_DIR), SLOW_SOURCE],
                         capture_output=True, text=True, env=environment, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["0", "[]", "12", "{'nvrtc'}", "1200", "True", "True", "True"], ran.stdout
