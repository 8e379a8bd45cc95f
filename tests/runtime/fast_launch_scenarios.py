"""The launch fast path (magics/python/py_fast_launch.cpp) against the fake driver, each scenario in a process of
its own (tests/runtime/test_fast_launch.py runs them, with either way of passing arguments).

A Launcher's call whose argument types were seen in an earlier successful launch is converted by the steps
kept for those types; every other call goes the general path, which then learns the types. These scenarios
change the types between calls (Python float and int scalars, DeviceArrays, numpy arrays, numpy scalars) and
check every result against numpy, that what the types do not tell (a DeviceArray's element type, an int's
range) is still checked on a hit, that a capture still captures, and the same from several threads at once.
The fake's saxpy computes out[i] = a * x[i] + y[i] on the host.

    python3 tests/runtime/fast_launch_scenarios.py NAME     # exits 0 when the scenario holds
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xcuda  # noqa: E402
from thread_runs import run_in_threads  # noqa: E402  (tests/thread_runs.py)

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
"""
N = 64


def raises(error_type, fragment, call):
    try:
        call()
    except error_type as error:
        assert fragment in str(error), (fragment, str(error))
        return
    raise AssertionError(f"expected {error_type.__name__} ({fragment})")


def saxpy_kernel(name):
    return xcuda.compile(SOURCE, name=name).saxpy


def launch_and_check(saxpy, a, x, y, out, n, host_x, host_y):
    """One launch; the result read back (from the DeviceArray or the numpy array) against numpy."""
    saxpy[1, 128](a, x, y, out, n)
    got = out.copy_to_host() if isinstance(out, xcuda.DeviceArray) else out
    expected = np.float32(a) * host_x + host_y
    # atol: a GPU's a * x + y is one fused multiply-add, numpy rounds twice (a result near 0 differs by an ulp of a * x)
    assert np.allclose(got[:n], expected[:n], rtol=1e-6, atol=1e-6), (a, type(x).__name__, got[:4], expected[:4])


def learned_saxpy(name):
    """A saxpy kernel launched twice with (float, 3 DeviceArrays, int): its one type signature learned and hit;
    the kernel, the host inputs and the device arrays."""
    saxpy = saxpy_kernel(name)
    hx = np.arange(N, dtype=np.float32)
    hy = np.ones(N, np.float32)
    dx, dy, dout = xcuda.to_device(hx), xcuda.to_device(hy), xcuda.empty(N, np.float32)
    launch_and_check(saxpy, 2.0, dx, dy, dout, N, hx, hy)
    launch_and_check(saxpy, 2.0, dx, dy, dout, N, hx, hy)
    assert saxpy._fast_launch_types == 1
    return saxpy, hx, hy, dx, dy, dout


