#pragma once
// Register values of the warp interpreter: every register is a 64-bit slot per lane holding the bits
// of its type in the low part; as<T>() reads them as a C++ type, bits() writes one back (zero-extended).
// And the two loops every instruction uses: over the active lanes, and over the PTX types.
// Private to warp_interpreter.cpp and warp_operations.cpp.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

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
