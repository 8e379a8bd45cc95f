"""%cuda_recover: replace the kernel process and carry the user's variables over.

Why a new process: with CUDA 12 and 13 a kernel fault (an illegal address, a trap, an assert) leaves
the whole process unable to use any GPU, also after a context reset, and a kernel that never ends
cannot be stopped inside the process (destroying its context blocks until the kernel ends). Only a
new process gets the GPU back.

How: the variables of the user's namespace are pickled (with dill when it is installed, which also
carries functions and classes defined in cells) into a private file; device arrays cannot be carried
(their memory is gone) and become LostArray placeholders; %%cuda modules are rebuilt from their
source through the compile cache and their kernels bound to the same names. The process then replaces
itself with exec: same pid, same connection file, so the notebook stays connected and the restarter
of the Jupyter server sees a live kernel. The new process loads the file when xcuda loads
(load_ipython_extension) and deletes it.

Used by the xcuda kernel and by ipykernel with %load_ext xcuda. The xcuda kernel's main() puts its
command line in XCUDA_KERNEL_ARGV (fields separated by \\x1f) and its pid in XCUDA_KERNEL_PID; in
ipykernel the interpreter's own command line is used and PYTHONSTARTUP loads the extension again.
"""

import os
import pickle
import stat
import sys
import tempfile
import threading
import time
import types

RESTORE_VARIABLE = "XCUDA_RESTORE"
AUTO_VARIABLE = "XCUDA_AUTO_RECOVER"
# Time for the cell's reply and the kernel's idle status to leave the process before exec.
EXEC_DELAY_SECONDS = 0.5
# Names IPython or the kernel put in every namespace; they are made again by the new process.
_BUILTIN_NAMES = {"In", "Out", "exit", "quit", "get_ipython", "open"}

# What the last restore did (read by tests and by %cuda_recover's next summary).
last_restore = None
_replacing = False


class LostArray:
    """A device array that did not survive the replacement of the kernel process.

    Any use raises xcuda.SessionLostError naming the variable; create the array again.
    """

    __slots__ = ("_name", "_description")

    def __init__(self, name, description):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_description", description)

    def _gone(self, *args, **kwargs):
        import xcuda

        raise xcuda.SessionLostError(
            f"{self._name} was a device array ({self._description}) whose memory was lost with the GPU state "
            f"of the replaced kernel process; create it again, for example with xcuda.to_device(...)"
        )

    def __getattr__(self, attribute):
        self._gone()

    __array__ = _gone
    __len__ = _gone
    __getitem__ = _gone
    __setattr__ = _gone

    def __repr__(self):
        return f"<xcuda.LostArray {self._name}: {self._description}; create it again>"


def _serializer():
    try:
        import dill

        return dill
    except ImportError:
        return pickle


def _describe_array(array):
    return f"shape {tuple(array.shape)} {array.dtype} on device {array.device}"


def collect(shell):
    """What a replacement would carry: a dict, and nothing changed yet."""
    import xcuda

    serializer = _serializer()
    hidden = set(getattr(shell, "user_ns_hidden", {}) or {})
    state = {
        "values": {},
        "modules": {},
        "kernels": {},
        "lost": {},
        "not_carried": {},
        "headers": dict(xcuda.headers()),
        "recipes": [module._recipe for module in xcuda._modules()],
        # What the host wrote into __constant__/__device__ variables: written again when the rebuilt module loads.
        "global_values": {module.name: module._global_values for module in xcuda._modules() if module._global_values},
        "execution_count": int(getattr(shell, "execution_count", 1)),
        "device": xcuda.current_device(),
    }
    for name, value in list(shell.user_ns.items()):
        if name.startswith("_") or name in hidden or name in _BUILTIN_NAMES:
            continue
        if isinstance(value, types.ModuleType):
            state["modules"][name] = value.__name__
        elif isinstance(value, xcuda.DeviceArray):
            state["lost"][name] = _describe_array(value)
        elif isinstance(value, LostArray):
            state["lost"][name] = value._description
        elif isinstance(value, xcuda.Kernel):
            state["kernels"][name] = (value.module.name, value.name)
        elif isinstance(value, xcuda.Module):
            state["kernels"][name] = (value.name, None)
        else:
            try:
                state["values"][name] = serializer.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as error:  # anything a pickler can raise: the name is reported, not lost silently
                state["not_carried"][name] = f"{type(value).__name__}: {type(error).__name__}: {error}"[:200]
    return state


