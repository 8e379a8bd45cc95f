"""The xcuda kernel speaks the Jupyter protocol like a Python kernel: jupyter_kernel_test's standard
tests, error replies naming the exception class, kernel_info describing the running Python, and the
loading of the `xcuda` extension (from the build tree, XCUDA_PYTHONPATH, or not at all).

Every kernel here gets its own IPYTHONDIR, so that IPython's history database is fresh and the
history tests count only this run's cells.
"""
import json
import os
import tempfile
import textwrap

import jupyter_kernel_test
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel

KERNEL_NAME = "xcuda"
TIMEOUT = 30


def start_kernel(ipython_dir, stderr=None, **extra_env):
    env = dict(os.environ, IPYTHONDIR=str(ipython_dir), **extra_env)
    return start_new_kernel(kernel_name=KERNEL_NAME, env=env, **({"stderr": stderr} if stderr else {}))


def start_kernel_with_module_dir(tmp_path, monkeypatch, module_dir, stderr=None, **extra_env):
    """Starts the kernel with XCUDA_PYTHONPATH=module_dir.

    The test kernelspec may set XCUDA_PYTHONPATH in its own env, which wins over the launch
    environment; so this writes a copy of the spec that names `module_dir` and puts it first on
    JUPYTER_PATH.
    """
    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME).to_dict()
    spec["env"] = dict(spec.get("env") or {}, XCUDA_PYTHONPATH=str(module_dir))
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join([str(tmp_path / "jupyter"), os.environ.get("JUPYTER_PATH", "")]))
    return start_kernel(tmp_path, stderr, **extra_env)


def run_cell(kc, code, timeout=TIMEOUT):
    """Executes `code`; returns the execute_reply content and the iopub messages it produced."""
    outputs = []
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=outputs.append)
    return reply["content"], outputs


def iopub_of_type(outputs, msg_type):
    return [msg["content"] for msg in outputs if msg["msg_type"] == msg_type]


def stdout_of(outputs):
    return "".join(content["text"] for content in iopub_of_type(outputs, "stream") if content["name"] == "stdout")


class XcudaKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = KERNEL_NAME
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"

    completion_samples = [
        {"text": "zi", "matches": {"zip"}},
        {"text": "import collections; collections.Ordered", "matches": {"OrderedDict"}},
    ]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2", "for i in range(3):"]
    invalid_code_samples = ["import = 7q", "1 +* 2 )"]

    code_page_something = "print?"
    code_generate_error = "raise ValueError('expected')"

    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
        {"code": "from IPython.display import HTML; HTML('<b>bold</b>')", "mime": "text/html", "result": "<b>bold</b>"},
    ]
    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))", "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))", "mime": "text/latex"},
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"

    @classmethod
    def setUpClass(cls):
        cls.ipython_dir = tempfile.TemporaryDirectory()
        cls.km, cls.kc = start_kernel(cls.ipython_dir.name)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.ipython_dir.cleanup()

    def test_division_by_zero_replies_error_named_ZeroDivisionError(self):
        self.flush_channels()
        reply, outputs = run_cell(self.kc, "1/0")
        assert reply["status"] == "error"
        assert reply["ename"] == "ZeroDivisionError"
        assert "division by zero" in reply["evalue"]
        errors = iopub_of_type(outputs, "error")
        assert len(errors) == 1
        assert errors[0]["ename"] == "ZeroDivisionError"
        assert errors[0]["evalue"] == reply["evalue"]
        after, after_outputs = run_cell(self.kc, "print(40 + 2)")
        assert after["status"] == "ok"
        assert stdout_of(after_outputs) == "42\n"

    def test_error_ename_is_the_bare_class_name_for_user_exceptions(self):
        self.flush_channels()
        reply, outputs = run_cell(self.kc, "class CompileError(Exception): pass\nraise CompileError('nvrtc failed')")
        assert (reply["status"], reply["ename"], reply["evalue"]) == ("error", "CompileError", "nvrtc failed")
        assert iopub_of_type(outputs, "error")[0]["ename"] == "CompileError"

    def test_syntax_error_replies_error_named_SyntaxError(self):
        self.flush_channels()
        reply, outputs = run_cell(self.kc, "def broken(:")
        assert (reply["status"], reply["ename"]) == ("error", "SyntaxError")
        assert iopub_of_type(outputs, "error")[0]["ename"] == "SyntaxError"

    def test_unknown_magic_replies_error_named_UsageError(self):
        self.flush_channels()
        reply, _ = run_cell(self.kc, "%no_such_magic_here")
        assert (reply["status"], reply["ename"]) == ("error", "UsageError")
        assert "no_such_magic_here" in reply["evalue"]

    def test_kernel_info_describes_xcuda_and_the_running_python(self):
        self.flush_channels()
        _, outputs = run_cell(self.kc, "import platform; print(platform.python_version())")
        running = stdout_of(outputs).strip()
        self.flush_channels()
        self.kc.kernel_info()
        info = self.kc.get_shell_msg(timeout=TIMEOUT)["content"]
        assert info["implementation"] == "xcuda"
        assert info["language_info"]["version"] == running
        assert info["language_info"]["pygments_lexer"] == "ipython3"
        assert info["language_info"]["codemirror_mode"] == {"name": "ipython", "version": 3}
        assert info["language_info"]["mimetype"] == "text/x-python"
        assert info["language_info"]["nbconvert_exporter"] == "python"
        assert "%%cuda" in info["banner"]

    def test_python_sees_only_the_program_in_argv(self):
        self.flush_channels()
        reply, outputs = run_cell(self.kc, "import sys; print(len(sys.argv), sys.argv[0].endswith('xcuda'))")
        assert reply["status"] == "ok"
        assert stdout_of(outputs) == "1 True\n"

    def test_a_cuda_cell_magic_is_registered(self):
        # Whatever module the build tree has (or a stand-in re-raising its import error), `%%cuda` is a
        # cell magic of the shell, so IPython's help, %lsmagic and cell transformations know it.
        self.flush_channels()
        reply, outputs = run_cell(self.kc, "print('cuda' in get_ipython().magics_manager.magics['cell'])")
        assert reply["status"] == "ok"
        assert stdout_of(outputs) == "True\n"


