"""xcuda on ipyparallel engines: device arrays spread over engines (scatter, gather), engine detection.

ipyparallel's engines are IPython kernels, started by ``ipcluster`` (locally, over SSH, under MPI or
Slurm) and driven from a notebook with ``%px`` / ``%%px``. Loaded there with ``%px %load_ext xcuda``,
each engine runs ``%%cuda`` cells itself and picks its GPU from its local rank or its place on its
host (see ``xcuda.device_choice()``). This module is the part that knows ipyparallel:

``scatter(view, name, array)``
    splits a numpy array along its first axis, one part per engine of ``view``, and binds each part
    as the DeviceArray ``name`` in its engine's namespace (a copy onto that engine's device).
``gather(view, name)``
    copies each engine's ``name`` to the host there and concatenates the parts in engine order.

Both copy, through the host and the network; ``DeviceArray`` itself pickles as its host contents
(``xcuda._from_host`` rebuilds it), so ``view.push`` and ``view.pull`` work too. When every engine
fails with the same error, the helpers raise that error here (``xcuda.CudaUnavailableError`` naming
the engines, for instance) rather than ipyparallel's CompositeError, so a notebook stops with the
reason; mixed failures are re-raised as ipyparallel raised them. An engine that went away (its process
or its whole host: the controller stopped hearing its heartbeat) is ``EngineLostError``, naming it and
where it ran when this client last saw it; the view's other engines keep their data.

Importing this module imports neither ipyparallel nor xcuda: ``xcuda`` imports it while it is
being made, and a process that is not an engine never needs ipyparallel.
"""
import builtins
import os
import socket
import sys
import warnings

__all__ = ["scatter", "gather", "engine_label", "HostFallbackWarning", "EngineLostError"]


class HostFallbackWarning(UserWarning):
    """A pickled DeviceArray was loaded where no GPU is usable: it became a numpy array."""


class EngineLostError(RuntimeError):
    """Engines of the view went away (their process or their host) while, or before, they were asked.

    ``engines`` holds their ids. The other engines are not touched: their data is still there, and a
    view without the lost ones (``rc[[0, 1]]``) goes on with it.
    """

    def __init__(self, message, engines):
        super().__init__(message)
        self.engines = list(engines)


# Where each engine ran, as the engines said when scatter or gather reached them: (client id, engine id)
# -> engine_label(). A lost engine cannot be asked any more; this is what the error can still name.
_labels = {}


def _remember(view, engine, label):
    if label:
        _labels[(id(view.client), engine)] = label


def _lost(view, engines, how):
    client = view.client
    named = []
    for engine in engines:
        label = _labels.get((id(client), engine))
        named.append(f"{engine} ({label})" if label else f"{engine}")
    plural = "s" if len(engines) > 1 else ""
    kept = [engine for engine in _targets(view) if engine not in engines and engine in client.ids]
    hint = (f"the other engines keep their data: go on with a view without the lost one{plural}, "
            f"rc[{kept}]" if kept else "no engine of the view is left: start engines again (ipcluster)")
    return EngineLostError(f"engine{plural} {', '.join(named)} {'are' if plural else 'is'} lost: {how}; {hint}",
                           engines)


def _from_host(array):
    """Rebuild a pickled DeviceArray: a new one on the current device, or the numpy array without a GPU.

    Pickle records this function as ``xcuda._from_host``.
    """
    import xcuda

    if xcuda.driver_available():
        return xcuda.to_device(array)
    warnings.warn(
        f"xcuda: a DeviceArray of shape {array.shape} and dtype {array.dtype} was unpickled in a process "
        "without a usable GPU; it is a numpy array here (its contents, copied)",
        HostFallbackWarning, stacklevel=2)
    return array


def engine_label():
    """This process' label when it is an ipyparallel engine ("ipyparallel engine 3 (pid 4711, node7)"),
    else None. Looks only at what is already imported: a plain process never imports ipyparallel here."""
    kernel_module = sys.modules.get("ipyparallel.engine.kernel")
    if kernel_module is None:
        return None
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
    except ImportError:
        return None
    if not isinstance(kernel, kernel_module.IPythonParallelKernel):
        return None
    return f"ipyparallel engine {kernel.engine_id} (pid {os.getpid()}, {socket.gethostname()})"


# ---- engine side: these run in the engines (ipyparallel sends module functions by reference) ----


def _user_namespace():
    from IPython import get_ipython

    shell = get_ipython()
    return shell.user_ns if shell is not None else sys.modules["__main__"].__dict__