def summary(state):
    lines = []
    carried = sorted(state["values"]) + sorted(state["modules"]) + sorted(state["kernels"])
    lines.append(f"carried over: {len(carried)} name(s)" + (": " + ", ".join(carried) if carried else ""))
    if state["lost"]:
        lost = ", ".join(f"{name} ({text})" for name, text in sorted(state["lost"].items()))
        lines.append(f"device arrays lost (they become xcuda.LostArray; create them again): {lost}")
    if state["not_carried"]:
        missing = "; ".join(f"{name} ({why})" for name, why in sorted(state["not_carried"].items()))
        lines.append(f"not carried (they cannot be pickled): {missing}")
        if _serializer() is pickle:
            lines.append("(installing dill, e.g. apt install python3-dill, carries functions and classes too)")
    return "\n".join(lines)


def _command():
    """The executable and argv that start this kernel again with the same connection file."""
    argv = os.environ.get("XCUDA_KERNEL_ARGV")
    if argv and os.environ.get("XCUDA_KERNEL_PID") == str(os.getpid()):
        return os.readlink("/proc/self/exe"), argv.split("\x1f"), False
    return sys.executable, [sys.executable] + sys.argv, True


def _close_on_exec():
    # Only the standard streams go on; sockets and driver handles close with the old image.
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                os.set_inheritable(fd, False)
            except OSError:
                pass


def _exec_after_idle(shell, executable, argv, environment):
    """ipykernel: exec right after the kernel publishes the idle status that ends this request.

    Requests are handled one at a time on the kernel's main thread, so at that point the reply is
    sent and the next request is not read yet. Without an ipykernel (plain IPython), exec at once.
    """

    def replace():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        time.sleep(EXEC_DELAY_SECONDS)  # the I/O thread sends the reply and the idle status
        _close_on_exec()
        os.execve(executable, argv, environment)

    kernel = getattr(shell, "kernel", None)
    publish = getattr(kernel, "_publish_status", None)
    if publish is None:
        threading.Thread(target=replace, name="xcuda-recover", daemon=True).start()
        return

    def publish_then_replace(status, *args, **kwargs):
        publish(status, *args, **kwargs)
        if status == "idle":
            # The reply waits in the shell stream's queue for the event loop, which exec would
            # never give back: flush it now (the idle status goes through the I/O thread).
            for stream in [getattr(kernel, "shell_stream", None)] + list(getattr(kernel, "shell_streams", None) or []):
                if stream is not None and hasattr(stream, "flush"):
                    stream.flush()
            replace()

    kernel._publish_status = publish_then_replace


def write_private(data):
    """Writes data to a new file, mode 0600, in a new folder of its own, mode 0700; returns the file's path.

    The new process unpickles what it reads back, and unpickling runs code: nobody else may be able to have
    written it (see read_private)."""
    folder = tempfile.mkdtemp(prefix="xcuda-recover-")  # 0700, a fresh name: nobody else's
    path = os.path.join(folder, "namespace.pickle")
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(handle, "wb") as file:
        file.write(data)
    return path


def untrusted_because(folder, status):
    """Why a file with fstat() `status` in `folder` may have been written by someone else ("" if it cannot)."""
    folder_status = os.lstat(folder)
    if stat.S_ISLNK(folder_status.st_mode) or not stat.S_ISDIR(folder_status.st_mode):
        return f"its folder {folder} is not a plain folder"
    if folder_status.st_uid != os.geteuid() or folder_status.st_mode & 0o022:
        return f"its folder {folder} is not yours alone (owner {folder_status.st_uid}, mode {oct(folder_status.st_mode & 0o777)})"
    if not stat.S_ISREG(status.st_mode):
        return "it is not a regular file"
    if status.st_uid != os.geteuid():
        return f"it belongs to user {status.st_uid}"
    if status.st_nlink != 1:
        return f"it has {status.st_nlink} names (hard links)"
    if status.st_mode & 0o022:
        return f"others can write to it (mode {oct(status.st_mode & 0o777)})"
    return ""


