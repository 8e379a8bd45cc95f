// warp_interpreter's device runtime calls, apart from the instructions it runs: printf (vprintf), each lane's line
// formatted on the host, and a failed assert (__assertfail); every byte of the format, the arguments and the
// assertion's strings read through the simulator's checked accesses.

#include "warp_interpreter.hpp"

#include "warp_values.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace xcuda::sim
{
    // Device printf: NVRTC turns printf(format, ...) into vprintf(format, arguments), the arguments packed
    // in a local buffer, each aligned to its size (floats promoted to double). Each lane's line is formatted
    // here, in lane order, with the host's snprintf, one conversion at a time; every byte read is checked
    // like any other access. vprintf returns the number of arguments, as the device's does.
    void warp_interpreter::device_printf(const instruction& in, std::uint32_t active)
    {
        const ptx_program& program = *m_launch.program;
        const ptx_symbol& format_symbol = program.symbols[static_cast<std::size_t>(in.call_arguments[0])];
        const ptx_symbol& arguments_symbol = program.symbols[static_cast<std::size_t>(in.call_arguments[1])];
        XCUDA_SIM_LANES(active)
        {
            const std::uint8_t* area = m_frame->params.data() + static_cast<std::size_t>(l) * m_function->frame_bytes;
            std::uint64_t format_address = 0, arguments = 0;
            std::memcpy(&format_address, area + format_symbol.offset, 8);
            std::memcpy(&arguments, area + arguments_symbol.offset, 8);
            std::int32_t count = 0;
            std::string line = format(in, l, format_address, arguments, count);
            std::unique_lock<std::mutex> held;  // a cooperative launch's blocks print from several host threads
            if (m_launch.cooperative && m_launch.atomic_lock)
            {
                held = std::unique_lock<std::mutex>(*m_launch.atomic_lock);
            }
            m_launch.printf_output->append(line);
            if (in.call_result >= 0)
            {
                const ptx_symbol& result = program.symbols[static_cast<std::size_t>(in.call_result)];
                std::memcpy(m_frame->params.data() + static_cast<std::size_t>(l) * m_function->frame_bytes + result.offset,
                            &count, std::min<std::size_t>(4, result.size));
            }
        }
    }

    std::string warp_interpreter::format(const instruction& in, unsigned lane, std::uint64_t format_address, std::uint64_t arguments,
                                         std::int32_t& count)
    {
        auto byte_at = [&](std::uint64_t address) {
            return *translate(state_space::generic, address, lane, 1, false, in, false);
        };
        std::string text;
        std::uint64_t offset = 0;
        auto argument = [&](unsigned bytes) {
            offset = (offset + bytes - 1) / bytes * bytes;
            ++count;
            std::uint64_t value = 0;
            std::memcpy(&value, translate(state_space::generic, arguments + offset, lane, bytes, false, in, false), bytes);
            offset += bytes;
            return value;
        };
        for (std::uint64_t at = format_address;; ++at)
        {
            char c = static_cast<char>(byte_at(at));
            if (c == '\0')
            {
                break;
            }
            if (c != '%')
            {
                text += c;
                continue;
            }
            std::string spec = "%";
            int longs = 0;
            char conversion = 0;
            while (true)
            {
                char s = static_cast<char>(byte_at(++at));
                if (s == '\0')
                {
                    return text + spec;
                }
                if (s == 'l')
                {
                    ++longs;
                    continue;
                }
                if (s == 'h' || s == 'z' || s == 't' || s == 'j')
                {
                    longs = s == 'z' || s == 't' || s == 'j' ? 2 : longs;
                    continue;
                }
                if (s == '*')
                {
                    throw sim_error(sim_error::kind::unsupported, "kernel '" + m_launch.kernel +
                                                                      "': printf with a '*' width is not implemented, " + location(in));
                }
                spec += s;
                if (std::strchr("diouxXcfFeEgGaAsp%", s))
                {
                    conversion = s;
                    break;
                }
            }
            char piece[512];
            switch (conversion)
            {
            case '%':
                text += '%';
                continue;
            case 'd':
            case 'i':
            {
                std::int64_t v = longs ? static_cast<std::int64_t>(argument(8)) : static_cast<std::int32_t>(argument(4));
                spec.insert(spec.size() - 1, "ll");
                std::snprintf(piece, sizeof piece, spec.c_str(), static_cast<long long>(v));
                break;
            }
            case 'o':
            case 'u':
            case 'x':
            case 'X':
            {
                std::uint64_t v = longs ? argument(8) : static_cast<std::uint32_t>(argument(4));
                spec.insert(spec.size() - 1, "ll");
                std::snprintf(piece, sizeof piece, spec.c_str(), static_cast<unsigned long long>(v));
                break;
            }
            case 'c':
                std::snprintf(piece, sizeof piece, spec.c_str(), static_cast<int>(static_cast<std::int32_t>(argument(4))));
                break;
            case 's':
            {
                std::uint64_t address = argument(8);
                std::string s;
                for (std::uint64_t k = address; address; ++k)
                {
                    char ch = static_cast<char>(byte_at(k));
                    if (ch == '\0')
                    {
                        break;
                    }
                    s += ch;
                }
                std::snprintf(piece, sizeof piece, spec.c_str(), address ? s.c_str() : "(null)");
                break;
            }
            case 'p':
                std::snprintf(piece, sizeof piece, spec.c_str(), reinterpret_cast<void*>(argument(8)));
                break;
            default:
            {
                std::uint64_t bits = argument(8);
                double v;
                std::memcpy(&v, &bits, 8);
                std::snprintf(piece, sizeof piece, spec.c_str(), v);
                break;
            }
            }
            text += piece;
        }
        return text;
    }

    // A failed device assert: NVRTC calls __assertfail(expression, file, line, function, char size) in the lanes
    // whose assertion failed. As on a GPU, each such thread's line is printed ("file:line: function: block:
    // [x,y,z], thread: [x,y,z] Assertion `expression` failed.") and the launch fails (CUDA_ERROR_ASSERT); the
    // error names the first thread, the expression and the cell line the .loc mapping gives the call.
    void warp_interpreter::device_assert(const instruction& in, std::uint32_t active)
    {
        const ptx_program& program = *m_launch.program;
        auto text_at = [&](unsigned lane, std::uint64_t address) {
            std::string text;
            for (std::uint64_t a = address; text.size() < 4096; ++a)
            {
                char c = static_cast<char>(*translate(state_space::generic, a, lane, 1, false, in, false));
                if (c == 0)
                {
                    break;
                }
                text += c;
            }
            return text;
        };
        auto argument = [&](unsigned lane, std::size_t k) {
            const ptx_symbol& symbol = program.symbols[static_cast<std::size_t>(in.call_arguments[k])];
            std::uint64_t value = 0;
            std::memcpy(&value, m_frame->params.data() + static_cast<std::size_t>(lane) * m_function->frame_bytes + symbol.offset,
                        std::min<std::size_t>(8, symbol.size));
            return value;
        };
        std::string first;
        unsigned failed = 0;
        XCUDA_SIM_LANES(active)
        {
            std::string expression = text_at(l, argument(l, 0));
            auto id = [&](special_register x, special_register y, special_register z) {
                return std::to_string(m_specials[static_cast<int>(x)][l]) + "," + std::to_string(m_specials[static_cast<int>(y)][l]) +
                       "," + std::to_string(m_specials[static_cast<int>(z)][l]);
            };
            if (m_launch.printf_output)
            {
                m_launch.printf_output->append(text_at(l, argument(l, 1)) + ":" + std::to_string(static_cast<std::uint32_t>(argument(l, 2))) +
                                               ": " + text_at(l, argument(l, 3)) + ": block: [" +
                                               id(special_register::ctaid_x, special_register::ctaid_y, special_register::ctaid_z) +
                                               "], thread: [" + id(special_register::tid_x, special_register::tid_y, special_register::tid_z) +
                                               "] Assertion `" + expression + "` failed.\n");
            }
            if (failed++ == 0)
            {
                first = thread_name(l) + ": device assertion `" + expression + "` failed";
            }
        }
        throw sim_error(sim_error::kind::assertion, "kernel '" + m_launch.kernel + "', " + first +
                                                        (failed > 1 ? " (and in " + std::to_string(failed - 1) + " more threads of its warp)" : "") +
                                                        ", " + location(in));
    }
}