def _bind_device_array(name, part):
    """On an engine: bind a copy of `part` on this engine's device as `name`; returns what was made."""
    import xcuda

    xcuda._join_host()  # place the engine before its first device array, if importing xcuda did not
    array = xcuda.to_device(part)
    _user_namespace()[name] = array
    return {"shape": array.shape, "dtype": str(array.dtype), "device": array.device, "label": engine_label()}


def _host_copy(name):
    """On an engine: `name` from the namespace as a numpy array (a DeviceArray is copied to the host)."""
    import numpy

    namespace = _user_namespace()
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined on this engine: scatter or compute it there first")
    return numpy.asarray(namespace[name]), engine_label()


# ---- client side --------------------------------------------------------------------------------


def _targets(view):
    """The engine ids of a DirectView, in the view's order."""
    targets = view.targets
    if targets is None or targets == "all":
        return list(view.client.ids)
    if isinstance(targets, int):
        return [targets]
    return list(targets)


def _remote_failures(error):
    """(engine id, ename, evalue) of each engine's failure in an ipyparallel error."""
    from ipyparallel.error import CompositeError, RemoteError

    if isinstance(error, CompositeError):
        return [(info.get("engine_id"), ename, evalue) for ename, evalue, _, info in error.elist]
    if isinstance(error, RemoteError):
        return [((error.engine_info or {}).get("engine_id"), error.ename, error.evalue)]
    return []


def _send(view, function, arguments):
    """function(*arguments[i]) on the i-th engine of the view. Engines the controller no longer knows are
    refused here, before anything is sent: EngineLostError naming them."""
    targets = _targets(view)
    gone = [engine for engine in targets if engine not in view.client.ids]
    if gone:
        raise _lost(view, gone, "the controller no longer has them (their process or host went away)")
    return targets, [view.client[engine].apply_async(function, *args) for engine, args in zip(targets, arguments)]


def _wait_all(view, targets, results, timeout):
    """Each AsyncResult's value, in order. Engines that died or went silent are EngineLostError. When
    engines fail, all with one error class that xcuda or Python defines, raises that class here naming
    the engines; otherwise re-raises the first failure."""
    from ipyparallel.error import RemoteError, TimeoutError as WaitedTooLong

    values, failures, first, silent, died = [], [], None, [], []
    for engine, result in zip(targets, results):
        try:
            values.append(result.get(timeout=timeout))
        except RemoteError as error:
            failed = _remote_failures(error)
            if any(ename == "EngineError" for _, ename, _ in failed):
                died.append(engine)  # ipyparallel's word for "the engine went away while on it"
            else:
                failures += failed
                first = first or error
        except WaitedTooLong:
            silent.append(engine)
    died += [engine for engine in silent if engine not in view.client.ids]
    if died:
        raise _lost(view, died, "the controller stopped hearing from them (their process or host went away)")
    if silent:
        raise TimeoutError(f"engines {', '.join(map(str, silent))} did not answer within {timeout} s "
                           "(still registered: busy, or a slow network)")
    if not failures:
        return values
    import xcuda

    names = {ename for _, ename, _ in failures}
    local = None
    if len(names) == 1:
        ename = names.pop()
        local = getattr(xcuda, ename, None) or getattr(builtins, ename, None)
    if not (isinstance(local, type) and issubclass(local, Exception)):
        raise first
    engines = ", ".join(str(engine) for engine, _, _ in failures)
    evalue = failures[0][2]
    plural = "s" if len(failures) > 1 else ""
    raise local(f"on engine{plural} {engines}: {evalue}") from first


def scatter(view, name, array, timeout=None):
    """Split `array` along its first axis over the engines of `view`; each engine gets its part as a
    DeviceArray named `name` on its own device.

    Parameters
    ----------
    view : ipyparallel.DirectView
        The engines, in the order the parts go to (``rc[:]``, ``rc[[2, 0]]``).
    name : str
        The variable each engine binds its part to.
    array : array_like
        Anything numpy.asarray takes; split with numpy.array_split, so the parts differ by at most one
        row when the length does not divide evenly.
    timeout : float, optional
        Seconds to wait for the engines (default: no limit).

    Returns
    -------
    list of dict
        Per engine, in order: its id, and the part's shape, dtype and device there.

    Raises
    ------
    xcuda.CudaUnavailableError (or the engines' common error)
        Naming the engines, when every failing engine failed the same way (no GPU there, for one).
    ValueError
        `name` is not an identifier, or the view has no engines.
    EngineLostError
        Naming the engines of the view that went away (process or host); the others keep their data.

    Each part travels as a numpy array (ipyparallel sends its buffer without pickling it) and is
    copied to the device on its engine: host -> network -> host -> device.
    """
    import numpy

    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"scatter binds the parts to a variable name; {name!r} is not an identifier")
    targets = _targets(view)
    if not targets:
        raise ValueError("scatter needs at least one engine in the view; start engines (ipcluster) first")
    parts = numpy.array_split(numpy.ascontiguousarray(array), len(targets))
    targets, results = _send(view, _bind_device_array, [(name, part) for part in parts])
    made = _wait_all(view, targets, results, timeout)
    for engine, info in zip(targets, made):
        _remember(view, engine, info.pop("label"))
    return [dict(engine=engine, **info) for engine, info in zip(targets, made)]


