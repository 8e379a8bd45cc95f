"""NCCL collectives on xcuda's device arrays (issue 50 item 1): xcuda.collectives and
xcuda.parallel.communicator.

On CPU: the checks made before NCCL is called, on the engines' reports and arrays (every engine on an
NVIDIA GPU of its own, nccl4py there, shapes and dtypes equal across ranks), the refusals of arrays a
collective cannot take, the missing package named; and a communicator over real engines without a GPU
refused naming them. On a GPU (marked gpu; needs nccl4py, which the GPU host gets as wheels: see
docs/several-gpus.md): a one-rank communicator in this process and over one engine, every collective
checked against numpy, and two engines on one GPU refused before NCCL. With two or more GPUs (multigpu):
all-reduce over one communicator per GPU in one process, and an interrupt of a collective that waits.
"""
import importlib.util
import os
import signal
import threading

import numpy as np
import pytest

import xcuda
from conftest import GPU_COUNT, HAS_GPU
from xcuda import collectives, parallel
from xcuda.collectives import CollectiveError

HAS_NCCL = importlib.util.find_spec("nccl") is not None


def report(engine, uuid="GPU-a", **fields):
    made = {"label": f"ipyparallel engine {engine} (pid 1, host)", "simulated": False, "uuid": uuid,
            "device": 0, "nccl": None}
    made.update(fields)
    return made


def test_engines_on_distinct_gpus_with_nccl_pass_the_checks():
    assert parallel.check_ranks([report(0, "GPU-a"), report(1, "GPU-b")], [0, 1]) is None


def test_two_engines_on_one_gpu_are_refused_naming_them():
    with pytest.raises(CollectiveError, match=r"engines 3, 5 use one GPU; NCCL needs one rank per GPU"):
        parallel.check_ranks([report(3, "GPU-a"), report(4, "GPU-b"), report(5, "GPU-a")], [3, 4, 5])


def test_engines_on_the_simulator_or_without_a_driver_are_refused_naming_them():
    with pytest.raises(CollectiveError, match=r"NCCL runs on NVIDIA GPUs only; engine\(s\) 1 have none \(the PTX simulator\)"):
        parallel.check_ranks([report(0, "GPU-a"), report(1, "GPU-b", simulated=True)], [0, 1])
    with pytest.raises(CollectiveError, match=r"engine\(s\) 0, 1 have none \(no usable NVIDIA driver\)"):
        parallel.check_ranks([report(0, unusable="no usable NVIDIA driver"), report(1, unusable="x")], [0, 1])


def test_engines_without_nccl4py_are_named_with_the_package():
    missing = "xcuda's collectives need nccl4py, which is not importable here (No module named 'nccl'): pip install"
    with pytest.raises(ImportError, match=r"on engine\(s\) 1: xcuda's collectives need nccl4py"):
        parallel.check_ranks([report(0, "GPU-a"), report(1, "GPU-b", nccl=missing)], [0, 1])


def test_arrays_that_differ_across_ranks_are_refused_before_nccl():
    same = {"x": {"shape": (4,), "dtype": "<f4"}}
    parallel.check_same_arrays([same, same], [0, 1], ["x"], "all_reduce")
    other = {"x": {"shape": (5,), "dtype": "<f4"}}
    with pytest.raises(CollectiveError, match=r"all_reduce: 'x' differs across the ranks \(engines 0, 2: shape \(4,\), "
                                              r"dtype <f4; engines 1: shape \(5,\), dtype <f4\)"):
        parallel.check_same_arrays([same, other, same], [0, 1, 2], ["x"], "all_reduce")
    with pytest.raises(CollectiveError, match="dtype <f8"):
        parallel.check_same_arrays([same, {"x": {"shape": (4,), "dtype": "<f8"}}], [0, 1], ["x"], "broadcast")


def test_a_host_array_is_refused_with_what_to_do():
    with pytest.raises(CollectiveError, match=r"not ndarray: copy it with xcuda.to_device"):
        collectives.describe(np.zeros(4, np.float32))


class _Strided:
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (4096, False), "strides": (8,), "version": 3}


def test_a_strided_device_array_is_refused():
    with pytest.raises(CollectiveError, match=r"needs a contiguous array; this one has strides \(8,\)"):
        collectives.describe(_Strided())


