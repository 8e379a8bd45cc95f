#pragma once
// Register values of the warp interpreter: every register is a 64-bit slot per lane holding the bits
// of its type in the low part; as<T>() reads them as a C++ type, bits() writes one back (zero-extended).
// And the two loops every instruction uses: over the active lanes, and over the PTX types.
// Private to warp_interpreter.cpp and the warp_*operations.cpp / warp_float_rounding.cpp families.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    template <class T>
    inline T as(std::uint64_t v)
    {
        if constexpr (std::is_same_v<T, float>)
        {
            std::uint32_t b = static_cast<std::uint32_t>(v);
            float f;
            std::memcpy(&f, &b, 4);
            return f;
        }
        else if constexpr (std::is_same_v<T, double>)
        {
            double d;
            std::memcpy(&d, &v, 8);
            return d;
        }
        else
        {
            return static_cast<T>(v);
        }
    }

    template <class T>
    inline std::uint64_t bits(T x)
    {
        if constexpr (std::is_same_v<T, float>)
        {
            std::uint32_t b;
            std::memcpy(&b, &x, 4);
            return b;
        }
        else if constexpr (std::is_same_v<T, double>)
        {
            std::uint64_t b;
            std::memcpy(&b, &x, 8);
            return b;
        }
        else if constexpr (std::is_same_v<T, bool>)
        {
            return x ? 1 : 0;
        }
        else
        {
            return static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<T>>(x));
        }
    }

    inline float flush(float x)
    {
        return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
    }

    inline std::uint64_t read_as(std::uint64_t v, ptx_type t)
    {
        // Normalises a register to its type: sign- or zero-extended to 64 bits.
        if (t.bits >= 64 || t.is_float())
        {
            return v;
        }
        unsigned shift = 64 - t.bits;
        if (t.is_signed())
        {
            return static_cast<std::uint64_t>(static_cast<std::int64_t>(v << shift) >> shift);
        }
        return (v << shift) >> shift;
    }

    template <class T>
    bool compare_values(compare c, T a, T b)
    {
        if constexpr (std::is_floating_point_v<T>)
        {
            bool unordered = std::isnan(a) || std::isnan(b);
            switch (c)
            {
            case compare::eq: return !unordered && a == b;
            case compare::ne: return !unordered && a != b;
            case compare::lt: return !unordered && a < b;
            case compare::le: return !unordered && a <= b;
            case compare::gt: return !unordered && a > b;
            case compare::ge: return !unordered && a >= b;
            case compare::equ: return unordered || a == b;
            case compare::neu: return unordered || a != b;
            case compare::ltu: return unordered || a < b;
            case compare::leu: return unordered || a <= b;
            case compare::gtu: return unordered || a > b;
            case compare::geu: return unordered || a >= b;
            case compare::num: return !unordered;
            case compare::nan: return unordered;
            default: return false;
            }
        }
        else
        {
            using U = std::make_unsigned_t<T>;
            switch (c)
            {
            case compare::eq: return a == b;
            case compare::ne: return a != b;
            case compare::lt: return a < b;
            case compare::le: return a <= b;
            case compare::gt: return a > b;
            case compare::ge: return a >= b;
            case compare::lo: return static_cast<U>(a) < static_cast<U>(b);
            case compare::ls: return static_cast<U>(a) <= static_cast<U>(b);
            case compare::hi: return static_cast<U>(a) > static_cast<U>(b);
            case compare::hs: return static_cast<U>(a) >= static_cast<U>(b);
            default: return false;
            }
        }
    }

    // Calls run(std::integral_constant<compare, c>{}) for the comparison c, so that a loop over the lanes compares
    // with a constant.
    template <class Run>
    void by_comparison(compare c, Run&& run)
    {
        using k = compare;
        switch (c)
        {
        case k::eq: run(std::integral_constant<k, k::eq>{}); return;
        case k::ne: run(std::integral_constant<k, k::ne>{}); return;
        case k::lt: run(std::integral_constant<k, k::lt>{}); return;
        case k::le: run(std::integral_constant<k, k::le>{}); return;
        case k::gt: run(std::integral_constant<k, k::gt>{}); return;
        case k::ge: run(std::integral_constant<k, k::ge>{}); return;
        case k::lo: run(std::integral_constant<k, k::lo>{}); return;
        case k::ls: run(std::integral_constant<k, k::ls>{}); return;
        case k::hi: run(std::integral_constant<k, k::hi>{}); return;
        case k::hs: run(std::integral_constant<k, k::hs>{}); return;
        default: run(std::integral_constant<k, k::none>{}); return;  // the unordered forms: compare_values decides
        }
    }

    // A float to an integer of type I: rounded as r says, NaN to 0, out-of-range values saturated
    // (PTX's float-to-integer conversions always saturate).
    template <class I>
    I float_to_integer(double x, rounding r)
    {
        if (std::isnan(x))
        {
            return 0;
        }
        switch (r)
        {
        case rounding::rni: x = std::nearbyint(x); break;
        case rounding::rmi: x = std::floor(x); break;
        case rounding::rpi: x = std::ceil(x); break;
        default: x = std::trunc(x); break;
        }
        if (x <= static_cast<double>(std::numeric_limits<I>::min()))
        {
            return std::numeric_limits<I>::min();
        }
        if (x >= static_cast<double>(std::numeric_limits<I>::max()))
        {
            return std::numeric_limits<I>::max();
        }
        return static_cast<I>(x);
    }

    // float_to_integer to the integer type `to`, as the bits of its register (a sub-word signed result fills 32 bits).
    inline std::uint64_t float_to_integer_bits(double x, ptx_type to, rounding r)
    {
        switch (to.is_signed() ? 100 + to.bits : to.bits)
        {
        case 8: return float_to_integer<std::uint8_t>(x, r);
        case 16: return float_to_integer<std::uint16_t>(x, r);
        case 32: return float_to_integer<std::uint32_t>(x, r);
        case 64: return float_to_integer<std::uint64_t>(x, r);
        case 108: return bits<std::int8_t>(float_to_integer<std::int8_t>(x, r)) & 0xffffffffu;
        case 116: return bits<std::int16_t>(float_to_integer<std::int16_t>(x, r)) & 0xffffffffu;
        case 132: return bits<std::int32_t>(float_to_integer<std::int32_t>(x, r));
        case 164: return bits<std::int64_t>(float_to_integer<std::int64_t>(x, r));
        default: return 0;
        }
    }

    // Integer arithmetic wraps (two's complement), as PTX says; C++ signed overflow would be undefined,
    // so it is done unsigned. Floats pass through.
    template <class T>
    T wrap_add(T a, T b)
    {
        if constexpr (std::is_integral_v<T>)
        {
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
        }
        else
        {
            return a + b;
        }
    }
    template <class T>
    T wrap_sub(T a, T b)
    {
        if constexpr (std::is_integral_v<T>)
        {
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
        }
        else
        {
            return a - b;
        }
    }
    template <class T>
    T wrap_mul(T a, T b)
    {
        if constexpr (std::is_integral_v<T>)
        {
            // Promoted past int so that a 16-bit product cannot overflow int either.
            using U = std::conditional_t<(sizeof(T) < 4), std::uint32_t, std::make_unsigned_t<T>>;
            return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
        }
        else
        {
            return a * b;
        }
    }

    template <class T>
    std::uint64_t wide_product(T a, T b)
    {
        using wide = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
        if constexpr (sizeof(T) == 2)
        {
            using wide32 = std::conditional_t<std::is_signed_v<T>, std::int32_t, std::uint32_t>;
            return bits<wide32>(static_cast<wide32>(a) * static_cast<wide32>(b));
        }
        else
        {
            return bits<wide>(static_cast<wide>(a) * static_cast<wide>(b));
        }
    }

    // The lanes of a mask: __builtin_popcount without -mpopcnt is a call into libgcc, on every instruction.
    inline unsigned lane_count(std::uint32_t mask)
    {
        if (mask == 0xffffffffu)
        {
            return 32;
        }
        mask = mask - ((mask >> 1) & 0x55555555u);
        mask = (mask & 0x33333333u) + ((mask >> 2) & 0x33333333u);
        return (((mask + (mask >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
    }

#define XCUDA_SIM_LANES(mask) for (std::uint32_t m_ = (mask), l; m_ && ((l = __builtin_ctz(m_)), true); m_ &= m_ - 1)

    template <class T>
    struct type_tag
    {
        using type = T;
    };

// Runs the statements with T the C++ type of the PTX type t (integers by signedness and width, floats).
// They are the body of a generic lambda, so that `if constexpr` on T discards what does not apply.
#define XCUDA_SIM_BY_TYPE(t, ...)                                                             \
    do                                                                                        \
    {                                                                                         \
        auto by_type_ = [&](auto tag_) {                                                      \
            using T = typename decltype(tag_)::type;                                          \
            __VA_ARGS__;                                                                      \
        };                                                                                    \
        switch ((t).kind == 'f' ? 200 + (t).bits : (t).kind == 's' ? 100 + (t).bits : (t).bits) \
        {                                                                                     \
        case 232: by_type_(::xcuda::sim::type_tag<float>{}); break;                           \
        case 264: by_type_(::xcuda::sim::type_tag<double>{}); break;                          \
        case 1:                                                                               \
        case 32: by_type_(::xcuda::sim::type_tag<std::uint32_t>{}); break;                    \
        case 64: by_type_(::xcuda::sim::type_tag<std::uint64_t>{}); break;                    \
        case 8: by_type_(::xcuda::sim::type_tag<std::uint8_t>{}); break;                      \
        case 16: by_type_(::xcuda::sim::type_tag<std::uint16_t>{}); break;                    \
        case 108: by_type_(::xcuda::sim::type_tag<std::int8_t>{}); break;                     \
        case 116: by_type_(::xcuda::sim::type_tag<std::int16_t>{}); break;                    \
        case 132: by_type_(::xcuda::sim::type_tag<std::int32_t>{}); break;                    \
        case 164: by_type_(::xcuda::sim::type_tag<std::int64_t>{}); break;                    \
        default: break;                                                                       \
        }                                                                                     \
    } while (0)
}
