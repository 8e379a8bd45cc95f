"""NCCL collectives on xcuda's device arrays, through nccl4py (NVIDIA's own binding; issue 50).

One rank of a communicator is a `Communicator`: made in each ipyparallel engine by
``xcuda.parallel.communicator(view)`` (the unique id made on the view's first engine and pushed to the
others; ranks in the view's engine order), or, in one process, one per local GPU by
``local_communicators(devices)``. Its collectives work in place on DeviceArrays and on any
``__cuda_array_interface__`` array of its device, on the stream given (default: the communicator's own
xcuda.Stream, which is ordered with the default stream, so kernels launched before are seen), and wait
for the result unless ``wait=False``:

``all_reduce(array, op="sum")``, ``broadcast(array, root=0)``, ``reduce(array, root=0, op="sum")``,
``all_gather(send, recv)``, ``reduce_scatter(send, recv, op="sum")``, ``send(array, peer)``,
``recv(array, peer)``; ops: sum, prod, min, max, avg.

A collective waits for its peers. While it waits, an interrupt (Kernel > Interrupt, or SIGINT to the
engine) aborts the communicator (ncclCommAbort: every rank's pending work on it ends) and raises
KeyboardInterrupt: the process keeps its other state, and a new communicator is needed. The wait polls
the stream (it never blocks in the driver), so the interrupt is seen within a poll.

nccl4py is imported only when a communicator is made; without it the error names the package
(``pip install "nccl4py[cu13]"``). NVLink multicast stays off: NCCL_NVLS_ENABLE=0 is set (unless the user
set it) before NCCL first loads.
"""
import os
import time

__all__ = ["Communicator", "CollectiveError", "local_communicators", "OPS"]

OPS = ("sum", "prod", "min", "max", "avg")
POLL_S = 0.0005  # how often a waiting collective asks its stream (and so how soon an interrupt is seen)
INSTALL = 'pip install "nccl4py[cu13]" (NVIDIA\'s NCCL binding; it brings the NCCL library)'


class CollectiveError(RuntimeError):
    """A collective refused before NCCL was called (wrong device, dtype, shape), or NCCL failed."""


def _nccl():
    """nccl.core, imported on first use, with multicast off (the hosts' rule) before NCCL loads."""
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    try:
        import nccl.core as nccl
    except ImportError as error:
        raise ImportError(f"xcuda's collectives need nccl4py, which is not importable here ({error}): {INSTALL}") from error
    return nccl


def _op(nccl, op):
    if op not in OPS:
        raise ValueError(f"op {op!r} is not a reduction NCCL has; use one of {', '.join(OPS)}")
    return getattr(nccl, op.upper())


def describe(array):
    """(device, shape, dtype string, pointer) of a device array, from __cuda_array_interface__ or DLPack.
    Refuses host arrays and non-contiguous views: NCCL reads a contiguous range of one device."""
    import numpy

    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        if hasattr(array, "__dlpack_device__") and array.__dlpack_device__()[0] == 2:  # kDLCUDA
            raise CollectiveError("give the array's __cuda_array_interface__ view (xcuda.DeviceArray, CuPy, "
                                  "PyTorch, Numba have one); a DLPack-only device array is not taken here")
        raise CollectiveError(f"a collective works on a device array (xcuda.DeviceArray or any "
                              f"__cuda_array_interface__ array), not {type(array).__name__}: copy it with xcuda.to_device")
    shape = tuple(interface["shape"])
    dtype = numpy.dtype(interface["typestr"])
    strides = interface.get("strides")
    if strides is not None and tuple(strides) != tuple(numpy.empty(shape, dtype).strides if shape else ()):
        raise CollectiveError(f"a collective needs a contiguous array; this one has strides {tuple(strides)}")
    device = getattr(array, "device", None)
    return {"device": device if isinstance(device, int) else None, "shape": shape, "dtype": dtype.str,
            "ptr": int(interface["data"][0])}