def gather(view, name, timeout=None):
    """Copy each engine's `name` to the host and concatenate the parts in the view's engine order.

    Parameters
    ----------
    view : ipyparallel.DirectView
    name : str
        A DeviceArray (or anything numpy.asarray takes) bound on every engine of the view.
    timeout : float, optional
        Seconds to wait for the engines (default: no limit).

    Returns
    -------
    numpy.ndarray
        The parts joined along their first axis (0-d parts, one value per engine, become a 1-d array).

    Raises
    ------
    NameError (or the engines' common error)
        Naming the engines where `name` is not defined.
    EngineLostError
        Naming the engines of the view that went away (process or host); the others keep their data.
    TimeoutError
        Engines still registered did not answer within `timeout`.
    """
    import numpy

    targets = _targets(view)
    if not targets:
        raise ValueError("gather needs at least one engine in the view; start engines (ipcluster) first")
    targets, results = _send(view, _host_copy, [(name,)] * len(targets))
    parts = []
    for engine, (part, label) in zip(targets, _wait_all(view, targets, results, timeout)):
        _remember(view, engine, label)
        parts.append(numpy.atleast_1d(part))
    return numpy.concatenate(parts)


# ---- NCCL communicators over the engines (xcuda.collectives on each engine) ----------------------


def _engine_device_report():
    """On an engine: what the client checks before making a communicator over it."""
    import xcuda

    xcuda._join_host()
    report = {"label": engine_label(), "simulated": False, "uuid": None, "device": None, "nccl": None}
    if not xcuda.driver_available():
        report["unusable"] = "no usable NVIDIA driver"
        return report
    xcuda.zeros(1)  # the device's context, so the choice knows its GPU
    report.update(device=xcuda.current_device(), uuid=xcuda.device_choice().get("gpu_uuid"),
                  simulated=xcuda.simulated())
    try:
        from . import collectives

        collectives._nccl()
    except ImportError as error:
        report["nccl"] = str(error)
    return report


def _engine_unique_id():
    import nccl.core as nccl

    return bytes(nccl.get_unique_id())


def _engine_join(name, nranks, rank, unique_id):
    from . import collectives

    communicator = collectives.Communicator.join(nranks, rank, unique_id)
    _user_namespace()[name] = communicator
    return {"rank": communicator.rank, "device": communicator.device}


def _engine_describe(names):
    from . import collectives

    namespace = _user_namespace()
    found = {}
    for name in names:
        if name not in namespace:
            raise NameError(f"name '{name}' is not defined on this engine: scatter or compute it there first")
        found[name] = collectives.describe(namespace[name])
    return found


def _engine_collective(communicator_name, method, names, keywords):
    namespace = _user_namespace()
    communicator = namespace[communicator_name]
    getattr(communicator, method)(*(namespace[name] for name in names), **keywords)
    return communicator.rank


def check_ranks(reports, targets):
    """The client's checks before NCCL is called: every engine on its own NVIDIA GPU, nccl4py there.
    `reports` are _engine_device_report()s in the order of `targets`. Raises with the engines named."""
    from .collectives import CollectiveError

    unusable = [(engine, r) for engine, r in zip(targets, reports) if r.get("unusable") or r.get("simulated")]
    if unusable:
        names = ", ".join(str(engine) for engine, _ in unusable)
        raise CollectiveError(f"NCCL runs on NVIDIA GPUs only; engine(s) {names} have none "
                              f"({unusable[0][1].get('unusable') or 'the PTX simulator'})")
    by_gpu = {}
    for engine, report in zip(targets, reports):
        by_gpu.setdefault(report["uuid"] or (report["label"], report["device"]), []).append(engine)
    shared = [engines for engines in by_gpu.values() if len(engines) > 1]
    if shared:
        raise CollectiveError(f"engines {', '.join(map(str, shared[0]))} use one GPU; NCCL needs one rank per GPU: "
                              "give each engine its own device (XCUDA_DEVICE, a launcher's local rank, or fewer "
                              "engines per host)")
    missing = [(engine, r["nccl"]) for engine, r in zip(targets, reports) if r.get("nccl")]
    if missing:
        names = ", ".join(str(engine) for engine, _ in missing)
        raise ImportError(f"on engine(s) {names}: {missing[0][1]}")


