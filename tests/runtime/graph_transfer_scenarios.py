"""Scenarios of CUDA graphs and pageable numpy transfers, each run in a process of its own.

tests/runtime/test_graphs_transfers.py runs every scenario twice: against the fake driver (tests/fake_driver,
XCUDA_LIBCUDA; a CPU test of xcuda's host logic: routes, registrations, capture bookkeeping, refusals)
and, marked gpu, on a real GPU. The same code checks both; the fake's own counters (registrations
alive, memory unmapped while registered) are only read where the fake runs.

    python3 tests/runtime/graph_transfer_scenarios.py NAME     # exits 0 when the scenario holds

Each scenario sets what it needs in os.environ before importing xcuda (settings are read at start).
"""
import ctypes
import gc
import os
import sys
import threading
import weakref

import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }

extern "C" __global__ void chain_step(float* x, float a, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * a + 1.0f; }

extern "C" __global__ void fill(float* x, float value, unsigned n)
{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value; }
"""

# Above the 4 MiB threshold, not a multiple of a page, of the staging chunk or of the block.
N = 3 * (1 << 20) + 12345
BLOCK = 256
GRID = (N + BLOCK - 1) // BLOCK
MODES = ("auto", "registered", "per-copy", "staged", "driver")
# Above glibc's largest mmap threshold (32 MiB), so that np.zeros is a new mapping every time, as the
# tutorial's 64 MiB arrays are; smaller ones may come from the heap, written before.
NEW_N = 10 * (1 << 20) + 12345

xcuda = None
module = None


def start(**environment):
    global xcuda, module
    os.environ.update(environment)
    import xcuda as loaded
    xcuda = loaded
    module = xcuda.compile(SOURCE, name="graph_transfer_scenarios")


def fake_counter(name):
    """A counter of the fake driver, or None on a real one."""
    path = os.environ.get("XCUDA_LIBCUDA")
    if not path or "fake" not in os.path.basename(path):
        return None
    library = ctypes.CDLL(path)
    library.xcuda_fake_counter.restype = ctypes.c_long
    return library.xcuda_fake_counter(name.encode())


def check_no_violation():
    violations = fake_counter("violations")
    assert violations in (None, 0), f"{violations} registered range(s) were unmapped while registered"


def random(n, seed):
    return np.random.default_rng(seed).random(n).astype(np.float32)


def raises(kind, fragment, call):
    try:
        call()
    except kind as error:
        assert fragment in str(error), f"{kind.__name__} without {fragment!r}: {error}"
        return error
    raise AssertionError(f"{call} did not raise {kind.__name__}")


def stats():
    return xcuda.transfer_stats()


# ---- transfers ---------------------------------------------------------------------------------------

def pageable_copies_are_exact_for_every_way():
    start()
    check_exact_copies(MODES)


def streamed_staging_copies_are_exact():
    """The staging's host copies with non-temporal stores (XCUDA_STAGING_STREAM=1): the same copies, exact."""
    start(XCUDA_STAGING_STREAM="1")
    check_exact_copies(("staged", "auto"))


def staging_copies_streamed_in_only_are_exact():
    """Non-temporal stores into the staging buffers only (XCUDA_STAGING_STREAM=in): the same copies, exact."""
    start(XCUDA_STAGING_STREAM="in")
    check_exact_copies(("staged",))


