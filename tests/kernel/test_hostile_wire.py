"""Hostile input on the kernel's sockets (issue 28, items 1 and 10).

Any local process can reach the kernel's ports; only the key makes a message count. Malformed messages
(too few frames, no delimiter, a bad signature, JSON that does not parse, a header without its fields)
are dropped without killing the kernel, and every well-signed request gets a reply, an error reply where
its fields are bad. A bounded fuzz run sends a few thousand random and truncated multipart messages to
the shell, control and stdin ports, with and without a valid signature, then checks that a normal
execute_request is still answered.
"""
import hashlib
import hmac
import json
import random
import uuid

import pytest
import zmq
from jupyter_client.manager import start_new_kernel

from conftest import execute_code, text_of

DELIMITER = b"<IDS|MSG>"


@pytest.fixture
def kernel():
    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60)
    yield manager, client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def key_of(manager):
    key = manager.get_connection_info()["key"]
    return key if isinstance(key, bytes) else key.encode()


def endpoint(manager, channel):
    info = manager.get_connection_info()
    return f"{info['transport']}://{info['ip']}:{info[channel + '_port']}"


def sign(key, parts):
    digest = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        digest.update(part)
    return digest.hexdigest().encode()


def request(key, msg_type, content, header_extra=None, session=None):
    header = {"msg_id": uuid.uuid4().hex, "session": session or uuid.uuid4().hex, "username": "hostile",
              "date": "2026-01-01T00:00:00Z", "msg_type": msg_type, "version": "5.3"}
    header.update(header_extra or {})
    parts = [json.dumps(p).encode() for p in (header, {}, {}, content)]
    return header["msg_id"], [DELIMITER, sign(key, parts)] + parts


def reply_to(socket, msg_id, timeout_ms):
    """The reply (header and content) to msg_id on a raw DEALER socket, or None when none comes in time."""
    poller = zmq.Poller()
    poller.register(socket, zmq.POLLIN)
    while poller.poll(timeout_ms):
        message = socket.recv_multipart()
        at = message.index(DELIMITER)
        parent = json.loads(message[at + 3])
        if parent.get("msg_id") == msg_id:
            return {"header": json.loads(message[at + 2]), "content": json.loads(message[at + 5])}
    return None


def dealer(manager, channel, identity=None):
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.linger = 2000  # what was sent leaves before close() (linger 0 would drop it)
    if identity is not None:
        socket.identity = identity
    socket.connect(endpoint(manager, channel))
    return socket


def assert_kernel_answers(manager, client):
    assert manager.is_alive(), "the kernel process died"
    reply, messages = execute_code(client, "print(6 * 7)", timeout=30)
    assert reply["status"] == "ok" and "42" in text_of(messages)


# The eight variants of the issue: the delimiter and one to four frames, signed or not.
SHORT_MESSAGES = [[DELIMITER] + [b"x"] * n for n in range(1, 5)] + [[DELIMITER, b"", b"{}", b"{}"][: n + 1] for n in range(1, 4)] + [[DELIMITER, b"{}"]]


@pytest.mark.parametrize("channel", ["shell", "control"])
def test_the_delimiter_and_a_few_frames_do_not_kill_the_kernel(kernel, channel):
    manager, client = kernel
    socket = dealer(manager, channel)
    try:
        for frames in SHORT_MESSAGES:
            socket.send_multipart(frames)
    finally:
        socket.close()
    assert_kernel_answers(manager, client)


def test_well_signed_messages_with_bad_json_or_headers_are_dropped(kernel):
    manager, client = kernel
    key = key_of(manager)
    socket = dealer(manager, "shell")
    bad_parts = [
        [b"not json", b"{}", b"{}", b"{}"],
        [b"[]", b"{}", b"{}", b"{}"],
        [b"{}", b"{}", b"{}", b"{}"],
        [json.dumps({"msg_id": 7, "msg_type": "execute_request"}).encode(), b"{}", b"{}", b"{}"],
        [json.dumps({"msg_id": "a", "msg_type": ["execute_request"]}).encode(), b"{}", b"{}", b"{}"],
        [json.dumps({"msg_id": "a", "msg_type": "execute_request", "session": "s", "username": "u"}).encode(),
         b"[1]", b"{}", b"{}"],
        [json.dumps({"msg_id": "a", "msg_type": "execute_request", "session": "s", "username": "u"}).encode(),
         b"{}", b"{}", b'"code"'],
        [b"[" * 100000 + b"]" * 100000, b"{}", b"{}", b"{}"],
        [b"\xff\xfe", b"{}", b"{}", b"{}"],
    ]
    try:
        for parts in bad_parts:
            socket.send_multipart([DELIMITER, sign(key, parts)] + parts)
    finally:
        socket.close()
    assert_kernel_answers(manager, client)


