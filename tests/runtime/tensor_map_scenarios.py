"""Scenarios of xcuda.tensor_map (issue 45 item 3) against the fake driver (tests/fake_driver), each run in a
process of its own by tests/runtime/test_tensor_maps.py.

The fake's cuTensorMapEncodeTiled writes what it was given into the map in a layout of its own (see
fake_launches.cpp): opaque[0] the address, [1] the data type, [2] the rank, [3..7] the dimensions and
[8..11] the byte strides innermost first, [12] the box (12 bits each), [13] the element strides (4 bits each),
[14] interleave | swizzle << 8 | l2 << 16 | oob << 24, [15] 0x7e45. cuTensorMapEncodeIm2col's: the same but [12]
the lower corners (16 bits each, innermost first), [13] element strides | channels << 20 | pixels << 32, [15]
0x7e46 | the upper corners << 16.

    python3 tests/runtime/tensor_map_scenarios.py NAME     # exits 0 when the scenario holds
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import xcuda  # noqa: E402
from launch_feature_scenarios import expect  # noqa: E402
from thread_runs import run_in_threads  # noqa: E402  (tests/thread_runs.py)


def words(tm):
    return np.frombuffer(bytes(tm), np.uint64)


def encodes_in_the_drivers_order():
    d = xcuda.zeros((6, 5, 40), np.float32)  # strides 800, 160, 4 bytes
    tm = xcuda.tensor_map(d, box=(2, 3, 8), element_strides=(1, 2, 1), swizzle="32B", l2_promotion="128B",
                          oob_fill="nan")
    assert memoryview(tm).nbytes == 128 and tm.array is d and tm.box == (2, 3, 8) and tm.dtype == "float32"
    w = words(tm)
    assert w[15] == 0x7E45
    assert w[0] == d.ptr and w[1] == 7 and w[2] == 3  # CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    assert list(w[3:6]) == [40, 5, 6] and list(w[8:10]) == [160, 800]
    assert w[12] == 8 | 3 << 12 | 2 << 24 and w[13] == 1 | 2 << 4 | 1 << 8
    assert w[14] == 0 | 1 << 8 | 2 << 16 | 1 << 24
    assert "box=(2, 3, 8)" in repr(tm)
    one = xcuda.tensor_map(xcuda.zeros(64, np.uint8), box=16)
    assert list(words(one)[1:4]) == [0, 1, 64] and words(one)[12] == 16
    half = xcuda.tensor_map(xcuda.zeros((4, 64), np.float16), box=(4, 64), swizzle="128B")
    assert words(half)[1] == 6 and words(half)[14] == 3 << 8


def refusals():
    d = xcuda.zeros((8, 64), np.float32)
    with expect(TypeError, "device memory", "xcuda.to_device"):
        xcuda.tensor_map(np.zeros((8, 64), np.float32), box=(8, 32))
    with expect(ValueError, "16-byte aligned", "offset view"):
        xcuda.tensor_map(xcuda.zeros(65, np.float32)[1:], box=16)
    with expect(ValueError, "stride of dimension 0 is 20 bytes", "multiple of 16"):
        xcuda.tensor_map(xcuda.zeros((4, 5), np.float32), box=(4, 4))
    with expect(ValueError, "box[1] = 300", "1 to 256"):
        xcuda.tensor_map(d, box=(8, 300))
    with expect(ValueError, "inner row is 12 bytes", "multiple of 16"):
        xcuda.tensor_map(d, box=(8, 3))
    with expect(ValueError, "64 bytes, wider than swizzle='32B'"):
        xcuda.tensor_map(d, box=(8, 16), swizzle="32B")
    with expect(ValueError, "element_strides[0] = 9", "1 to 8"):
        xcuda.tensor_map(d, box=(8, 16), element_strides=(9, 1))
    with expect(ValueError, "6 dimensions", "1 to 5"):
        xcuda.tensor_map(xcuda.zeros((1, 1, 1, 1, 1, 16), np.float32), box=(1, 1, 1, 1, 1, 16))
    with expect(ValueError, "3 to 5 when interleaved"):
        xcuda.tensor_map(d, box=(8, 16), interleave="16B")
    with expect(ValueError, "interleave='32B' needs swizzle='32B'"):
        xcuda.tensor_map(xcuda.zeros((2, 2, 64), np.float32), box=(2, 2, 8), interleave="32B")
    with expect(ValueError, "oob_fill='nan' is for float elements", "int32"):
        xcuda.tensor_map(xcuda.zeros((8, 64), np.int32), box=(8, 16), oob_fill="nan")
    with expect(ValueError, "swizzle='bogus'", "'none', '32B', '64B', '128B'"):
        xcuda.tensor_map(d, box=(8, 16), swizzle="bogus")
    with expect(ValueError, "one value per dimension"):
        xcuda.tensor_map(d, box=16)
    with expect(TypeError, "complex64"):
        xcuda.tensor_map(xcuda.zeros((8, 64), np.complex64), box=(8, 8))
    with expect(TypeError, "box must"):
        xcuda.tensor_map(d, box="8, 16")
    # The session keeps working.
    assert words(xcuda.tensor_map(d, box=(8, 16)))[15] == 0x7E45


def corners(word, count):
    return [int(np.int16((int(word) >> (16 * i)) & 0xFFFF)) for i in range(count)]


def encodes_im2col_in_the_drivers_order():
    d = xcuda.zeros((2, 5, 6, 16), np.float16)  # NHWC: strides 960, 192, 32, 2 bytes
    tm = xcuda.tensor_map(d, lower_corner=(-1, -2), upper_corner=(0, 1), channels_per_pixel=16, pixels_per_column=64,
                          element_strides=(1, 2, 1, 1), swizzle="32B")
    assert tm.mode == "im2col" and tm.box is None and tm.array is d and "im2col 64 pixels x 16 channels" in repr(tm)
    w = words(tm)
    assert w[15] & np.uint64(0xFFFF) == 0x7E46 and w[0] == d.ptr and w[1] == 6 and w[2] == 4  # FLOAT16
    assert list(w[3:7]) == [16, 6, 5, 2] and list(w[8:11]) == [32, 192, 960]
    assert corners(w[12], 2) == [-2, -1] and corners(int(w[15]) >> 16, 2) == [1, 0]  # innermost (W) first
    assert w[13] == 1 | 1 << 4 | 2 << 8 | 1 << 12 | 16 << 20 | 64 << 32
    assert w[14] == 1 << 8
    tiled = xcuda.tensor_map(d, box=(1, 1, 2, 16))
    assert tiled.mode == "tiled" and words(tiled)[15] == 0x7E45


def im2col_refusals():
    d = xcuda.zeros((2, 5, 6, 16), np.float32)
    ok = dict(lower_corner=(0, 0), upper_corner=(0, 0), channels_per_pixel=8, pixels_per_column=32)
    with expect(TypeError, "all four, and no box"):
        xcuda.tensor_map(d, lower_corner=(0, 0), channels_per_pixel=8)
    with expect(TypeError, "all four, and no box"):
        xcuda.tensor_map(d, box=(1, 1, 1, 8), **ok)
    with expect(TypeError, "needs box=", "an im2col map"):
        xcuda.tensor_map(d)
    with expect(ValueError, "takes 2 corner offsets per side", "H, W"):
        xcuda.tensor_map(d, **{**ok, "lower_corner": (0,)})
    with expect(ValueError, "corner offset of 128", "-128 to 127"):
        xcuda.tensor_map(d, **{**ok, "upper_corner": (0, 128)})
    with expect(ValueError, "corner offset of -17", "-16 to 15"):
        xcuda.tensor_map(xcuda.zeros((1, 2, 2, 2, 8), np.float32), lower_corner=(0, -17, 0), upper_corner=(0, 0, 0),
                         channels_per_pixel=4, pixels_per_column=4)
    with expect(ValueError, "bounding box is empty in spatial dimension 1", "extent 6"):
        xcuda.tensor_map(d, **{**ok, "lower_corner": (0, 3), "upper_corner": (0, -3)})
    with expect(ValueError, "channels_per_pixel = 300", "1 to 256"):
        xcuda.tensor_map(xcuda.zeros((2, 5, 6, 512), np.uint8), **{**ok, "channels_per_pixel": 300})
    with expect(ValueError, "pixels_per_column = 2000", "1 to 1024"):
        xcuda.tensor_map(d, **{**ok, "pixels_per_column": 2000})
    with expect(ValueError, "inner row is 12 bytes", "channels_per_pixel = 3"):
        xcuda.tensor_map(d, **{**ok, "channels_per_pixel": 3})
    with expect(ValueError, "64 bytes, wider than swizzle='32B'"):
        xcuda.tensor_map(d, **{**ok, "channels_per_pixel": 16}, swizzle="32B")
    with expect(ValueError, "3 to 5 for im2col"):
        xcuda.tensor_map(xcuda.zeros((4, 16), np.float32), lower_corner=(), upper_corner=(), channels_per_pixel=4,
                         pixels_per_column=4)
    with expect(TypeError, "lower_corner must hold ints"):
        xcuda.tensor_map(d, **{**ok, "lower_corner": (0, 1.5)})
    assert words(xcuda.tensor_map(d, **ok))[15] & np.uint64(0xFFFF) == 0x7E46  # the session keeps working


def the_parameter_has_a_dtype():
    m = xcuda.compile(r"""
