"""What a cell prints reaches the client whole, in order, in few messages, and before the cell's idle status.

Through the real xcuda kernel (jupyter_client). The kernel buffers sys.stdout and sys.stderr (kernel/output_buffer):
a timer, a size limit, any other iopub message and the end of the cell flush it.
"""
import os
import queue
import tempfile
import time

import pytest

from conftest import execute_code


@pytest.fixture(scope="module")
def kernel(xcuda_kernel_client):
    return xcuda_kernel_client


def streams(messages, name=None):
    return [m for m in messages if m["msg_type"] == "stream" and (name is None or m["content"]["name"] == name)]


def stream_text(messages, name):
    return "".join(m["content"]["text"] for m in streams(messages, name))


def after_idle(client, msg_id, wait=0.5):
    """Messages of msg_id that come after its idle status (there should be none)."""
    late = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=0.1)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") == msg_id:
            late.append(message)
    return late


def test_a_million_short_lines_all_arrive_in_order_in_few_messages(kernel):
    reply, messages = execute_code(kernel, "for i in range(1000000): print(i)", timeout=120)
    assert reply["status"] == "ok"
    assert messages[-1]["msg_type"] == "status" and messages[-1]["content"]["execution_state"] == "idle"
    text = stream_text(messages, "stdout")
    assert text == "".join(f"{i}\n" for i in range(1000000))
    assert len(streams(messages)) < 200  # coalesced: one message per flush, not per write


def test_one_hundred_megabyte_write_arrives_whole(kernel):
    reply, messages = execute_code(kernel, "import sys; sys.stdout.write('x' * 100_000_000 + 'end')", timeout=180)
    assert reply["status"] == "ok"
    text = stream_text(messages, "stdout")
    assert len(text) == 100_000_003 and text.endswith("xend")


def test_interleaved_stdout_and_stderr_keep_every_line_and_the_order_of_each(kernel):
    code = ("import sys\n"
            "for i in range(1500):\n"
            "    print('out', i)\n"
            "    print('err', i, file=sys.stderr)\n")
    reply, messages = execute_code(kernel, code, timeout=60)
    assert reply["status"] == "ok"
    assert stream_text(messages, "stdout") == "".join(f"out {i}\n" for i in range(1500))
    assert stream_text(messages, "stderr") == "".join(f"err {i}\n" for i in range(1500))
    # 3,000 switches between the streams do not make 3,000 messages: a flush publishes at most 32 (then a
    # write joins the latest run of its stream), and staying far below zmq's high-water mark of 1,000 queued
    # messages is what keeps every line for a slow client (one message per switch lost 115 lines in CI).
    assert len(streams(messages)) < 1000
    # The interleaving itself is kept too: runs alternate between the two streams in the order written.
    merged = "".join(m["content"]["text"] for m in streams(messages))
    assert merged.index("out 1499") < merged.index("err 1499") and merged.index("err 0") < merged.index("out 1\n")


def test_the_idle_status_comes_after_every_stream_message_of_the_cell(kernel):
    msg_id = kernel.execute("import threading\nfor i in range(20000): print(i)\n")
    reply = kernel.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "ok"
    from conftest import iopub_until_idle

    messages = iopub_until_idle(kernel, msg_id, 60)
    assert messages[-1]["content"].get("execution_state") == "idle"
    assert stream_text(messages, "stdout").count("\n") == 20000
    assert after_idle(kernel, msg_id) == []


def test_text_printed_before_a_display_comes_before_it(kernel):
    code = "from IPython.display import display\nprint('before')\ndisplay('the display')\nprint('after')\n"
    reply, messages = execute_code(kernel, code)
    kinds = [(m["msg_type"], m["content"].get("text", m["content"].get("data", {}).get("text/plain", "")))
             for m in messages if m["msg_type"] in ("stream", "display_data")]
    assert kinds == [("stream", "before\n"), ("display_data", "'the display'"), ("stream", "after\n")]


def test_output_is_published_while_the_cell_still_runs(kernel):
    # The cell waits for a file that this test makes only once it has seen the cell's first line: without
    # the timer flush the line would wait for the end of the cell, and the cell would give up and say so.
    flag = os.path.join(tempfile.mkdtemp(), "seen")
    code = ("import os, time\n"
            "print('waiting', flush=False)\n"
            "for _ in range(600):\n"
            f"    if os.path.exists({flag!r}): break\n"
            "    time.sleep(0.05)\n"
            "print('seen' if os.path.exists(%r) else 'gave up')\n" % flag)
    msg_id = kernel.execute(code)
    seen = []
    while True:
        message = kernel.get_iopub_msg(timeout=60)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        seen.append(message)
        if message["msg_type"] == "stream" and "waiting" in message["content"]["text"]:
            open(flag, "w").close()
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    kernel.get_shell_msg(timeout=60)
    assert stream_text(seen, "stdout") == "waiting\nseen\n"


def test_carriage_returns_of_progress_bars_pass_through_in_order(kernel):
    code = "import sys\nfor i in range(101): sys.stdout.write(f'\\r{i:3d}%')\nprint()\n"
    reply, messages = execute_code(kernel, code)
    text = stream_text(messages, "stdout")
    assert text == "".join(f"\r{i:3d}%" for i in range(101)) + "\n"


def test_the_standard_streams_are_text_streams(kernel):
    reply, messages = execute_code(kernel, "import io, sys\nprint(isinstance(sys.stdout, io.TextIOBase), "
                                           "sys.stdout.isatty(), sys.stderr.writable(), sys.stdout.encoding)")
    assert stream_text(messages, "stdout") == "True False True utf-8\n"
    # write() returns the characters written, as TextIOBase promises (code that counts them relies on it),
    # and refuses bytes naming the type.
    reply, messages = execute_code(kernel, "import sys\nn = sys.stdout.write('héllo')\nprint('', n)\n"
                                           "try:\n    sys.stdout.write(b'x')\nexcept TypeError as e:\n    print(e)")
    assert stream_text(messages, "stdout") == "héllo 5\nwrite() argument must be str, not bytes\n"