class Communicator:
    """One rank of an NCCL communicator on this process's xcuda device."""

    def __init__(self, nccl_communicator, device):
        import xcuda

        self._comm = nccl_communicator
        with xcuda.device(device):
            self.stream = xcuda.Stream()  # the default; blocking, so ordered with the default stream
        self.device = device
        self.rank = nccl_communicator.rank
        self.nranks = nccl_communicator.nranks
        self.aborted = False

    def __repr__(self):
        state = "aborted" if self.aborted else "ready"
        return f"<xcuda Communicator rank {self.rank} of {self.nranks} on device {self.device}, {state}>"

    @classmethod
    def join(cls, nranks, rank, unique_id_bytes):
        """Make this rank (collective: every rank calls it with the same id and nranks)."""
        import xcuda

        nccl = _nccl()
        device = xcuda.current_device()
        xcuda.zeros(1)  # the device's primary context made current, as NCCL's runtime calls expect
        unique_id = nccl.UniqueId.from_bytes(bytes(unique_id_bytes))
        return cls(nccl.Communicator.init(nranks=nranks, rank=rank, unique_id=unique_id), device)

    # ---- the collectives ----

    def all_reduce(self, array, op="sum", stream=None, wait=True):
        self._check(array)
        self._comm.allreduce(array, array, _op(_nccl(), op), stream=self._stream(stream))
        return self._finish(stream, wait, "all_reduce")

    def broadcast(self, array, root=0, stream=None, wait=True):
        self._check(array)
        self._check_rank(root, "root")
        self._comm.broadcast(array, array, root, stream=self._stream(stream))
        return self._finish(stream, wait, "broadcast")

    def reduce(self, array, root=0, op="sum", stream=None, wait=True):
        self._check(array)
        self._check_rank(root, "root")
        self._comm.reduce(array, array, _op(_nccl(), op), root=root, stream=self._stream(stream))
        return self._finish(stream, wait, "reduce")

    def all_gather(self, send, recv, stream=None, wait=True):
        sent, received = self._check(send), self._check(recv)
        self._check_sizes(sent, received, self.nranks, "all_gather: recv must hold nranks x send")
        self._comm.allgather(send, recv, stream=self._stream(stream))
        return self._finish(stream, wait, "all_gather")

    def reduce_scatter(self, send, recv, op="sum", stream=None, wait=True):
        sent, received = self._check(send), self._check(recv)
        self._check_sizes(received, sent, self.nranks, "reduce_scatter: send must hold nranks x recv")
        self._comm.reduce_scatter(send, recv, _op(_nccl(), op), stream=self._stream(stream))
        return self._finish(stream, wait, "reduce_scatter")

    def send(self, array, peer, stream=None, wait=True):
        self._check(array)
        self._check_rank(peer, "peer")
        self._comm.send(array, peer, stream=self._stream(stream))
        return self._finish(stream, wait, "send")

    def recv(self, array, peer, stream=None, wait=True):
        self._check(array)
        self._check_rank(peer, "peer")
        self._comm.recv(array, peer, stream=self._stream(stream))
        return self._finish(stream, wait, "recv")

    def abort(self):
        """End every rank's pending work on this communicator (ncclCommAbort); it cannot be used again."""
        if not self.aborted:
            self.aborted = True
            self._comm.abort()

    def close(self):
        if not self.aborted:
            self.aborted = True
            self._comm.destroy()

    # ---- checks and the wait ----

    def _check(self, array):
        if self.aborted:
            raise CollectiveError("this communicator was aborted (an interrupt, or a lost rank): make a new one")
        described = describe(array)
        if described["device"] is not None and described["device"] != self.device:
            raise CollectiveError(f"the array is on device {described['device']}, the communicator on device "
                                  f"{self.device}: NCCL reads the communicator's device only")
        return described

    def _check_rank(self, rank, what):
        if not isinstance(rank, int) or not 0 <= rank < self.nranks:
            raise CollectiveError(f"{what} {rank!r} is not a rank of this communicator (0 to {self.nranks - 1})")

    @staticmethod
    def _check_sizes(small, large, factor, what):
        import numpy

        if small["dtype"] != large["dtype"]:
            raise CollectiveError(f"{what}; their dtypes differ ({small['dtype']} and {large['dtype']})")
        if int(numpy.prod(large["shape"])) != factor * int(numpy.prod(small["shape"])):
            raise CollectiveError(f"{what} (sizes {small['shape']} and {large['shape']}, {factor} ranks)")

    def _stream(self, stream):
        stream = self.stream if stream is None else stream
        if not hasattr(stream, "query"):
            raise CollectiveError(f"stream must be an xcuda.Stream (it is polled while the collective waits), "
                                  f"not {type(stream).__name__}")
        return int(stream.handle)

    def _finish(self, stream, wait, what):
        """Wait for the collective by polling its stream; an interrupt aborts the communicator."""
        if not wait:
            return None
        stream = self.stream if stream is None else stream
        try:
            while not stream.query():
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            self.abort()
            raise KeyboardInterrupt(f"{what} was interrupted while it waited for its peers: the communicator "
                                    f"(rank {self.rank} of {self.nranks}) is aborted, every rank's pending work "
                                    "on it ended; the rest of this process is intact. Make a new communicator.") from None
        return None


def local_communicators(devices=None):
    """One communicator per local GPU in this process (ncclCommInitAll): rank i on devices[i].

    devices: a list of device ordinals, or a count (the first n), default every device."""
    import xcuda

    nccl = _nccl()
    if devices is None:
        devices = list(range(xcuda.device_count()))
    elif isinstance(devices, int):
        devices = list(range(devices))
    devices = list(devices)
    if len(set(devices)) != len(devices):
        raise CollectiveError(f"devices {devices} name one GPU twice: NCCL needs one rank per GPU")
    for device in devices:
        with xcuda.device(device):
            xcuda.zeros(1)  # each device's primary context made, as NCCL's runtime calls expect
    return [Communicator(made, device) for made, device in zip(nccl.Communicator.init_all(devices), devices)]
