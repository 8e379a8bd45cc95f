#include "launch_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "device_properties.hpp"
#include "errors.hpp"

namespace xcuda
{
    std::string dims_text(const std::array<unsigned, 3>& dims)
    {
        return "(" + std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ", " + std::to_string(dims[2]) + ")";
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
            else if (!parameter.handle_object.empty())
            {
                slot.cls = parameter_class::handle;  // kind u64: an xcuda texture or surface, or its integer handle
                slot.size = sizeof(std::uint64_t);
            }
            else if (parameter.kind != scalar_kind::unknown && !is_packed_pair(parameter.kind))
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
        m_unknown_sizes = false;
        m_packed = false;
        m_gaps = false;
        for (auto& slot : m_slots)
        {
            m_unknown_sizes = m_unknown_sizes || slot.size == 0;
            slot.offset = offset;
            std::size_t size = slot.size == 0 ? 16 : slot.size;
            offset += (size + 15) / 16 * 16;
        }
        m_block_bytes = offset;
        index_slots();
    }

    void launch_plan::index_slots()
    {
        m_kinds.clear();
        m_offsets.clear();
        m_kinds.reserve(m_slots.size());
        m_offsets.reserve(m_slots.size());
        for (const parameter_slot& slot : m_slots)
        {
            m_kinds.push_back({slot.cls, slot.kind, slot.is_const});
            m_offsets.push_back(slot.offset);
        }
    }

    std::unique_ptr<launch_plan> launch_plan::with_driver_sizes(const std::vector<std::size_t>& sizes) const
    {
        if (sizes.size() != m_slots.size())
        {
            throw signature_error(m_line, "the compiled kernel has " + std::to_string(sizes.size()) +
                                     " parameters but its declaration was read as " +
                                     std::to_string(m_slots.size()) +
                                     "; the signature parser misread it (please report the declaration)");
        }
        std::unique_ptr<launch_plan> refined;
        for (std::size_t i = 0; i < sizes.size(); ++i)
        {
            const parameter_slot& slot = m_slots[i];
            if (slot.size == 0)
            {
                if (!refined)
                {
                    refined = std::make_unique<launch_plan>(*this);
                }
                refined->m_slots[i].size = sizes[i];
            }
            else if (slot.size != sizes[i])
            {
                throw signature_error(m_line, describe(i) + " is " + std::to_string(sizes[i]) +
                                         " bytes in the compiled kernel but " + std::to_string(slot.size) +
                                         " bytes as declared; the signature parser misread it");
            }
        }
        if (refined)
        {
            refined->layout();
        }
        return refined;
    }

    std::unique_ptr<launch_plan> launch_plan::packed_at(const std::vector<std::size_t>& offsets) const
    {
        // The driver's limit on a kernel's parameters since CUDA 12.1 (4,096 bytes before it).
        constexpr std::size_t most_parameter_bytes = 32764;
        if (offsets.size() != m_slots.size() || m_unknown_sizes)
        {
            return nullptr;
        }
        std::vector<std::size_t> order(m_slots.size());
        for (std::size_t i = 0; i < order.size(); ++i)
        {
            order[i] = i;
        }
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return offsets[a] < offsets[b]; });
        std::size_t end = 0;
        std::size_t covered = 0;
        for (std::size_t i : order)
        {
            std::size_t size = m_slots[i].size;
            // A scalar or pointer sits at a multiple of its size; a by-value struct at least at its
            // smallest member's (its alignment is not known here).
            std::size_t alignment = m_slots[i].cls == parameter_class::opaque ? 1 : size;
            if (size == 0 || offsets[i] < end || offsets[i] % alignment != 0 || offsets[i] + size > most_parameter_bytes)
            {
                return nullptr;
            }
            end = offsets[i] + size;
            covered += size;
        }
        auto packed = std::make_unique<launch_plan>(*this);
        for (std::size_t i = 0; i < offsets.size(); ++i)
        {
            packed->m_slots[i].offset = offsets[i];
        }
        packed->index_slots();
        packed->m_block_bytes = end;
        packed->m_packed = true;
        packed->m_gaps = covered != end;
        return packed;
    }

    bool launch_plan::has_offsets(const std::vector<std::size_t>& offsets) const noexcept
    {
        if (offsets.size() != m_slots.size())
        {
            return false;
        }
        for (std::size_t i = 0; i < offsets.size(); ++i)
        {
            if (m_slots[i].offset != offsets[i])
            {
                return false;
            }
        }
        return true;
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

    namespace
    {
        // A finite, non-negative double rounded to nearest even to a float of `mantissa_bits` and exponent
        // bias `bias`, encoded without its sign; false past `largest` (the format's largest finite value).
        bool encode_narrow_float(double magnitude, int mantissa_bits, int bias, double largest, std::uint8_t& bits)
        {
            if (magnitude == 0.0)
            {
                bits = 0;
                return true;
            }
            const int smallest_exponent = 1 - bias;  // of a normal number
            int exponent = 0;
            std::frexp(magnitude, &exponent);
            exponent -= 1;  // magnitude is in [2^exponent, 2^(exponent+1))
            int step = std::max(exponent, smallest_exponent) - mantissa_bits;  // log2 of one unit in the last place
            double rounded = std::nearbyint(std::ldexp(magnitude, -step));  // ties to even (the default mode)
            double value = std::ldexp(rounded, step);
            if (value > largest)
            {
                return false;
            }
            std::frexp(value, &exponent);
            exponent -= 1;
            if (value == 0.0 || exponent < smallest_exponent)
            {
                bits = static_cast<std::uint8_t>(std::ldexp(value, mantissa_bits - smallest_exponent));  // subnormal
                return true;
            }
            auto mantissa = static_cast<unsigned>(std::ldexp(value, mantissa_bits - exponent)) - (1u << mantissa_bits);
            bits = static_cast<std::uint8_t>((static_cast<unsigned>(exponent + bias) << mantissa_bits) | mantissa);
            return true;
        }
    }

    bool launch_plan::to_fp8_e4m3(double value, std::uint8_t& bits)
    {
        std::uint8_t sign = std::signbit(value) ? 0x80 : 0;
        if (std::isnan(value))
        {
            bits = sign | 0x7f;
            return true;
        }
        if (std::isinf(value) || !encode_narrow_float(std::fabs(value), 3, 7, 448.0, bits))
        {
            return false;
        }
        bits |= sign;
        return true;
    }

    bool launch_plan::to_fp8_e5m2(double value, std::uint8_t& bits)
    {
        std::uint8_t sign = std::signbit(value) ? 0x80 : 0;
        if (std::isnan(value))
        {
            bits = sign | 0x7e;
            return true;
        }
        if (std::isinf(value))
        {
            bits = sign | 0x7c;
            return true;
        }
        if (!encode_narrow_float(std::fabs(value), 2, 15, 57344.0, bits))
        {
            return false;
        }
        bits |= sign;
        return true;
    }
}
