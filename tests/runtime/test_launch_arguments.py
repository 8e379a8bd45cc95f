"""Launch argument conversion through the kernel's C++ signature, and launch configurations.

Every check here happens before any GPU work, so these run on any machine: a wrong count, type or
value raises TypeError/ValueError naming the parameter. On a machine without a driver, a launch
with correct arguments raises CudaUnavailableError (tests marked nogpu).
"""
import numpy as np
import pytest

import xcuda

SOURCE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)
{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }
extern "C" __global__ void scalars(signed char i8, unsigned char u8, short i16, unsigned short u16, int i32,
                                   unsigned int u32, long long i64, unsigned long long u64, float f32, double f64,
                                   bool flag, __half h, int* out) {}
extern "C" __global__ void by_value(float4 v, float* out) {}
"""


@pytest.fixture(scope="module")
def module():
    return xcuda.compile(SOURCE, name="launch_arguments_test", arch="compute_75")


def test_wrong_argument_count_is_a_type_error(module):
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"takes 5 arguments, got 4"):
        module.saxpy[1, 32](2.0, x, x, x)


@pytest.mark.parametrize(
    "index, value, error, fragment",
    [
        (0, 128, ValueError, r"parameter 0 'i8' \(signed char\): 128 does not fit in int8"),
        (1, -1, ValueError, r"'u8'.*-1 does not fit in uint8"),
        (2, 1 << 15, ValueError, r"'i16'.*range -32768..32767"),
        (3, 1 << 16, ValueError, r"'u16'"),
        (4, 1 << 31, ValueError, r"'i32'.*range -2147483648..2147483647"),
        (5, -5, ValueError, r"'u32'"),
        (6, 1 << 63, ValueError, r"'i64'"),
        (7, 1 << 64, ValueError, r"'u64'.*does not fit in any 64-bit integer"),
        (8, 1e39, ValueError, r"'f32'.*overflows float32"),
        (10, 2, ValueError, r"'flag'.*not a bool"),
        (11, 1e5, ValueError, r"'h'.*overflows float16"),
        (4, 2.5, TypeError, r"'i32' \(int\) takes an integer, got the float 2.5"),
        (4, np.float32(1.0), TypeError, r"'i32'.*takes an integer"),
        (9, "1.0", TypeError, r"'f64' \(double\) takes a number, got str"),
        (9, np.ones(1), TypeError, r"takes a number, got numpy.ndarray; for a single value"),
        (12, 3, TypeError, r"'out' \(int\*\) takes a device array"),
        (12, np.zeros(2, np.float32), TypeError, r"'out' \(int\*\) needs int32 elements, got a numpy array of float32"),
    ],
)
def test_bad_values_name_the_parameter(module, index, value, error, fragment):
    args = [1, 2, 3, 4, 5, 6, 7, 8, 1.0, 2.0, True, 0.5, np.zeros(1, np.int32)]
    args[index] = value
    with pytest.raises(error, match=fragment):
        module.scalars[1, 1](*args)


def test_by_value_structs_need_bytes_of_their_size(module):
    with pytest.raises(TypeError, match=r"'v' \(float4\) is 16 bytes; the value given has 8"):
        module.by_value[1, 1](np.zeros(2, np.float32).tobytes(), np.zeros(1, np.float32))
    with pytest.raises(TypeError, match="passed by value as raw bytes"):
        module.by_value[1, 1](1.0, np.zeros(1, np.float32))


def test_read_only_arrays_cannot_be_written_by_the_kernel(module):
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"'out' \(float\*\) is written by the kernel.*read-only"):
        module.saxpy[1, 32](2.0, x, x, out, 4)


@pytest.mark.parametrize(
    "config, error, fragment",
    [
        ((0, 32), ValueError, "grid x must be at least 1"),
        ((1, (32, 0)), ValueError, "block y must be at least 1"),
        ((1, (1, 2, 3, 4)), ValueError, "tuple of 1 to 3 ints"),
        ((1.5, 32), TypeError, "grid x must be an int"),
        ((1,), TypeError, "2 to 4 values"),
        ((1, 32, "stream"), TypeError, "a stream must be"),
        ((1, 32, None, -1), ValueError, "shared_mem"),
        ((2**64, 32), ValueError, r"grid x = 18446744073709551616 is larger than any device allows"),
        ((1, (32, -2**70)), ValueError, r"block y must be at least 1, got -1180591620717411303424"),
        ((1, 32, None, 2**70), ValueError, r"shared_mem must be between 0 and 2\*\*32-1 bytes, got 1180591620717411303424"),
        ((1, 32, None, "64"), TypeError, "shared_mem must be an int"),
    ],
)
def test_bad_launch_configurations_are_refused(module, config, error, fragment):
    with pytest.raises(error, match=fragment):
        module.saxpy[config]


def test_calling_a_kernel_without_a_configuration_explains_how(module):
    with pytest.raises(TypeError, match=r"saxpy\[grid, block\]"):
        module.saxpy(1.0)


def test_the_launcher_for_a_configuration_is_reused(module):
    assert module.saxpy[4, 256] is module.saxpy[4, 256]


def test_the_cached_launcher_is_found_by_value_and_never_for_another_configuration(module):
    # A loop's key is a new tuple of new ints every call (no constant folding, ints above the small-int
    # cache): found by value. One element off, a tuple for an int, an int past 64 bits: another launcher.
    first = module.saxpy[int("70000"), 256]
    assert module.saxpy[int("70000"), 256] is first
    assert module.saxpy[np.int64(70000), 256] is first  # == holds for a numpy integer too
    other = module.saxpy[int("70001"), 256]
    assert other is not first and other.grid == (70001, 1, 1)
    assert module.saxpy[int("70000"), 128].block == (128, 1, 1)
    assert module.saxpy[(int("70000"),), 256] is not first  # (70000,) is not 70000 as a key
    with pytest.raises(ValueError, match="larger than any device allows"):
        module.saxpy[2**64 + 70000, 256]  # not the cached 70000: compared past 64 bits
    nested = module.saxpy[(int("300"), 2), (16, 16)]
    assert module.saxpy[(int("300"), 2), (16, 16)] is nested
    assert module.saxpy[(int("300"), 3), (16, 16)].grid == (300, 3, 1)
    assert module.saxpy[(int("300"), 2), (16, 8)].block == (16, 8, 1)
    assert module.saxpy[int("70000"), 256].grid == (70000, 1, 1)
    assert module.saxpy.forall(1000, 256).grid == (4, 1, 1)
    assert xcuda.grid_for(1000, 256) == 4


def test_the_last_launcher_found_is_forgotten_with_its_configuration(module):
    # kernel[g, b] of the very objects of the last hit is answered from a memo of that hit; once four other
    # configurations pushed it out of the kernel's cache, the same objects get a new Launcher, never the memo's.
    g, b = int("70000"), int("256")
    first = module.saxpy[g, b]
    assert module.saxpy[g, b] is first and module.saxpy[g, b] is first
    for k in range(4):
        assert module.saxpy[int("5000") + k, b].grid == (5000 + k, 1, 1)
    again = module.saxpy[g, b]
    assert again is not first and again.grid == (70000, 1, 1)
    assert module.saxpy[g, b] is again


@pytest.mark.nogpu
def test_a_correct_launch_without_a_driver_raises_cuda_unavailable(module):
    x = np.ones(8, np.float32)
    with pytest.raises(xcuda.CudaUnavailableError, match="no NVIDIA driver was found") as error:
        module.saxpy[1, 32](2.0, x, x, np.empty_like(x), 8)
    assert "Compiling %%cuda cells and inspecting their PTX still work" in str(error.value)
    assert isinstance(error.value, xcuda.CudaError)


@pytest.mark.nogpu
def test_device_memory_without_a_driver_raises_cuda_unavailable():
    with pytest.raises(xcuda.CudaUnavailableError):
        xcuda.to_device(np.zeros(4))
    assert xcuda.default_arch() == "compute_75"
    assert xcuda.driver_available() is False


def test_out_on_a_const_pointer_is_refused(module):
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"'x' \(const float\*\) is const.*use xcuda.In"):
        module.saxpy[1, 32](2.0, xcuda.Out(x), x, x, 4)


def test_transfer_wrappers_check_what_they_wrap(module):
    with pytest.raises(TypeError, match="xcuda.Out needs a numpy array"):
        xcuda.Out([1.0, 2.0])
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        xcuda.InOut(frozen)
    assert xcuda.In([1.0, 2.0]).array.dtype == np.float64
    assert repr(xcuda.Out(np.zeros(3, np.float32))) == "xcuda.Out(<(3,) float32>)"
    with pytest.raises(TypeError, match="needs float32 elements, got xcuda.In of a numpy array of float64"):
        module.saxpy[1, 32](2.0, xcuda.In([1.0]), np.zeros(1, np.float32), np.zeros(1, np.float32), 1)


def test_a_dlpack_array_on_the_host_is_refused_with_the_reason(module):
    class HostDLPack:
        """Exports DLPack only (no __cuda_array_interface__), like JAX; its memory is on the CPU."""

        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"'x' \(const float\*\): the array passed through DLPack is not in CUDA device memory"):
        module.saxpy[1, 32](2.0, HostDLPack(x), x, x, 4)


def test_launch_options_reports_the_way_and_refuses_any_other():
    before = xcuda.launch_options()
    assert set(before) == {"arguments"} and before["arguments"] in ("pointers", "buffer")
    try:
        assert xcuda.launch_options(arguments="buffer") == {"arguments": "buffer"}
        assert xcuda.launch_options() == {"arguments": "buffer"}
        with pytest.raises(ValueError, match=r"'stack' is not a way of passing launch arguments: 'pointers' .* 'buffer'"):
            xcuda.launch_options(arguments="stack")
        with pytest.raises(ValueError, match=r"takes 'pointers' or 'buffer', not a int"):
            xcuda.launch_options(arguments=1)
        with pytest.raises(ValueError, match=r"'xxxxx.*\.\.\.' is not a way"):
            xcuda.launch_options(arguments="x" * 100000)  # a long value is cut in the message
        assert xcuda.launch_options() == {"arguments": "buffer"}  # a refused value changes nothing
        assert xcuda.launch_options(arguments="pointers") == {"arguments": "pointers"}
    finally:
        xcuda.launch_options(arguments=before["arguments"])
