// warp_interpreter's data operations (arithmetic, conversions, comparisons, shuffles, votes, atomics),
// kept apart from its control flow and memory (warp_interpreter.cpp) so that neither file is long.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>

#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        template <class T>
        T integer_divide(T a, T b)
        {
            if (b == 0)
            {
                return static_cast<T>(~static_cast<std::make_unsigned_t<T>>(0));  // all ones, as the hardware gives
            }
            if constexpr (std::is_signed_v<T>)
            {
                if (a == std::numeric_limits<T>::min() && b == -1)
                {
                    return a;
                }
            }
            return a / b;
        }
        template <class T>
        T integer_remainder(T a, T b)
        {
            if (b == 0)
            {
                return a;
            }
            if constexpr (std::is_signed_v<T>)
            {
                if (b == -1)
                {
                    return 0;
                }
            }
            return a % b;
        }

        template <class T>
        std::uint64_t high_product(T a, T b)
        {
            if constexpr (sizeof(T) == 8)
            {
                using wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
                return bits<T>(static_cast<T>((static_cast<wide>(a) * static_cast<wide>(b)) >> 64));
            }
            else
            {
                using wide = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
                return bits<T>(static_cast<T>((static_cast<wide>(a) * static_cast<wide>(b)) >> (8 * sizeof(T))));
            }
        }

        template <class F>
        F round_float(F x, rounding r)
        {
            switch (r)
            {
            case rounding::rni: return std::nearbyint(x);
            case rounding::rzi: return std::trunc(x);
            case rounding::rmi: return std::floor(x);
            case rounding::rpi: return std::ceil(x);
            default: return x;
            }
        }

        // A float operand as .ftz reads it: a subnormal flushed to zero.
        inline float float_operand(float x, bool ftz)
        {
            return ftz ? flush(x) : x;
        }

        // A float result as .ftz and .sat make it: a subnormal flushed to zero, then clamped to [0, 1] (NaN: 0).
        inline float float_result(float x, bool ftz, bool sat)
        {
            if (ftz)
            {
                x = flush(x);
            }
            if (sat)
            {
                x = std::isnan(x) ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f);
            }
            return x;
        }
    }

    // arithmetic() by instruction family: each family a function of its own, inlined into arithmetic's switch
    // (warp_interpreter.hpp declares them always_inline: this is the per-instruction path). Each is given the
    // destination and the operands arithmetic fetched; d[l] is written for every active lane l.
