#pragma once
// The narrow float formats the simulator rounds to (IEEE binary16, bfloat16, binary32), and rounding a value
// given exactly, as a double and the sign of what the double leaves out, in each of PTX's four roundings.
// Every value of these formats, every sum and product of two of them, is exact in a double (or a double
// and a tail, TwoSum's), so one rounding from there is the correctly rounded result, as PTX defines it.
// Private to warp_half_operations.cpp and warp_float_rounding.cpp (which defines the functions).

#include <cstdint>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    struct float_format
    {
        int precision;     // significand bits, the hidden one included
        int min_exponent;  // of the normal numbers; below it the subnormals
        int max_exponent;
        std::uint64_t canonical_nan;  // what the GPU writes for a NaN result
    };
    inline constexpr float_format binary16{11, -14, 15, 0x7fff};
    inline constexpr float_format bfloat16{8, -126, 127, 0x7fff};
    inline constexpr float_format binary32{24, -126, 127, 0x7fffffff};

    // The format of a PTX float type of 16 or 32 bits: .f16 (and each half of .f16x2), .bf16 (.bf16x2), .f32.
    const float_format& format_of(ptx_type type);

    // x + (a tail of sign `tail`: -1, 0 or 1, smaller than half an ulp of x's double) rounded to `format` as
    // `mode` says (rn, rz, rm, rp; none is rn), returned as the double of that value (or an infinity, NaN).
    double round_to(const float_format& format, double x, int tail, rounding mode);

    // A value of the format (as round_to gives) to its bits, and back. NaN: the canonical NaN.
    std::uint64_t encode(const float_format& format, double value);
    double decode(const float_format& format, std::uint64_t bits);

    // A subnormal of the format flushed to a zero of its sign (.ftz).
    double flush_subnormal(const float_format& format, double value);

    // s = a + b rounded, tail = the sign of a + b - s (exact: Knuth's TwoSum).
    inline double two_sum(double a, double b, int& tail)
    {
        double s = a + b;
        double bb = s - a;
        double error = (a - (s - bb)) + (b - bb);
        tail = (error > 0) - (error < 0);
        return s;
    }
}