# Requests whose fields are wrong: each gets an error reply naming what is wrong.
BAD_REQUESTS = [
    ("shell", "complete_request", {"code": "zi", "cursor_pos": 99}),
    ("shell", "complete_request", {"code": "zi", "cursor_pos": -1}),
    ("shell", "complete_request", {"code": "zi", "cursor_pos": "2"}),
    ("shell", "complete_request", {"code": "zi", "cursor_pos": 1.5}),
    ("shell", "complete_request", {"code": 5, "cursor_pos": 0}),
    ("shell", "complete_request", {"code": "zi"}),
    ("shell", "inspect_request", {"code": "zip", "cursor_pos": 10, "detail_level": 0}),
    ("shell", "inspect_request", {"code": "zip", "cursor_pos": -3, "detail_level": 0}),
    ("shell", "inspect_request", {"code": "zip", "cursor_pos": 1, "detail_level": "x"}),
    ("shell", "history_request", {"hist_access_type": "sideways", "output": False, "raw": True}),
    ("shell", "history_request", {"hist_access_type": "tail", "n": "ten", "output": False, "raw": True}),
    ("shell", "history_request", {"hist_access_type": "range", "session": 0, "start": 1e300, "stop": 2,
                                  "output": False, "raw": True}),
    ("shell", "history_request", {"hist_access_type": 3}),
    ("shell", "is_complete_request", {"code": None}),
    ("shell", "execute_request", {"code": 42, "silent": False}),
    ("shell", "execute_request", {"code": "1", "silent": "no"}),
    ("shell", "execute_request", {"code": "1", "user_expressions": []}),
    ("shell", "execute_request", {"code": "1", "store_history": 1, "allow_stdin": False}),
    ("shell", "comm_info_request", {"target_name": 7}),
    ("shell", "no_such_request", {}),
    ("control", "shutdown_request", {"restart": "maybe"}),
    ("control", "no_such_request", {}),
]


@pytest.mark.parametrize("channel, msg_type, content", BAD_REQUESTS,
                         ids=[f"{c}-{t}-{i}" for i, (c, t, _) in enumerate(BAD_REQUESTS)])
def test_every_request_with_bad_fields_gets_an_error_reply(kernel, channel, msg_type, content):
    manager, client = kernel
    socket = dealer(manager, channel)
    try:
        msg_id, frames = request(key_of(manager), msg_type, content)
        socket.send_multipart(frames)
        reply = reply_to(socket, msg_id, 20000)
    finally:
        socket.close()
    assert reply is not None, f"no reply to {msg_type} {content}"
    assert reply["header"]["msg_type"] == msg_type[: -len("_request")] + "_reply"
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "BadRequest"
    assert reply["content"]["evalue"]
    assert_kernel_answers(manager, client)


def test_a_debug_request_is_answered_with_the_debugger_or_without_it(kernel):
    """With debugpy the kernel has xeus-python's debugger (kernel_info says so) and the request reaches it;
    without, the gate answers with an error reply (xeus 2.4.1 would send none)."""
    import importlib.util

    manager, client = kernel
    socket = dealer(manager, "control")
    try:
        msg_id, frames = request(key_of(manager), "debug_request",
                                 {"command": "initialize", "seq": 1, "type": "request",
                                  "arguments": {"clientID": "test", "adapterID": "xcuda"}})
        socket.send_multipart(frames)
        reply = reply_to(socket, msg_id, 20000)
    finally:
        socket.close()
    assert reply is not None and reply["header"]["msg_type"] == "debug_reply"
    if importlib.util.find_spec("debugpy") is not None:
        assert reply["content"].get("success") is True, reply["content"]
    else:
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "BadRequest"
    assert_kernel_answers(manager, client)