#define A as<T>(a.p[a.stride * l])
#define B as<T>(b.p[b.stride * l])
#define C as<T>(c.p[c.stride * l])
#define FLOAT_OP(EXPRESSION)                                                                   \
    if constexpr (std::is_same_v<T, float>)                                                    \
    {                                                                                          \
        if (!ftz && !sat) /* the common case: no test per lane */                              \
        {                                                                                      \
            XCUDA_SIM_LANES(active)                                                            \
            {                                                                                  \
                float x = A, y = B, z = C;                                                     \
                (void)y;                                                                       \
                (void)z;                                                                       \
                d[l] = bits<float>(EXPRESSION);                                                \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        XCUDA_SIM_LANES(active)                                                                \
        {                                                                                      \
            float x = float_operand(A, ftz), y = float_operand(B, ftz), z = float_operand(C, ftz); \
            (void)y;                                                                           \
            (void)z;                                                                           \
            d[l] = bits<float>(float_result(EXPRESSION, ftz, sat));                            \
        }                                                                                      \
    }                                                                                          \
    else                                                                                       \
    {                                                                                          \
        XCUDA_SIM_LANES(active)                                                                \
        {                                                                                      \
            T x = A, y = B, z = C;                                                             \
            (void)y;                                                                           \
            (void)z;                                                                           \
            d[l] = bits<T>(EXPRESSION);                                                        \
        }                                                                                      \
    }

    // add, sub, mul (.lo, .hi, .wide), mad, fma, div, rem
    void warp_interpreter::add_multiply(const instruction& in, std::uint32_t active, std::uint64_t* d, source a, source b,
                                        source c)
    {
        const ptx_type t = in.type;
        const bool ftz = in.ftz;
        const bool sat = in.sat;
        switch (in.op)
        {
        case opcode::add:
            if (!t.is_float() && sat)
            {
                XCUDA_SIM_LANES(active)
                {
                    std::int64_t s = static_cast<std::int64_t>(as<std::int32_t>(a.p[a.stride * l])) + as<std::int32_t>(b.p[b.stride * l]);
                    s = std::min<std::int64_t>(std::max<std::int64_t>(s, INT32_MIN), INT32_MAX);
                    d[l] = bits<std::int32_t>(static_cast<std::int32_t>(s));
                }
                return;
            }
            XCUDA_SIM_BY_TYPE(t, FLOAT_OP(wrap_add<T>(x, y)));
            return;
        case opcode::sub:
            XCUDA_SIM_BY_TYPE(t, FLOAT_OP(wrap_sub<T>(x, y)));
            return;
        case opcode::mul:
            if (t.is_float())
            {
                XCUDA_SIM_BY_TYPE(t, FLOAT_OP(static_cast<T>(x * y)));
                return;
            }
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_integral_v<T>) {
                XCUDA_SIM_LANES(active)
                {
                    T x = A, y = B;
                    d[l] = in.var == variant::lo ? bits<T>(wrap_mul<T>(x, y))
                           : in.var == variant::hi ? high_product<T>(x, y)
                                                   : wide_product<T>(x, y);
                }
            });
            return;
        case opcode::mad:
            XCUDA_SIM_BY_TYPE(t, {
                if constexpr (!std::is_floating_point_v<T>)
                {
                    XCUDA_SIM_LANES(active)
                    {
                        T x = A, y = B;
                        if (in.var == variant::wide)
                        {
                            d[l] = wide_product<T>(x, y) + c.p[c.stride * l];
                        }
                        else if (in.var == variant::hi)
                        {
                            d[l] = bits<T>(wrap_add<T>(as<T>(high_product<T>(x, y)), C));
                        }
                        else
                        {
                            d[l] = bits<T>(wrap_add<T>(wrap_mul<T>(x, y), C));
                        }
                    }
                }
            });
            return;
        case opcode::fma:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(std::fma(x, y, z)); });
            return;
        case opcode::div:
            if (t.is_float())
            {
                XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(static_cast<T>(x / y)); });
                return;
            }
            XCUDA_SIM_BY_TYPE(t, if constexpr (!std::is_floating_point_v<T>) { FLOAT_OP(integer_divide<T>(x, y)); });
            return;
        case opcode::rem:
            XCUDA_SIM_BY_TYPE(t, if constexpr (!std::is_floating_point_v<T>) { FLOAT_OP(integer_remainder<T>(x, y)); });
            return;
        default:
            return;
        }
    }

    // min, max, abs, neg, copysign
    void warp_interpreter::min_max_sign(const instruction& in, std::uint32_t active, std::uint64_t* d, source a, source b,
                                        source c)
    {
        const ptx_type t = in.type;
        const bool ftz = in.ftz;
        const bool sat = in.sat;
        switch (in.op)
        {
        case opcode::min:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(std::fmin(x, y)); } else {
                FLOAT_OP(x < y ? x : y);
            });
            return;
        case opcode::max:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(std::fmax(x, y)); } else {
                FLOAT_OP(x > y ? x : y);
            });
            return;
        case opcode::abs:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(std::fabs(x)); } else if constexpr (std::is_signed_v<T>) {
                FLOAT_OP(static_cast<T>(x < 0 ? static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(x)) : x));
            });
            return;
        case opcode::neg:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(-x); } else {
                FLOAT_OP(static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(x)));
            });
            return;
        case opcode::copysign:  // copysign.f32 d, a, b: b's magnitude, a's sign
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(std::copysign(y, x)); });
            return;
        default:
            return;
        }
    }

    // and, or, xor, not, cnot, lop3, selp
    void warp_interpreter::bitwise_logic(const instruction& in, std::uint32_t active, std::uint64_t* d, source a, source b,
                                         source c)
    {
        const ptx_type t = in.type;
        switch (in.op)
        {
        case opcode::and_:
            XCUDA_SIM_LANES(active) { d[l] = a.p[a.stride * l] & b.p[b.stride * l]; }
            return;
        case opcode::or_:
            XCUDA_SIM_LANES(active) { d[l] = a.p[a.stride * l] | b.p[b.stride * l]; }
            return;
        case opcode::xor_:
            XCUDA_SIM_LANES(active) { d[l] = a.p[a.stride * l] ^ b.p[b.stride * l]; }
            return;
        case opcode::not_:
        {
            std::uint64_t keep = t.kind == 'p' ? 1 : t.bits >= 64 ? ~0ull : (1ull << t.bits) - 1;
            XCUDA_SIM_LANES(active) { d[l] = ~a.p[a.stride * l] & keep; }
            return;
        }
        case opcode::cnot:
            XCUDA_SIM_LANES(active) { d[l] = read_as(a.p[a.stride * l], t) == 0 ? 1 : 0; }
            return;
        case opcode::lop3:  // lop3.b32 d, a, b, c, lut: each bit of d is lut's bit at (a, b, c)
        {
            source e = fetch(in.operands[4], 3);
            XCUDA_SIM_LANES(active)
            {
                std::uint32_t x = static_cast<std::uint32_t>(a.p[a.stride * l]), y = static_cast<std::uint32_t>(b.p[b.stride * l]),
                              z = static_cast<std::uint32_t>(c.p[c.stride * l]);
                std::uint32_t lut = static_cast<std::uint32_t>(e.p[e.stride * l]) & 0xff, r = 0;
                for (unsigned k = 0; k < 8; ++k)
                {
                    if ((lut >> k) & 1)
                    {
                        r |= ((k & 4) ? x : ~x) & ((k & 2) ? y : ~y) & ((k & 1) ? z : ~z);
                    }
                }
                d[l] = r;
            }
            return;
        }
        case opcode::selp:
        {
            source p = fetch(in.operands[3], 2);
            std::uint64_t keep = t.bits >= 64 ? ~0ull : (1ull << t.bits) - 1;
            XCUDA_SIM_LANES(active)
            {
                bool chosen = (p.p[p.stride * l] & 1) != in.operands[3].negate;
                d[l] = (chosen ? a.p[a.stride * l] : b.p[b.stride * l]) & keep;
            }
            return;
        }
        default:
            return;
        }
    }

    // shl, shr, shf (the funnel shift)
    void warp_interpreter::shifts(const instruction& in, std::uint32_t active, std::uint64_t* d, source a, source b,
                                  source c)
    {
        const ptx_type t = in.type;
        switch (in.op)
        {
        case opcode::shl:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_integral_v<T>) {
                XCUDA_SIM_LANES(active)
                {
                    std::uint32_t n = static_cast<std::uint32_t>(b.p[b.stride * l]);
                    using U = std::make_unsigned_t<T>;
                    d[l] = n >= 8 * sizeof(T) ? 0 : bits<T>(static_cast<T>(static_cast<U>(A) << n));
                }
            });
            return;
        case opcode::shr:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_integral_v<T>) {
                XCUDA_SIM_LANES(active)
                {
                    std::uint32_t n = static_cast<std::uint32_t>(b.p[b.stride * l]);
                    T x = A;
                    if (n >= 8 * sizeof(T))
                    {
                        d[l] = bits<T>(static_cast<T>(std::is_signed_v<T> && x < T(0) ? ~T(0) : T(0)));
                    }
                    else
                    {
                        d[l] = bits<T>(static_cast<T>(x >> n));
                    }
                }
            });
            return;
        case opcode::shf:  // funnel shift of b:a (b the high word)
            XCUDA_SIM_LANES(active)
            {
                std::uint64_t pair = (a.p[a.stride * l] & 0xffffffffu) | ((b.p[b.stride * l] & 0xffffffffu) << 32);
                std::uint32_t n = static_cast<std::uint32_t>(c.p[c.stride * l]);
                bool wrap = in.var == variant::shf_l_wrap || in.var == variant::shf_r_wrap;
                n = wrap ? n & 31 : std::min<std::uint32_t>(n, 32);
                bool left = in.var == variant::shf_l_wrap || in.var == variant::shf_l_clamp;
                d[l] = left ? static_cast<std::uint32_t>((pair << n) >> 32) : static_cast<std::uint32_t>(pair >> n);
            }
            return;
        default:
            return;
        }
    }

    // popc, clz, brev, bfe, bfi, bfind (prmt: warp_interpreter::permute)
    void warp_interpreter::bit_fields(const instruction& in, std::uint32_t active, std::uint64_t* d, source a, source b,
                                      source c)
    {
        const ptx_type t = in.type;
        switch (in.op)
        {
        case opcode::popc:
            XCUDA_SIM_LANES(active) { d[l] = static_cast<unsigned>(__builtin_popcountll(read_as(a.p[a.stride * l], {'u', t.bits}))); }
            return;
        case opcode::clz:
            XCUDA_SIM_LANES(active)
            {
                std::uint64_t v = read_as(a.p[a.stride * l], {'u', t.bits});
                d[l] = v == 0 ? t.bits : static_cast<unsigned>(__builtin_clzll(v)) - (64 - t.bits);
            }
            return;
        case opcode::brev:
            XCUDA_SIM_LANES(active)
            {
                std::uint64_t v = a.p[a.stride * l], r = 0;
                for (unsigned k = 0; k < t.bits; ++k)
                {
                    r |= ((v >> k) & 1) << (t.bits - 1 - k);
                }
                d[l] = r;
            }
            return;
        case opcode::bfe:  // bfe.u32 d, a, pos, len (PTX ISA: the field, sign-extended for .s types)
            XCUDA_SIM_LANES(active)
            {
                std::uint64_t v = read_as(a.p[a.stride * l], {'u', t.bits});
                unsigned pos = static_cast<std::uint8_t>(b.p[b.stride * l]);
                unsigned len = static_cast<std::uint8_t>(c.p[c.stride * l]);
                unsigned msb = t.bits - 1;
                if (len == 0)
                {
                    d[l] = 0;
                    continue;
                }
                std::uint64_t sign = t.is_signed() ? (v >> std::min(pos + len - 1, msb)) & 1 : 0;
                std::uint64_t r = 0;
                for (unsigned k = 0; k <= msb; ++k)
                {
                    std::uint64_t bit = k < len && pos + k <= msb ? (v >> (pos + k)) & 1 : sign;
                    r |= bit << k;
                }
                d[l] = r;
            }
            return;
        case opcode::bfi:  // bfi.b32 d, a (insert), b (base), pos, len
        {
            source e = fetch(in.operands[4], 3);
            XCUDA_SIM_LANES(active)
            {
                std::uint64_t insert = a.p[a.stride * l], base = b.p[b.stride * l];
                unsigned pos = static_cast<std::uint8_t>(c.p[c.stride * l]);
                unsigned len = static_cast<std::uint8_t>(e.p[e.stride * l]);
                for (unsigned k = 0; k < len && pos + k < t.bits; ++k)
                {
                    base = (base & ~(1ull << (pos + k))) | (((insert >> k) & 1) << (pos + k));
                }
                d[l] = read_as(base, {'u', t.bits});
            }
            return;
        }
        case opcode::bfind:  // the most significant bit that is not a sign bit; all ones when none
            XCUDA_SIM_LANES(active)
            {
                std::uint64_t v = read_as(a.p[a.stride * l], {'u', t.bits});
                unsigned msb = t.bits - 1;
                if (t.is_signed() && ((v >> msb) & 1))
                {
                    v = ~v & (t.bits == 64 ? ~0ull : (1ull << t.bits) - 1);
                }
                std::uint32_t position = v == 0 ? 0xffffffffu : 63u - static_cast<unsigned>(__builtin_clzll(v));
                if (in.var == variant::shiftamt && position != 0xffffffffu)
                {
                    position = msb - position;
                }
                d[l] = position;
            }
            return;
        default:
            return;
        }
    }

    // rcp, sqrt, rsqrt, ex2, lg2, tanh, sin, cos, testp
    void warp_interpreter::float_functions(const instruction& in, std::uint32_t active, std::uint64_t* d, source a, source b,
                                           source c)
    {
        const ptx_type t = in.type;
        const bool ftz = in.ftz;
        const bool sat = in.sat;
        switch (in.op)
        {
        case opcode::rcp:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(static_cast<T>(T(1) / x)); });
            return;
        case opcode::sqrt:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(std::sqrt(x)); });
            return;
        case opcode::rsqrt:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) {
                FLOAT_OP(static_cast<T>(1.0 / std::sqrt(static_cast<double>(x))));
            });
            return;
        case opcode::ex2:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(static_cast<T>(std::exp2(static_cast<double>(x)))); });
            return;
        case opcode::lg2:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(static_cast<T>(std::log2(static_cast<double>(x)))); });
            return;
        case opcode::tanh:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(static_cast<T>(std::tanh(static_cast<double>(x)))); });
            return;
        case opcode::sin:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(static_cast<T>(std::sin(static_cast<double>(x)))); });
            return;
        case opcode::cos:
            XCUDA_SIM_BY_TYPE(t, if constexpr (std::is_floating_point_v<T>) { FLOAT_OP(static_cast<T>(std::cos(static_cast<double>(x)))); });
            return;
        case opcode::testp:
            XCUDA_SIM_LANES(active)
            {
                double x = t.bits == 32 ? static_cast<double>(as<float>(a.p[a.stride * l])) : as<double>(a.p[a.stride * l]);
                int kind = t.bits == 32 ? std::fpclassify(as<float>(a.p[a.stride * l])) : std::fpclassify(x);
                bool r = false;
                switch (in.var)
                {
                case variant::testp_finite: r = std::isfinite(x); break;
                case variant::testp_infinite: r = std::isinf(x); break;
                case variant::testp_number: r = !std::isnan(x); break;
                case variant::testp_notanumber: r = std::isnan(x); break;
                case variant::testp_normal: r = kind == FP_NORMAL; break;
                default: r = kind == FP_SUBNORMAL; break;
                }
                d[l] = r;
            }
            return;
        default:
            return;
        }
    }

    void warp_interpreter::arithmetic(const instruction& in, std::uint32_t active)
    {
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        source b = in.operand_count > 2 ? fetch(in.operands[2], 1) : source{a.p, 0};
        source c = in.operand_count > 3 ? fetch(in.operands[3], 2) : source{a.p, 0};
        switch (in.op)
        {
        case opcode::add:
        case opcode::sub:
        case opcode::mul:
        case opcode::mad:
        case opcode::fma:
        case opcode::div:
        case opcode::rem:
            add_multiply(in, active, d, a, b, c);
            return;
        case opcode::min:
        case opcode::max:
        case opcode::abs:
        case opcode::neg:
        case opcode::copysign:
            min_max_sign(in, active, d, a, b, c);
            return;
        case opcode::and_:
        case opcode::or_:
        case opcode::xor_:
        case opcode::not_:
        case opcode::cnot:
        case opcode::lop3:
        case opcode::selp:
            bitwise_logic(in, active, d, a, b, c);
            return;
        case opcode::shl:
        case opcode::shr:
        case opcode::shf:
            shifts(in, active, d, a, b, c);
            return;
        case opcode::popc:
        case opcode::clz:
        case opcode::brev:
        case opcode::bfe:
        case opcode::bfi:
        case opcode::bfind:
            bit_fields(in, active, d, a, b, c);
            return;
        case opcode::rcp:
        case opcode::sqrt:
        case opcode::rsqrt:
        case opcode::ex2:
        case opcode::lg2:
        case opcode::tanh:
        case opcode::sin:
        case opcode::cos:
        case opcode::testp:
            float_functions(in, active, d, a, b, c);
            return;
        default:
            throw sim_error(sim_error::kind::unsupported, "kernel '" + m_launch.kernel + "': '" + in.text +
                                                              "' is not implemented by the simulator, at " + where(in));
        }
    }