def test_an_unknown_op_is_refused_naming_the_ones_nccl_has():
    with pytest.raises(ValueError, match=r"op 'mean' is not a reduction NCCL has; use one of sum, prod, min, max, avg"):
        collectives._op(None, "mean")


@pytest.mark.skipif(HAS_NCCL, reason="nccl4py is installed here: the refusal of its absence cannot happen")
def test_without_nccl4py_making_a_communicator_names_the_package():
    with pytest.raises(ImportError, match=r"need nccl4py, which is not importable here .*pip install \"nccl4py\[cu13\]\""):
        collectives.local_communicators(1)


# ---- on a GPU -------------------------------------------------------------------------------------------

needs_nccl = pytest.mark.skipif(not HAS_NCCL, reason="nccl4py is not importable (pip install \"nccl4py[cu13]\")")


@pytest.mark.gpu
@needs_nccl
def test_every_collective_of_a_one_rank_communicator_matches_numpy():
    (comm,) = collectives.local_communicators([0])
    assert (comm.rank, comm.nranks, comm.device) == (0, 1, 0)
    host = np.arange(1, 1025, dtype=np.float32)
    for op in collectives.OPS:
        array = xcuda.to_device(host)
        comm.all_reduce(array, op=op)  # one rank: the reduction of one value is the value
        np.testing.assert_array_equal(np.asarray(array), host)
    array = xcuda.to_device(host)
    comm.broadcast(array, root=0)
    comm.reduce(array, root=0, op="max")
    np.testing.assert_array_equal(np.asarray(array), host)
    received = xcuda.zeros(host.size, "float32")
    comm.all_gather(xcuda.to_device(host), received)
    np.testing.assert_array_equal(np.asarray(received), host)
    received = xcuda.zeros(host.size, "float32")
    comm.reduce_scatter(xcuda.to_device(host), received, op="sum")
    np.testing.assert_array_equal(np.asarray(received), host)
    with pytest.raises(CollectiveError, match=r"root 1 is not a rank of this communicator \(0 to 0\)"):
        comm.broadcast(array, root=1)
    with pytest.raises(CollectiveError, match=r"all_gather: recv must hold nranks x send"):
        comm.all_gather(xcuda.to_device(host), xcuda.zeros(3, "float32"))
    comm.close()
    with pytest.raises(CollectiveError, match="aborted"):
        comm.all_reduce(array)


@pytest.mark.gpu
@needs_nccl
def test_a_collective_on_a_stream_of_the_users_choice_sees_the_kernels_before_it():
    (comm,) = collectives.local_communicators([0])
    stream = xcuda.Stream()
    array = xcuda.to_device(np.full(1 << 20, 3, np.int32))
    comm.all_reduce(array, op="sum", stream=stream)
    assert int(np.asarray(array).sum()) == 3 << 20
    with pytest.raises(CollectiveError, match="stream must be an xcuda.Stream"):
        comm.all_reduce(array, stream=0)
    comm.close()


@pytest.mark.gpu
@pytest.mark.multigpu
@needs_nccl
def test_all_reduce_over_one_communicator_per_gpu_in_one_process():
    import nccl.core as nccl

    comms = collectives.local_communicators(GPU_COUNT)
    arrays = []
    for rank, comm in enumerate(comms):
        with xcuda.device(comm.device):
            arrays.append(xcuda.to_device(np.full(4096, rank + 1, np.float64)))
    with nccl.group():  # one thread drives every rank: the calls are grouped, then waited for
        for comm, array in zip(comms, arrays):
            comm.all_reduce(array, op="sum", wait=False)
    for comm, array in zip(comms, arrays):
        comm.stream.synchronize()
        assert np.all(np.asarray(array) == sum(range(1, GPU_COUNT + 1)))
    for comm in comms:
        comm.close()


@pytest.mark.gpu
@pytest.mark.multigpu
@needs_nccl
def test_an_interrupt_aborts_a_collective_that_waits_for_a_peer_and_the_process_goes_on():
    comms = collectives.local_communicators(2)
    with xcuda.device(comms[0].device):
        array = xcuda.to_device(np.ones(16, np.float32))
    timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt, match="the communicator .* is aborted"):
            comms[0].all_reduce(array)  # rank 1 never joins: it would wait for ever
    finally:
        timer.cancel()
    assert comms[0].aborted
    assert np.asarray(xcuda.to_device(np.arange(4))).tolist() == [0, 1, 2, 3]  # the process goes on
    comms[1].abort()
