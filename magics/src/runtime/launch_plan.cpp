#include "launch_plan.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "cuda_session.hpp"
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
                   kind == scalar_kind::f64;
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

    launch_plan::launch_plan(const kernel_signature& signature)
        : m_line(signature.line)
    {
        for (const auto& parameter : signature.parameters)
        {
            parameter_slot slot;
            slot.name = parameter.name;
            slot.type = parameter.type;
            slot.kind = parameter.kind;
            slot.is_const = parameter.is_const;
            if (parameter.is_pointer)
            {
                slot.cls = parameter_class::pointer;
                slot.size = sizeof(std::uint64_t);
            }
            else if (parameter.kind != scalar_kind::unknown)
            {
                slot.cls = parameter_class::scalar;
                slot.size = scalar_kind_size(parameter.kind);
            }
            else
            {
                slot.cls = parameter_class::opaque;
                slot.size = parameter.size;
            }
            m_slots.push_back(slot);
        }
        layout();
    }

    void launch_plan::layout()
    {
        // Each slot gets a 16-byte aligned home: cuLaunchKernel copies each argument from its own
        // pointer, so the block's layout need not match the kernel's parameter layout.
        std::size_t offset = 0;
        for (auto& slot : m_slots)
        {
            slot.offset = offset;
            std::size_t size = slot.size == 0 ? 16 : slot.size;
            offset += (size + 15) / 16 * 16;
        }
        m_block.assign(offset + 16, 0);
        m_pointers.resize(m_slots.size());
        // Align the block's start to 16 within the vector's storage.
        auto base = reinterpret_cast<std::uintptr_t>(m_block.data());
        std::size_t shift = (16 - base % 16) % 16;
        for (auto& slot : m_slots)
        {
            slot.offset += shift;
        }
        for (std::size_t i = 0; i < m_slots.size(); ++i)
        {
            m_pointers[i] = m_block.data() + m_slots[i].offset;
        }
    }

    void launch_plan::check_driver_sizes(const std::vector<std::size_t>& sizes)
    {
        if (sizes.size() != m_slots.size())
        {
            throw signature_error(m_line, "the compiled kernel has " + std::to_string(sizes.size()) +
                                     " parameters but its declaration was read as " +
                                     std::to_string(m_slots.size()) +
                                     "; the signature parser misread it (please report the declaration)");
        }
        bool relayout = false;
        for (std::size_t i = 0; i < sizes.size(); ++i)
        {
            parameter_slot& slot = m_slots[i];
            if (slot.size == 0)
            {
                slot.size = sizes[i];
                relayout = true;
            }
            else if (slot.size != sizes[i])
            {
                throw signature_error(m_line, describe(i) + " is " + std::to_string(sizes[i]) +
                                         " bytes in the compiled kernel but " + std::to_string(slot.size) +
                                         " bytes as declared; the signature parser misread it");
            }
        }
        if (relayout)
        {
            layout();
        }
    }

    int launch_plan::ptx_parameter_count(const std::string& ptx, const std::string& symbol)
    {
        // ".entry NAME(" with NAME followed by '(' or a blank: a longer name with the same start is
        // another kernel.
        std::size_t at = 0;
        while ((at = ptx.find(".entry " + symbol, at)) != std::string::npos)
        {
            std::size_t after = at + 7 + symbol.size();
            while (after < ptx.size() && (ptx[after] == ' ' || ptx[after] == '\t'))
            {
                ++after;
            }
            if (after < ptx.size() && ptx[after] == '(')
            {
                std::size_t close = ptx.find(')', after);
                if (close == std::string::npos)
                {
                    return -1;
                }
                int count = 0;
                for (std::size_t p = ptx.find(".param", after); p != std::string::npos && p < close;
                     p = ptx.find(".param", p + 6))
                {
                    ++count;
                }
                return count;
            }
            at = after;
        }
        return -1;
    }

    std::string launch_plan::describe(std::size_t index) const
    {
        const parameter_slot& slot = m_slots[index];
        std::string text = "parameter " + std::to_string(index);
        if (!slot.name.empty())
        {
            text += " '" + slot.name + "'";
        }
        return text + " (" + slot.type + ")";
    }

    void launch_plan::store_signed(std::size_t index, long long value)
    {
        const parameter_slot& slot = m_slots[index];
        if (is_floating(slot.kind))
        {
            store_float(index, static_cast<double>(value));
            return;
        }
        if (slot.kind == scalar_kind::boolean)
        {
            if (value != 0 && value != 1)
            {
                throw argument_value_error(describe(index) + ": " + std::to_string(value) +
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
            throw argument_value_error(describe(index) + ": " + std::to_string(value) + " does not fit in " +
                                       scalar_kind_name(slot.kind) + " (range " + range_text(slot.kind) + ")");
        }
        void* destination = slot_storage(index);
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
            throw argument_type_error(describe(index) + " does not take an integer");
        }
    }

    void launch_plan::store_unsigned(std::size_t index, unsigned long long value)
    {
        const parameter_slot& slot = m_slots[index];
        if (value <= static_cast<unsigned long long>(std::numeric_limits<long long>::max()))
        {
            store_signed(index, static_cast<long long>(value));
            return;
        }
        if (slot.kind == scalar_kind::u64)
        {
            put(slot_storage(index), static_cast<std::uint64_t>(value));
            return;
        }
        if (is_floating(slot.kind))
        {
            store_float(index, static_cast<double>(value));
            return;
        }
        throw argument_value_error(describe(index) + ": " + std::to_string(value) + " does not fit in " +
                                   scalar_kind_name(slot.kind) + " (range " + range_text(slot.kind) + ")");
    }

    void launch_plan::store_float(std::size_t index, double value)
    {
        const parameter_slot& slot = m_slots[index];
        void* destination = slot_storage(index);
        auto check_finite_range = [&](double limit, const char* type) {
            if (std::isfinite(value) && std::fabs(value) > limit)
            {
                throw argument_value_error(describe(index) + ": " + number_text(value) + " overflows " + type +
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
            put(destination, to_half(static_cast<float>(value)));
            break;
        case scalar_kind::bf16:
            check_finite_range(3.3895313892515355e38, "bfloat16");
            put(destination, to_bfloat16(static_cast<float>(value)));
            break;
        default:
            if (is_signed_integer(slot.kind) || is_unsigned_integer(slot.kind) || slot.kind == scalar_kind::boolean)
            {
                throw argument_type_error(describe(index) + " takes an integer, got the float " + number_text(value) +
                                          "; pass int(value) if truncation is meant");
            }
            throw argument_type_error(describe(index) + " does not take a number");
        }
    }

    void launch_plan::store_bool(std::size_t index, bool value)
    {
        const parameter_slot& slot = m_slots[index];
        if (slot.kind != scalar_kind::boolean)
        {
            store_signed(index, value ? 1 : 0);
            return;
        }
        put(slot_storage(index), static_cast<unsigned char>(value ? 1 : 0));
    }

    void launch_plan::store_pointer(std::size_t index, std::uint64_t address)
    {
        put(slot_storage(index), address);
    }

    void launch_plan::store_bytes(std::size_t index, const void* data, std::size_t size)
    {
        const parameter_slot& slot = m_slots[index];
        if (slot.size != 0 && size != slot.size)
        {
            throw argument_type_error(describe(index) + " is " + std::to_string(slot.size) +
                                      " bytes; the value given has " + std::to_string(size) + " bytes");
        }
        if (slot.size == 0)
        {
            throw argument_type_error(describe(index) +
                                      ": the size of this type is unknown until the kernel is loaded on a GPU");
        }
        std::memcpy(slot_storage(index), data, size);
    }

    void launch_plan::validate(const launch_dims& dims, const device_properties& device, int max_threads_for_function,
                               int max_dynamic_shared_for_function, const std::string& kernel_name)
    {
        static const char* axes[3] = {"x", "y", "z"};
        unsigned long long threads = 1;
        for (int i = 0; i < 3; ++i)
        {
            if (dims.block[i] > static_cast<unsigned>(device.max_block[i]))
            {
                throw argument_value_error("block " + std::string(axes[i]) + " = " + std::to_string(dims.block[i]) +
                                           " exceeds the device's limit of " + std::to_string(device.max_block[i]));
            }
            if (dims.grid[i] > static_cast<unsigned>(device.max_grid[i]))
            {
                throw argument_value_error("grid " + std::string(axes[i]) + " = " + std::to_string(dims.grid[i]) +
                                           " exceeds the device's limit of " + std::to_string(device.max_grid[i]));
            }
            threads *= dims.block[i];
        }
        if (threads > static_cast<unsigned long long>(max_threads_for_function))
        {
            throw argument_value_error("block of " + std::to_string(threads) + " threads exceeds the " +
                                       std::to_string(max_threads_for_function) + " threads per block that kernel '" +
                                       kernel_name + "' can run with on " + device.name +
                                       (max_threads_for_function < device.max_threads_per_block
                                            ? " (limited by its registers or __launch_bounds__)"
                                            : ""));
        }
        if (dims.shared_mem > static_cast<unsigned>(max_dynamic_shared_for_function))
        {
            throw argument_value_error("dynamic shared memory of " + std::to_string(dims.shared_mem) +
                                       " bytes exceeds the " + std::to_string(max_dynamic_shared_for_function) +
                                       " bytes available to kernel '" + kernel_name + "' on " + device.name);
        }
    }

    std::uint16_t launch_plan::to_half(float value)
    {
        std::uint32_t bits;
        std::memcpy(&bits, &value, 4);
        std::uint32_t sign = (bits >> 16) & 0x8000u;
        std::uint32_t exponent = (bits >> 23) & 0xffu;
        std::uint32_t mantissa = bits & 0x7fffffu;
        if (exponent == 0xff)
        {
            return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
        }
        int e = static_cast<int>(exponent) - 127 + 15;
        if (e >= 31)
        {
            return static_cast<std::uint16_t>(sign | 0x7c00u);
        }
        if (e <= 0)
        {
            if (e < -10)
            {
                return static_cast<std::uint16_t>(sign);
            }
            mantissa |= 0x800000u;
            unsigned shift = static_cast<unsigned>(14 - e);
            std::uint32_t half_mantissa = mantissa >> shift;
            std::uint32_t rest = mantissa & ((1u << shift) - 1);
            std::uint32_t halfway = 1u << (shift - 1);
            if (rest > halfway || (rest == halfway && (half_mantissa & 1u)))
            {
                ++half_mantissa;
            }
            return static_cast<std::uint16_t>(sign | half_mantissa);
        }
        std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
        std::uint32_t rest = mantissa & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        {
            ++half;  // may carry into the exponent, which is the right rounding
        }
        return static_cast<std::uint16_t>(half);
    }

    std::uint16_t launch_plan::to_bfloat16(float value)
    {
        std::uint32_t bits;
        std::memcpy(&bits, &value, 4);
        if ((bits & 0x7fffffffu) > 0x7f800000u)
        {
            return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
        }
        std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
        return static_cast<std::uint16_t>((bits + rounding) >> 16);
    }
}
