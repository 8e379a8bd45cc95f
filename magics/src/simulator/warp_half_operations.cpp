// warp_interpreter's half-precision family (issue 46): add, sub, mul, fma, neg, abs, min, max, setp, set,
// ex2.approx and tanh.approx on .f16, .bf16 and their pairs .f16x2/.bf16x2 (each half of the 32-bit register
// on its own, the low half first), as NVRTC emits them for cuda_fp16.h and cuda_bf16.h. Exact where PTX is
// exact: each operand is a double, the operation is exact there (a TwoSum tail for sums), and one rounding
// (float_formats.hpp) gives the correctly rounded .rn result. The approximations are computed with the host's
// libm in double and rounded once: within the PTX bounds, not a GPU's bits. Also `set` of any type.

#include <cmath>
#include <cstdint>
#include <limits>

#include "float_formats.hpp"
#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        // An operand as the operation reads it: a double, a subnormal flushed under .ftz.
        double operand_value(const float_format& f, std::uint64_t bits, bool ftz)
        {
            double x = decode(f, bits);
            return ftz ? flush_subnormal(f, x) : x;
        }

        // min/max of PTX: a NaN operand is ignored (.NaN: it gives NaN); -0 is less than +0.
        double min_max(double x, double y, bool is_max, bool nan_wins)
        {
            if (std::isnan(x) || std::isnan(y))
            {
                if (nan_wins || (std::isnan(x) && std::isnan(y)))
                {
                    return std::numeric_limits<double>::quiet_NaN();
                }
                return std::isnan(x) ? y : x;
            }
            if (x == y)
            {
                return std::signbit(x) == is_max ? y : x;  // the zero of the wanted sign when they differ
            }
            return (x < y) != is_max ? x : y;
        }

        // One 16-bit half of an operation's result.
        std::uint64_t half_result(const instruction& in, const float_format& f, std::uint64_t xa, std::uint64_t xb,
                                  std::uint64_t xc)
        {
            const opcode op = in.family_op;
            if (op == opcode::neg || op == opcode::abs)
            {
                if (in.ftz && std::fpclassify(decode(f, xa)) == FP_SUBNORMAL)
                {
                    xa &= 0x8000;
                }
                return op == opcode::neg ? xa ^ 0x8000 : xa & 0x7fff;  // the sign bit only, NaN too
            }
            double x = operand_value(f, xa, in.ftz), y = operand_value(f, xb, in.ftz), z = operand_value(f, xc, in.ftz);
            double r = 0;
            int tail = 0;
            switch (op)
            {
            case opcode::add: r = two_sum(x, y, tail); break;
            case opcode::sub: r = two_sum(x, -y, tail); break;
            case opcode::mul: r = x * y; break;  // 22 (16) significand bits: exact
            case opcode::fma: r = two_sum(x * y, z, tail); break;
            case opcode::min: r = min_max(x, y, false, in.var == variant::min_max_nan); break;
            case opcode::max: r = min_max(x, y, true, in.var == variant::min_max_nan); break;
            case opcode::ex2: r = std::exp2(x); break;
            default: r = std::tanh(x); break;
            }
            r = round_to(f, r, tail, rounding::rn);
            if (in.ftz)
            {
                r = flush_subnormal(f, r);
            }
            if (in.sat)
            {
                r = std::isnan(r) ? 0.0 : std::fmin(std::fmax(r, 0.0), 1.0);
            }
            return encode(f, r);
        }

        // A register of type t as the values set/setp compare: each half of a pair, or the one value.
        double compared_value(ptx_type t, std::uint64_t bits, unsigned half, bool ftz)
        {
            if (t.is_half())
            {
                return operand_value(format_of(t), (bits >> (16 * half)) & 0xffff, ftz);
            }
            if (t.is_float())
            {
                return t.bits == 32 ? static_cast<double>(ftz ? flush(as<float>(bits)) : as<float>(bits)) : as<double>(bits);
            }
            return 0;
        }
    }

    void warp_interpreter::half_arithmetic(const instruction& in, std::uint32_t active)
    {
        if (in.family_op == opcode::setp || in.family_op == opcode::set)
        {
            half_compare(in, active);
            return;
        }
        const float_format& f = format_of(in.type);
        const unsigned halves = in.type.bits / 16;
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        source b = in.operand_count > 2 ? fetch(in.operands[2], 1) : a;
        source c = in.operand_count > 3 ? fetch(in.operands[3], 2) : a;
        XCUDA_SIM_LANES(active)
        {
            std::uint64_t r = 0;
            for (unsigned k = 0; k < halves; ++k)
            {
                auto part = [&](source s) { return (s.p[s.stride * l] >> (16 * k)) & 0xffff; };
                r |= half_result(in, f, part(a), part(b), part(c)) << (16 * k);
            }
            d[l] = r;
        }
    }

    // setp.cmp.type p[|q], a, b[, {!}c] and set.cmp.dtype.stype d, a, b[, {!}c]: for a pair, setp writes the
    // low halves' comparison to p and the high halves' to q, and set compares each half into its half of d.
    void warp_interpreter::half_compare(const instruction& in, std::uint32_t active)
    {
        const bool is_set = in.family_op == opcode::set;
        const ptx_type t = is_set ? in.source_type : in.type;
        const bool pair_of_halves = t.is_half() && t.bits == 32;
        const unsigned first = in.pair ? 2 : 1;
        std::uint64_t* p = destination(in.operands[0]);
        std::uint64_t* q = in.pair ? destination(in.operands[1]) : nullptr;
        source a = fetch(in.operands[first], 0);
        source b = fetch(in.operands[first + 1], 1);
        const bool combined = in.combine != compare::none;
        source c = combined ? fetch(in.operands[first + 2], 2) : a;
        const bool c_negated = combined && in.operands[first + 2].negate;
        // set's value for true, per result half (a pair) or for the whole register
        const ptx_type to = in.type;
        const std::uint64_t one = to.kind == 'h' ? 0x3c00 : to.kind == 'g' ? 0x3f80 : to.is_float() ? 0x3f800000
                                  : pair_of_halves ? 0xffff : 0xffffffffu;
        XCUDA_SIM_LANES(active)
        {
            bool raw[2] = {false, false};
            std::uint64_t av = a.p[a.stride * l], bv = b.p[b.stride * l];
            for (unsigned k = 0; k < (pair_of_halves ? 2u : 1u); ++k)
            {
                if (t.is_half() || t.is_float())
                {
                    raw[k] = compare_values<double>(in.cmp, compared_value(t, av, k, in.ftz), compared_value(t, bv, k, in.ftz));
                }
                else if (t.is_signed())
                {
                    raw[k] = compare_values<std::int64_t>(in.cmp, static_cast<std::int64_t>(read_as(av, t)),
                                                          static_cast<std::int64_t>(read_as(bv, t)));
                }
                else
                {
                    raw[k] = compare_values<std::uint64_t>(in.cmp, read_as(av, t), read_as(bv, t));
                }
            }
            const bool other = combined && ((c.p[c.stride * l] & 1) != c_negated);
            auto join = [&](bool r) {
                return !combined ? r : in.combine == compare::eq ? (r && other) : in.combine == compare::ne ? (r || other) : (r != other);
            };
            if (is_set)
            {
                p[l] = (join(raw[0]) ? one : 0) | (pair_of_halves && join(raw[1]) ? one << 16 : 0);
                continue;
            }
            p[l] = join(raw[0]);
            if (q)
            {
                q[l] = pair_of_halves ? join(raw[1]) : join(!raw[0]);  // a pair: the high halves; else the complement
            }
        }
    }
}
