"""Fuzzing the launch path's argument conversion: random Python objects, sizes and types for every
parameter class, and launch configurations beyond any device's limits. Each must end in a clear
TypeError, ValueError or (without a GPU) CudaUnavailableError; the process never crashes.

Bounded in time (hypothesis' deadline and example counts), so it runs in CI."""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="python3-hypothesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import xcuda  # noqa: E402

SOURCE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void everything(signed char a, unsigned short b, int c, unsigned long long d, float e,
                                      double f, bool g, __half h, float4 v, const float* p, int* q) {}
"""
EXPECTED = (TypeError, ValueError, OverflowError, xcuda.CudaUnavailableError)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 80), max_value=1 << 80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5), st.binary(max_size=24),
    st.complex_numbers(), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.sampled_from([np.int8(-1), np.uint64(2**64 - 1), np.float16(1.5), np.float64("nan"), np.bool_(True),
                     np.complex64(1j), np.datetime64("2020-01-01"), object(), type, len]),
)
arrays = st.builds(
    lambda dtype, n, writeable: (lambda a: (a.setflags(write=writeable), a)[1])(np.zeros(n, dtype=dtype)),
    st.sampled_from([np.float32, np.float64, np.int32, np.int8, np.bool_, np.complex64, "V3"]),
    st.integers(min_value=0, max_value=8), st.booleans(),
)
values = st.one_of(scalars, arrays)


@pytest.fixture(scope="module")
def kernel():
    return xcuda.compile(SOURCE, name="fuzz", arch="compute_75").everything


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(values, min_size=0, max_size=13))
def test_any_arguments_end_in_a_clear_exception(kernel, args):
    try:
        kernel[1, 1](*args)
    except EXPECTED as error:
        assert str(error)
    else:
        # Only a fully correct call gets through, and on a GPU it launches.
        assert len(args) == 11


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(grid=st.one_of(st.integers(-5, 1 << 40), st.tuples(*[st.integers(-2, 1 << 33)] * 3), st.floats(), st.text(max_size=3)),
       block=st.one_of(st.integers(-5, 1 << 20), st.lists(st.integers(-1, 4096), max_size=4)),
       shared=st.integers(-(1 << 33), 1 << 34))
def test_any_launch_configuration_ends_in_a_clear_exception(kernel, grid, block, shared):
    with pytest.raises(EXPECTED):
        kernel[grid, block, None, shared](1)  # one argument: always wrong, after the configuration