#undef A
#undef B
#undef C
#undef FLOAT_OP

    void warp_interpreter::convert(const instruction& in, std::uint32_t active)
    {
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        const ptx_type to = in.type;
        const ptx_type from = in.source_type;
        XCUDA_SIM_LANES(active)
        {
            std::uint64_t v = a.p[a.stride * l];
            std::uint64_t r = 0;
            if (!from.is_float() && !to.is_float())
            {
                std::uint64_t x = read_as(v, from);
                if (in.sat)
                {
                    // Clamp to the destination's range.
                    double lo = to.is_signed() ? -std::ldexp(1.0, to.bits - 1) : 0.0;
                    double hi = to.is_signed() ? std::ldexp(1.0, to.bits - 1) - 1 : std::ldexp(1.0, to.bits) - 1;
                    double value = from.is_signed() ? static_cast<double>(static_cast<std::int64_t>(x)) : static_cast<double>(x);
                    if (value < lo)
                    {
                        x = static_cast<std::uint64_t>(static_cast<std::int64_t>(lo));
                    }
                    else if (value > hi)
                    {
                        x = static_cast<std::uint64_t>(hi);
                    }
                }
                r = read_as(x, to);
                if (to.bits < 32)
                {
                    r &= 0xffffffffu;
                }
            }
            else if (from.is_float() && to.is_float())
            {
                double x = from.bits == 32 ? static_cast<double>(as<float>(v)) : as<double>(v);
                if (in.ftz && from.bits == 32)
                {
                    x = flush(static_cast<float>(x));
                }
                if (to.bits == 32 && from.bits == 64 &&
                    (in.round == rounding::rz || in.round == rounding::rm || in.round == rounding::rp))
                {
                    // Directed narrowing: the nearest float, moved one step toward zero / -inf / +inf
                    // when it lies on the wrong side of x (exact: both are representable in double).
                    float f = static_cast<float>(x);
                    double back = static_cast<double>(f);
                    bool wrong = in.round == rounding::rz ? std::fabs(back) > std::fabs(x)
                                 : in.round == rounding::rm ? back > x
                                                            : back < x;
                    if (!std::isnan(x) && wrong)
                    {
                        float toward = in.round == rounding::rz ? 0.0f
                                       : in.round == rounding::rm ? -std::numeric_limits<float>::infinity()
                                                                  : std::numeric_limits<float>::infinity();
                        f = std::nextafter(f, toward);
                    }
                    if (in.sat)
                    {
                        f = std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f);
                    }
                    r = bits<float>(in.ftz ? flush(f) : f);
                }
                else if (to.bits == 32)
                {
                    float f = round_float(static_cast<float>(x), in.round);
                    if (from.bits == 32)
                    {
                        f = round_float(as<float>(v), in.round);
                    }
                    if (in.sat)
                    {
                        f = std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f);
                    }
                    r = bits<float>(in.ftz ? flush(f) : f);
                }
                else
                {
                    double g = round_float(x, in.round);
                    if (in.sat)
                    {
                        g = std::isnan(g) ? 0.0 : std::fmin(std::fmax(g, 0.0), 1.0);
                    }
                    r = bits<double>(g);
                }
            }
            else if (from.is_float())
            {
                double x = from.bits == 32 ? static_cast<double>(in.ftz ? flush(as<float>(v)) : as<float>(v)) : as<double>(v);
                r = float_to_integer_bits(x, to, in.round);
            }
            else
            {
                std::uint64_t x = read_as(v, from);
                if (to.bits == 32)
                {
                    float f = from.is_signed() ? static_cast<float>(static_cast<std::int64_t>(x)) : static_cast<float>(x);
                    r = bits<float>(f);
                }
                else
                {
                    double g = from.is_signed() ? static_cast<double>(static_cast<std::int64_t>(x)) : static_cast<double>(x);
                    r = bits<double>(g);
                }
            }
            d[l] = r;
        }
    }

    void warp_interpreter::compare_set(const instruction& in, std::uint32_t active)
    {
        std::uint64_t* p = destination(in.operands[0]);
        unsigned first = in.pair ? 2 : 1;
        std::uint64_t* q = in.pair ? destination(in.operands[1]) : nullptr;
        source a = fetch(in.operands[first], 0);
        source b = fetch(in.operands[first + 1], 1);
        bool combined = in.combine != compare::none;
        source c = combined ? fetch(in.operands[first + 2], 2) : source{a.p, 0};
        bool c_negated = combined && in.operands[first + 2].negate;
        // The comparison is a constant of each loop (C), not a switch per lane.
        XCUDA_SIM_BY_TYPE(in.type, by_comparison(in.cmp, [&](auto comparison) {
            constexpr compare C = decltype(comparison)::value;
            const compare cmp = C == compare::none ? in.cmp : C;  // none: an unordered float comparison, looked up per lane
            XCUDA_SIM_LANES(active)
            {
                T x = as<T>(a.p[a.stride * l]), y = as<T>(b.p[b.stride * l]);
                if constexpr (std::is_same_v<T, float>)
                {
                    if (in.ftz)
                    {
                        x = flush(x);
                        y = flush(y);
                    }
                }
                bool r = compare_values<T>(cmp, x, y);
                bool s = !r;
                if (combined)
                {
                    bool other = (c.p[c.stride * l] & 1) != c_negated;
                    auto join = [&](bool v) {
                        return in.combine == compare::eq ? (v && other) : in.combine == compare::ne ? (v || other) : (v != other);
                    };
                    r = join(r);
                    s = join(s);
                }
                p[l] = r;
                if (q)
                {
                    q[l] = s;
                }
            }
        }));
    }

    void warp_interpreter::shuffle(const instruction& in, std::uint32_t active)
    {
        unsigned first = in.pair ? 2 : 1;
        std::uint64_t* d = destination(in.operands[0]);
        std::uint64_t* p = in.pair ? destination(in.operands[1]) : nullptr;
        source a = fetch(in.operands[first], 0);
        source b = fetch(in.operands[first + 1], 1);
        source c = fetch(in.operands[first + 2], 2);
        member_mask(in, in.operands[first + 3], active, "shfl.sync");  // tiles may name parts of the warp
        std::uint64_t values[32];
        for (unsigned l = 0; l < 32; ++l)
        {
            values[l] = a.p[a.stride * l];
        }
        // The mode is a constant of each loop (V), not a switch per lane.
        auto lanes = [&](auto mode) {
            constexpr variant V = decltype(mode)::value;
            XCUDA_SIM_LANES(active)
            {
                std::uint32_t bval = static_cast<std::uint32_t>(b.p[b.stride * l]) & 0x1f;
                std::uint32_t cval = static_cast<std::uint32_t>(c.p[c.stride * l]);
                std::uint32_t clamp = cval & 0x1f;
                std::uint32_t segment = (cval >> 8) & 0x1f;
                std::uint32_t max_lane = (l & segment) | (clamp & ~segment);
                std::uint32_t min_lane = l & segment;
                std::int32_t j = 0;
                bool valid = false;
                switch (V)
                {
                case variant::shfl_up: j = static_cast<std::int32_t>(l) - static_cast<std::int32_t>(bval); valid = j >= static_cast<std::int32_t>(max_lane); break;
                case variant::shfl_down: j = static_cast<std::int32_t>(l + bval); valid = j <= static_cast<std::int32_t>(max_lane); break;
                case variant::shfl_bfly: j = static_cast<std::int32_t>(l ^ bval); valid = j <= static_cast<std::int32_t>(max_lane); break;
                default: j = static_cast<std::int32_t>(min_lane | (bval & ~segment)); valid = j <= static_cast<std::int32_t>(max_lane); break;
                }
                if (!valid)
                {
                    j = static_cast<std::int32_t>(l);
                }
                d[l] = values[j] & 0xffffffffu;
                if (p)
                {
                    p[l] = valid;
                }
            }
        };
        switch (in.var)
        {
        case variant::shfl_up: lanes(std::integral_constant<variant, variant::shfl_up>{}); return;
        case variant::shfl_down: lanes(std::integral_constant<variant, variant::shfl_down>{}); return;
        case variant::shfl_bfly: lanes(std::integral_constant<variant, variant::shfl_bfly>{}); return;
        default: lanes(std::integral_constant<variant, variant::shfl_idx>{}); return;
        }
    }

    void warp_interpreter::vote(const instruction& in, std::uint32_t active)
    {
        std::uint64_t* d = destination(in.operands[0]);
        if (in.op == opcode::activemask)
        {
            XCUDA_SIM_LANES(active) { d[l] = active; }
            return;
        }
        source a = fetch(in.operands[1], 0);
        source masks = member_mask(in, in.operands[2], active, "vote.sync");
        bool negated = in.operands[1].negate;
        std::uint32_t ballot = 0;
        XCUDA_SIM_LANES(active)
        {
            ballot |= static_cast<std::uint32_t>((a.p[a.stride * l] & 1) != negated) << l;
        }
        XCUDA_SIM_LANES(active)
        {
            std::uint32_t members = static_cast<std::uint32_t>(masks.p[masks.stride * l]) & active;
            std::uint32_t mine = ballot & members;
            switch (in.var)
            {
            case variant::vote_ballot: d[l] = mine; break;
            case variant::vote_all: d[l] = mine == members; break;
            case variant::vote_any: d[l] = mine != 0; break;
            default: d[l] = mine == 0 || mine == members; break;
            }
        }
    }

    void warp_interpreter::atomic(const instruction& in, std::uint32_t active)
    {
        // Blocks on other host threads may touch the same word: one lock for every atomic of the launch.
        std::unique_lock<std::mutex> held;
        if (m_launch.atomic_lock)
        {
            held = std::unique_lock<std::mutex>(*m_launch.atomic_lock);
        }
        bool reduction = in.op == opcode::red;
        unsigned at = reduction ? 0 : 1;
        std::uint64_t* d = reduction ? nullptr : destination(in.operands[0]);
        source b = fetch(in.operands[at + 1], 0);
        source c = in.var == variant::atom_cas ? fetch(in.operands[at + 2], 1) : source{b.p, 0};
        const ptx_type t = in.type;
        unsigned size = t.bytes();
        XCUDA_SIM_BY_TYPE(t, {
            XCUDA_SIM_LANES(active)  // lane order: one at a time, as the hardware serialises them
            {
                std::uint8_t* p = address(in, in.operands[at], l, size, true);
                T old;
                std::memcpy(&old, p, sizeof(T));
                T x = as<T>(b.p[b.stride * l]);
                T r = old;
                if constexpr (std::is_floating_point_v<T>)
                {
                    r = in.var == variant::atom_add ? static_cast<T>(old + x) : x;
                }
                else
                {
                    using U = std::make_unsigned_t<T>;
                    switch (in.var)
                    {
                    case variant::atom_add: r = static_cast<T>(old + x); break;
                    case variant::atom_min: r = x < old ? x : old; break;
                    case variant::atom_max: r = x > old ? x : old; break;
                    case variant::atom_inc: r = static_cast<T>(static_cast<U>(old) >= static_cast<U>(x) ? 0 : old + 1); break;
                    case variant::atom_dec:
                        r = static_cast<T>(old == 0 || static_cast<U>(old) > static_cast<U>(x) ? x : old - 1);
                        break;
                    case variant::atom_and: r = old & x; break;
                    case variant::atom_or: r = old | x; break;
                    case variant::atom_xor: r = old ^ x; break;
                    case variant::atom_exch: r = x; break;
                    case variant::atom_cas: r = old == x ? as<T>(c.p[c.stride * l]) : old; break;
                    default: break;
                    }
                }
                std::memcpy(p, &r, sizeof(T));
                if (d)
                {
                    d[l] = bits<T>(old);
                }
            }
        });
        (void)size;
    }

    // redux.sync (one value combined over the member lanes, to each) and match.sync (which lanes hold
    // the same value).
    void warp_interpreter::collective(const instruction& in, std::uint32_t active)
    {
        unsigned first = in.pair ? 2 : 1;
        std::uint64_t* d = destination(in.operands[0]);
        std::uint64_t* p = in.pair ? destination(in.operands[1]) : nullptr;
        source a = fetch(in.operands[first], 0);
        source masks = member_mask(in, in.operands[first + 1], active, in.op == opcode::redux ? "redux.sync" : "match.sync");
        // Lanes of one warp may run this in groups (tiles) with masks of their own: each group at a time.
        std::uint32_t todo = active;
        while (todo)
        {
            std::uint32_t members = static_cast<std::uint32_t>(masks.p[masks.stride * __builtin_ctz(todo)]) & active;
            collective_group(in, members, d, p, a);
            todo &= ~members;
        }
    }

    void warp_interpreter::collective_group(const instruction& in, std::uint32_t members, std::uint64_t* d, std::uint64_t* p,
                                            source a)
    {
        std::uint32_t active = members;
        std::uint64_t keep = in.type.bits >= 64 ? ~0ull : (1ull << in.type.bits) - 1;
        if (in.op == opcode::redux)
        {
            bool is_signed = in.type.is_signed();
            std::uint32_t r = 0;
            bool any = false;
            XCUDA_SIM_LANES(members)
            {
                std::uint32_t v = static_cast<std::uint32_t>(a.p[a.stride * l]);
                if (!any)
                {
                    r = v;
                    any = true;
                    continue;
                }
                switch (in.var)
                {
                case variant::atom_add: r += v; break;
                case variant::atom_and: r &= v; break;
                case variant::atom_or: r |= v; break;
                case variant::atom_xor: r ^= v; break;
                case variant::atom_min:
                    r = is_signed ? (static_cast<std::int32_t>(v) < static_cast<std::int32_t>(r) ? v : r) : std::min(r, v);
                    break;
                default:
                    r = is_signed ? (static_cast<std::int32_t>(v) > static_cast<std::int32_t>(r) ? v : r) : std::max(r, v);
                    break;
                }
            }
            XCUDA_SIM_LANES(active) { d[l] = r; }
            return;
        }
        bool all_same = true;
        std::uint64_t first_value = a.p[a.stride * __builtin_ctz(members)] & keep;
        XCUDA_SIM_LANES(active)
        {
            std::uint64_t mine = a.p[a.stride * l] & keep;
            std::uint32_t same = 0;
            for (std::uint32_t m = members; m; m &= m - 1)
            {
                unsigned k = static_cast<unsigned>(__builtin_ctz(m));
                same |= static_cast<std::uint32_t>((a.p[a.stride * k] & keep) == mine) << k;
            }
            all_same = all_same && mine == first_value;
            d[l] = same;
        }
        if (in.var == variant::vote_all)
        {
            XCUDA_SIM_LANES(active)
            {
                d[l] = all_same ? members : 0;
                if (p)
                {
                    p[l] = all_same;
                }
            }
        }
    }
}
