"""Hypothesis fuzzing of the parsers hostile input reaches (issue 28): the signature reader behind
xcuda.compile (lexer, macro expander, declaration parser, constant expressions) and the kernel's wire gate.
Each example must end in one of the documented errors, never a crash, a hang or another exception.

Bounded for CI: max_examples and deadline=None keep each test to a few seconds on a 2-core machine.
docs/testing.md says how to run them longer (XCUDA_FUZZ_EXAMPLES)."""
import hashlib
import hmac
import json
import os
import uuid

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="python3-hypothesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import xcuda  # noqa: E402

EXAMPLES = int(os.environ.get("XCUDA_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.function_scoped_fixture])
EXPECTED = (xcuda.CompileError, xcuda.SignatureError, ValueError)

PIECES = ["__global__", "void", "extern", '"C"', "template", "<", ">", ">>", "(", ")", "[", "]", "{", "}", ";", ",",
          "::", "*", "&", "=", "int", "float", "const", "struct", "S", "T", "k", "typename", "class", "enum", "union",
          "typedef", "using", "unsigned", "long", "1", "0x7f", "sizeof", "alignas", "(8)", "__restrict__",
          "#define M(x) x\n", "#if 1\n", "#else\n", "#endif\n", "M(", "#include \"h.cuh\"\n", "\n", "//", "/*", "*/",
          "'a'", '"\\"', "\\\n", "...", "namespace", "N", "__launch_bounds__(256)", "[[", "]]", "operator", "-", "+"]

token_soup = st.lists(st.sampled_from(PIECES), max_size=60).map(" ".join)
kernel_around = st.tuples(token_soup, token_soup).map(
    lambda parts: f"{parts[0]}\nextern \"C\" __global__ void fuzzed({parts[1]}) {{}}\n")


@FUZZ
@given(st.one_of(token_soup, kernel_around, st.text(max_size=200)))
def test_the_signature_reader_ends_every_source_in_a_documented_error(source):
    try:
        xcuda.compile(source, name="fuzz", arch="compute_75")
    except EXPECTED:
        pass


@FUZZ
@given(st.lists(st.text(alphabet="ABCDEFGH_=01 (),<>#\\\n\"'", max_size=30), max_size=12))
def test_defines_end_in_a_documented_error(defines):
    try:
        xcuda.compile('extern "C" __global__ void k(int n[N + 1]) {}\n', name="fuzz", arch="compute_75",
                      defines=["N=1"] + defines)
    except EXPECTED:
        pass


# The wire gate: random frames after the delimiter, signed with the right key, then a kernel_info.
@pytest.fixture(scope="module")
def kernel():
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="xcuda", startup_timeout=60)
    yield manager, client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                           max_leaves=12)
headers = st.fixed_dictionaries({"msg_id": st.uuids().map(str), "msg_type": st.sampled_from(
    ["execute_request", "complete_request", "inspect_request", "history_request", "is_complete_request",
     "comm_info_request", "kernel_info_request", "comm_open", "comm_msg", "comm_close", "x_request", "x"])},
    optional={"session": json_values, "username": json_values, "version": json_values})
contents = st.dictionaries(st.sampled_from(["code", "cursor_pos", "detail_level", "hist_access_type", "n", "session",
                                            "start", "stop", "raw", "output", "silent", "store_history", "comm_id",
                                            "target_name", "data", "user_expressions"]), json_values, max_size=5)


@settings(FUZZ, max_examples=int(os.environ.get("XCUDA_FUZZ_EXAMPLES", "40")))
@given(headers, contents, st.lists(st.binary(max_size=16), max_size=2))
def test_the_wire_gate_answers_or_drops_every_signed_message_and_keeps_serving(kernel, header, content, extra):
    import zmq

    manager, client = kernel
    info = manager.get_connection_info()
    key = info["key"] if isinstance(info["key"], bytes) else info["key"].encode()
    content = dict(content)
    if header["msg_type"] == "execute_request":
        content["silent"] = True  # no code of the fuzzer's runs visibly: a string "code" still runs, silently
        content["code"] = "pass"
    parts = [json.dumps(p).encode() for p in (header, {}, {}, content)]
    digest = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        digest.update(part)
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.linger = 1000
    socket.connect(f"{info['transport']}://{info['ip']}:{info['shell_port']}")
    try:
        socket.send_multipart([b"<IDS|MSG>", digest.hexdigest().encode()] + parts + extra)
        if header["msg_type"].endswith("_request"):
            # Every request gets a reply: an error reply (BadRequest) where its fields are bad.
            while socket.poll(10000):
                message = socket.recv_multipart()
                at = message.index(b"<IDS|MSG>")
                if json.loads(message[at + 3]).get("msg_id") == header["msg_id"]:
                    break
            else:
                pytest.fail(f"no reply to {header} {content}")
        probe = {"msg_id": uuid.uuid4().hex, "session": "fuzz", "username": "fuzz", "msg_type": "kernel_info_request",
                 "version": "5.3"}
        probe_parts = [json.dumps(p).encode() for p in (probe, {}, {}, {})]
        digest = hmac.new(key, digestmod=hashlib.sha256)
        for part in probe_parts:
            digest.update(part)
        socket.send_multipart([b"<IDS|MSG>", digest.hexdigest().encode()] + probe_parts)
        while socket.poll(20000):
            message = socket.recv_multipart()
            at = message.index(b"<IDS|MSG>")
            if json.loads(message[at + 3]).get("msg_id") == probe["msg_id"]:
                break
        else:
            pytest.fail(f"no kernel_info_reply after {header} {content}")
    finally:
        socket.close()
    assert manager.is_alive()
