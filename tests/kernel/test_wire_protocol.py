"""The Jupyter wire protocol with a raw zmq client: messages whose HMAC signature is wrong are dropped,
and the kernel keeps serving correctly signed ones (and the real client)."""
import hashlib
import hmac
import json
import uuid

import pytest
import zmq
from jupyter_client.manager import start_new_kernel

from conftest import execute_code, text_of


@pytest.fixture(scope="module")
def kernel():
    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60)
    yield manager, client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def frames(key, msg_type, content, sign=True):
    header = {"msg_id": uuid.uuid4().hex, "session": uuid.uuid4().hex, "username": "fuzz", "date": "2026-01-01T00:00:00Z",
              "msg_type": msg_type, "version": "5.3"}
    parts = [json.dumps(p).encode() for p in (header, {}, {}, content)]
    digest = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        digest.update(part)
    signature = digest.hexdigest().encode() if sign else b"0" * 64
    return header["msg_id"], [b"<IDS|MSG>", signature] + parts


def reply_to(socket, msg_id, timeout_ms):
    """The reply to msg_id on a raw DEALER socket, or None when none comes in time."""
    poller = zmq.Poller()
    poller.register(socket, zmq.POLLIN)
    while poller.poll(timeout_ms):
        message = socket.recv_multipart()
        parent = json.loads(message[message.index(b"<IDS|MSG>") + 3])
        if parent.get("msg_id") == msg_id:
            return json.loads(message[message.index(b"<IDS|MSG>") + 2])
    return None


def test_badly_signed_messages_are_dropped_and_the_kernel_keeps_serving(kernel):
    manager, client = kernel
    info = manager.get_connection_info()
    key = info["key"] if isinstance(info["key"], bytes) else info["key"].encode()
    context = zmq.Context.instance()
    socket = context.socket(zmq.DEALER)
    socket.linger = 0
    socket.connect(f"{info['transport']}://{info['ip']}:{info['shell_port']}")
    try:
        forged_id, forged = frames(key, "execute_request",
                                   {"code": "forged = True", "silent": False, "store_history": False,
                                    "user_expressions": {}, "allow_stdin": False}, sign=False)
        socket.send_multipart(forged)
        assert reply_to(socket, forged_id, 1500) is None
        good_id, good = frames(key, "kernel_info_request", {})
        socket.send_multipart(good)
        reply = reply_to(socket, good_id, 10000)
        assert reply is not None and reply["msg_type"] == "kernel_info_reply"
    finally:
        socket.close()
    reply, messages = execute_code(client, "'forged' in globals()")
    assert reply["status"] == "ok" and "False" in text_of(messages)