def changing_types_hit_and_miss():
    """Each new type signature is learned once (the count of known signatures says so); a repeat is a hit
    with the new values; types the fast path does not convert go the general path every time."""
    saxpy = saxpy_kernel("fast_changing_types")
    rng = np.random.default_rng(1)
    hx, hy = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
    dx, dy, dout = xcuda.to_device(hx), xcuda.to_device(hy), xcuda.empty(N, np.float32)
    assert saxpy._fast_launch_types == 0
    for a in (2.0, 3.5, -1.25):  # float, DeviceArrays, int: learned at the first launch, hits after it
        launch_and_check(saxpy, a, dx, dy, dout, N, hx, hy)
        assert saxpy._fast_launch_types == 1
    launch_and_check(saxpy, 3, dx, dy, dout, N, hx, hy)  # an int for the float: a new signature
    assert saxpy._fast_launch_types == 2
    launch_and_check(saxpy, 5, dx, dy, dout, N // 2, hx, hy)
    assert saxpy._fast_launch_types == 2
    host_out = np.zeros(N, np.float32)
    for _ in range(2):  # numpy arrays: copied in and out by the general path, never learned
        launch_and_check(saxpy, 2.0, hx, hy, host_out, N, hx, hy)
        assert saxpy._fast_launch_types == 2
    launch_and_check(saxpy, np.float32(1.5), dx, dy, dout, N, hx, hy)  # a numpy scalar: the general path
    assert saxpy._fast_launch_types == 2
    launch_and_check(saxpy, 0.5, dx, hy, dout, N, hx, hy)  # DeviceArray and numpy mixed: the general path
    launch_and_check(saxpy, 4.0, dx, dy, dout, N, hx, hy)  # back to a known signature
    assert saxpy._fast_launch_types == 2
    # Another kernel object has a cache of its own; a second Launcher of this kernel shares this one.
    launch_and_check(saxpy_kernel("fast_changing_types_other"), 2.0, dx, dy, dout, N, hx, hy)
    saxpy[2, 64](2.0, dx, dy, dout, N)
    assert saxpy._fast_launch_types == 2


def changed_values_are_still_checked():
    """A known type signature with a value its steps do not accept (another element type in a DeviceArray,
    an int out of range, a float overflowing float32) gets the general path's error, never a launch with
    the wrong value."""
    saxpy, hx, hy, dx, dy, dout = learned_saxpy("fast_checked")
    ints = xcuda.to_device(np.arange(N, dtype=np.int32))
    raises(TypeError, "parameter 1 'x' (const float*) needs float32 elements, got a DeviceArray of int32",
           lambda: saxpy[1, 128](2.0, ints, dy, dout, N))
    raises(TypeError, "parameter 3 'out' (float*) needs float32 elements, got a DeviceArray of float64",
           lambda: saxpy[1, 128](2.0, dx, dy, xcuda.empty(N, np.float64), N))
    raises(ValueError, "parameter 4 'n' (size_t): -1 does not fit in uint64", lambda: saxpy[1, 128](2.0, dx, dy, dout, -1))
    raises(ValueError, "does not fit in any 64-bit integer", lambda: saxpy[1, 128](2.0, dx, dy, dout, 1 << 64))
    raises(ValueError, "parameter 0 'a' (float): 1e+39 overflows float32", lambda: saxpy[1, 128](1e39, dx, dy, dout, N))
    raises(TypeError, "parameter 0 'a' (float) takes a number, got str", lambda: saxpy[1, 128]("2", dx, dy, dout, N))
    raises(TypeError, "takes 5 arguments, got 4", lambda: saxpy[1, 128](2.0, dx, dy, dout))
    assert saxpy._fast_launch_types == 1  # a refused call teaches nothing
    launch_and_check(saxpy, 2.0, dx, dy, dout, N, hx, hy)  # and the known signature still launches right


def views_ints_and_bad_blocks_on_a_hit():
    """On a known type signature: an offset view (a DeviceArray too) passes the address of its first element
    (the hit leaves views to the general path), ints of one digit (read inline) and of several pass their
    exact values, and a block over the device's limit is refused on every call, not only on the first (the
    Launcher remembers only dims that were validated and launched)."""
    saxpy, hx, hy, dx, dy, dout = learned_saxpy("fast_views")
    dout.copy_from(np.zeros(N, np.float32))
    saxpy[1, 128](2.0, dx[8:], dy[8:], dout[8:], N - 8)
    got = dout.copy_to_host()
    assert np.allclose(got[8:], 2.0 * hx[8:] + hy[8:]) and not got[:8].any(), got[:12]
    for n in (0, 1, 17, N):  # size_t n from one-digit ints: exactly n elements written
        dout.copy_from(np.zeros(N, np.float32))
        saxpy[1, 128](2.0, dx, dy, dout, n)
        got = dout.copy_to_host()
        assert np.allclose(got[:n], 2.0 * hx[:n] + hy[:n]) and not got[n:].any(), (n, got[:20])
    for a in (0, 3, -7, 2 ** 40, -(2 ** 40) - 8):  # int for the float a: one digit and several, both signs
        launch_and_check(saxpy, a, dx, dy, dout, N, hx, hy)
    assert saxpy._fast_launch_types == 2  # (float, ...) and (int, ...)
    for _ in range(2):
        raises(ValueError, "exceeds", lambda: saxpy[1, 4096](2.0, dx, dy, dout, N))
    launch_and_check(saxpy, 2.0, dx, dy, dout, N, hx, hy)


def same_arrays_remembered_only_while_they_hold():
    """A hit with the same DeviceArray objects as the last call reuses their addresses (py_fast_launch.hpp's
    memo) only while that is right: a new DeviceArray at the object address of one that went gets its own
    memory (Python's allocator hands the object's address on, checked here; a view of the old array keeps
    its memory allocated, so the new one's differs and the old address would be written without a fault),
    and after the session closed the same objects get the general path's error, not a launch."""
    saxpy, hx, hy, dx, dy, dout = learned_saxpy("fast_memo")
    reused, kept = 0, []
    for step in range(40):
        gone, address = id(dout), dout.__cuda_array_interface__["data"][0]
        kept.append(dout[0:])  # a view keeps the memory: the new array cannot get it, a stale address is valid
        del dout
        # A new array takes the departed object's address only now and then (other objects of its size are made
        # between): new ones are made, and kept meanwhile, until one takes it (or 64 tried); the others go
        # before the launch, which changes nothing the memo may rely on (a departure is a departure).
        others = []
        for _ in range(64):
            dout = xcuda.zeros(N, np.float32)
            if id(dout) == gone:
                break
            others.append(dout)
        del others
        reused += id(dout) == gone and dout.__cuda_array_interface__["data"][0] != address
        launch_and_check(saxpy, 3.0, dx, dy, dout, N, hx, hy)
        launch_and_check(saxpy, 3.0, dx, dy, dout, N, hx, hy)  # (the memo's hit)
    assert reused, ("no new DeviceArray took a departed one's object address with other memory: the memo's "
                    "identity check went untested")
    xcuda._shutdown()
    for _ in range(2):
        raises(xcuda.SessionClosedError, "the CUDA session that held it was closed",
               lambda: saxpy[1, 128](2.0, dx, dy, dout, N))


def same_scalars_remembered_only_while_held():
    """A call with the very same argument objects as the last one copies the block that call filled
    (py_fast_launch.hpp's call memo). It holds the scalars it compares (a float freed and another made at its
    address would otherwise pass as the same value) and lets go of each when another call replaces it, and it
    never holds a DeviceArray (whose device memory must go when the caller lets it go). The floats are made by
    arithmetic, a new object each time, and the loop drops each before making the next: the float free list
    hands the departed one's address to the next, so a memo that did not hold it would launch a stale value.
    Calls that keep missing it fill it only now and then: their results are still their own."""
    saxpy, hx, hy, dx, dy, dout = learned_saxpy("fast_call_memo")
    arrays_before = [sys.getrefcount(array) for array in (dx, dy, dout)]
    k = 3
    probe = k * 0.25
    departed = id(probe)
    del probe
    probe = (k + 1) * 0.25
    assert id(probe) == departed, "this interpreter's floats do not take a departed one's address: the check is moot"
    del probe
    for step in range(200):
        a = step * 0.25                       # a new float object each time (one allocation)
        n = N - 1                             # (the same object every time: the small-int cache)
        dout.copy_from(np.zeros(N, np.float32))
        saxpy[1, 128](a, dx, dy, dout, n)
        saxpy[1, 128](a, dx, dy, dout, n)     # the call memo's hit
        got = dout.copy_to_host()
        expected = np.float32(a) * hx + hy
        assert np.allclose(got[:n], expected[:n], rtol=1e-6, atol=1e-6) and not got[n:].any(), (step, a, got[:4])
        del a
    # One launch per new float: past two calls without a hit, the memo is filled only every 32nd call, and the
    # objects it still holds meanwhile must not match: every result is the call's own value.
    for step in range(100):
        a = step * 0.5 + 0.125
        saxpy[1, 128](a, dx, dy, dout, N)
        got = dout.copy_to_host()
        assert np.allclose(got, np.float32(a) * hx + hy, rtol=1e-6, atol=1e-6), ("a single call", step, a, got[:4])
        del a
    # Then the same objects again: within 32 calls the memo takes them (and holds the float), and hits.
    warm = 0.75 * N
    before = sys.getrefcount(warm)
    for _ in range(33):
        saxpy[1, 128](warm, dx, dy, dout, N)
    assert sys.getrefcount(warm) == before + 1, "after calls that kept missing, the memo took the same objects again"
    previous = previous_count = None
    for step in range(20):
        a = 0.5 + step
        before = sys.getrefcount(a)           # its name and getrefcount's argument
        saxpy[1, 128](a, dx, dy, dout, N)
        saxpy[1, 128](a, dx, dy, dout, N)     # (a hit: the next call's miss is remembered again)
        assert sys.getrefcount(a) == before + 1, ("the memo holds the float it compares", step)
        if previous is not None:
            assert sys.getrefcount(previous) == previous_count, ("the memo let go of the float it replaced", step)
        previous, previous_count = a, before
    assert [sys.getrefcount(array) for array in (dx, dy, dout)] == arrays_before, "a DeviceArray was held"
    assert saxpy._fast_launch_types == 1


def memo_from_threads_with_departures():
    """4 threads x 80 launches of one kernel at once, each on arrays of its own, each replacing its output array
    every fifth launch (a view keeps the old one's memory allocated): the type signature's memo of the last
    arrays passes from thread to thread and sees DeviceArrays go in all of them; every result lands in the
    launching thread's current array."""
    saxpy = saxpy_kernel("fast_memo_threads")

    def work(thread):
        hx = np.arange(N, dtype=np.float32) + thread
        hy = np.full(N, thread, np.float32)
        dx, dy, dout = xcuda.to_device(hx), xcuda.to_device(hy), xcuda.zeros(N, np.float32)
        kept = []
        for launch in range(80):
            if launch % 5 == 4:
                kept.append(dout[0:])
                dout = xcuda.zeros(N, np.float32)
            launch_and_check(saxpy, float(thread + 1), dx, dy, dout, N, hx, hy)

    run_in_threads(work, 4)
    assert saxpy._fast_launch_types == 1


def call_memo_from_threads():
    """4 threads x 150 launches of one kernel at once, each repeating the very same objects of its own (its float,
    its arrays, its n) so that the call memo hits, with a thread switch allowed between any two bytecodes: the
    memo passes from thread to thread, each thread's call replacing another's objects, and every result lands in
    the launching thread's output with its own values. Two threads pass one float object (their calls differ in
    the arrays alone); the other two make a new float every seventh launch."""
    saxpy = saxpy_kernel("fast_call_memo_threads")
    shared = 0.5 + 2 * 1.25
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def work(thread):
        hx = np.arange(N, dtype=np.float32) * (thread + 1)
        hy = np.full(N, thread, np.float32)
        dx, dy, dout = xcuda.to_device(hx), xcuda.to_device(hy), xcuda.zeros(N, np.float32)
        zeros = np.zeros(N, np.float32)
        a = shared if thread < 2 else 0.5 + thread * 1.25
        n = N - thread % 2  # (threads 0 and 1 also differ in n: one digit, from the small-int cache)
        for launch in range(150):
            if thread >= 2 and launch % 7 == 6:
                a = a + 1.0
            dout.copy_from(zeros)  # (a launch that went elsewhere leaves zeros, not the last launch's result)
            saxpy[1, 128](a, dx, dy, dout, n)
            got = dout.copy_to_host()
            assert np.allclose(got[:n], np.float32(a) * hx[:n] + hy[:n], rtol=1e-6, atol=1e-6), (thread, launch, a,
                                                                                              got[:4])

    try:
        run_in_threads(work, 4)
    finally:
        sys.setswitchinterval(interval)
    assert saxpy._fast_launch_types == 1


def capture_of_a_known_signature():
    """A launch whose types are known, made inside `with xcuda.graph()`, is the graph's node (the fast path
    leaves captures to the general path); replaying the graph computes it again."""
    saxpy, hx, hy, dx, dy, dout = learned_saxpy("fast_capture")
    with xcuda.graph() as g:
        saxpy[1, 128](3.0, dx, dy, dout, N)
    assert len(g) == 1 and g.nodes[0]["kernel"] == "saxpy", g.nodes
    dout.copy_from(np.zeros(N, np.float32))
    g.launch()
    xcuda.synchronize()
    assert np.allclose(dout.copy_to_host(), 3.0 * hx + hy)
    launch_and_check(saxpy, 4.0, dx, dy, dout, N, hx, hy)


def threads_with_changing_types():
    """4 threads x 60 launches of one kernel at once, each thread cycling through argument types (float and
    int scalars, DeviceArrays, numpy arrays) with values of its own, and a wrong element type now and then:
    every result is the thread's own and every wrong call raises."""
    saxpy = saxpy_kernel("fast_threads")

    def work(thread):
        rng = np.random.default_rng(100 + thread)
        hx = rng.random(N, dtype=np.float32) + thread
        hy = rng.random(N, dtype=np.float32) - thread
        dx, dy = xcuda.to_device(hx), xcuda.to_device(hy)
        dout = xcuda.empty(N, np.float32)
        ints = xcuda.to_device(np.arange(N, dtype=np.int32))
        for launch in range(60):
            a = [float(thread + 1), thread + 2, float(launch)][launch % 3]
            if launch % 4 == 3:
                host_out = np.zeros(N, np.float32)
                launch_and_check(saxpy, a, hx, hy, host_out, N, hx, hy)
            else:
                launch_and_check(saxpy, a, dx, dy, dout, N - thread, hx, hy)
            if launch % 10 == 9:
                raises(TypeError, "needs float32 elements, got a DeviceArray of int32",
                       lambda: saxpy[1, 128](a, ints, dy, dout, N))

    run_in_threads(work, 4)
    assert saxpy._fast_launch_types == 2  # (float, arrays, int) and (int, arrays, int)


KINDS = r"""
extern "C" __global__ void kinds(double a, int b, unsigned c, const float* x, float* out, float* extra, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = (float)(a * x[i] + b + c); out[i] = v; if (extra) extra[i] = -v; }
}
"""


def none_and_scalar_kinds_on_the_simulator():
    """On the PTX simulator (XCUDA_DEVICE=simulator), which runs the kernel itself: None for a pointer, a
    double, a signed and an unsigned int, each signature learned once and hit after, with results against
    numpy, from 3 threads at once."""
    kinds = xcuda.compile(KINDS, name="fast_kinds").kinds
    hx = np.arange(N, dtype=np.float32) / 8

    def check(a, b, c, extra, n, dx, dout):
        kinds[1, N](a, b, c, dx, dout, extra, n)
        expected = (a * hx.astype(np.float64) + b + c).astype(np.float32)
        assert np.allclose(dout.copy_to_host()[:n], expected[:n]), (a, b, c)
        if extra is not None:
            assert np.allclose(extra.copy_to_host()[:n], -expected[:n]), (a, b, c)

    def work(thread):
        dx, dout, dextra = xcuda.to_device(hx), xcuda.empty(N, np.float32), xcuda.empty(N, np.float32)
        for launch in range(6):
            check(0.5 * launch + thread, -thread, 3, None, N - launch, dx, dout)  # None: a null pointer
            check(2.0, launch, thread + 1, dextra, N, dx, dout)                  # a DeviceArray there instead
            check(thread + 1, 2, 0, None, N, dx, dout)                           # an int for the double
        raises(ValueError, "parameter 2 'c' (unsigned): -1 does not fit in uint32",
               lambda: kinds[1, N](1.0, 1, -1, dx, dout, None, N))
        raises(ValueError, "parameter 1 'b' (int): 2147483648 does not fit in int32",
               lambda: kinds[1, N](1.0, 1 << 31, 1, dx, dout, None, N))

    run_in_threads(work, 3)
    assert kinds._fast_launch_types == 3


SCENARIOS = {f.__name__: f for f in (changing_types_hit_and_miss, changed_values_are_still_checked,
                                     views_ints_and_bad_blocks_on_a_hit, same_arrays_remembered_only_while_they_hold,
                                     capture_of_a_known_signature, threads_with_changing_types,
                                     memo_from_threads_with_departures, same_scalars_remembered_only_while_held,
                                     call_memo_from_threads)}
ON_THE_SIMULATOR = {f.__name__: f for f in (none_and_scalar_kinds_on_the_simulator,)}

if __name__ == "__main__":
    {**SCENARIOS, **ON_THE_SIMULATOR}[sys.argv[1]]()
    print(f"scenario held: {sys.argv[1]}")
