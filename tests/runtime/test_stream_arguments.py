"""What kernel[grid, block, stream, shared_mem] takes as a stream: None or 0 (the default stream), an
xcuda.Stream, or another library's stream object; a bare integer is no stream (taken as a handle, 1024
and 2**31 crashed the driver inside the kernel process). Refused at kernel[...], before any driver call,
so these run on any machine."""
import pytest

import xcuda

SOURCE = 'extern "C" __global__ void touch(int* x) { if (x) x[0] = 1; }'


@pytest.fixture(scope="module")
def touch():
    return xcuda.compile(SOURCE, name="stream_arguments").touch


@pytest.mark.parametrize("value", [1024, 2**31, 1, -1, 2**70, True])
def test_an_integer_in_the_stream_slot_is_a_type_error_naming_the_shared_memory_slot(touch, value):
    with pytest.raises(TypeError) as raised:
        touch[1, 32, value]
    message = str(raised.value)
    assert f"got the integer {value}" in message
    assert f"kernel[grid, block, None, {value}]" in message


def test_a_stream_object_of_no_known_kind_is_a_type_error(touch):
    with pytest.raises(TypeError, match="a stream must be None or 0"):
        touch[1, 32, "stream"]


@pytest.mark.parametrize("value", [None, 0])
def test_none_and_zero_are_the_default_stream(touch, value):
    launcher = touch[1, 32, value]
    assert launcher.stream is value


def test_shared_memory_in_the_fourth_slot_is_accepted(touch):
    assert touch[1, 32, None, 1024].shared_mem == 1024
