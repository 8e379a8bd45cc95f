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
