// warp_interpreter's record of one thread's instructions (xcuda.trace, launch_context::trace): each step with its
// line, and the registers it wrote in the instruction's type. Kept apart from warp_interpreter.cpp so that neither
// file is long; off the hot path (run() calls it only for the traced thread's warp).

#include <cstdio>
#include <cstring>

#include "warp_interpreter.hpp"

namespace xcuda::sim
{
    void warp_interpreter::trace(const instruction& in, bool executed)
    {
        thread_trace& t = *m_launch.trace;
        if (t.steps.size() >= t.limit)
        {
            t.truncated = true;
            return;
        }
        trace_step step;
        step.function = m_function->name;
        step.pc = static_cast<std::uint32_t>(&in - m_function->code.data());
        step.text = in.text;
        step.line = in.line;
        auto file = m_launch.program->files.find(in.file);
        step.file = in.line && file != m_launch.program->files.end() ? file->second : std::string();
        step.executed = executed;
        t.steps.push_back(std::move(step));
    }

    // The registers `in` wrote for the traced lane, shown in the instruction's type (a predicate for setp).
    void warp_interpreter::trace_writes(const instruction& in)
    {
        thread_trace& t = *m_launch.trace;
        if (t.steps.empty() || t.truncated || in.op == opcode::st || in.op == opcode::red || in.op == opcode::membar ||
            in.op == opcode::nop)
        {
            return;
        }
        const unsigned lane = static_cast<unsigned>(m_trace_lane);
        auto shown = [&](std::int32_t reg, bool predicate) {
            std::uint64_t v = m_registers[static_cast<std::size_t>(reg) * 32 + lane];
            ptx_type type = in.type;
            char text[64];
            if (predicate || type.kind == 'p')
            {
                std::snprintf(text, sizeof text, "%s", (v & 1) ? "true" : "false");
            }
            else if (type.kind == 'f' && type.bits == 32)
            {
                float f;
                auto bits = static_cast<std::uint32_t>(v);
                std::memcpy(&f, &bits, 4);
                std::snprintf(text, sizeof text, "%.9g", static_cast<double>(f));
            }
            else if (type.kind == 'f' && type.bits == 64)
            {
                double d;
                std::memcpy(&d, &v, 8);
                std::snprintf(text, sizeof text, "%.17g", d);
            }
            else if (type.kind == 's')
            {
                int shift = 64 - (type.bits ? type.bits : 64);
                auto signed_value = static_cast<long long>(static_cast<std::int64_t>(v << shift) >> shift);
                std::snprintf(text, sizeof text, "%lld", signed_value);
            }
            else if (type.kind == 'u')
            {
                std::uint64_t mask = type.bits >= 64 ? ~0ull : ((1ull << type.bits) - 1);
                std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(v & mask));
            }
            else
            {
                std::uint64_t mask = type.bits >= 64 || type.bits == 0 ? ~0ull : ((1ull << type.bits) - 1);
                std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v & mask));
            }
            const std::vector<std::string>& names = m_function->register_names;
            std::string name = static_cast<std::size_t>(reg) < names.size() ? names[static_cast<std::size_t>(reg)]
                                                                               : "%" + std::to_string(reg);
            t.steps.back().writes.push_back(name + " = " + text);
        };
        if (in.operand_count == 0)
        {
            return;
        }
        const operand& d = in.operands[0];
        bool predicate = in.op == opcode::setp;
        if (d.what == operand::kind::reg)
        {
            shown(d.reg, predicate);
        }
        else if (d.what == operand::kind::vector)
        {
            for (unsigned k = 0; k < d.count; ++k)
            {
                if (d.regs[k] >= 0)
                {
                    shown(d.regs[k], false);
                }
            }
        }
        if (in.pair && in.operand_count > 1 && in.operands[1].what == operand::kind::reg)
        {
            shown(in.operands[1].reg, true);
        }
    }
}