FAKE_XCUDA = textwrap.dedent(
    """
    import os

    def load_ipython_extension(shell):
        def cuda(line, cell):
            print("compiled", len(cell.splitlines()), "lines")
        shell.register_magic_function(cuda, "cell", "cuda")

    def _shutdown():
        with open(os.environ["XCUDA_TEST_SHUTDOWN_MARKER"], "w") as marker:
            marker.write("released")
    """
)


def test_extension_loads_from_XCUDA_PYTHONPATH_and_is_shut_down_with_the_kernel(tmp_path, monkeypatch):
    module_dir = tmp_path / "module"
    module_dir.mkdir()
    (module_dir / "xcuda.py").write_text(FAKE_XCUDA)
    marker = tmp_path / "shutdown-marker"
    km, kc = start_kernel_with_module_dir(tmp_path, monkeypatch, module_dir, XCUDA_TEST_SHUTDOWN_MARKER=str(marker))
    try:
        reply, outputs = run_cell(kc, "%%cuda\n__global__ void a() {}\n__global__ void b() {}")
        assert reply["status"] == "ok"
        assert stdout_of(outputs) == "compiled 2 lines\n"
        reply, outputs = run_cell(kc, "import xcuda; print(xcuda.__file__)")
        assert stdout_of(outputs) == f"{module_dir / 'xcuda.py'}\n"
    finally:
        kc.stop_channels()
        km.shutdown_kernel()
    assert marker.read_text() == "released"


def test_kernel_without_an_importable_xcuda_runs_python_and_fails_cuda_cells_with_the_import_error(tmp_path,
                                                                                                   monkeypatch):
    module_dir = tmp_path / "module"
    module_dir.mkdir()
    (module_dir / "xcuda.py").write_text("raise ImportError('libnvrtc.so.13: cannot open shared object file')\n")
    km, kc = start_kernel_with_module_dir(tmp_path, monkeypatch, module_dir)
    try:
        reply, outputs = run_cell(kc, "print(6 * 7)")
        assert reply["status"] == "ok"
        assert stdout_of(outputs) == "42\n"
        reply, outputs = run_cell(kc, "%%cuda\n__global__ void k() {}")
        assert (reply["status"], reply["ename"]) == ("error", "ImportError")
        assert "libnvrtc.so.13" in reply["evalue"]
        assert iopub_of_type(outputs, "error")[0]["ename"] == "ImportError"
    finally:
        kc.stop_channels()
        km.shutdown_kernel()