#include <cuda.h>
extern "C" __global__ void take(const __grid_constant__ CUtensorMap map, float* out) { out[0] = 1.0f; }
""", name="take_map_dtype")
    p = m.take.parameters[0]
    assert p["dtype"] == np.dtype([("opaque", "<u8", (16,))]) and p["size"] == 128 and p["refusal"] is None
    out = xcuda.zeros(1, np.float32)
    m.take[1, 1](np.zeros(128, np.uint8), out)  # a numpy array of 128 bytes
    m.take[1, 1](np.zeros(1, p["dtype"]), out)  # an array of the parameter's dtype
    with expect(TypeError, "CUtensorMap) is 128 bytes", "has 64 bytes"):
        m.take[1, 1](np.zeros(64, np.uint8), out)


def passed_as_a_kernel_parameter():
    m = xcuda.compile(r"""
#include <cuda.h>
extern "C" __global__ void take(const __grid_constant__ CUtensorMap map, float* out) { out[0] = 1.0f; }
""", name="take_map")
    d = xcuda.zeros((8, 64), np.float32)
    out = xcuda.zeros(1, np.float32)
    m.take[1, 1](xcuda.tensor_map(d, box=(8, 16)), out)
    m.take[1, 1](bytes(128), out)  # raw 128 bytes
    with expect(TypeError, "CUtensorMap) is 128 bytes", "has 127 bytes"):
        m.take[1, 1](bytes(127), out)


def encodes_from_threads():
    arrays = [xcuda.zeros((16, 64), np.float32) for _ in range(4)]
    images = [xcuda.zeros((2, 4, 4, 16), np.float32) for _ in range(4)]

    def work(i):
        for k in range(50):
            tm = xcuda.tensor_map(arrays[i], box=(1 + k % 16, 16))
            w = words(tm)
            assert w[0] == arrays[i].ptr and w[12] == 16 | (1 + k % 16) << 12, (i, k)
            col = words(xcuda.tensor_map(images[i], lower_corner=(0, -(k % 3)), upper_corner=(0, 0),
                                         channels_per_pixel=16, pixels_per_column=1 + k))
            assert col[0] == images[i].ptr and corners(col[12], 2)[0] == -(k % 3) and int(col[13]) >> 32 == 1 + k, (i, k)
    run_in_threads(work, 4)


SCENARIOS = {f.__name__: f for f in (encodes_in_the_drivers_order, refusals, passed_as_a_kernel_parameter,
                                     encodes_from_threads, encodes_im2col_in_the_drivers_order, im2col_refusals,
                                     the_parameter_has_a_dtype)}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
    print("scenario held:", sys.argv[1])
