#pragma once
// The narrow float formats the simulator rounds to (IEEE binary16, bfloat16, binary32, FP8 e4m3 and e5m2), and rounding a value
// given exactly, as a double and the sign of what the double leaves out, in each of PTX's four roundings.
// Every value of these formats, every sum and product of two of them, is exact in a double (or a double
// and a tail, TwoSum's), so one rounding from there is the correctly rounded result, as PTX defines it.
// Private to warp_half_operations.cpp, warp_float_rounding.cpp (which defines the functions) and
// warp_tensor_operations.cpp (the f16/bf16 bulk reductions).

#include <cstdint>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    struct float_format
    {
        int bits;          // the whole encoding: sign, exponent, significand without its hidden one
        int precision;     // significand bits, the hidden one included
        int min_exponent;  // of the normal numbers; below it the subnormals
        double largest;    // the largest finite value
        bool infinities;   // an all-ones exponent is infinity (mantissa 0) or NaN; e4m3 has none: only S.1111.111 is NaN
        std::uint64_t canonical_nan;  // what the GPU writes for a NaN result
    };
    inline constexpr float_format binary16{16, 11, -14, 65504.0, true, 0x7fff};
    inline constexpr float_format bfloat16{16, 8, -126, 0x1.fep127, true, 0x7fff};
    inline constexpr float_format binary32{32, 24, -126, 0x1.fffffep127, true, 0x7fffffff};
    inline constexpr float_format e4m3{8, 4, -6, 448.0, false, 0x7f};    // FP8 (cvt .e4m3x2: two per .b16)
    inline constexpr float_format e5m2{8, 3, -14, 57344.0, true, 0x7f};

    // The PTX kinds of the 8-bit floats: 'e' (.e4m3, two in .e4m3x2) and 'm' (.e5m2, .e5m2x2).
    inline bool is_fp8(ptx_type t) { return t.kind == 'e' || t.kind == 'm'; }

    // The format of a PTX float type of 8, 16 or 32 bits: .f16 (and each half of .f16x2), .bf16 (.bf16x2), .f32,
    // .e4m3, .e5m2 (each byte of their x2 pairs).
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