def check_exact_copies(modes):
    """Copies of every shape and the tutorial's call, in each of `modes`, arrive exactly."""
    for mode in modes:
        xcuda.transfer_options(pageable=mode)
        before = stats()["copies"]
        # Views at odd offsets (the first page partial), odd lengths (the last one partial), and arrays
        # of their own.
        base = random(N + 4096, seed=1)
        for offset, size in ((0, N), (3, N), (1001, N + 1), (0, N - 7)):
            host = base[offset:offset + size]
            for _ in range(2):  # the second copy is the registered one in 'auto'
                device = xcuda.to_device(host)
                back = np.full(size, np.nan, np.float32)
                device.copy_to_host(out=back)
                np.testing.assert_array_equal(back, host, err_msg=f"{mode}, offset {offset}, size {size}")
                device.copy_from(host[::-1].copy())
                np.testing.assert_array_equal(device.copy_to_host(), host[::-1])
        # A slice copied after the whole array: in the registering modes a hit in the larger registration,
        # whose first whole page lies pages after the registration's start (the copy's head is the slice's).
        xcuda.to_device(base)
        for offset in (5000, 5003):
            piece = base[offset:offset + N // 2]
            np.testing.assert_array_equal(xcuda.to_device(piece).copy_to_host(), piece, err_msg=f"{mode}, slice {offset}")
            back = np.full(N // 2, np.nan, np.float32)
            xcuda.to_device(piece).copy_to_host(out=back)
            np.testing.assert_array_equal(back, piece)
        x, y = random(N, seed=2), random(N, seed=3)
        x_before, y_before = x.copy(), y.copy()
        for _ in range(3):
            out = np.full(N, np.nan, np.float32)
            module.saxpy[GRID, BLOCK](2.0, x, y, out, N)
            np.testing.assert_array_equal(out, np.float32(2.0) * x + y, err_msg=mode)
            np.testing.assert_array_equal(x, x_before)
            np.testing.assert_array_equal(y, y_before)
        out_view = np.zeros(N + 5, np.float32)[5:]
        module.saxpy[GRID, BLOCK](2.0, x, y, xcuda.Out(out_view), N)
        np.testing.assert_array_equal(out_view, np.float32(2.0) * x + y)
        after = stats()["copies"]
        made = {route: after[route] - before[route] for route in after}
        if mode in ("registered", "per-copy", "auto"):
            assert made["registered"] > 0, (mode, made)
        if mode == "staged":
            assert made["staged"] > 0 and made["registered"] == 0, made
        if mode == "driver":
            assert sum(made.values()) == 0, made  # every copy went straight to the driver
    check_no_violation()


def a_registered_buffer_goes_when_its_last_array_goes():
    start(XCUDA_PAGEABLE="registered")
    x = random(N, seed=4)
    watch = weakref.ref(x)
    view = x[100:]
    xcuda.to_device(x)
    assert stats()["registrations"]["entries"] == 1
    assert fake_counter("registered") in (None, 1)
    del x
    gc.collect()
    other = random(N, seed=5)
    xcuda.to_device(other)  # each copy first lets go of what is abandoned
    assert stats()["registrations"]["entries"] == 2, "unregistered while a view of it still lives"
    assert watch() is not None
    del view
    gc.collect()
    xcuda.to_device(other)
    s = stats()["registrations"]
    assert s["entries"] == 1 and s["abandoned"] == 1, s
    assert watch() is None, "the cache still holds the array after unregistering it"
    assert fake_counter("registered") in (None, 1)
    check_no_violation()


def the_registration_cache_keeps_to_its_limit():
    start(XCUDA_PAGEABLE="registered")
    xcuda.transfer_options(registration_limit_mb=40)  # three arrays of 12 MB fit, not four
    arrays = [random(N, seed=10 + i) for i in range(5)]
    back = np.empty(N, np.float32)  # registered too, and used after every array: never the least recent
    for array in arrays:
        xcuda.to_device(array).copy_to_host(out=back)
        np.testing.assert_array_equal(back, array)
    s = stats()["registrations"]
    assert s["entries"] == 3 and s["evictions"] == 3 and s["bytes"] <= 40 << 20, s
    assert fake_counter("registered") in (None, 3)
    xcuda.release_host_registrations()
    assert stats()["registrations"]["entries"] == 0
    assert fake_counter("registered") in (None, 0)
    check_no_violation()


def auto_stages_the_first_copy_of_an_array_and_registers_the_next():
    start()
    x = random(N, seed=6)
    xcuda.to_device(x)
    first = stats()
    assert first["copies"]["registered"] == 0 and first["copies"]["staged"] == 1, first
    xcuda.to_device(x)
    second = stats()
    assert second["copies"]["registered"] == 1 and second["registrations"]["registrations"] == 1, second
    xcuda.to_device(x)
    assert stats()["registrations"]["hits"] == 1
    check_no_violation()


def a_new_array_each_time_is_not_registered_each_time():
    start()
    device = xcuda.empty(N, np.float32)
    addresses = set()
    for i in range(12):
        fresh = np.full(N, float(i), np.float32)
        addresses.add(fresh.ctypes.data)
        device.copy_from(fresh)
        device.copy_from(fresh)
        assert float(device.copy_to_host()[N // 2]) == i
        del fresh
        gc.collect()
    # Never one registration per array: the cache remembers ranges whose registration went unused, so an
    # address the allocator hands out again is not registered again. How many addresses there are is the
    # allocator's (on the H200 host once 3 for the 12 arrays, with 4 registrations; another time 9, with 8;
    # with the fake driver one registration per address): the bound is one per address, and one more.
    registrations = stats()["registrations"]["registrations"]
    assert registrations <= len(addresses) + 1, (registrations, len(addresses))
    assert len(addresses) == 12 or registrations < 12, (registrations, len(addresses))
    check_no_violation()


def a_launch_copying_a_new_array_in_and_back_does_not_register_it():
    start()
    kept = []  # every array stays alive: no address or identity is reused, so only the call's own copies count
    for i in range(4):
        x, y = random(N, seed=20 + i), random(N, seed=30 + i)
        out = np.zeros(N, np.float32)  # copied in and back by the launch: one use
        module.saxpy[GRID, BLOCK](2.0, x, y, out, N)
        np.testing.assert_array_equal(out, np.float32(2.0) * x + y)
        kept.append((x, y, out))
    s = stats()
    assert s["registrations"]["registrations"] == 0, s
    assert s["copies"]["registered"] == 0 and s["copies"]["staged"] == 16, s
    assert s["registrations"]["staged_same_use"] == 4, s
    # The same arrays in the next launch: their second use, registered, and out's copy back hits.
    x, y, out = kept[0]
    module.saxpy[GRID, BLOCK](4.0, x, y, out, N)  # a power of two: exact with or without a fused multiply-add
    np.testing.assert_array_equal(out, np.float32(4.0) * x + y)
    s = stats()
    assert s["registrations"]["registrations"] == 3 and s["copies"]["registered"] == 4, s
    assert s["registrations"]["hits"] == 1, s
    check_no_violation()


def new_arrays_at_a_freed_arrays_address_and_id_are_not_registered():
    start()
    x0, y0 = random(N, seed=50), random(N, seed=51)
    reused = 0
    seen = set()
    for i in range(10):
        x, y, out = x0.copy(), y0.copy(), np.zeros_like(x0)  # new arrays; the allocator and CPython reuse
        key = (x.ctypes.data, id(x))                           # the freed ones' addresses and ids
        reused += key in seen
        seen.add(key)
        module.saxpy[GRID, BLOCK](2.0, x, y, out, N)
        np.testing.assert_array_equal(out, np.float32(2.0) * x0 + y0)
        del x, y, out
    s = stats()
    assert s["registrations"]["registrations"] == 0, (s, reused)
    assert s["copies"]["registered"] == 0, s
    check_no_violation()


def threads_with_new_and_kept_arrays_register_only_the_kept_ones():
    start()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from thread_runs import run_in_threads  # tests/thread_runs.py
    threads = 4
    kept = {}

    def work(thread):
        x0, y0 = random(N, seed=60 + thread), random(N, seed=70 + thread)
        a = np.float32(2 ** (thread % 3))  # a power of two: exact with or without a fused multiply-add
        for call in range(5):  # new arrays every call: never registered, whoever gets whose id back
            x, y, out = x0.copy(), y0.copy(), np.zeros_like(x0)
            module.saxpy[GRID, BLOCK](a, x, y, out, N)
            np.testing.assert_array_equal(out, a * x0 + y0, err_msg=f"thread {thread}, call {call}")
            del x, y, out
        x, y, out = x0.copy(), y0.copy(), np.zeros_like(x0)
        kept[thread] = (x, y, out)
        for call in range(2):  # the same arrays twice: registered at the second call
            module.saxpy[GRID, BLOCK](a, x, y, out, N)
            np.testing.assert_array_equal(out, a * x0 + y0, err_msg=f"thread {thread}, kept, call {call}")

    run_in_threads(work, threads)
    s = stats()
    assert s["registrations"]["registrations"] == 3 * threads, s
    assert s["registrations"]["entries"] == 3 * threads, s
    check_no_violation()


def a_zero_array_is_set_on_the_device_not_copied():
    start(XCUDA_PAGEABLE="staged")
    x, y = random(N, seed=40), random(N, seed=41)
    out = np.zeros(N, np.float32)  # copied in (the kernel may read it): all zero, set on the device
    module.saxpy[GRID, BLOCK](2.0, x, y, out, N)
    np.testing.assert_array_equal(out, np.float32(2.0) * x + y)
    chunks = stats()["copies"]["zero_chunks"]
    assert chunks > 0, stats()
    # Zeros but for one value in the last chunk, and one in the first: read by the kernel, so every
    # byte must arrive (a chunk with data is copied whole, its zero pieces as zeros).
    for where in (N - 1, 0, N // 2 + 1):
        data = np.zeros(N, np.float32)
        data[where] = 5.0
        module.chain_step[GRID, BLOCK](data, 2.0, N)  # x = x * 2 + 1
        expected = np.ones(N, np.float32)
        expected[where] = 11.0
        np.testing.assert_array_equal(data, expected)
    # A device buffer filled with other values, then a zero array copied into it: zeros arrive.
    device = xcuda.to_device(random(N, seed=42))
    device.copy_from(np.zeros(N, np.float32))
    assert not device.copy_to_host().any()
    assert stats()["copies"]["zero_chunks"] > chunks
    check_no_violation()


def check_new_zero_outputs(prepare):
    """The tutorial's call with a new np.zeros output every time: the output's pages never touched are set
    to zero on the device without being read, its pages are faulted in while the inputs are copied in (but
    with XCUDA_STAGING_PREPARE=off), and every result is right; pages with data in them are read, and so is
    memory with a file behind it (np.memmap), whose pages not yet faulted in hold the file's bytes."""
    start(XCUDA_PAGEABLE="auto", XCUDA_STAGING_PREPARE=prepare)
    n, grid = NEW_N, (NEW_N + BLOCK - 1) // BLOCK
    x, y = random(n, seed=50), random(n, seed=51)
    expected = np.float32(2.0) * x + y
    for call in range(3):
        out = np.zeros(n, np.float32)
        module.saxpy[grid, BLOCK](2.0, x, y, out, n)
        np.testing.assert_array_equal(out, expected, err_msg=f"call {call}")
        del out
    copies = stats()["copies"]
    pieces = -(-n * 4 // (256 << 10))  # the last one shorter
    # All but the pieces of the page the allocator wrote its header into (one, or 8 in a 2 MiB huge page).
    assert copies["known_zero_pieces"] >= 3 * (pieces - 8), copies
    assert copies["zero_chunks"] >= 3, copies
    assert copies["prepared"] == (0 if prepare == "off" else 3), copies
    # Data written into two pages of a new zero array before the call, read by the kernel: it arrives.
    # (Pages away from the five copy_pool::never_written samples, so that the array still looks new and
    # its pages never touched are not read.)
    data = np.zeros(n, np.float32)
    data[3 * n // 8] = 5.0
    data[5 * n // 8 + 1] = 6.0
    before = stats()["copies"]
    module.chain_step[grid, BLOCK](data, 2.0, n)  # x = x * 2 + 1
    expected_chain = np.ones(n, np.float32)
    expected_chain[3 * n // 8], expected_chain[5 * n // 8 + 1] = 11.0, 13.0
    np.testing.assert_array_equal(data, expected_chain)
    after = stats()["copies"]
    # Every piece of a touched page is read (the two written and the allocator's header page): a 4 KiB page
    # lies in one piece, a 2 MiB huge page (numpy 2 asks for them on large arrays) in 8; every other piece is
    # known zero.
    known = after["known_zero_pieces"] - before["known_zero_pieces"]
    assert pieces - 3 * 8 <= known <= pieces - 3, (pieces, before, after)
    # A file of 3.0s mapped copy-on-write (private, as a new array's pages, but with the file behind them),
    # and shared anonymous memory written through another mapping of it: neither is taken for zeros.
    import mmap
    import tempfile
    before = stats()["copies"]["known_zero_pieces"]
    with tempfile.NamedTemporaryFile(suffix=".f32") as file:
        np.full(n, 3.0, np.float32).tofile(file.name)
        mapped = np.memmap(file.name, dtype=np.float32, mode="c", shape=(n,))
        module.chain_step[grid, BLOCK](mapped, 2.0, n)
        assert (mapped == 7.0).all(), "a file mapping's pages were taken for zeros"
        del mapped
    shared = mmap.mmap(-1, n * 4, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    view = np.frombuffer(shared, np.float32)
    module.chain_step[grid, BLOCK](view, 2.0, n)
    assert (view == 1.0).all()
    assert stats()["copies"]["known_zero_pieces"] == before, stats()
    del view
    # Private anonymous memory of its own (no allocator's header): every piece untouched.
    private = mmap.mmap(-1, n * 4, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    view = np.frombuffer(private, np.float32)
    module.chain_step[grid, BLOCK](view, 2.0, n)
    assert (view == 1.0).all()
    assert stats()["copies"]["known_zero_pieces"] == before + pieces, stats()
    del view
    check_no_violation()


def new_zero_outputs_are_faulted_in_ahead_and_not_read():
    check_new_zero_outputs("pages")


def new_zero_outputs_with_huge_pages_ahead():
    check_new_zero_outputs("huge")


def new_zero_outputs_without_faulting_in_ahead():
    check_new_zero_outputs("off")


def new_zero_outputs_read_as_before_when_told():
    start(XCUDA_PAGEABLE="staged", XCUDA_STAGING_UNTOUCHED="0")
    x, y = random(NEW_N, seed=52), random(NEW_N, seed=53)
    out = np.zeros(NEW_N, np.float32)
    module.saxpy[(NEW_N + BLOCK - 1) // BLOCK, BLOCK](2.0, x, y, out, NEW_N)
    np.testing.assert_array_equal(out, np.float32(2.0) * x + y)
    copies = stats()["copies"]
    assert copies["known_zero_pieces"] == 0 and copies["zero_chunks"] > 0 and copies["prepared"] == 1, copies


def check_written_zero_outputs(scan, wait="0"):
    """The call with a new np.zeros_like output every time (numpy writes its pages): the output, copied in
    and back, is read for zero pieces ahead of its copy in on the preparer's threads (but with
    XCUDA_STAGING_SCAN=0), its zero pieces are set on the device, and data anywhere in it arrives. The copy
    in takes what that read found so far (with XCUDA_STAGING_SCAN_WAIT=1 it waits for all of it)."""
    start(XCUDA_PAGEABLE="auto", XCUDA_STAGING_SCAN=scan, XCUDA_STAGING_SCAN_WAIT=wait)
    n, grid = NEW_N, (NEW_N + BLOCK - 1) // BLOCK
    pieces = -(-n * 4 // (256 << 10))
    x, y = random(n, seed=60), random(n, seed=61)
    for call in range(3):
        out = np.zeros_like(x)
        module.saxpy[grid, BLOCK](2.0, x, y, out, n)
        np.testing.assert_array_equal(out, np.float32(2.0) * x + y, err_msg=f"call {call}")
    copies = stats()["copies"]
    assert copies["scanned"] == (3 if scan == "1" else 0), copies
    # Every piece is zero: known zero by the scan, or not yet read by it when the copy in came (then read
    # by the copy threads).
    assert copies["known_zero_pieces"] + copies["scan_unread_pieces"] == (3 * pieces if scan == "1" else 0), copies
    if wait == "1":
        assert copies["scan_unread_pieces"] == 0, copies
    assert copies["zero_chunks"] >= 3, copies
    # Data in the first, a middle and the last piece of a written zero array: each arrives.
    for where in (0, n // 2 + 3, n - 1):
        data = np.zeros_like(x)
        data[where] = 5.0
        module.chain_step[grid, BLOCK](data, 2.0, n)  # x = x * 2 + 1
        expected = np.ones(n, np.float32)
        expected[where] = 11.0
        np.testing.assert_array_equal(data, expected, err_msg=f"data at {where}")
    after = stats()["copies"]
    known = after["known_zero_pieces"] - copies["known_zero_pieces"]
    unread = after["scan_unread_pieces"] - copies["scan_unread_pieces"]
    if scan == "1":
        # Each array has one piece with data: never known zero; unread pieces may be that one or zero ones.
        assert known <= 3 * (pieces - 1) and 3 * (pieces - 1) <= known + unread <= 3 * pieces, (known, unread, pieces)
    else:
        assert known == 0 and unread == 0, (known, unread)
    check_no_violation()


def written_zero_outputs_are_read_ahead_for_zeros():
    check_written_zero_outputs("1")


def written_zero_outputs_read_in_their_copy_when_told():
    check_written_zero_outputs("0")


def written_zero_outputs_wait_for_the_whole_read_when_told():
    check_written_zero_outputs("1", wait="1")


def per_copy_registrations_end_with_the_call():
    start(XCUDA_PAGEABLE="per-copy")
    x, y = random(N, seed=7), random(N, seed=8)
    out = np.zeros(N, np.float32)
    module.saxpy[GRID, BLOCK](2.0, x, y, out, N)
    np.testing.assert_array_equal(out, np.float32(2.0) * x + y)
    s = stats()
    assert s["copies"]["registered"] >= 3 and s["registrations"]["entries"] == 0, s
    assert fake_counter("registered") in (None, 0)
    check_no_violation()


def a_malformed_setting_is_raised_at_the_first_large_copy():
    start(XCUDA_STAGING_THREADS="many")
    raises(ValueError, "XCUDA_STAGING_THREADS='many'", lambda: xcuda.to_device(random(N, seed=9)))
    small = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(xcuda.to_device(small).copy_to_host(), small)
    xcuda.transfer_options(staging_threads=2)
    x = random(N, seed=9)
    np.testing.assert_array_equal(xcuda.to_device(x).copy_to_host(), x)


# ---- graphs ------------------------------------------------------------------------------------------

def chain(x, a, times):
    x = x.astype(np.float32)
    for _ in range(times):
        x = (x * np.float32(a) + np.float32(1.0)).astype(np.float32)
    return x


def a_graph_replays_its_launches_in_order():
    start()
    x = random(N, seed=20)
    d = xcuda.to_device(x)
    with xcuda.graph() as g:
        assert g.state == "capturing"
        for _ in range(10):
            module.chain_step[GRID, BLOCK](d, 1.5, N)
    np.testing.assert_array_equal(d.copy_to_host(), x, err_msg="the block ran the launches it captured")
    assert len(g) == 10 and g.state == "ready" and g.nodes[3]["kernel"] == "chain_step"
    assert g.nodes[3]["grid"] == (GRID, 1, 1) and g.nodes[3]["kind"] == "launch"
    g.launch()
    g.launch()
    xcuda.synchronize()
    np.testing.assert_allclose(d.copy_to_host(), chain(x, 1.5, 20), rtol=1e-5)
    assert "10 nodes" in repr(g)
    assert module.load_ms is not None and module.load_ms >= 0


def a_launch_node_takes_new_arguments_without_capturing_again():
    start()
    d1 = xcuda.zeros(N, np.float32)
    d2 = xcuda.zeros(N, np.float32)
    with xcuda.graph() as g:
        module.fill[GRID, BLOCK](d1, 1.0, N)
        module.chain_step[GRID, BLOCK](d1, 2.0, N)
    g.update(0, d2, 5.0, N)
    g.update(1, d2, 3.0, N)
    g.launch()
    xcuda.synchronize()
    assert not d1.copy_to_host().any(), "the old arguments were used"
    np.testing.assert_array_equal(d2.copy_to_host(), np.full(N, 16.0, np.float32))
    g.update(0, d1, 9.0, N, grid=1, block=32)  # new dimensions: only the first 32 elements
    g.update(1, d1, 1.0, N)
    g.launch()
    xcuda.synchronize()
    host = d1.copy_to_host()
    assert (host[:32] == 10.0).all() and (host[32:] == 1.0).all()
    assert g.nodes[0]["grid"] == (1, 1, 1) and g.nodes[0]["block"] == (32, 1, 1)
    if fake_counter("node_updates") is not None:
        assert fake_counter("node_updates") == 4
    raises(IndexError, "no node 2", lambda: g.update(2, d1, 1.0, N))
    raises(xcuda.GraphCaptureError, "numpy array", lambda: g.update(0, np.zeros(N, np.float32), 1.0, N))
    raises(TypeError, "takes 3 arguments", lambda: g.update(0, d1, 1.0))
    with xcuda.graph() as copies:
        xcuda.copy(d2, d1)
    raises(ValueError, "not a launch", lambda: copies.update(0, d1, 1.0, N))


def what_a_graph_cannot_hold_raises_inside_the_block():
    start()
    x = random(N, seed=21)
    d = xcuda.to_device(x)
    stream = xcuda.Stream()
    event = xcuda.Event()
    out = np.zeros(N, np.float32)
    cases = {
        "xcuda.synchronize()": lambda: xcuda.synchronize(),
        "Stream.synchronize()": lambda: stream.synchronize(),
        "Event.synchronize()": lambda: (event.record(), event.synchronize()),
        "a numpy array": lambda: module.saxpy[GRID, BLOCK](2.0, x, x, out, N),
        "xcuda.Out of a numpy array": lambda: module.saxpy[GRID, BLOCK](2.0, d, d, xcuda.Out(out), N),
        "xcuda.to_device of host data": lambda: xcuda.to_device(x),
        "copy_to_host() into a new numpy array": lambda: d.copy_to_host(),
        "copy_to_host of a pageable numpy array": lambda: d.copy_to_host(out=out),
        "copy_from of a pageable numpy array": lambda: d.copy_from(x),
        "numpy.asarray of a DeviceArray": lambda: np.asarray(d),
        "timing a launch": lambda: module.chain_step.time(GRID, BLOCK, d, 1.0, N),
        "graph's own": lambda: module.chain_step[GRID, BLOCK, stream](d, 1.0, N),
    }
    for fragment, operation in cases.items():
        g = xcuda.graph()

        def capture():
            with g:
                module.chain_step[GRID, BLOCK](d, 2.0, N)
                operation()

        raises(xcuda.GraphCaptureError, fragment, capture)
        assert g.state == "failed", (fragment, g.state)
        raises(xcuda.GraphCaptureError, "capture failed", g.launch)
        # Nothing is left open: the session works as before, and nothing captured ran.
        xcuda.synchronize()
        np.testing.assert_array_equal(d.copy_to_host(), x, err_msg=fragment)
    with xcuda.graph() as g:
        raises(xcuda.GraphCaptureError, "do not nest", lambda: xcuda.graph().__enter__())
        raises(xcuda.GraphCaptureError, "inside its own capture", g.launch)
    # The block's own error goes on, and the capture is dropped with it.
    g2 = xcuda.graph()
    try:
        with g2:
            module.chain_step[GRID, BLOCK](d, 2.0, N)
            1 / 0
    except ZeroDivisionError:
        pass
    assert g2.state == "failed"
    raises(xcuda.GraphCaptureError, "captures once", lambda: g2.__enter__())


def a_capture_belongs_to_its_stream_across_threads():
    """As in CUDA, a capture is its stream's: while the main thread's `with xcuda.graph()` block is open,
    other threads' launches on their own streams and on the default stream run at once (never captured, never
    refused), a launch another thread puts on the graph's own stream is captured, and a second thread may
    capture its own graph on its own stream at the same time."""
    start()
    n = 4096
    grid = (n + BLOCK - 1) // BLOCK
    mine = xcuda.zeros(n, np.float32)
    workers = 4
    theirs = [xcuda.zeros(n, np.float32) for _ in range(workers)]
    defaults = [xcuda.zeros(n, np.float32) for _ in range(workers)]
    other_graph_array = xcuda.zeros(n, np.float32)
    opened = threading.Event()
    problems = []
    other_graph = {}

    def worker(index):
        try:
            opened.wait(30)
            stream = xcuda.Stream()
            for _ in range(20):
                module.chain_step[grid, BLOCK, stream](theirs[index], 1.0, n)  # +1 each
                module.chain_step[grid, BLOCK](defaults[index], 1.0, n)        # the default stream
            stream.synchronize()
            if index == 0:
                with xcuda.graph() as own:  # a capture of this thread's own, on its own stream
                    for _ in range(3):
                        module.chain_step[grid, BLOCK](other_graph_array, 1.0, n)
                other_graph["graph"] = own
        except BaseException as error:  # noqa: B902 (reported by the main thread)
            problems.append(f"worker {index}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(workers)]
    for thread in threads:
        thread.start()
    with xcuda.graph() as g:
        for _ in range(5):
            module.chain_step[grid, BLOCK](mine, 2.0, n)
        opened.set()
        for thread in threads:
            thread.join(60)
        # Another thread's launch on this graph's own stream (named through cuda.core's stream protocol) is
        # this graph's node.
        class GraphStream:
            def __cuda_stream__(self):
                return (0, g.stream)

        def launch_on_graph_stream():
            try:
                module.chain_step[grid, BLOCK, GraphStream()](mine, 2.0, n)
            except BaseException as error:  # noqa: B902 (reported below)
                problems.append(f"on the graph's stream: {type(error).__name__}: {error}")

        on_graph_stream = threading.Thread(target=launch_on_graph_stream)
        on_graph_stream.start()
        on_graph_stream.join(60)
    assert not problems, problems
    assert len(g) == 6, ("only the main thread's 5 launches and the one on its stream", g.nodes)
    np.testing.assert_array_equal(mine.copy_to_host(), np.zeros(n, np.float32),
                                  err_msg="captured launches ran in the block")
    for index in range(workers):
        np.testing.assert_array_equal(theirs[index].copy_to_host(), np.full(n, 20.0, np.float32),
                                      err_msg=f"worker {index}'s launches on its own stream")
        np.testing.assert_array_equal(defaults[index].copy_to_host(), np.full(n, 20.0, np.float32),
                                      err_msg=f"worker {index}'s launches on the default stream")
    own = other_graph["graph"]
    assert len(own) == 3 and own.state == "ready", own.nodes
    np.testing.assert_array_equal(other_graph_array.copy_to_host(), np.zeros(n, np.float32))
    g.launch()
    own.launch()
    xcuda.synchronize()
    np.testing.assert_array_equal(mine.copy_to_host(), chain(np.zeros(n, np.float32), 2.0, 6))
    np.testing.assert_array_equal(other_graph_array.copy_to_host(), np.full(n, 3.0, np.float32))


def copies_with_page_locked_memory_are_captured():
    start()
    host_in = xcuda.empty_pinned(N, np.float32)
    host_out = xcuda.zeros_pinned(N, np.float32)
    d = xcuda.empty(N, np.float32)
    d2 = xcuda.zeros(N, np.float32)
    with xcuda.graph() as g:
        d.copy_from(host_in)
        module.chain_step[GRID, BLOCK](d, 2.0, N)
        d.copy_to_host(out=host_out)
        xcuda.copy(d2, d)
    assert [node["kind"] for node in g.nodes] == ["copy", "launch", "copy", "copy"], g.nodes
    for seed in (30, 31):
        host_in[:] = random(N, seed=seed)
        g.launch()
        xcuda.synchronize()
        expected = chain(host_in, 2.0, 1)
        np.testing.assert_array_equal(host_out, expected)
        np.testing.assert_array_equal(d2.copy_to_host(), expected)


def a_graph_keeps_the_memory_its_launches_use():
    start()
    d = xcuda.zeros(N, np.float32)
    with xcuda.graph() as g:
        scratch = xcuda.empty(N, np.float32)  # allocated once, when the block runs
        module.fill[GRID, BLOCK](scratch, 4.0, N)
        xcuda.copy(d, scratch)
    live = xcuda.session_stats() if hasattr(xcuda, "session_stats") else None
    del scratch
    gc.collect()
    g.launch()
    xcuda.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), np.full(N, 4.0, np.float32))
    if live is not None:
        assert xcuda.session_stats()["buffers"] == live["buffers"], "the graph let its scratch buffer go"
    g.close()
    gc.collect()
    if live is not None:
        assert xcuda.session_stats()["buffers"] == live["buffers"] - 1
    raises(xcuda.GraphCaptureError, "not been captured", g.launch)


def temporaries():
    return xcuda.transfer_stats()["temporaries"]


def a_launch_takes_the_device_buffers_the_last_one_left():
    start()
    x, y, out = random(N, seed=20), random(N, seed=21), np.zeros(N, np.float32)
    allocations = fake_counter("allocations")
    module.saxpy[GRID, BLOCK](np.float32(2.0), x, y, out, N)
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6)
    first = temporaries()
    assert first["misses"] == 3 and first["hits"] == 0 and first["entries"] == 3, first
    assert first["bytes"] == 3 * x.nbytes, first
    assert xcuda.session_stats()["cached_temporaries"] == 3 and xcuda.session_stats()["buffers"] == 0
    # New contents in the same arrays: the kept buffers are copied into again, never read stale.
    x[:] = random(N, seed=22)
    out[:] = -1.0
    module.saxpy[GRID, BLOCK](np.float32(3.0), x, y, out, N)
    np.testing.assert_allclose(out, 3.0 * x + y, rtol=1e-6)
    second = temporaries()
    assert second["hits"] == 3 and second["misses"] == 3 and second["entries"] == 3, second
    if allocations is not None:
        assert fake_counter("allocations") - allocations == 3, "the second launch allocated again"
    # xcuda.Out is never copied in: the kernel's writes are what comes back, whatever the buffer held.
    module.fill[GRID, BLOCK](xcuda.Out(out), np.float32(7.0), N)
    np.testing.assert_array_equal(out, np.full(N, 7.0, np.float32))
    # Another size is another buffer; the kept ones stay for their size.
    small = np.zeros(1000, np.float32)
    module.fill[4, BLOCK](small, np.float32(1.5), 1000)
    np.testing.assert_array_equal(small, np.full(1000, 1.5, np.float32))
    assert temporaries()["entries"] == 4
    freed = xcuda.release_cached_temporaries()
    assert freed == 3 * x.nbytes + small.nbytes and temporaries()["entries"] == 0, (freed, temporaries())
    assert xcuda.session_stats()["cached_temporaries"] == 0
    if allocations is not None:
        assert fake_counter("device_bytes") == 0, "released temporaries were not freed"


def the_temporary_cache_keeps_to_its_limit():
    start(XCUDA_TEMPORARY_CACHE_MB="30")  # two arrays of 12 MB fit, not three
    x, y, out = random(N, seed=23), random(N, seed=24), np.zeros(N, np.float32)
    assert xcuda.transfer_options()["temporary_cache_mb"] == 30
    module.saxpy[GRID, BLOCK](np.float32(2.0), x, y, out, N)
    kept = temporaries()
    assert kept["entries"] == 2 and kept["bytes"] <= 30 << 20 and kept["evictions"] == 1, kept
    xcuda.transfer_options(temporary_cache_mb=0)  # none kept from now on; what was kept goes
    assert temporaries()["entries"] == 0
    module.saxpy[GRID, BLOCK](np.float32(2.0), x, y, out, N)
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6)
    assert temporaries()["entries"] == 0
    raises(ValueError, "temporary_cache_mb must be 0", lambda: xcuda.transfer_options(temporary_cache_mb=-1))
    if fake_counter("device_bytes") is not None:
        assert fake_counter("device_bytes") == 0


def a_launch_that_fails_keeps_no_temporary():
    start()
    x, out = random(N, seed=25), np.zeros(N, np.float32)
    d = xcuda.to_device(x)

    def capture():
        with xcuda.graph():
            module.saxpy[GRID, BLOCK](2.0, x, d, out, N)  # refused while capturing: nothing was waited for

    raises(xcuda.GraphCaptureError, "a numpy array", capture)
    assert temporaries()["entries"] == 0, temporaries()
    # An interrupted or failed launch lets its buffers go as before; a later launch still works.
    module.saxpy[GRID, BLOCK](np.float32(2.0), x, d, out, N)
    np.testing.assert_allclose(out, 3.0 * x, rtol=1e-6)
    assert temporaries()["entries"] == 2


def page_locked_arrays_outlive_the_session_unregistered():
    start()
    pinned = xcuda.empty_pinned(N, np.float32)
    pinned[:] = random(N, seed=28)
    kept = pinned.copy()
    registered = fake_counter("registered")
    assert registered in (None, 1), registered
    xcuda._shutdown()  # what the kernel's shutdown and the interpreter's exit do
    # Unregistered while the context still existed (compute-sanitizer's leak check saw it left registered);
    # the numpy array keeps its memory and contents, now pageable.
    assert fake_counter("registered") in (None, 0)
    np.testing.assert_array_equal(pinned, kept)
    pinned += 1.0
    np.testing.assert_array_equal(pinned, kept + 1.0)
    # A new session works with it as with any numpy array.
    d = xcuda.to_device(pinned)
    np.testing.assert_array_equal(d.copy_to_host(), kept + 1.0)
    del pinned
    gc.collect()
    check_no_violation()


def running_out_of_device_memory_frees_the_kept_temporaries():
    """Against the fake driver only, whose device memory XCUDA_FAKE_DEVICE_MB caps (see FAKE_ONLY)."""
    start(XCUDA_FAKE_DEVICE_MB="40")
    x, y, out = random(N, seed=26), random(N, seed=27), np.zeros(N, np.float32)
    module.saxpy[GRID, BLOCK](np.float32(2.0), x, y, out, N)
    assert temporaries()["entries"] == 3  # 36 MB of the 40 kept
    d = xcuda.empty(N, np.float32)  # does not fit beside them: they are freed and the allocation made
    assert temporaries()["entries"] == 0 and temporaries()["evictions"] == 3, temporaries()
    d.copy_from(x)
    np.testing.assert_array_equal(d.copy_to_host(), x)
    # With nothing kept to free, running out is the error it always was.
    error = raises(xcuda.OutOfMemoryError, "requested",
                   lambda: module.saxpy[GRID, BLOCK](np.float32(2.0), x, y, out, N))
    assert error.requested == x.nbytes, error.requested
    del d
    gc.collect()
    module.saxpy[GRID, BLOCK](np.float32(2.0), x, y, out, N)
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6)


FAKE_ONLY = {"running_out_of_device_memory_frees_the_kept_temporaries"}

SCENARIOS = {name: function for name, function in globals().items()
             if callable(function) and function.__module__ == __name__ and "_" in name
             and name not in ("start", "fake_counter", "check_no_violation", "random", "raises", "stats", "chain",
                             "temporaries", "check_new_zero_outputs", "check_written_zero_outputs", "check_exact_copies")}
GPU_SCENARIOS = {name: function for name, function in SCENARIOS.items() if name not in FAKE_ONLY}


if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
    print("scenario held:", sys.argv[1])