def read_private(path):
    """The bytes of a file write_private made, then the file and its folder are removed. Refuses (OSError)
    a symbolic link, a file or folder not owned by this user or writable by others, a second hard link."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO: refused, not waited on
    except OSError as error:
        raise OSError(f"cannot open {path}: {error.strerror} (a symbolic link is refused)") from None
    try:
        problem = untrusted_because(folder, os.fstat(handle))
        if problem:
            raise OSError(f"{path} is not trusted: {problem}")
        with os.fdopen(handle, "rb") as file:
            handle = None
            return file.read()
    finally:
        if handle is not None:
            os.close(handle)
        for remove in (lambda: os.unlink(path), lambda: os.rmdir(folder)):
            try:
                remove()
            except OSError:
                pass


def replace_process(shell, state):
    """Write the state, then have the kernel exec itself once the current request has replied."""
    global _replacing
    executable, argv, is_python = _command()
    state["numbered_by_ipython"] = is_python
    path = write_private(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    _replacing = True
    if not is_python:
        # The xcuda kernel's server execs between this request and the next (kernel/replaceable_server).
        os.environ["XCUDA_REPLACE_AFTER_REPLY"] = path
        return
    environment = dict(os.environ)
    environment[RESTORE_VARIABLE] = path
    # PYTHONSTARTUP runs in the new shell and loads the extension, which restores.
    startup = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recovery_startup.py")
    if "PYTHONSTARTUP" in environment:
        environment["XCUDA_PREVIOUS_PYTHONSTARTUP"] = environment["PYTHONSTARTUP"]
    environment["PYTHONSTARTUP"] = startup
    _exec_after_idle(shell, executable, argv, environment)


def cuda_recover(line=""):
    """Replace the kernel process (the GPU comes back), carrying the variables over.

    Needed after a kernel fault (xcuda.KernelFault) or to stop a kernel that never ends. Variables
    are pickled (with dill when installed) and restored; %%cuda modules are rebuilt from the compile
    cache; device arrays cannot be carried and become xcuda.LostArray. The pid and the notebook's
    connection stay the same. Run the next cell as usual once this one has finished.
    """
    from IPython import get_ipython

    shell = get_ipython()
    state = collect(shell)
    print("xcuda: replacing the kernel process to get a fresh GPU state.")
    print(summary(state))
    sys.stdout.flush()
    replace_process(shell, state)


def after_cell(result=None):
    """post_run_cell: after a kernel fault, or an interrupt that left GPU work running, replace the
    process by itself when no variable would be lost; else flush device printf output."""
    import xcuda

    if _replacing:
        return
    lost = xcuda._session_lost()
    if lost:
        why = f"the GPU is unusable in this process ({lost.split(':')[0]})"
    elif xcuda._interrupted_work_running():
        why = "the interrupted GPU work is still running, and only a new process stops it"
    else:
        xcuda._flush_device_output()
        return
    if os.environ.get(AUTO_VARIABLE, "1") == "0":
        return
    from IPython import get_ipython

    shell = get_ipython()
    state = collect(shell)
    if state["not_carried"]:
        names = ", ".join(sorted(state["not_carried"]))
        print(f"xcuda: {why}. Not replacing the kernel process by itself, because these variables cannot "
              f"be carried over: {names}. Save what you need, then run %cuda_recover (they will be lost), "
              f"or restart the kernel.")
        return
    print(f"xcuda: {why}; replacing the kernel process (same connection, variables carried over).")
    print(summary(state))
    sys.stdout.flush()
    replace_process(shell, state)


def restore_if_requested(shell):
    """Called when xcuda loads into a shell: restores what replace_process wrote, if anything."""
    global last_restore
    path = os.environ.pop(RESTORE_VARIABLE, None)
    if "XCUDA_PREVIOUS_PYTHONSTARTUP" in os.environ:
        os.environ["PYTHONSTARTUP"] = os.environ.pop("XCUDA_PREVIOUS_PYTHONSTARTUP")
    elif os.environ.get("PYTHONSTARTUP", "").endswith("recovery_startup.py"):
        del os.environ["PYTHONSTARTUP"]
    if not path:
        return None
    import importlib

    import xcuda

    try:
        state = pickle.loads(read_private(path))
    except OSError as error:
        print(f"xcuda: not restoring the variables of the replaced process: {error}", file=sys.stderr)
        return None
    namespace = shell.user_ns
    failed = {}
    for name, module_name in state["modules"].items():
        try:
            namespace[name] = importlib.import_module(module_name)
        except Exception as error:
            failed[name] = f"import {module_name}: {error}"
    for header, text in state["headers"].items():
        xcuda.set_header(header, text)
    modules = {}
    for recipe in state["recipes"]:
        try:
            modules[recipe["name"]] = xcuda.compile(**recipe)
            modules[recipe["name"]]._remember_global_values(state.get("global_values", {}).get(recipe["name"], {}))
        except Exception as error:
            failed["module " + recipe["name"]] = str(error).splitlines()[0]
    for name, (module_name, kernel_name) in state["kernels"].items():
        module = modules.get(module_name)
        if module is not None:
            namespace[name] = module if kernel_name is None else module[kernel_name]
        else:
            failed[name] = f"module {module_name} was not rebuilt"
    serializer = _serializer()
    for name, blob in state["values"].items():
        try:
            namespace[name] = serializer.loads(blob)
        except Exception as error:
            failed[name] = f"{type(error).__name__}: {error}"
    for name, description in state["lost"].items():
        namespace[name] = LostArray(name, description)
    try:
        xcuda.set_device(state["device"])
    except Exception:
        pass
    if state.get("numbered_by_ipython"):
        # ipykernel numbers cells with the shell's count: the next cell follows the one that asked.
        # (The xcuda kernel's numbers come from xeus, which starts again at 1 in the new process.)
        shell.execution_count = state["execution_count"] + 1
    last_restore = {"restored": sorted(set(state["values"]) | set(state["modules"]) | set(state["kernels"])),
                    "lost": sorted(state["lost"]), "failed": failed}
    return last_restore