def test_good_requests_at_the_edges_are_answered_ok(kernel):
    manager, client = kernel
    key = key_of(manager)
    socket = dealer(manager, "shell")
    try:
        for msg_type, content in [("complete_request", {"code": "zi", "cursor_pos": 2}),
                                  ("complete_request", {"code": "zi", "cursor_pos": 0}),
                                  ("complete_request", {"code": "é", "cursor_pos": 1}),
                                  ("inspect_request", {"code": "zip", "cursor_pos": 3, "detail_level": 0}),
                                  ("history_request", {"hist_access_type": "tail", "n": 3, "output": False,
                                                       "raw": True})]:
            msg_id, frames = request(key, msg_type, content)
            socket.send_multipart(frames)
            reply = reply_to(socket, msg_id, 20000)
            assert reply is not None and reply["content"]["status"] == "ok", (msg_type, content, reply)
    finally:
        socket.close()


def test_a_second_client_with_the_same_identity_gets_its_replies(kernel):
    manager, client = kernel
    key = key_of(manager)
    identity = uuid.uuid4().hex.encode()
    first = dealer(manager, "shell", identity)
    try:
        msg_id, frames = request(key, "kernel_info_request", {})
        first.send_multipart(frames)
        assert reply_to(first, msg_id, 20000) is not None
        second = dealer(manager, "shell", identity)
        try:
            msg_id, frames = request(key, "kernel_info_request", {})
            second.send_multipart(frames)
            reply = reply_to(second, msg_id, 20000)
            assert reply is not None and reply["header"]["msg_type"] == "kernel_info_reply"
        finally:
            second.close()
    finally:
        first.close()


def random_frames(rng, key):
    """One hostile multipart message: random bytes, a truncated real message, or a signed one with junk."""
    kind = rng.randrange(6)
    header = {"msg_id": uuid.uuid4().hex, "session": "fuzz", "username": "fuzz", "msg_type":
              rng.choice(["execute_request", "complete_request", "inspect_request", "history_request",
                          "kernel_info_request", "is_complete_request", "comm_info_request", "input_reply",
                          "comm_msg", "comm_open", "comm_close", "x_request", "", "_"]), "version": "5.3"}
    contents = [{"code": rng.choice(["", "1", "zi", None, 3]), "cursor_pos": rng.choice([-5, 0, 1, 2, 10**12, "a"])},
                {"hist_access_type": rng.choice(["tail", "range", "search", "x", 0]), "n": rng.choice([1, -1, "x"])},
                {"comm_id": rng.choice(["", "nope", 5]), "data": {}}, {"value": rng.choice(["", 7])},
                {"target_name": rng.choice(["", 1]), "silent": True, "code": "pass", "store_history": False}]
    parts = [json.dumps(header).encode(), b"{}", b"{}", json.dumps(rng.choice(contents)).encode()]
    good = [DELIMITER, sign(key, parts)] + parts
    if kind == 0:
        return [bytes(rng.randrange(256) for _ in range(rng.randrange(40))) for _ in range(rng.randrange(1, 8))]
    if kind == 1:
        return good[: rng.randrange(1, len(good))]
    if kind == 2:
        frames = list(good)
        at = rng.randrange(len(frames))
        frames[at] = frames[at][: rng.randrange(len(frames[at]) + 1)]
        return frames
    if kind == 3:
        junk = [rng.choice([b"", b"{", b"null", b"[]", b"{}", b'{"msg_type": 1}', bytes([rng.randrange(256)])])
                for _ in range(4)]
        return [DELIMITER, rng.choice([sign(key, junk), b"0" * 64, b""])] + junk
    if kind == 4:
        return [rng.choice([b"", b"id", DELIMITER]) for _ in range(rng.randrange(1, 7))]
    # A valid message, with a delimiter or its signature mangled some of the time.
    if rng.random() < 0.5:
        good[1] = b"f" * 64
    return good


def test_a_few_thousand_hostile_messages_leave_the_kernel_serving(kernel):
    manager, client = kernel
    key = key_of(manager)
    rng = random.Random(28)
    sockets = {channel: dealer(manager, channel) for channel in ("shell", "control", "stdin")}
    try:
        for _ in range(3000):
            channel = rng.choice(list(sockets))
            sockets[channel].send_multipart(random_frames(rng, key))
        # Anything the kernel answered: drain it, so that the check below reads only its own reply.
        for socket in sockets.values():
            while socket.poll(200):
                socket.recv_multipart()
    finally:
        for socket in sockets.values():
            socket.close()
    assert_kernel_answers(manager, client)