def check_same_arrays(descriptions, targets, names, method):
    """Shapes and dtypes must agree across ranks before NCCL is called (it would hang or corrupt)."""
    from .collectives import CollectiveError

    for name in names:
        seen = {}
        for engine, found in zip(targets, descriptions):
            seen.setdefault((tuple(found[name]["shape"]), found[name]["dtype"]), []).append(engine)
        if len(seen) > 1:
            parts = "; ".join(f"engines {', '.join(map(str, engines))}: shape {shape}, dtype {dtype}"
                              for (shape, dtype), engines in seen.items())
            raise CollectiveError(f"{method}: '{name}' differs across the ranks ({parts}); every rank needs "
                                  "the same shape and dtype")


class ViewCommunicator:
    """The client's handle of a communicator over a view's engines (``communicator(view)``).

    Each collective names the engines' variables: ``comm.all_reduce("partial", op="sum")``. Shapes and
    dtypes are checked across the ranks first; then every engine runs it at once. A lost engine aborts
    the communicator on the others (EngineLostError); an interrupt of the client interrupts the
    engines, which abort it. On the engines the rank is the variable ``name`` (an
    xcuda.collectives.Communicator), for %px code.
    """

    def __init__(self, view, name, targets, timeout):
        self.view, self.name, self.targets, self.timeout = view, name, targets, timeout

    def __repr__(self):
        return f"<xcuda ViewCommunicator '{self.name}' over engines {self.targets}>"

    def _run(self, method, names, **keywords):
        import signal

        from .collectives import OPS

        if "op" in keywords and keywords["op"] not in OPS:
            raise ValueError(f"op {keywords['op']!r} is not a reduction NCCL has; use one of {', '.join(OPS)}")
        client = self.view.client
        targets, results = _send(self.view, _engine_describe, [(names,)] * len(self.targets))
        check_same_arrays(_wait_all(self.view, targets, results, self.timeout), targets, names, method)
        targets, results = _send(self.view, _engine_collective,
                                 [(self.name, method, names, keywords)] * len(self.targets))
        try:
            return _wait_all(self.view, targets, results, self.timeout)
        except EngineLostError as lost:
            others = [engine for engine in targets if engine not in lost.engines and engine in client.ids]
            if others:
                client.send_signal(signal.SIGINT, targets=others, block=False)
            raise EngineLostError(f"{lost} (the communicator '{self.name}' is aborted on the other engines: "
                                  "make a new one over the engines that are left)", lost.engines) from None
        except KeyboardInterrupt:
            client.send_signal(signal.SIGINT, targets=[e for e in targets if e in client.ids], block=False)
            raise

    def all_reduce(self, name, op="sum"):
        return self._run("all_reduce", [name], op=op)

    def broadcast(self, name, root=0):
        return self._run("broadcast", [name], root=root)

    def reduce(self, name, root=0, op="sum"):
        return self._run("reduce", [name], root=root, op=op)

    def all_gather(self, send, recv):
        return self._run("all_gather", [send, recv])

    def reduce_scatter(self, send, recv, op="sum"):
        return self._run("reduce_scatter", [send, recv], op=op)


def communicator(view, name="comm", timeout=None):
    """One NCCL communicator over the engines of `view` (ranks in the view's order), bound on each
    engine's device as the variable `name`; returns the client's ViewCommunicator.

    Before NCCL is called: every engine must be reachable, on an NVIDIA GPU of its own, with nccl4py
    importable (each refusal names the engines). The unique id is made on the first engine and pushed
    to the others. Needs nccl4py on the engines (``pip install "nccl4py[cu13]"``)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"communicator binds the rank to a variable name; {name!r} is not an identifier")
    targets = _targets(view)
    if not targets:
        raise ValueError("communicator needs at least one engine in the view; start engines (ipcluster) first")
    targets, results = _send(view, _engine_device_report, [()] * len(targets))
    reports = _wait_all(view, targets, results, timeout)
    for engine, report in zip(targets, reports):
        _remember(view, engine, report["label"])
    check_ranks(reports, targets)
    unique_id = _wait_all(view, targets[:1], [view.client[targets[0]].apply_async(_engine_unique_id)], timeout)[0]
    targets, results = _send(view, _engine_join, [(name, len(targets), rank, unique_id) for rank in range(len(targets))])
    _wait_all(view, targets, results, timeout)
    return ViewCommunicator(view, name, targets, timeout)