def test_display_metadata_with_datetimes_is_published_as_iso_text(tmp_path):
    # ipyparallel's %px republishes each engine's result with its message metadata, which holds datetimes.
    km, kc = start_kernel(tmp_path)
    try:
        reply, outputs = run_cell(kc, textwrap.dedent("""
            import datetime
            from IPython.display import display, publish_display_data
            when = datetime.datetime(2026, 11, 30, 18, 51, 18)
            publish_display_data({"text/plain": "engine 0"}, metadata={"completed": when})

            class Result:
                def _repr_mimebundle_(self, include=None, exclude=None):
                    return {"text/plain": "engine 1"}, {"started": when}

            Result()
        """))
        assert reply["status"] == "ok", reply
        shown = iopub_of_type(outputs, "display_data")
        assert [d["data"]["text/plain"] for d in shown] == ["engine 0"]
        assert shown[0]["metadata"]["completed"].startswith("2026-11-30T18:51:18")
        result = iopub_of_type(outputs, "execute_result")
        assert result and result[0]["data"]["text/plain"] == "engine 1"
        assert result[0]["metadata"]["started"].startswith("2026-11-30T18:51:18")
    finally:
        kc.stop_channels()
        km.shutdown_kernel()


def test_history_on_the_control_channel_leaves_the_history_file_alone(tmp_path):
    # IPython's history database was a connection of the shell's thread; used on the control thread, sqlite
    # refused it and IPython renamed the user's history.sqlite to history-corrupt-<time>.sqlite (test_hostile_wire's
    # fuzzing did so twice a run). A history_request there is refused; code run there (%history -g) works.
    km, kc = start_kernel(tmp_path)
    try:
        for code in ("first = 1", "second = 2"):
            assert run_cell(kc, code)[0]["status"] == "ok"
        for kind, extra in (("tail", {"n": 5}), ("range", {"session": 0, "start": 1, "stop": 3}),
                            ("search", {"pattern": "*", "n": 5})):
            msg = kc.session.msg("history_request", dict(hist_access_type=kind, raw=True, output=False, **extra))
            kc.control_channel.send(msg)
            reply = kc.get_control_msg(timeout=TIMEOUT)
            assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
            assert reply["content"]["status"] == "error", reply["content"]
            assert reply["content"]["ename"] == "BadRequest"
            assert "shell channel" in reply["content"]["evalue"]
        # Code run on the control channel runs on the control thread too: %history -g reads the database there.
        msg = kc.session.msg("execute_request", dict(code="%history -g first", silent=False, store_history=False,
                                                     user_expressions={}, allow_stdin=False))
        kc.control_channel.send(msg)
        reply = kc.get_control_msg(timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        # And while the shell thread runs a cell that stores its own history: both threads at once.
        running = kc.execute("import time\nfor k in range(30):\n    get_ipython().history_manager.writeout_cache()\n"
                             "    time.sleep(0.02)", store_history=True)
        for _ in range(5):
            kc.control_channel.send(kc.session.msg("execute_request", dict(
                code="%history -g first", silent=False, store_history=False, user_expressions={}, allow_stdin=False)))
            assert kc.get_control_msg(timeout=TIMEOUT)["content"]["status"] == "ok"
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        assert reply["parent_header"]["msg_id"] == running and reply["content"]["status"] == "ok", reply["content"]
        profile = tmp_path / "profile_default"
        assert sorted(p.name for p in profile.glob("history*.sqlite")) == ["history.sqlite"]
        # The shell channel's history still has the cells, the one that ran beside the control thread's last.
        kc.history(hist_access_type="tail", n=5, raw=True, output=False)
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        inputs = [row[2] for row in reply["content"]["history"]]
        assert inputs[-3:-1] == ["first = 1", "second = 2"] and inputs[-1].startswith("import time"), inputs
    finally:
        kc.stop_channels()
        km.shutdown_kernel()


def test_atexit_handlers_run_when_the_kernel_is_shut_down(tmp_path):
    # As in ipykernel: an ipyparallel.Cluster started in a notebook stops its engines from one.
    marker = tmp_path / "atexit-marker"
    km, kc = start_kernel(tmp_path)
    try:
        reply, _ = run_cell(kc, f"import atexit\natexit.register(lambda: open({str(marker)!r}, 'w').write('ran'))")
        assert reply["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel()
    assert marker.read_text() == "ran"


def test_requests_queued_behind_a_failing_cell_are_answered_aborted_with_busy_and_idle():
    """As ipykernel does after an error (stop_on_error): xeus 2.4.1 alone answers {"status": "error"}
    and publishes nothing, so a client waiting for the queued request's idle status waits forever."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60)
    try:
        failing = client.execute("import time\ntime.sleep(0.5)\n1 / 0")
        queued = client.execute("print('never run')")  # arrives while the first cell sleeps
        replies, others = {}, []
        while len(replies) < 2:
            message = client.get_shell_msg(timeout=60)
            parent = message["parent_header"].get("msg_id")
            if parent in (failing, queued):
                replies[parent] = message["content"]
            else:  # a late kernel_info_reply to start_new_kernel's readiness probes (seen on a fast host)
                others.append(message["msg_type"])
        assert all(kind == "kernel_info_reply" for kind in others), others
        assert replies[failing]["status"] == "error" and replies[failing]["ename"] == "ZeroDivisionError"
        assert replies[queued]["status"] == "aborted"
        # Status messages of both, in the order they arrived: the failing cell's idle comes first, then the
        # aborted request's busy and idle (JupyterLab drops a cell's prompt when that order is reversed).
        order = []
        while len(order) < 4:
            message = client.get_iopub_msg(timeout=30)
            owner = {failing: "failing", queued: "queued"}.get(message["parent_header"].get("msg_id"))
            if owner and message["msg_type"] == "status":
                order.append((owner, message["content"]["execution_state"]))
        assert order == [("failing", "busy"), ("failing", "idle"), ("queued", "busy"), ("queued", "idle")]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_module_folder_others_can_write_to_is_refused_with_a_warning(tmp_path, monkeypatch):
    # Issue 28, item 3: a folder the kernel imports code from must be writable by nobody else, nor any
    # folder above it. Refused: one line on stderr naming why, and the folder is not on sys.path.
    module_dir = tmp_path / "module"
    module_dir.mkdir()
    (module_dir / "xcuda.py").write_text(FAKE_XCUDA)
    for mode, who in ((0o775, "its group"), (0o757, "others")):
        module_dir.chmod(mode)
        log = tmp_path / f"stderr-{mode:o}.txt"
        with open(log, "w") as stderr:
            km, kc = start_kernel_with_module_dir(tmp_path / f"k{mode:o}", monkeypatch, module_dir, stderr=stderr)
        try:
            reply, outputs = run_cell(kc, "import sys; print(any(p == %r for p in sys.path))" % str(module_dir))
            assert reply["status"] == "ok"
            assert stdout_of(outputs) == "False\n"
        finally:
            kc.stop_channels()
            km.shutdown_kernel()
        warning = [line for line in log.read_text().splitlines() if line.startswith("xcuda: not importing xcuda from")]
        assert len(warning) == 1, log.read_text()
        assert str(module_dir) in warning[0] and f"writable by {who}" in warning[0]


def test_a_module_folder_below_a_writable_parent_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    module_dir = shared / "module"
    module_dir.mkdir(parents=True)
    (module_dir / "xcuda.py").write_text(FAKE_XCUDA)
    shared.chmod(0o777)  # no sticky bit: anyone could rename `module` away and put their own there
    log = tmp_path / "stderr.txt"
    with open(log, "w") as stderr:
        km, kc = start_kernel_with_module_dir(tmp_path / "k", monkeypatch, module_dir, stderr=stderr)
    try:
        reply, outputs = run_cell(kc, "import sys; print(%r in sys.path)" % str(module_dir))
        assert stdout_of(outputs) == "False\n"
    finally:
        kc.stop_channels()
        km.shutdown_kernel()
    assert f"{shared} is writable by others" in log.read_text()
