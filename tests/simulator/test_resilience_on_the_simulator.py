"""The simulator's resilience end to end (issues 46 and 51), each in a child process with XCUDA_DEVICE=simulator:

- an interrupt (SIGINT, as Kernel > Interrupt sends) ends a launch that never ends with one KeyboardInterrupt
  saying how far it got, and the session keeps its device arrays and modules: the next launch runs;
- a grid of 2^31 - 1 blocks is warned about with its estimate once its first second says how long it would
  take, and the interrupt ends it too;
- no step limit unless XCUDA_SIM_MAX_STEPS sets one (then a launch past it fails naming the variable);
- the device's memory is sized from the host (or XCUDA_SIM_MEMORY), and an allocation past it is a clear
  CUDA_ERROR_OUT_OF_MEMORY, after which the session goes on;
- a kernel whose PTX the simulator cannot read is refused alone, at its launch, naming the PTX line, its
  text and the source line; the cell's other kernels run before and after.

The waits are generous and only guard against a hang: no test asserts how long anything took.
"""
import os
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

TIMEOUT = 180  # seconds: a failure condition only, never a measurement

SOURCE = r'''
extern "C" __global__ void spin(volatile int* flag, int* out)
{
    while (flag[0] >= 0) { out[1] += 1; }
}
extern "C" __global__ void add_one(int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += 1;
}
// n volatile loads a block (not folded away): a grid's time is its blocks' work, not the simulator's cost per block
extern "C" __global__ void steps(const volatile int* in, int* out, int n)
{
    int s = 0;
    for (int i = 0; i < n; ++i) { s += in[i & 63]; }
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = s;
}
extern "C" __global__ void count(long long* out, long long n)
{
    volatile long long s = 0;  // volatile: NVRTC would fold the loop into a formula, and the launch would not last
    for (long long i = 0; i < n; ++i) { s += i & 1; }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
'''

PRELUDE = textwrap.dedent(f"""
    import ctypes, faulthandler, os, signal, sys
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # Child.stacks(): where a hung child is
    import numpy as np
    import xcuda
    module = xcuda.compile({SOURCE!r}, name="resilience")
    kept = xcuda.to_device(np.arange(64, dtype=np.int32))
""")


def child_env(build_dir, **extra):
    env = dict(os.environ)
    for variable in ("XCUDA_LIBCUDA", "XCUDA_SIM_MAX_STEPS", "XCUDA_SIM_MEMORY", "XCUDA_SIM_THREADS"):
        env.pop(variable, None)
    env["XCUDA_DEVICE"] = "simulator"
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def run_child(build_dir, body, prelude=PRELUDE, **extra):
    ran = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(body)], capture_output=True, text=True,
                         timeout=TIMEOUT, env=child_env(build_dir, **extra))
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-6000:]
    return ran.stdout, ran.stderr


