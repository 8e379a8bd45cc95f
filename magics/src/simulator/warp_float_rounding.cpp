// warp_interpreter's rounding family (issue 46): f32/f64 add, sub, mul, fma, div, rcp and sqrt with a directed
// rounding (.rz, .rm, .rp: what libdevice's expf, powf, sincosf, ... and __fadd_rz, __fmul_ru, __fma_rd use),
// rcp/rsqrt.approx(.ftz).f64, and every cvt with a half type, .satfinite, or a directed integer-to-float
// rounding. All exact (correctly rounded in the mode asked, as PTX defines them):
// - f32 and the halves: the operation is exact in a double (products of two 24-bit significands; sums with a
//   TwoSum tail; a quotient's and a square root's residual by fma), then one rounding (round_to);
// - f64: the host's own IEEE operation in the host rounding mode set around it (fesetround). This file is
//   compiled with -frounding-math, and the operands and results pass through volatile, so the compiler
//   neither folds nor moves the arithmetic across the mode's change.

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "float_formats.hpp"
#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    const float_format& format_of(ptx_type type)
    {
        return type.kind == 'h' ? binary16 : type.kind == 'g' ? bfloat16 : type.kind == 'e' ? e4m3 : type.kind == 'm' ? e5m2 : binary32;
    }

    double round_to(const float_format& f, double x, int tail, rounding mode)
    {
        if (std::isnan(x) || std::isinf(x))
        {
            return x;
        }
        if (tail != 0)
        {
            // The exact value lies strictly between x and its neighbouring double, where no value of the
            // (narrower) format and no midpoint of two lies: rounding that neighbour rounds the exact value.
            x = std::nextafter(x, tail > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
        }
        const bool negative = std::signbit(x);
        const double v = std::fabs(x);
        if (v == 0)
        {
            return x;
        }
        const int e = std::max(std::ilogb(v), f.min_exponent);
        const double quantum = std::ldexp(1.0, e - (f.precision - 1));
        const double m = v / quantum;  // a power of two: exact
        const double whole = std::floor(m), fraction = m - whole;
        bool up;
        switch (mode)
        {
        case rounding::rz: up = false; break;
        case rounding::rm: up = negative && fraction > 0; break;
        case rounding::rp: up = !negative && fraction > 0; break;
        default: up = fraction > 0.5 || (fraction == 0.5 && std::fmod(whole, 2.0) != 0); break;
        }
        double r = (whole + (up ? 1.0 : 0.0)) * quantum;
        const double largest = f.largest;
        if (r > largest)
        {
            bool to_infinity = mode == rounding::rp ? !negative : mode == rounding::rm ? negative : mode != rounding::rz;
            r = to_infinity ? std::numeric_limits<double>::infinity() : largest;
        }
        return negative ? -r : r;
    }

    // IEEE-style encodings: sign, exponent biased by 1 - min_exponent, significand without its hidden one.
    std::uint64_t encode(const float_format& f, double value)
    {
        if (std::isnan(value) || (std::isinf(value) && !f.infinities))
        {
            return f.canonical_nan;
        }
        const int fraction_bits = f.precision - 1;
        const std::uint64_t sign = std::signbit(value) ? std::uint64_t{1} << (f.bits - 1) : 0;
        const std::uint64_t all_ones = (std::uint64_t{1} << (f.bits - 1 - fraction_bits)) - 1;
        double v = std::fabs(value);
        if (std::isinf(v))
        {
            return sign | all_ones << fraction_bits;
        }
        if (v < std::ldexp(1.0, f.min_exponent))
        {
            return sign | static_cast<std::uint64_t>(std::ldexp(v, fraction_bits - f.min_exponent));  // subnormal or zero
        }
        int e = std::ilogb(v);
        return sign | static_cast<std::uint64_t>(e + 1 - f.min_exponent) << fraction_bits |
               static_cast<std::uint64_t>(std::ldexp(v, fraction_bits - e) - std::ldexp(1.0, fraction_bits));
    }

    double decode(const float_format& f, std::uint64_t b)
    {
        const int fraction_bits = f.precision - 1;
        const std::uint64_t all_ones = (std::uint64_t{1} << (f.bits - 1 - fraction_bits)) - 1;
        const std::uint64_t exponent = (b >> fraction_bits) & all_ones;
        const std::uint64_t fraction = b & ((std::uint64_t{1} << fraction_bits) - 1);
        double magnitude;
        if (exponent == all_ones && (f.infinities || fraction == (std::uint64_t{1} << fraction_bits) - 1))
        {
            magnitude = f.infinities && fraction == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
        }
        else if (exponent == 0)
        {
            magnitude = std::ldexp(static_cast<double>(fraction), f.min_exponent - fraction_bits);
        }
        else
        {
            magnitude = std::ldexp(static_cast<double>(fraction | std::uint64_t{1} << fraction_bits),
                                   static_cast<int>(exponent) - 1 + f.min_exponent - fraction_bits);
        }
        return (b >> (f.bits - 1)) & 1 ? -magnitude : magnitude;
    }

    double flush_subnormal(const float_format& f, double value)
    {
        return value != 0 && std::fabs(value) < std::ldexp(1.0, f.min_exponent) ? std::copysign(0.0, value) : value;
    }

    namespace
    {
        int host_mode(rounding r)
        {
            return r == rounding::rz ? FE_TOWARDZERO : r == rounding::rm ? FE_DOWNWARD : r == rounding::rp ? FE_UPWARD : FE_TONEAREST;
        }

        // The host's rounding mode for a scope; the one before it comes back at its end.
        class host_rounding
        {
        public:
            explicit host_rounding(rounding r) : m_saved(std::fegetround()) { std::fesetround(host_mode(r)); }
            ~host_rounding() { std::fesetround(m_saved); }
            host_rounding(const host_rounding&) = delete;
            host_rounding& operator=(const host_rounding&) = delete;

        private:
            int m_saved;
        };

        // An f32 operation, exact in double (value and the sign of the tail), rounded once as asked.
        float rounded_f32(opcode op, rounding mode, double x, double y, double z)
        {
            int tail = 0;
            double r;
            switch (op)
            {
            case opcode::add: r = two_sum(x, y, tail); break;
            case opcode::sub: r = two_sum(x, -y, tail); break;
            case opcode::mul: r = x * y; break;  // 48 bits: exact
            case opcode::fma: r = two_sum(x * y, z, tail); break;
            case opcode::div:
            case opcode::rcp:
            {
                double n = op == opcode::rcp ? 1.0 : x, den = op == opcode::rcp ? x : y;
                r = n / den;
                double residual = std::fma(-r, den, n);  // exact for a correctly rounded quotient
                tail = std::isfinite(residual) ? ((residual > 0) - (residual < 0)) * (den < 0 ? -1 : 1) : 0;
                break;
            }
            default:  // sqrt
            {
                r = std::sqrt(x);
                double residual = std::fma(-r, r, x);
                tail = std::isfinite(residual) ? (residual > 0) - (residual < 0) : 0;
                break;
            }
            }
            return static_cast<float>(round_to(binary32, r, tail, mode));
        }

        // The same for f64: the host's operation in the host's rounding mode (set by the caller).
        double rounded_f64(opcode op, double a, double b, double c)
        {
            volatile double x = a, y = b, z = c;
            volatile double r;
            switch (op)
            {
            case opcode::add: r = x + y; break;
            case opcode::sub: r = x - y; break;
            case opcode::mul: r = x * y; break;
            case opcode::fma: r = std::fma(x, y, z); break;
            case opcode::div: r = x / y; break;
            case opcode::rcp: r = 1.0 / x; break;
            default: r = std::sqrt(x); break;
            }
            return r;
        }

        double flush_f64(double x)
        {
            return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0, x) : x;
        }
    }

    void warp_interpreter::rounded_arithmetic(const instruction& in, std::uint32_t active)
    {
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        source b = in.operand_count > 2 ? fetch(in.operands[2], 1) : a;
        source c = in.operand_count > 3 ? fetch(in.operands[3], 2) : a;
        const opcode op = in.family_op;
        if (in.var == variant::approx)
        {
            // rcp.approx(.ftz).f64, rsqrt.approx(.ftz).f64: computed correctly rounded, which is within PTX's bound
            XCUDA_SIM_LANES(active)
            {
                double x = as<double>(a.p[a.stride * l]);
                x = in.ftz ? flush_f64(x) : x;
                double r = op == opcode::rcp ? 1.0 / x : 1.0 / std::sqrt(x);
                d[l] = bits<double>(in.ftz ? flush_f64(r) : r);
            }
            return;
        }
        if (in.type.bits == 64)
        {
            host_rounding scope(in.round);
            XCUDA_SIM_LANES(active)
            {
                d[l] = bits<double>(rounded_f64(op, as<double>(a.p[a.stride * l]), as<double>(b.p[b.stride * l]),
                                                as<double>(c.p[c.stride * l])));
            }
            return;
        }
        XCUDA_SIM_LANES(active)
        {
            auto value = [&](source s) { return static_cast<double>(in.ftz ? flush(as<float>(s.p[s.stride * l])) : as<float>(s.p[s.stride * l])); };
            float r = rounded_f32(op, in.round, value(a), value(b), value(c));
            r = in.ftz ? flush(r) : r;
            if (in.sat)
            {
                r = std::isnan(r) ? 0.0f : std::fmin(std::fmax(r, 0.0f), 1.0f);
            }
            d[l] = std::isnan(r) ? binary32.canonical_nan : bits<float>(r);
        }
    }

    namespace
    {
        // cvt of one value: `v` of type `from` to type `to` (a scalar: one half of a pair is done twice).
        std::uint64_t convert_value(const instruction& in, ptx_type from, ptx_type to, std::uint64_t v)
        {
            double x;
            int tail = 0;
            if (from.is_half() || from.is_float() || is_fp8(from))
            {
                x = from.bits == 64 ? as<double>(v) : decode(format_of(from), v);
                x = in.ftz && from.kind == 'f' && from.bits == 32 ? flush_subnormal(binary32, x) : x;
            }
            else
            {
                std::uint64_t n = read_as(v, from);
                __int128 exact = from.is_signed() ? static_cast<__int128>(static_cast<std::int64_t>(n)) : static_cast<__int128>(n);
                x = from.is_signed() ? static_cast<double>(static_cast<std::int64_t>(n)) : static_cast<double>(n);
                __int128 left = exact - static_cast<__int128>(x);  // x is an integer within 2^64: exact in 128 bits
                tail = (left > 0) - (left < 0);
            }
            if (!to.is_half() && !to.is_float() && !is_fp8(to))
            {
                return float_to_integer_bits(x, to, in.round);
            }
            rounding mode = in.round;
            if (mode == rounding::rni || mode == rounding::rzi || mode == rounding::rmi || mode == rounding::rpi)
            {
                x = mode == rounding::rni ? std::nearbyint(x) : mode == rounding::rzi ? std::trunc(x)
                    : mode == rounding::rmi ? std::floor(x) : std::ceil(x);
                mode = rounding::rn;
            }
            double r;
            if (to.bits == 64)
            {
                // From an integer: x is its nearest double; a directed rounding moves it one step when the
                // integer lies on the other side.
                double infinity = std::numeric_limits<double>::infinity();
                bool step = mode == rounding::rz ? tail != 0 && (tail < 0) != (x < 0) : mode == rounding::rm ? tail < 0
                            : mode == rounding::rp ? tail > 0 : false;
                r = step ? std::nextafter(x, mode == rounding::rz ? 0.0 : mode == rounding::rm ? -infinity : infinity) : x;
                return bits<double>(r);
            }
            const float_format& f = format_of(to);
            r = round_to(f, x, tail, mode);
            if (in.var == variant::satfinite && std::isinf(r) && !std::isinf(x))
            {
                r = std::copysign(f.largest, r);
            }
            if (in.ftz && to.kind == 'f')
            {
                r = flush_subnormal(f, r);
            }
            if (in.sat)
            {
                r = std::isnan(r) ? 0.0 : std::fmin(std::fmax(r, 0.0), 1.0);
            }
            return encode(f, r);
        }
    }

    // cvt with a half or 8-bit float type, .satfinite or a directed integer-to-float rounding. A pair (.f16x2,
    // .bf16x2: two 16-bit halves of a .b32; .e4m3x2, .e5m2x2: two bytes of a .b16) is converted element by element:
    // from two .f32 operands (cvt.rn.f16x2.f32 d, a, b: a's value in the high half of d, b's in the low), or from
    // a pair of another type (cvt.rn.satfinite.e4m3x2.f16x2, cvt.rn.f16x2.e4m3x2: the high element to the high).
    void warp_interpreter::rounded_convert(const instruction& in, std::uint32_t active)
    {
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        const bool pair = (in.type.is_half() && in.type.bits == 32) || is_fp8(in.type);
        const bool two_operands = pair && in.operand_count == 3;
        source b = two_operands ? fetch(in.operands[2], 1) : a;
        const unsigned width = pair ? in.type.bits / 2 : in.type.bits;  // of one element of the result
        const ptx_type to{in.type.kind, static_cast<std::uint8_t>(width)};
        const bool from_pair = pair && !two_operands;
        const unsigned from_width = from_pair ? in.source_type.bits / 2 : in.source_type.bits;
        const ptx_type from{in.source_type.kind, static_cast<std::uint8_t>(from_width)};
        // Only a pair's element is masked; a 64-bit source (cvt from .f64) would shift by the type's width.
        const std::uint64_t element = from_width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << from_width) - 1;
        XCUDA_SIM_LANES(active)
        {
            std::uint64_t x = a.p[a.stride * l];
            if (!pair)
            {
                d[l] = convert_value(in, from, to, x);
                continue;
            }
            std::uint64_t high = from_pair ? (x >> from_width) & element : x;
            std::uint64_t low = from_pair ? x & element : b.p[b.stride * l];
            d[l] = convert_value(in, from, to, high) << width | convert_value(in, from, to, low);
        }
    }
}
