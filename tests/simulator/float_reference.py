"""Exact references for the simulator's float families: the value of a float's bits as a Fraction, a Fraction
(or the square root of one) rounded to a format in each of IEEE's (PTX's) four roundings, and the distance of
two floats in ulps. Independent of the simulator's own rounding (float_formats.hpp): a candidate is stepped
over the format's bit patterns until it brackets the exact value, compared as Fractions.

Formats: "f16" (IEEE binary16), "bf16" (bfloat16: the high half of a binary32), "f32", "f64", and the 8-bit
"e4m3" (bias 7, no infinities, S.1111.111 the only NaN: largest 448) and "e5m2" (bias 15, IEEE-like: largest 57344).
"""
import math
from fractions import Fraction

import numpy as np

_FORMATS = {  # the largest finite bit pattern, the numpy type of the bits and of the value
    "f16": (0x7BFF, np.uint16, np.float16),
    "bf16": (0x7F7F, np.uint16, None),
    "f32": (0x7F7FFFFF, np.uint32, np.float32),
    "f64": (0x7FEFFFFFFFFFFFFF, np.uint64, np.float64),
    "e4m3": (0x7E, None, None),
    "e5m2": (0x7B, None, None),
}
_FP8 = {"e4m3": (3, 7), "e5m2": (2, 15)}  # fraction bits, exponent bias
_SIGN = {"f16": 1 << 15, "bf16": 1 << 15, "f32": 1 << 31, "f64": 1 << 63, "e4m3": 1 << 7, "e5m2": 1 << 7}


def to_float(bits, fmt):
    """The Python float of a bit pattern of `fmt` (exact: every value of these formats is a double)."""
    _, utype, ftype = _FORMATS[fmt]
    if fmt in _FP8:  # finite patterns only (the references never ask for another)
        fraction_bits, bias = _FP8[fmt]
        bits = int(bits)
        exponent, fraction = (bits & 0x7F) >> fraction_bits, bits & ((1 << fraction_bits) - 1)
        magnitude = math.ldexp(fraction, 1 - bias - fraction_bits) if exponent == 0 else \
            math.ldexp(fraction + (1 << fraction_bits), exponent - bias - fraction_bits)
        return -magnitude if bits & 0x80 else magnitude
    if fmt == "bf16":
        return float(np.array([int(bits) << 16], np.uint32).view(np.float32)[0])
    return float(np.array([int(bits)], utype).view(ftype)[0])


def value(bits, fmt):
    return Fraction(to_float(bits, fmt))


def _start(m, fmt):
    """A bit pattern near the non-negative float m (within a few steps)."""
    largest, utype, ftype = _FORMATS[fmt]
    if fmt in _FP8:
        return 0
    with np.errstate(over="ignore"):
        if fmt == "bf16":
            b = int(np.array([m], np.float32).view(np.uint32)[0]) >> 16
        else:
            b = int(np.array([m], ftype).view(utype)[0])
    return min(b, largest)


def _bracket(below_or_equal, start, fmt):
    """The largest finite non-negative pattern b with below_or_equal(b), searched from `start`."""
    largest = _FORMATS[fmt][0]
    b = start
    while b > 0 and not below_or_equal(b):
        b -= 1
    while b < largest and below_or_equal(b + 1):
        b += 1
    return b


def _choose(low, exact, above_midpoint, at_midpoint, negative, fmt, mode):
    largest = _FORMATS[fmt][0]
    sign = _SIGN[fmt] if negative else 0
    if exact:
        return sign | low
    if mode == "rn":
        up = above_midpoint or (at_midpoint and low % 2 == 1)
    else:
        up = {"rz": False, "rd": negative, "ru": not negative}[mode]
    return sign | (low + 1 if up else low)  # past the largest finite pattern: the infinity's


def round_fraction(x, fmt, mode="rn"):
    """The bit pattern of `fmt` nearest the Fraction x as `mode` ("rn", "rz", "rd", "ru") says; overflow gives the
    largest finite value or the infinity, as IEEE says."""
    x = Fraction(x)
    negative, m = x < 0, abs(x)
    largest = _FORMATS[fmt][0]
    try:
        near = float(m)
    except OverflowError:  # past every double: the largest finite value brackets it
        near = math.inf
    low = _bracket(lambda b: value(b, fmt) <= m, _start(near, fmt), fmt)
    below = value(low, fmt)
    above = below + (below - value(low - 1, fmt)) if low == largest else value(low + 1, fmt)
    middle = (below + above) / 2
    return _choose(low, below == m, m > middle, m == middle, negative, fmt, mode)


def round_sqrt(x, fmt, mode="rn"):
    """The bit pattern of sqrt(x) (x a non-negative Fraction) rounded to `fmt` as `mode` says."""
    x = Fraction(x)
    low = _bracket(lambda b: value(b, fmt) ** 2 <= x, _start(math.sqrt(float(x)), fmt), fmt)
    below, above = value(low, fmt), value(low + 1, fmt)
    middle = (below + above) / 2
    return _choose(low, below * below == x, x > middle * middle, x == middle * middle, False, fmt, mode)


def ulps_apart(a, b, fmt):
    """How many representable values of `fmt` lie between the bit patterns a and b (arrays), as integers."""
    sign = _SIGN[fmt]

    def ordered(bits):
        bits = np.asarray(bits).astype(np.uint64).astype(object)
        return np.array([-(int(v) & (sign - 1)) if int(v) & sign else int(v) for v in bits], dtype=object)

    return np.abs(ordered(a) - ordered(b))
