"""xcuda on ipyparallel engines (issue 18): a local cluster, `%px %load_ext xcuda`, `%%px` + `%%cuda`,
each engine's device choice, and data between the client and the engines.

The cluster: ipyparallel.Cluster with two engines, its controller on 127.0.0.1 only, its profile and
the xcuda engine registry (XCUDA_HOST_REGISTRY) in the test's own temporary folders, stopped at the
end of the module. The engines are separate processes: they find the build tree's `xcuda` through
PYTHONPATH, which conftest.py sets and the engines inherit. Engine 0 is started as if a launcher had
given it local rank 1 (SLURM_LOCALID=1, set in it before it imports xcuda); engine 1 has no rank and
takes a slot among this host's engines. Every wait is bounded (START_S, CALL_S).

Without a GPU the engines compile and report their choice, and the first device array fails with
CudaUnavailableError naming the engines (marked nogpu). The tests marked gpu + multigpu need the
2-GPU host: SAXPY with n = 2^28 over both engines and over one, checked against numpy, and the
warning when two engines use one GPU (marked gpu only: one GPU shows it).

Needs ipyparallel (Debian: python3-ipyparallel, which bash .ci/setup installs); without it the tests
skip and say so. On the GPU host, pack it with `EXTRA_PACKAGES="python3-ipyparallel" pack-runtime.sh .devrt`.
"""
import logging
import os
import signal
from contextlib import contextmanager

import numpy as np
import pytest

import xcuda
from conftest import GPU_COUNT, HAS_GPU

try:
    import ipyparallel as ipp

    MISSING = None
    # What runs on the engines: sent as code and run with the engine's namespace as its globals (this
    # module cannot be imported there).
    remote = ipp.interactive
except ImportError as error:
    MISSING = f"ipyparallel is not importable ({error}); Debian: python3-ipyparallel, which bash .ci/setup installs"
    remote = None

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

