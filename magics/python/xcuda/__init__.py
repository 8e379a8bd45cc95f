"""xcuda: write and run CUDA C++ from notebook cells.

%%cuda compiles a cell with NVRTC and binds every __global__ function as a Kernel object;
kernel[grid, block](*args) launches it with arguments checked against its C++ signature.
Load the magics into any IPython with %load_ext xcuda (the xcuda Jupyter kernel does this itself).
Importing the package never touches the CUDA driver: the session starts at the first GPU operation.

The package: ``xcuda._core`` is the compiled extension (the C++ core and its binding) and everything in
it is here under ``xcuda``; ``xcuda.magics`` is the IPython magics and load_ipython_extension,
``xcuda.recovery`` %cuda_recover (the process replacement after a kernel
fault), ``xcuda.parallel`` the ipyparallel helpers. The helper programs ``xcuda-compile`` (NVRTC in a
process of its own) and ``xcuda-replay`` (one launch made again under ncu or compute-sanitizer) sit in
this folder, beside ``_core``, which finds them there.
"""
import atexit as _atexit

from . import _core

# Every public and private name of the extension (tests and %cuda_recover use a few private ones), and
# the types shown as xcuda.X, as the extension was named before it moved into the package: pickles of
# xcuda objects and the names in messages stay the same.
for _name, _value in vars(_core).items():
    if _name.startswith("__"):
        continue
    if isinstance(_value, type) and getattr(_value, "__module__", None) == "xcuda._core":
        try:
            _value.__module__ = "xcuda"
        except (AttributeError, TypeError):  # a static type keeps its name
            pass
    globals()[_name] = _value
del _name, _value

__doc__ = __doc__  # the package's own, not the extension's
__version__ = _core.__version__

from . import parallel  # noqa: E402  (needs nothing of xcuda at import)
from . import collectives  # noqa: E402  (NCCL through nccl4py, imported only when a communicator is made)
from .parallel import HostFallbackWarning  # noqa: E402,F401
from .recovery import LostArray  # noqa: E402,F401
from .magics import load_ipython_extension  # noqa: E402,F401  (%load_ext xcuda, and the xcuda kernel)
from .trace import ThreadTrace, TraceStep, trace  # noqa: E402,F401  (the PTX simulator's one-thread trace)
from .on_the_simulator import measured, sized, use_gpu, use_simulator  # noqa: E402,F401  (the simulator, said in words)

# A pickled DeviceArray is rebuilt with this function, under the name pickle records.
_from_host = parallel._from_host
_from_host.__module__ = "xcuda"
_from_host.__qualname__ = "_from_host"

# Any interpreter's exit closes the session (scripts, ipykernel, plain IPython): buffers, modules and the
# page-locked staging buffers are freed before the contexts go, so a leak check at exit
# (compute-sanitizer --leak-check full) finds nothing of xcuda's own. The xcuda kernel calls _shutdown
# itself: xeus ends with std::exit, where atexit handlers never run.
_atexit.register(_core._shutdown)

# An ipyparallel engine takes its place on its host when it imports xcuda: before any GPU operation, so
# the slot can choose its device.
_core._join_host_if_engine()
