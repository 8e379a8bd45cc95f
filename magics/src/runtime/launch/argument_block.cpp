#include "argument_block.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        template <class T>
        void put(void* destination, T value)
        {
            std::memcpy(destination, &value, sizeof(T));
        }

        bool is_signed_integer(scalar_kind kind)
        {
            return kind == scalar_kind::i8 || kind == scalar_kind::i16 || kind == scalar_kind::i32 ||
                   kind == scalar_kind::i64;
        }

        bool is_unsigned_integer(scalar_kind kind)
        {
            return kind == scalar_kind::u8 || kind == scalar_kind::u16 || kind == scalar_kind::u32 ||
                   kind == scalar_kind::u64;
        }

        bool is_floating(scalar_kind kind)
        {
            return kind == scalar_kind::f16 || kind == scalar_kind::bf16 || kind == scalar_kind::f32 ||
                   kind == scalar_kind::f64 || kind == scalar_kind::fp8_e4m3 || kind == scalar_kind::fp8_e5m2;
        }

        // The representable range of an integer kind, as long double so one comparison covers all.
        void integer_range(scalar_kind kind, long double& low, long double& high)
        {
            switch (kind)
            {
            case scalar_kind::i8: low = INT8_MIN; high = INT8_MAX; break;
            case scalar_kind::u8: low = 0; high = UINT8_MAX; break;
            case scalar_kind::i16: low = INT16_MIN; high = INT16_MAX; break;
            case scalar_kind::u16: low = 0; high = UINT16_MAX; break;
            case scalar_kind::i32: low = INT32_MIN; high = INT32_MAX; break;
            case scalar_kind::u32: low = 0; high = UINT32_MAX; break;
            case scalar_kind::i64: low = static_cast<long double>(INT64_MIN); high = static_cast<long double>(INT64_MAX); break;
            default: low = 0; high = static_cast<long double>(UINT64_MAX); break;
            }
        }

        std::string number_text(double value)
        {
            char text[64];
            std::snprintf(text, sizeof text, "%.9g", value);
            return text;
        }

        std::string range_text(scalar_kind kind)
        {
            switch (kind)
            {
            case scalar_kind::i8: return "-128..127";
            case scalar_kind::u8: return "0..255";
            case scalar_kind::i16: return "-32768..32767";
            case scalar_kind::u16: return "0..65535";
            case scalar_kind::i32: return "-2147483648..2147483647";
            case scalar_kind::u32: return "0..4294967295";
            case scalar_kind::i64: return "-9223372036854775808..9223372036854775807";
            default: return "0..18446744073709551615";
            }
        }
    }

    void argument_block::allocate(std::size_t bytes, std::size_t count)
    {
        if (bytes > sizeof m_inline)
        {
            // 16 bytes more, so that the start can be moved to a 16-byte boundary.
            m_heap.reset(new unsigned char[bytes + 16]);
            auto base = reinterpret_cast<std::uintptr_t>(m_heap.get());
            m_data = m_heap.get() + (16 - base % 16) % 16;
        }
        if (count > inline_parameters)
        {
            m_heap_pointers.reset(new void*[count]);
            m_pointers = m_heap_pointers.get();
        }
        // Slots are not zeroed: every slot is stored before a launch (a call must give every argument, and
        // a conversion that fails ends the call). A packed block's padding is, since the driver copies
        // the whole buffer (nothing on the device reads it, but no byte of it is left undefined).
        if (m_plan->has_gaps())
        {
            std::memset(m_data, 0, bytes);
        }
    }

    void argument_block::store_signed(std::size_t index, long long value)
    {
        // The launch path's common cases first: a value that fits a 64- or 32-bit integer parameter.
        switch (m_kinds[index].kind)
        {
        case scalar_kind::i64: put(this->slot(index), static_cast<std::int64_t>(value)); return;
        case scalar_kind::u64:
            if (value >= 0)
            {
                put(this->slot(index), static_cast<std::uint64_t>(value));
                return;
            }
            break;
        case scalar_kind::i32:
            if (value >= INT32_MIN && value <= INT32_MAX)
            {
                put(this->slot(index), static_cast<std::int32_t>(value));
                return;
            }
            break;
        case scalar_kind::u32:
            if (value >= 0 && value <= static_cast<long long>(UINT32_MAX))
            {
                put(this->slot(index), static_cast<std::uint32_t>(value));
                return;
            }
            break;
        default: break;
        }
        const parameter_slot& slot = m_plan->slots()[index];
        if (is_floating(slot.kind))
        {
            store_float(index, static_cast<double>(value));
            return;
        }
        if (slot.kind == scalar_kind::boolean)
        {
            if (value != 0 && value != 1)
            {
                throw argument_value_error(m_plan->describe(index) + ": " + std::to_string(value) +
                                           " is not a bool; pass True, False, 0 or 1");
            }
            store_bool(index, value != 0);
            return;
        }
        long double low = 0;
        long double high = 0;
        integer_range(slot.kind, low, high);
        if (static_cast<long double>(value) < low || static_cast<long double>(value) > high)
        {
            throw argument_value_error(m_plan->describe(index) + ": " + std::to_string(value) + " does not fit in " +
                                       scalar_kind_name(slot.kind) + " (range " + range_text(slot.kind) + ")");
        }
        void* destination = this->slot(index);
        switch (slot.kind)
        {
        case scalar_kind::i8: put(destination, static_cast<std::int8_t>(value)); break;
        case scalar_kind::u8: put(destination, static_cast<std::uint8_t>(value)); break;
        case scalar_kind::i16: put(destination, static_cast<std::int16_t>(value)); break;
        case scalar_kind::u16: put(destination, static_cast<std::uint16_t>(value)); break;
        case scalar_kind::i32: put(destination, static_cast<std::int32_t>(value)); break;
        case scalar_kind::u32: put(destination, static_cast<std::uint32_t>(value)); break;
        case scalar_kind::i64: put(destination, static_cast<std::int64_t>(value)); break;
        case scalar_kind::u64: put(destination, static_cast<std::uint64_t>(value)); break;
        default:
            throw argument_type_error(m_plan->describe(index) + " does not take an integer");
        }
    }

    void argument_block::store_unsigned(std::size_t index, unsigned long long value)
    {
        const parameter_slot& slot = m_plan->slots()[index];
        if (value <= static_cast<unsigned long long>(std::numeric_limits<long long>::max()))
        {
            store_signed(index, static_cast<long long>(value));
            return;
        }
        if (slot.kind == scalar_kind::u64)
        {
            put(this->slot(index), static_cast<std::uint64_t>(value));
            return;
        }
        if (is_floating(slot.kind))
        {
            store_float(index, static_cast<double>(value));
            return;
        }
        throw argument_value_error(m_plan->describe(index) + ": " + std::to_string(value) + " does not fit in " +
                                   scalar_kind_name(slot.kind) + " (range " + range_text(slot.kind) + ")");
    }

    void argument_block::store_float_checked(std::size_t index, double value)
    {
        const parameter_slot& slot = m_plan->slots()[index];
        void* destination = this->slot(index);
        auto check_finite_range = [&](double limit, const char* type) {
            if (std::isfinite(value) && std::fabs(value) > limit)
            {
                throw argument_value_error(m_plan->describe(index) + ": " + number_text(value) + " overflows " + type +
                                           " (largest finite value " + number_text(limit) + ")");
            }
        };
        switch (slot.kind)
        {
        case scalar_kind::f64:
            put(destination, value);
            break;
        case scalar_kind::f32:
            check_finite_range(std::numeric_limits<float>::max(), "float32");
            put(destination, static_cast<float>(value));
            break;
        case scalar_kind::f16:
            check_finite_range(65504.0, "float16");
            put(destination, launch_plan::to_half(static_cast<float>(value)));
            break;
        case scalar_kind::bf16:
            check_finite_range(3.3895313892515355e38, "bfloat16");
            put(destination, launch_plan::to_bfloat16(static_cast<float>(value)));
            break;
        case scalar_kind::fp8_e4m3:
        case scalar_kind::fp8_e5m2:
            store_fp8(index, value);
            break;
        default:
            if (is_signed_integer(slot.kind) || is_unsigned_integer(slot.kind) || slot.kind == scalar_kind::boolean)
            {
                throw argument_type_error(m_plan->describe(index) + " takes an integer, got the float " + number_text(value) +
                                          "; pass int(value) if truncation is meant");
            }
            throw argument_type_error(m_plan->describe(index) + " does not take a number");
        }
    }

    void argument_block::store_fp8(std::size_t index, double value)
    {
        bool e4m3 = m_plan->slots()[index].kind == scalar_kind::fp8_e4m3;
        std::uint8_t bits = 0;
        if (!(e4m3 ? launch_plan::to_fp8_e4m3(value, bits) : launch_plan::to_fp8_e5m2(value, bits)))
        {
            throw argument_value_error(m_plan->describe(index) + ": " + number_text(value) + " overflows " +
                                       (e4m3 ? "float8_e4m3fn (largest finite value 448; it has no infinity)"
                                             : "float8_e5m2 (largest finite value 57344)"));
        }
        put(this->slot(index), bits);
    }

    void argument_block::store_bool(std::size_t index, bool value)
    {
        const parameter_slot& slot = m_plan->slots()[index];
        if (slot.kind != scalar_kind::boolean)
        {
            store_signed(index, value ? 1 : 0);
            return;
        }
        put(this->slot(index), static_cast<unsigned char>(value ? 1 : 0));
    }

    void argument_block::store_bytes(std::size_t index, const void* data, std::size_t size)
    {
        const parameter_slot& slot = m_plan->slots()[index];
        if (slot.size != 0 && size != slot.size)
        {
            throw argument_type_error(m_plan->describe(index) + " is " + std::to_string(slot.size) +
                                      " bytes; the value given has " + std::to_string(size) + " bytes");
        }
        if (slot.size == 0)
        {
            throw argument_type_error(m_plan->describe(index) +
                                      ": the size of this type is unknown until the kernel is loaded on a GPU (the reader could not "
                                      "lay it out, and the compiler's layout probe did not size it)");
        }
        std::memcpy(this->slot(index), data, size);
    }

}