class Child:
    """A child whose stdout and stderr lines are read as they come, so that the test can wait for one.

    A child that does not write what is waited for, or does not end, fails the test saying what became of it:
    its return code and seconds since its start, or, still running, its Python stacks (faulthandler, on SIGUSR1,
    registered by the prelude) and its native stacks (gdb, where installed), then it is killed."""

    def __init__(self, build_dir, body, **extra):
        self.started = time.monotonic()
        self.process = subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=child_env(build_dir, **extra))
        self.lines = queue.Queue()
        self.out, self.err = [], []
        self.readers = [threading.Thread(target=self._read, args=(stream, kept), daemon=True)
                        for stream, kept in ((self.process.stdout, self.out), (self.process.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, kept):
        for line in stream:
            kept.append(line)
            self.lines.put(line)

    def wait_for(self, text, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if text in self.lines.get(timeout=1):
                    return
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    break
        raise AssertionError(f"the child never wrote {text!r}: {self.fate()}")

    def finish(self):
        try:
            self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the child did not end: the interrupt did not stop the launch: {self.fate()}")
        for reader in self.readers:
            reader.join(timeout=10)  # the readers' last lines
        return "".join(self.out), "".join(self.err), self.process.returncode

    def fate(self):
        """What became of the child, for a failure's message; a child still running is killed after its stacks."""
        code = self.process.poll()
        seconds = time.monotonic() - self.started
        if code is None:
            stacks = self.stacks()
            self.process.kill()
            code = self.process.wait()
            state = f"still running after {seconds:.0f} s, then killed (return code {code})\n{stacks}"
        else:
            state = f"ended with return code {code} after {seconds:.0f} s"
        for reader in self.readers:
            reader.join(timeout=10)
        return f"{state}\n--- stdout:\n{''.join(self.out)}\n--- stderr:\n{''.join(self.err)}"

    def stacks(self):
        """The running child's Python stacks (to its stderr) and native stacks (returned), where they can be had."""
        self.process.send_signal(signal.SIGUSR1)
        time.sleep(1)  # faulthandler writes from its signal handler
        try:
            gdb = subprocess.run(["gdb", "-p", str(self.process.pid), "-batch", "-ex", "thread apply all bt"],
                                 capture_output=True, text=True, timeout=60)
            return "--- native stacks (gdb):\n" + gdb.stdout[-20000:] + gdb.stderr[-2000:]
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"--- no native stacks: {e!r}"


def test_a_child_that_never_writes_what_is_waited_for_fails_the_test_with_its_python_and_native_stacks(build_dir):
    """The helper the tests below wait with: a hang says where the child was, not only that it wrote nothing."""
    child = Child(build_dir, """
        import time
        def waiting_in_a_named_function():
            time.sleep(600)
        waiting_in_a_named_function()
    """)
    with pytest.raises(AssertionError) as failed:
        child.wait_for("never written", timeout=10)
    text = str(failed.value)
    assert "the child never wrote 'never written': still running after " in text, text
    assert child.process.returncode == -signal.SIGKILL, text
    assert 'File "<string>", line ' in text and ' in waiting_in_a_named_function' in text, text  # faulthandler's stack
    assert "--- native stacks (gdb):" in text or "--- no native stacks:" in text, text


def test_a_child_that_ends_without_writing_what_is_waited_for_fails_the_test_with_its_return_code(build_dir):
    child = Child(build_dir, "os._exit(3)")
    with pytest.raises(AssertionError) as failed:
        child.wait_for("never written")
    assert "the child never wrote 'never written': ended with return code 3 after " in str(failed.value), failed.value


@pytest.mark.parametrize("threads", ["1", "2"])
def test_an_interrupt_ends_an_endless_launch_with_one_KeyboardInterrupt_and_the_session_keeps_its_state(
        build_dir, threads):
    child = Child(build_dir, """
        flag = xcuda.to_device(np.zeros(1, dtype=np.int32))
        out = xcuda.to_device(np.zeros(2, dtype=np.int32))
        print("launching", flush=True)
        try:
            module.spin[4, 64](flag, out)
        except KeyboardInterrupt as e:
            print("interrupted:", e, flush=True)
        module.add_one[1, 64](kept, 64)
        assert (kept.copy_to_host() == np.arange(64) + 1).all(), kept.copy_to_host()
        print("the session went on", flush=True)
    """, XCUDA_SIM_THREADS=threads)
    child.wait_for("launching")
    time.sleep(1.0)  # into the launch: a SIGINT before it would stop the Python code before it instead
    child.process.send_signal(signal.SIGINT)
    out, err, code = child.finish()
    assert code == 0, out + err
    assert "interrupted: the launch of kernel 'spin' on the PTX simulator was stopped by an interrupt after " in out, out
    assert "device arrays, modules and the session are kept" in out, out
    assert "the session went on" in out, out
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_threads_that_allocate_copy_and_launch_while_the_main_threads_long_launch_is_watched_all_finish(build_dir):
    """The watch takes the GIL on the launching thread while the simulator lets go of its lock; a thread that
    holds the GIL and calls the simulator meanwhile (allocations, copies, launches) waits for the grid, not
    for the GIL, so nothing deadlocks (a hang fails the test at its timeout), and every result is right."""
    out, _ = run_child(build_dir, """
        import threading
        results = xcuda.to_device(np.zeros(64, dtype=np.int64))
        errors, done = [], []
        def other(k):
            try:
                for _ in range(20):
                    a = xcuda.to_device(np.full(1000, k, dtype=np.int32))
                    module.add_one[4, 256](a, 1000)
                    assert (a.copy_to_host() == k + 1).all()
                done.append(k)
            except Exception as e:
                errors.append(repr(e))
        threads = [threading.Thread(target=other, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        module.count[1, 64](results, 30000000)  # about 2 s on 2 cores: the other threads run inside it
        for t in threads:
            t.join()
        print("errors", errors, "done", sorted(done))
        print("sums", set(results.copy_to_host().tolist()))
    """)
    assert "errors [] done [0, 1, 2]" in out, out
    assert "sums {15000000}" in out, out


def test_a_grid_of_two_billion_blocks_is_warned_about_with_its_estimate_and_an_interrupt_ends_it(build_dir):
    # The warning needs an estimate over ten minutes whatever the host: 65,536 steps a block are about 2.5 ms of a
    # core on the simulator (2026-12-07), so 2^31 - 1 blocks would take hours even on 256 host threads. A block of
    # `touch` (one store) takes about 0.14 us: its grid took 2.5 to 10 minutes on two cores, by their load, and a
    # quiet host never warned about it (the CI failures of 2026-12-07, docs/testing.md).
    child = Child(build_dir, """
        sink = xcuda.to_device(np.zeros(1, dtype=np.int32))
        try:
            module.steps[2147483647, 1](kept, sink, 65536)
        except KeyboardInterrupt as e:
            print("interrupted:", e, flush=True)
        print("done", flush=True)
    """)
    child.wait_for("would take about")
    child.process.send_signal(signal.SIGINT)
    out, err, code = child.finish()
    assert code == 0, out + err
    assert "kernel 'steps' on the PTX simulator: 2,147,483,647 blocks at about " in err, err
    assert "Kernel > Interrupt (Ctrl-C) stops it" in err, err
    assert "interrupted: the launch of kernel 'steps' on the PTX simulator was stopped by an interrupt" in out, out
    assert "of 2147483647 blocks" in out, out


def test_without_XCUDA_SIM_MAX_STEPS_a_launch_has_no_step_limit(build_dir):
    out, _ = run_child(build_dir, """
        module.add_one[1, 64](kept, 64)  # loads the simulator
        sim = ctypes.CDLL(os.path.join(os.path.dirname(xcuda._core.__file__), "libxcuda-sim.so"), mode=os.RTLD_NOLOAD)
        sim.xcuda_sim_counter.restype = ctypes.c_ulonglong
        print("limit", sim.xcuda_sim_counter(b"step_limit"))
    """)
    assert "limit 0" in out, out


def test_XCUDA_SIM_MAX_STEPS_stops_an_endless_launch_naming_itself_and_the_session_goes_on(build_dir):
    out, _ = run_child(build_dir, """
        flag = xcuda.to_device(np.zeros(1, dtype=np.int32))
        out = xcuda.to_device(np.zeros(2, dtype=np.int32))
        try:
            module.spin[1, 32](flag, out)
        except xcuda.CudaError as e:
            print("stopped:", e)
        module.add_one[1, 64](kept, 64)
        print("next", kept.copy_to_host()[:3])
    """, XCUDA_SIM_MAX_STEPS="200000")
    assert "ran more than 200000 warp-instructions on one host thread and was stopped by XCUDA_SIM_MAX_STEPS" in out, out
    assert "next [1 2 3]" in out, out


def test_XCUDA_SIM_MEMORY_sizes_the_device_and_an_allocation_past_it_is_a_clear_out_of_memory_error(build_dir):
    out, _ = run_child(build_dir, """
        free, total = xcuda.memory_info()
        print("total", total, "free", free)
        try:
            big = xcuda.empty(100 << 20, dtype=np.uint8)
        except xcuda.CudaError as e:
            print("refused:", e)
        small = xcuda.zeros(1 << 20, dtype=np.uint8)
        module.add_one[1, 64](kept, 64)
        print("next", kept.copy_to_host()[:2], small.nbytes)
    """, XCUDA_SIM_MEMORY="64M")
    assert f"total {64 << 20} " in out, out
    assert "refused:" in out and "CUDA_ERROR_OUT_OF_MEMORY" in out, out
    assert "the simulated device has 0.1 GiB (XCUDA_SIM_MEMORY)" in out, out
    assert f"next [1 2] {1 << 20}" in out, out


def test_by_default_the_device_is_at_most_half_the_hosts_memory_and_more_is_refused(build_dir):
    with open("/proc/meminfo") as info:
        host = next(int(line.split()[1]) * 1024 for line in info if line.startswith("MemTotal:"))
    out, _ = run_child(build_dir, """
        free, total = xcuda.memory_info()
        print("total", total)
        try:
            xcuda.empty(total + 1, dtype=np.uint8)
        except xcuda.CudaError as e:
            print("refused:", e)
    """)
    total = int(out.split("total ")[1].split()[0])
    assert 64 << 20 <= total <= host // 2, (total, host)
    assert "refused:" in out and "CUDA_ERROR_OUT_OF_MEMORY" in out, out
    assert "of this host's" in out or "what the host had available" in out, out


def test_an_XCUDA_SIM_MEMORY_that_is_not_a_size_is_named_at_the_first_device_use(build_dir):
    out, _ = run_child(build_dir, """
        import numpy as np
        import xcuda
        try:
            xcuda.empty(16, dtype=np.uint8)
        except xcuda.CudaError as e:
            print("refused:", e)
    """, prelude="", XCUDA_SIM_MEMORY="lots")
    assert "refused:" in out and "XCUDA_SIM_MEMORY='lots' is not a size: write the simulated device's memory in " \
        "bytes, or with K, M or G" in out, out


def test_a_kernel_whose_ptx_the_simulator_cannot_read_is_refused_alone_and_the_cells_other_kernels_run(build_dir):
    out, _ = run_child(build_dir, """
        cell = xcuda.compile(r'''
        extern "C" __global__ void odd(int* out)
        {
            asm volatile("{ .reg .v2 .f32 vector; }");  // valid PTX the simulator does not read
            out[threadIdx.x] = 7;
        }
        extern "C" __global__ void fine(int* out) { out[threadIdx.x] = 3 * threadIdx.x; }
        ''', name="partly_readable")
        d = xcuda.to_device(np.zeros(32, dtype=np.int32))
        cell.fine[1, 32](d)
        try:
            cell.odd[1, 32](d)
        except xcuda.CudaError as e:
            print("refused:", e)
        cell.fine[1, 32](d)
        print("fine", d.copy_to_host()[:4])
    """)
    assert "CUDA_ERROR_NOT_SUPPORTED" in out, out
    assert "the simulator cannot run kernel 'odd': its PTX it could not read" in out, out
    assert "(PTX line " in out and ".reg .v2 .f32 vector" in out, out
    assert re.search(r"\bline 4\)", out), out  # the asm's line in the compiled source, as xcuda names it
    assert "fine [0 3 6 9]" in out, out