# Generous for a loaded CI machine (a start took 8 s on 2 shared cores); every wait ends when it is done.
START_S = 180
CALL_S = 120
CHOICE_VARIABLES = ("XCUDA_DEVICE", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK")

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""


@contextmanager
def bounded(seconds, what):
    """Raises TimeoutError in the main thread when the block runs past `seconds` (a wait on engines that
    never answer must fail the test, not hang the suite)."""
    def expire(signum, frame):
        raise TimeoutError(f"{what} took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def local_cluster(root, n, **env):
    """n engines and their controller on 127.0.0.1, with the profile and the xcuda engine registry under
    root, started with `env` (and none of the machine's launcher variables); stopped at the end."""
    saved = dict(os.environ)
    for name in CHOICE_VARIABLES:
        os.environ.pop(name, None)
    os.environ["XCUDA_HOST_REGISTRY"] = str(root / "registry")
    # The engines choose by their slot, but a GPU or nothing: never the PTX simulator's fallback (conftest.py).
    os.environ["XCUDA_DEVICE"] = "gpu"
    os.environ.update(env)
    cluster = ipp.Cluster(n=n, profile_dir=str(root / "profile"), controller_ip="127.0.0.1",
                          log_level=logging.WARNING)
    client = None
    try:
        with bounded(START_S, f"starting {n} engines"):
            client = cluster.start_and_connect_sync()
            client.wait_for_engines(n, timeout=START_S)
        # The engines have their environment now; the test process gets its own back.
        os.environ.clear()
        os.environ.update(saved)
        yield client
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if client is not None:
            client.close()
        with bounded(START_S, "stopping the cluster"):
            cluster.stop_cluster_sync()


def on_engine(client, engine, function, *args):
    return client[engine].apply_async(remote(function), *args).get(timeout=CALL_S)


def _choice():
    import xcuda

    return xcuda.device_choice()


def _set_local_rank(rank):
    import os

    os.environ["SLURM_LOCALID"] = str(rank)


def _imported_xcuda():
    import sys

    return "xcuda" in sys.modules


def _repr_of(name):
    return repr(globals()[name])


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with local_cluster(tmp_path_factory.mktemp("cluster"), 2) as client:
        first = client.ids[0]
        # A launcher's rank for engine 0, before anything imports xcuda there (the session reads it then).
        assert not on_engine(client, first, _imported_xcuda)
        on_engine(client, first, _set_local_rank, 1)
        yield client


@pytest.fixture(scope="module")
def px_shell(client, shell):
    """The conftest's IPython shell with the client's %px magics, and xcuda loaded on every engine as a
    user would: `%px %load_ext xcuda`."""
    client.activate()  # a blocking view, as the Client made in a notebook registers itself
    with bounded(CALL_S, "%px %load_ext xcuda"):
        shell.run_line_magic("px", "%load_ext xcuda")
    return shell


def test_px_load_ext_and_a_px_cuda_cell_compile_on_every_engine(client, px_shell, capsys):
    with bounded(CALL_S, "%%px + %%cuda"):
        px_shell.run_cell_magic("px", "", "%%cuda\n" + SAXPY)
    kernels = client[:].apply_async(remote(_repr_of), "saxpy").get(timeout=CALL_S)
    assert len(kernels) == 2
    for text in kernels:
        assert "saxpy(float a, const float* x, const float* y, float* out, size_t n)" in text, text


def test_a_compile_error_on_the_engines_reaches_the_client(client, px_shell):
    with bounded(CALL_S, "%%px + a broken %%cuda"):
        with pytest.raises(ipp.error.CompositeError) as caught:
            px_shell.run_cell_magic("px", "", '%%cuda\nextern "C" __global__ void broken(float* x) { x[0] = y; }\n')
    assert {ename for ename, *_ in caught.value.elist} == {"CompileError"}
    assert "identifier \"y\" is undefined" in str(caught.value.elist[0][1])


def test_an_engine_with_a_launcher_rank_uses_it_and_takes_no_host_slot(client, px_shell):
    choice = on_engine(client, client.ids[0], _choice)
    assert choice["source"] == "SLURM_LOCALID", choice
    assert choice["reason"].startswith("local rank 1 (SLURM_LOCALID=1)"), choice
    assert choice["ordinal"] == (1 % GPU_COUNT if HAS_GPU else 1), choice
    assert choice["host_slot"] is None and choice["engine"].startswith(f"ipyparallel engine {client.ids[0]} "), choice


def test_an_engine_without_a_rank_takes_the_first_free_slot_of_its_host(client, px_shell):
    choice = on_engine(client, client.ids[1], _choice)
    assert choice["source"] == "host slot", choice
    assert choice["host_slot"] == 0, "the ranked engine took a slot, or the registry was not empty"
    assert choice["ordinal"] == 0, choice
    assert f"slot 0 among this host's xcuda engines (ipyparallel engine {client.ids[1]} (pid" in choice["reason"]
    assert choice["registry"].endswith("registry"), "the engine did not use the test's XCUDA_HOST_REGISTRY"


def test_cuda_info_on_each_engine_says_which_device_and_why(client, px_shell, capsys):
    capsys.readouterr()
    with bounded(CALL_S, "%px %cuda_info"):
        px_shell.run_line_magic("px", "%cuda_info")
    out = capsys.readouterr().out
    assert "local rank 1 (SLURM_LOCALID=1)" in out, out
    assert "slot 0 among this host's xcuda engines" in out, out
    assert f"ipyparallel engine {client.ids[1]} " in out and "registry" in out, out


def _pid():
    import os

    return os.getpid()


def test_gather_joins_the_engines_parts_in_engine_order(client, px_shell):
    client[:].execute("import numpy as _np; part = _np.full(2, __import__('os').getpid())").get(timeout=CALL_S)
    pids = [on_engine(client, engine, _pid) for engine in client.ids]
    assert xcuda.parallel.gather(client[:], "part", timeout=CALL_S).tolist() == [pids[0]] * 2 + [pids[1]] * 2
    reversed_view = client[[client.ids[1], client.ids[0]]]
    assert xcuda.parallel.gather(reversed_view, "part", timeout=CALL_S).tolist() == [pids[1]] * 2 + [pids[0]] * 2


def test_gather_of_a_name_no_engine_has_raises_name_error_naming_the_engines(client, px_shell):
    with pytest.raises(NameError, match=r"on engines 0, 1: name 'nowhere' is not defined on this engine"):
        xcuda.parallel.gather(client[:], "nowhere", timeout=CALL_S)


def test_scatter_refuses_a_name_that_is_not_an_identifier(client):
    with pytest.raises(ValueError, match="'x y' is not an identifier"):
        xcuda.parallel.scatter(client[:], "x y", np.zeros(4))


@pytest.mark.nogpu
def test_scatter_without_gpus_stops_with_cuda_unavailable_naming_the_engines(client, px_shell):
    with pytest.raises(xcuda.CudaUnavailableError, match=r"on engines 0, 1: .*no NVIDIA driver"):
        xcuda.parallel.scatter(client[:], "x", np.arange(10, dtype=np.float32), timeout=CALL_S)


# ---- with GPUs ------------------------------------------------------------------------------------------

N = 1 << 28
BLOCK = 256


def _saxpy_on_engine(a):
    """On an engine: out = a * x + y over its resident x and y; returns the device it ran on."""
    global out
    import numpy
    import xcuda

    n = x.size  # noqa: F821 (the engine's x, y and saxpy)
    out = xcuda.to_device(numpy.full(n, numpy.nan, numpy.float32))  # poisoned: an element not written fails
    saxpy[(n + 255) // 256, 256](a, x, y, out, n)  # noqa: F821
    xcuda.synchronize()
    return out.device


@pytest.mark.gpu
@pytest.mark.multigpu
def test_saxpy_of_2_to_the_28_over_two_engines_and_over_one_matches_numpy(client, px_shell):
    a = np.float32(2.0)
    rng = np.random.default_rng(18)
    x = rng.random(N, dtype=np.float32)
    y = rng.random(N, dtype=np.float32)
    expected = a * x + y
    # One engine: all of n on its device.
    one = client[[client.ids[0]]]
    xcuda.parallel.scatter(one, "x", x, timeout=CALL_S)
    xcuda.parallel.scatter(one, "y", y, timeout=CALL_S)
    one.apply_async(remote(_saxpy_on_engine), a).get(timeout=CALL_S)
    np.testing.assert_allclose(xcuda.parallel.gather(one, "out", timeout=CALL_S), expected, rtol=1e-6, atol=1e-6)
    one.execute("del x, y, out").get(timeout=CALL_S)
    # Two engines: half each, each on its own GPU.
    both = client[:]
    placed = xcuda.parallel.scatter(both, "x", x, timeout=CALL_S)
    xcuda.parallel.scatter(both, "y", y, timeout=CALL_S)
    assert [p["shape"] for p in placed] == [(N // 2,), (N // 2,)]
    devices = both.apply_async(remote(_saxpy_on_engine), a).get(timeout=CALL_S)
    assert sorted(devices) == [0, 1], f"the engines ran on devices {devices}, not one GPU each"
    np.testing.assert_allclose(xcuda.parallel.gather(both, "out", timeout=CALL_S), expected, rtol=1e-6, atol=1e-6)
    both.execute("del x, y, out").get(timeout=CALL_S)


@pytest.mark.gpu
@pytest.mark.multigpu
def test_the_engines_hold_distinct_gpus_and_nobody_is_warned(client, px_shell):
    client[:].execute("import xcuda; _probe = xcuda.zeros(1)").get(timeout=CALL_S)
    choices = client[:].apply_async(remote(_choice)).get(timeout=CALL_S)
    uuids = [c["gpu_uuid"] for c in choices]
    assert all(uuids) and len(set(uuids)) == 2, choices
    assert all(c["shared_with"] == [] for c in choices), choices


def _type_name(name):
    return type(globals()[name]).__name__


@pytest.mark.gpu
def test_pull_of_a_device_array_copies_it_to_the_client(client, px_shell):
    host = np.arange(4096, dtype=np.int32)
    view = client[client.ids[1]]
    view.push({"pushed": xcuda.to_device(host)}).get(timeout=CALL_S)  # pickled as its contents
    assert on_engine(client, client.ids[1], _type_name, "pushed") == "DeviceArray"
    view.execute("import numpy, xcuda; pushed_twice = xcuda.to_device(numpy.asarray(pushed) * 2)").get(timeout=CALL_S)
    pulled = view.pull("pushed_twice").get(timeout=CALL_S)
    assert type(pulled) is xcuda.DeviceArray and np.array_equal(np.asarray(pulled), host * 2)


def _record_sharing():
    import warnings

    import xcuda

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        globals()["_held"] = xcuda.zeros(1)  # the first context on the device (globals: the engine's namespace)
    return [str(w.message) for w in caught if issubclass(w.category, xcuda.DeviceSharingWarning)]


@pytest.mark.gpu
def test_a_second_engine_on_one_gpu_is_warned_naming_the_first(tmp_path):
    with local_cluster(tmp_path, 2, XCUDA_DEVICE="0") as shared:
        first, second = shared.ids
        shared[:].execute("import xcuda").get(timeout=CALL_S)
        assert on_engine(shared, first, _record_sharing) == []
        warned = on_engine(shared, second, _record_sharing)
        assert len(warned) == 1, warned
        assert f"is also used by ipyparallel engine {first} " in warned[0] and "own XCUDA_DEVICE" in warned[0]
        choice = on_engine(shared, first, _choice)
        assert len(choice["shared_with"]) == 1 and f"ipyparallel engine {second} " in choice["shared_with"][0]


# ---- NCCL communicators over the engines (issue 50; the checks' units are in test_collectives.py) ----------


@pytest.mark.nogpu
def test_a_communicator_over_engines_without_gpus_is_refused_naming_them(client, px_shell):
    with pytest.raises(xcuda.collectives.CollectiveError,
                       match=r"NCCL runs on NVIDIA GPUs only; engine\(s\) 0, 1 have none"):
        xcuda.parallel.communicator(client[:], timeout=CALL_S)


def _nccl_importable():
    import importlib.util

    return importlib.util.find_spec("nccl") is not None


@pytest.mark.gpu
def test_two_engines_on_one_gpu_are_refused_a_communicator_before_nccl(tmp_path):
    with local_cluster(tmp_path, 2, XCUDA_DEVICE="0") as shared:
        shared[:].execute("import xcuda").get(timeout=CALL_S)
        first, second = shared.ids
        with pytest.raises(xcuda.collectives.CollectiveError, match=fr"engines {first}, {second} use one GPU"):
            xcuda.parallel.communicator(shared[:], timeout=CALL_S)


def _ones_on_device(n):
    global ones
    import numpy
    import xcuda

    ones = xcuda.to_device(numpy.arange(n, dtype=numpy.float32))


@pytest.mark.gpu
def test_a_one_engine_communicator_all_reduces_in_place(client, px_shell):
    if not on_engine(client, client.ids[1], _nccl_importable):
        pytest.skip('nccl4py is not importable on the engines (pip install "nccl4py[cu13]")')
    one = client[[client.ids[1]]]
    comm = xcuda.parallel.communicator(one, name="comm", timeout=CALL_S)
    on_engine(client, client.ids[1], _ones_on_device, 1000)
    assert comm.all_reduce("ones", op="sum") == [0]
    np.testing.assert_array_equal(xcuda.parallel.gather(one, "ones", timeout=CALL_S), np.arange(1000, dtype=np.float32))
    with pytest.raises(NameError, match="'nowhere' is not defined"):
        comm.broadcast("nowhere")
