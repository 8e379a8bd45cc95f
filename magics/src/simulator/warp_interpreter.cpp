#include "warp_interpreter.hpp"

#include "check_report.hpp"
#include "reserved_shared.hpp"
#include "warp_values.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xcuda::sim
{
    namespace
    {
        const std::uint32_t no_pc = 0xffffffffu;
    }

    warp_interpreter::warp_interpreter(launch_context& launch, block_state& block, unsigned warp_index)
        : m_launch(launch), m_block(block), m_warp(warp_index)
    {
        // The special registers that are the same in every block of the launch (a warp_interpreter lives for one
        // launch; block_executor::prepare has set the block's reserved region before it makes the warps): set here,
        // not at every reset.
        const unsigned* b = m_launch.block;
        for (unsigned l = 0; l < 32; ++l)
        {
            unsigned t = m_warp * 32 + l;
            auto set = [&](special_register s, std::uint64_t v) { m_specials[static_cast<int>(s)][l] = v; };
            set(special_register::tid_x, t % b[0]);
            set(special_register::tid_y, t / b[0] % b[1]);
            set(special_register::tid_z, t / (b[0] * b[1]));
            set(special_register::ntid_x, b[0]);
            set(special_register::ntid_y, b[1]);
            set(special_register::ntid_z, b[2]);
            set(special_register::nctaid_x, m_launch.grid[0]);
            set(special_register::nctaid_y, m_launch.grid[1]);
            set(special_register::nctaid_z, m_launch.grid[2]);
            set(special_register::laneid, l);
            set(special_register::warpid, m_warp);
            set(special_register::nwarpid, (b[0] * b[1] * b[2] + 31) / 32);
            set(special_register::smid, 0);
            set(special_register::nsmid, 1);
            set(special_register::gridid, 1);
            set(special_register::lanemask_eq, 1u << l);
            set(special_register::lanemask_le, l == 31 ? 0xffffffffu : (2u << l) - 1);
            set(special_register::lanemask_lt, (1u << l) - 1);
            set(special_register::lanemask_ge, ~((1u << l) - 1));
            set(special_register::lanemask_gt, l == 31 ? 0u : ~((2u << l) - 1));
            set(special_register::dynamic_smem_size, m_launch.dynamic_shared);
            set(special_register::envreg, 0);
            set(special_register::envreg1, m_launch.grid_workspace >> 32);
            set(special_register::envreg2, m_launch.grid_workspace & 0xffffffffu);
            set(special_register::reserved_smem_begin, m_block.reserved_shared);
            set(special_register::reserved_smem_end, m_block.reserved_shared + reserved_shared::bytes);
            set(special_register::reserved_smem_cap, reserved_shared::bytes);
            set(special_register::reserved_smem_0, m_block.reserved_shared);
            set(special_register::reserved_smem_1, m_block.reserved_shared + reserved_shared::second);
        }
    }

    void warp_interpreter::reset(unsigned lanes)
    {
        m_lanes = lanes;
        m_live = lanes >= 32 ? 0xffffffffu : ((1u << lanes) - 1);
        m_carry = 0;
        m_cluster_arrived = m_cluster_pending = 0;
        for (unsigned l = 0; l < 32; ++l)
        {
            m_copies[l].clear();  // a copy never waited for is never written (docs/simulator.md)
            m_groups[l] = 0;
        }
        m_stack.clear();
        m_depth = 0;
        for (unsigned l = 0; l < 32; ++l)  // the rest of m_specials is the launch's: set once (the constructor)
        {
            m_specials[static_cast<int>(special_register::ctaid_x)][l] = m_block.ctaid[0];
            m_specials[static_cast<int>(special_register::ctaid_y)][l] = m_block.ctaid[1];
            m_specials[static_cast<int>(special_register::ctaid_z)][l] = m_block.ctaid[2];
        }
        const unsigned* b = m_launch.block;
        push_frame(m_launch.entry, m_live, nullptr);
        m_trace_lane = -1;
        if (const thread_trace* t = m_launch.trace)
        {
            unsigned linear = t->thread[0] + b[0] * (t->thread[1] + b[1] * t->thread[2]);
            bool here = t->block[0] == m_block.ctaid[0] && t->block[1] == m_block.ctaid[1] &&
                        t->block[2] == m_block.ctaid[2] && t->thread[0] < b[0] && t->thread[1] < b[1] &&
                        t->thread[2] < b[2] && linear / 32 == m_warp && linear % 32 < lanes;
            if (here)
            {
                m_trace_lane = static_cast<int>(linear % 32);
                m_launch.trace->reached = true;
            }
        }
    }

    void warp_interpreter::push_frame(int function, std::uint32_t mask, const instruction* call)
    {
        const ptx_function& f = m_launch.program->functions[static_cast<std::size_t>(function)];
        if (m_depth == m_frames.size())
        {
            m_frames.emplace_back();
        }
        if (m_depth > 1000)
        {
            throw sim_error(sim_error::kind::launch_failed, "kernel '" + m_launch.kernel +
                                                                "': calls nested more than 1000 deep (endless recursion?)");
        }
        frame& fr = m_frames[m_depth++];
        fr.function = function;
        fr.registers.assign(static_cast<std::size_t>(f.register_count) * 32, 0);
        fr.params.assign(static_cast<std::size_t>(f.frame_bytes) * 32, 0);
        fr.local.assign(static_cast<std::size_t>(f.local_bytes) * 32, 0);
        fr.call = call;
        fr.stack_base = m_stack.size();
        m_stack.push_back({0, mask, no_pc});
        m_frame = &fr;
        m_function = &f;
        m_fast = fast_code(function);
        m_registers = fr.registers.data();
    }

    const fast_handler* warp_interpreter::fast_code(int function)
    {
        std::vector<std::vector<fast_handler>>& table = m_block.fast_code;
        table.resize(m_launch.program->functions.size());
        std::vector<fast_handler>& code = table[static_cast<std::size_t>(function)];
        const std::vector<instruction>& instructions = m_launch.program->functions[static_cast<std::size_t>(function)].code;
        if (code.size() != instructions.size())
        {
            code.resize(instructions.size());
            for (std::size_t pc = 0; pc < instructions.size(); ++pc)
            {
                code[pc] = warp_fast_path(instructions[pc]);
            }
        }
        return code.data();
    }

    // Lanes leave every entry; empty entries go, and frames whose entries are all gone return.
    void warp_interpreter::settle()
    {
        while (true)
        {
            while (!m_stack.empty() && m_stack.back().mask == 0)
            {
                m_stack.pop_back();
            }
            if (m_depth == 0 || m_stack.size() > m_frame->stack_base)
            {
                return;
            }
            // The frame is done: copy its result to the caller's result symbol, then pop it.
            frame& done = *m_frame;
            const ptx_function& callee = *m_function;
            --m_depth;
            if (m_depth == 0)
            {
                m_frame = nullptr;
                return;
            }
            m_frame = &m_frames[m_depth - 1];
            m_function = &m_launch.program->functions[static_cast<std::size_t>(m_frame->function)];
            m_fast = fast_code(m_frame->function);
            m_registers = m_frame->registers.data();
            if (done.call && done.call->call_result >= 0 && callee.result >= 0)
            {
                const ptx_symbol& from = m_launch.program->symbols[static_cast<std::size_t>(callee.result)];
                const ptx_symbol& to = m_launch.program->symbols[static_cast<std::size_t>(done.call->call_result)];
                std::size_t bytes = std::min(from.size, to.size);
                for (unsigned l = 0; l < 32; ++l)
                {
                    std::memcpy(m_frame->params.data() + l * m_function->frame_bytes + to.offset,
                                done.params.data() + l * callee.frame_bytes + from.offset, bytes);
                }
            }
        }
    }

    void warp_interpreter::exit_lanes(std::uint32_t mask)
    {
        m_live &= ~mask;
        for (entry& e : m_stack)
        {
            e.mask &= ~mask;
        }
        settle();
    }

    void warp_interpreter::return_lanes(std::uint32_t mask)
    {
        if (m_depth == 1)
        {
            exit_lanes(mask);
            return;
        }
        for (std::size_t i = m_frame->stack_base; i < m_stack.size(); ++i)
        {
            m_stack[i].mask &= ~mask;
        }
        settle();
    }

    std::string warp_interpreter::thread_name(unsigned lane) const
    {
        auto s = [&](special_register r) { return std::to_string(m_specials[static_cast<int>(r)][lane]); };
        return "thread (" + s(special_register::tid_x) + "," + s(special_register::tid_y) + "," +
               s(special_register::tid_z) + ") of block (" + std::to_string(m_block.ctaid[0]) + "," +
               std::to_string(m_block.ctaid[1]) + "," + std::to_string(m_block.ctaid[2]) + ")";
    }

    std::string warp_interpreter::where(const instruction& in) const
    {
        return "'" + in.text + "' " + location(in);
    }

    std::string warp_interpreter::location(const instruction& in) const
    {
        return check_report::location(*m_launch.program, *m_function, in);
    }

    void warp_interpreter::fault(const instruction& in, unsigned lane, const std::string& what) const
    {
        throw sim_error(sim_error::kind::illegal_address, "kernel '" + m_launch.kernel + "', " + thread_name(lane) + ": " +
                                                              what + ", at " + where(in));
    }

    // Which pointer argument of the launch the faulting address belongs with: the one whose allocation is
    // nearest to it (within 1 MiB), named by its position in the kernel's parameter list.
    std::string warp_interpreter::argument_near(std::uint64_t address) const
    {
        return check_report::argument_near(*m_launch.program, m_launch.entry, m_launch.params, m_launch.param_bytes,
                                           *m_launch.memory, address);
    }

    std::uint64_t warp_interpreter::symbol_value(const ptx_symbol& symbol, unsigned) const
    {
        switch (symbol.space)
        {
        case state_space::param:
            return reinterpret_cast<std::uintptr_t>(m_launch.params) + symbol.offset;
        case state_space::global:
        case state_space::constant:
            return symbol.offset;  // the shim stores each variable's host address here
        default:
            return symbol.offset;  // shared, local, a frame's param: the offset in its window
        }
    }

    warp_interpreter::source warp_interpreter::fetch(const operand& o, unsigned slot)
    {
        switch (o.what)
        {
        case operand::kind::reg:
            return {m_registers + static_cast<std::size_t>(o.reg) * 32, 1};
        case operand::kind::imm:
            return {&o.value, 0};
        case operand::kind::special:
            if (o.special == special_register::clock || o.special == special_register::clock64 ||
                o.special == special_register::globaltimer)
            {
                std::uint64_t now = o.special == special_register::globaltimer
                                        ? static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                         std::chrono::system_clock::now().time_since_epoch())
                                                                         .count())
                                        : m_launch.warp_steps;
                for (unsigned l = 0; l < 32; ++l)
                {
                    m_scratch[slot][l] = o.special == special_register::clock ? static_cast<std::uint32_t>(now) : now;
                }
                return {m_scratch[slot], 1};
            }
            if (o.special >= special_register::cluster_ctarank)
            {
                return cluster_special(o.special, slot);
            }
            return {m_specials[static_cast<int>(o.special)], 1};
        case operand::kind::symbol:
        {
            const ptx_symbol& s = m_launch.program->symbols[static_cast<std::size_t>(o.symbol)];
            m_scratch[slot][0] = symbol_value(s, 0);
            return {m_scratch[slot], 0};
        }
        default:
            throw sim_error(sim_error::kind::unsupported,
                            "kernel '" + m_launch.kernel + "': a vector, an address or a label where the simulator reads a "
                                                           "value is not implemented");
        }
    }

    std::uint64_t* warp_interpreter::destination(const operand& o)
    {
        if (o.what == operand::kind::sink)
        {
            return m_scratch[4];
        }
        return m_registers + static_cast<std::size_t>(o.reg) * 32;
    }

    std::uint8_t* warp_interpreter::address(const instruction& in, const operand& o, unsigned lane, unsigned bytes, bool write)
    {
        std::uint64_t a = o.value;
        bool frame_param = false;
        if (o.reg >= 0)
        {
            a += m_registers[static_cast<std::size_t>(o.reg) * 32 + lane];
        }
        else if (o.symbol >= 0)
        {
            const ptx_symbol& s = m_launch.program->symbols[static_cast<std::size_t>(o.symbol)];
            frame_param = s.space == state_space::func_param;
            a += symbol_value(s, lane);
        }
        return translate(in.space, a, lane, bytes, write, in, frame_param);
    }

    std::uint8_t* warp_interpreter::translate(state_space space, std::uint64_t a, unsigned lane, unsigned bytes, bool write,
                                              const instruction& in, bool frame_param)
    {
        const char* verb = write ? "writes " : "reads ";
        auto described = [&](const char* in_space) {
            return std::string(verb) + std::to_string(bytes) + " bytes at " + in_space + " address " + hex(a);
        };
        if (bytes > 1 && ((bytes & (bytes - 1)) == 0 ? (a & (bytes - 1)) != 0 : a % bytes != 0))  // no division on the hot path
        {
            fault(in, lane, described(space_name(space)) + ", which is not aligned to " + std::to_string(bytes) + " bytes");
        }
        switch (space)
        {
        case state_space::shared:
            if (a + bytes > m_block.shared_bytes || a + bytes < a)
            {
                fault(in, lane, described("shared") + ", outside the block's " + std::to_string(m_block.shared_bytes) +
                                    " bytes of shared memory");
            }
            if (m_block.shared_checks)
            {
                check_shared(in, a, bytes, lane, write);
            }
            return m_block.shared + a;
        case state_space::shared_cluster:
            return cluster_shared(in, a, lane, bytes, write);
        case state_space::local:
            if (a + bytes > m_function->local_bytes)
            {
                fault(in, lane, described("local") + ", outside the thread's " + std::to_string(m_function->local_bytes) +
                                    " bytes of local memory");
            }
            return m_frame->local.data() + static_cast<std::size_t>(lane) * m_function->local_bytes + a;
        case state_space::param:
            if (frame_param || !m_function->entry)
            {
                if (!frame_param && !m_function->entry)
                {
                    fault(in, lane, described("param") + " through a register inside a .func (not implemented)");
                }
                if (a + bytes > m_function->frame_bytes)
                {
                    fault(in, lane, described("param") + ", outside the function's parameters");
                }
                return m_frame->params.data() + static_cast<std::size_t>(lane) * m_function->frame_bytes + a;
            }
            {
                auto start = reinterpret_cast<std::uintptr_t>(m_launch.params);
                if (a < start || a + bytes > start + m_launch.param_bytes)
                {
                    fault(in, lane, described("param") + ", outside the kernel's " + std::to_string(m_launch.param_bytes) +
                                        " bytes of parameters");
                }
                if (write)
                {
                    fault(in, lane, "writes a kernel parameter (the .param space of an entry is read-only)");
                }
                return reinterpret_cast<std::uint8_t*>(a);
            }
        case state_space::generic:
        {
            auto shared = reinterpret_cast<std::uintptr_t>(m_block.shared);
            if (m_block.shared_bytes && a >= shared && a < shared + m_block.shared_bytes)
            {
                return translate(state_space::shared, a - shared, lane, bytes, write, in, false);
            }
            for (std::size_t k = 0; k < m_depth; ++k)
            {
                const frame& fr = m_frames[k];
                auto local = reinterpret_cast<std::uintptr_t>(fr.local.data());
                if (!fr.local.empty() && a >= local && a < local + fr.local.size())
                {
                    std::size_t per_lane = fr.local.size() / 32;
                    std::size_t owner = (a - local) / per_lane;
                    if (owner != lane || a + bytes > local + (owner + 1) * per_lane)
                    {
                        fault(in, lane, described("generic") + ", in the local memory of lane " + std::to_string(owner) +
                                            " (each thread may use only its own)");
                    }
                    return reinterpret_cast<std::uint8_t*>(a);
                }
            }
            auto params = reinterpret_cast<std::uintptr_t>(m_launch.params);
            if (a >= params && a + bytes <= params + m_launch.param_bytes && !write)
            {
                return reinterpret_cast<std::uint8_t*>(a);
            }
            [[fallthrough]];
        }
        case state_space::global:
        case state_space::constant:
        default:
            if (cached(a, bytes) || cache(a, bytes))
            {
                if (m_block.global_checks)
                {
                    check_global(in, a, bytes, lane, write);
                }
                return reinterpret_cast<std::uint8_t*>(a);
            }
            if (m_block.cluster && space == state_space::generic)
            {
                if (std::uint8_t* p = cluster_generic(in, a, lane, bytes, write))
                {
                    return p;  // another block's shared memory in this cluster (mapa)
                }
            }
            if (m_launch.heap)
            {
                return heap_address(in, lane, a, bytes, write);  // a block of device malloc, else the fault
            }
            fault(in, lane, described(space == state_space::generic ? "generic" : space_name(space)) + ", " +
                                m_launch.memory->describe(a, bytes) + argument_near(a));
        }
    }

    const warp_interpreter::cached_range* warp_interpreter::cache(std::uint64_t a, unsigned bytes)
    {
        const sim_memory::allocation* found = m_launch.memory->find(a, bytes);
        if (!found)
        {
            return nullptr;
        }
        cached_range& r = m_cached[m_cache_next++ % 4];
        r = {found->start, found->start + found->bytes};
        return &r;
    }

    // Each lane names the lanes it synchronises with (tiles of a warp name different ones); every lane
    // must name itself, and every live lane it names must be here, at this instruction.
    warp_interpreter::source warp_interpreter::member_mask(const instruction& in, const operand& o, std::uint32_t active,
                                                           const char* what)
    {
        source s = fetch(o, 3);
        if (s.stride == 0)  // one mask for every lane (0xffffffff, most often): checked once
        {
            const auto mask = static_cast<std::uint32_t>(s.p[0]);
            if ((active & ~mask) == 0 && (mask & m_live & ~active) == 0)
            {
                return s;
            }
        }
        else  // one pass that finds no lane in error, most often; else the lane-by-lane loop says which
        {
            std::uint64_t wrong = 0;
            XCUDA_SIM_LANES(active)
            {
                wrong |= (~s.p[l] >> l & 1) | (s.p[l] & m_live & ~active);
            }
            if (wrong == 0)
            {
                return s;
            }
        }
        XCUDA_SIM_LANES(active)  // the lane that fails, in lane order, with the error it gets
        {
            std::uint32_t mask = static_cast<std::uint32_t>(s.p[s.stride * l]);
            std::uint32_t missing = mask & m_live & ~active;
            if (!(mask >> l & 1u))
            {
                throw sim_error(sim_error::kind::illegal_instruction,
                                "kernel '" + m_launch.kernel + "', " + thread_name(l) + ": " + what + " with member mask " +
                                    hex(mask) + ", which does not name the lane itself (" + std::to_string(l) + "), at " +
                                    where(in));
            }
            if (missing)
            {
                throw sim_error(sim_error::kind::illegal_instruction,
                                "kernel '" + m_launch.kernel + "', " + thread_name(l) + ", warp " + std::to_string(m_warp) +
                                    ": " + what + " with member mask " + hex(mask) + " reached by lanes " + hex(active) +
                                    " only; lanes " + hex(missing) + " named in the mask are elsewhere (divergent; " +
                                    check_report::thread_in_block(m_launch.block, m_warp * 32 + __builtin_ctz(missing)) +
                                    " first), at " + where(in));
            }
        }
        return s;
    }

    // The lanes of `mask` whose guard predicate lets them run the instruction.
    std::uint32_t warp_interpreter::guarded_lanes(const instruction& in, std::uint32_t mask) const
    {
        const std::uint64_t* p = m_registers + static_cast<std::size_t>(in.guard) * 32;
        std::uint32_t taken = 0;
        if (mask == 0xffffffffu)  // uniform control flow: the 32 low bits gathered without a lane search
        {
#if defined(__SSE2__)
            for (unsigned l = 0; l < 32; l += 2)  // two lanes' bit 0 moved to their sign bits, read as two bits
            {
                __m128i two = _mm_slli_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + l)), 63);
                taken |= static_cast<std::uint32_t>(_mm_movemask_pd(_mm_castsi128_pd(two))) << l;
            }
#else
            for (unsigned l = 0; l < 32; ++l)
            {
                taken |= static_cast<std::uint32_t>(p[l] & 1) << l;
            }
#endif
            return in.guard_negated ? ~taken : taken;
        }
        XCUDA_SIM_LANES(mask)
        {
            taken |= static_cast<std::uint32_t>((p[l] & 1) != in.guard_negated) << l;
        }
        return taken;
    }

    void warp_interpreter::step_limit_reached(const instruction& in) const
    {
        throw sim_error(sim_error::kind::launch_failed,
                        "kernel '" + m_launch.kernel + "' ran more than " + std::to_string(m_launch.step_limit) +
                            " warp-instructions on one host thread and was stopped by XCUDA_SIM_MAX_STEPS (a limit set "
                            "in the environment; without it a launch runs until it ends or is interrupted), at " +
                            where(in));
    }

    // Every k_checkpoint_steps warp-instructions of this host thread (about a millisecond): the opt-in step limit
    // (XCUDA_SIM_MAX_STEPS) and the cancel flag, so that an interrupt stops even a block that never ends.
    [[gnu::noinline, gnu::cold]] void warp_interpreter::checkpoint(const instruction& in)
    {
        constexpr std::uint64_t k_checkpoint_steps = std::uint64_t(1) << 15;
        if (m_launch.step_limit && m_launch.warp_steps > m_launch.step_limit)
        {
            step_limit_reached(in);
        }
        if (m_launch.cancel && m_launch.cancel->load(std::memory_order_relaxed))
        {
            throw sim_error(sim_error::kind::interrupted,
                            "kernel '" + m_launch.kernel + "' was interrupted in block (" + std::to_string(m_block.ctaid[0]) +
                                "," + std::to_string(m_block.ctaid[1]) + "," + std::to_string(m_block.ctaid[2]) +
                                "), warp " + std::to_string(m_warp) + ", at " + where(in));
        }
        std::uint64_t next = m_launch.warp_steps + k_checkpoint_steps;
        m_launch.next_checkpoint = m_launch.step_limit ? std::min(next, m_launch.step_limit + 1) : next;
    }

    // bra: the lanes that take it go to its target, the others on; when they disagree, both sides run one
    // after the other and join at the branch's reconvergence point.
    void warp_interpreter::branch(entry& top, const instruction& in, std::uint32_t active)
    {
        std::uint32_t target = static_cast<std::uint32_t>(in.operands[0].value);
        std::uint32_t fall = top.mask & ~active;
        if (fall == 0)
        {
            top.pc = target;
        }
        else if (active == 0)
        {
            top.pc += 1;
        }
        else
        {
            std::uint32_t next = top.pc + 1;
            // A side that goes straight to the kernel's end exits now rather than wait at the join:
            // with independent thread scheduling it would have, and a __syncthreads() after an early
            // return must not wait for it.
            auto exits_at = [&](std::uint32_t pc) {
                return m_depth == 1 && pc < m_function->code.size() && m_function->code[pc].guard < 0 &&
                       (m_function->code[pc].op == opcode::ret || m_function->code[pc].op == opcode::exit);
            };
            if (exits_at(target) || exits_at(next))
            {
                bool taken_exits = exits_at(target);
                exit_lanes(taken_exits ? active : fall);
                m_stack.back().pc = taken_exits ? next : target;
                return;
            }
            std::uint32_t join = in.reconverge;
            if (top.reconverge == join)
            {
                top = {next, fall, join};
            }
            else
            {
                top.pc = join;
                m_stack.push_back({next, fall, join});
            }
            m_stack.push_back({target, active, join});
        }
    }

    // ret: the active lanes leave the function (a kernel's ret: they exit).
    void warp_interpreter::ret(entry& top, std::uint32_t active)
    {
        if (active)
        {
            std::uint32_t rest = top.mask & ~active;
            top.pc += 1;
            if (rest == 0 && m_depth > 1 && m_stack.size() == m_frame->stack_base + 1)
            {
                top.mask = 0;
                settle();
            }
            else
            {
                return_lanes(active);
            }
        }
        else
        {
            top.pc += 1;
        }
    }

    void warp_interpreter::barrier_divergence(const instruction& in, std::uint32_t active) const
    {
        throw sim_error(sim_error::kind::barrier_divergence,
                        "kernel '" + m_launch.kernel + "': barrier divergence in block (" +
                            std::to_string(m_block.ctaid[0]) + "," + std::to_string(m_block.ctaid[1]) + "," +
                            std::to_string(m_block.ctaid[2]) + "), warp " + std::to_string(m_warp) + ": lanes " +
                            hex(active) + " (" + check_report::thread_in_block(m_launch.block, m_warp * 32 + __builtin_ctz(active)) +
                            " first) reached " + where(in) + ", but lanes " + hex(m_live & ~active) + " (" +
                            check_report::thread_in_block(m_launch.block, m_warp * 32 + __builtin_ctz(m_live & ~active)) +
                            " first) of the warp, not exited, did not (a __syncthreads() inside a branch that not "
                            "every thread of the block takes)");
    }

    warp_interpreter::status warp_interpreter::run()
    {
        while (m_depth > 0 && !m_stack.empty())
        {
            entry& top = m_stack.back();
            if (top.pc == top.reconverge)
            {
                m_stack.pop_back();
                continue;
            }
            if (top.pc >= m_function->code.size())
            {
                // Fell off the end of a function without ret: as ret.
                return_lanes(top.mask);
                continue;
            }
            const instruction& in = m_function->code[top.pc];
            std::uint32_t active = in.guard >= 0 ? guarded_lanes(in, top.mask) : top.mask;
            if (++m_launch.warp_steps >= m_launch.next_checkpoint)
            {
                checkpoint(in);
            }
            m_launch.thread_instructions += lane_count(active);
            const bool traced = m_trace_lane >= 0 && ((top.mask >> m_trace_lane) & 1);
            if (traced)
            {
                trace(in, (active >> m_trace_lane) & 1);
            }
            if (const fast_handler fast = m_fast[top.pc]; fast && active)
            {
                fast(*this, in, active);
                if (traced && ((active >> m_trace_lane) & 1))
                {
                    trace_writes(in);
                }
                m_stack.back().pc += 1;
                continue;
            }
            switch (in.op)
            {
            case opcode::bra:
                branch(top, in, active);
                continue;
            case opcode::ret:
                ret(top, active);
                continue;
            case opcode::exit:
                top.pc += 1;
                if (active)
                {
                    exit_lanes(active);
                }
                continue;
            case opcode::bar:
                if (in.warp)
                {
                    if (active)
                    {
                        member_mask(in, in.operands[0], active, "bar.warp.sync");
                        if (m_block.sync_checks)
                        {
                            announce_sync(sync_scope::warp);
                        }
                    }
                    top.pc += 1;
                    continue;
                }
                if (active != m_live)
                {
                    barrier_divergence(in, active);
                }
                arrive(in, active);
                top.pc += 1;
                if (in.var == variant::bar_arrive)
                {
                    m_block.arrivals[m_arrival.id] += 32;  // counted per warp, as bar.sync's arrivals are
                    continue;
                }
                m_barrier = &in;
                return status::at_barrier;
            case opcode::call:
                top.pc += 1;
                if (active)
                {
                    if (active != top.mask)
                    {
                        throw sim_error(sim_error::kind::unsupported, "kernel '" + m_launch.kernel +
                                                                          "': a predicated call taken by some lanes only is not "
                                                                          "implemented, at " + where(in));
                    }
                    call(in, active);
                }
                continue;
            case opcode::trap:
                if (active)
                {
                    throw sim_error(sim_error::kind::illegal_instruction,
                                    "kernel '" + m_launch.kernel + "', " + thread_name(__builtin_ctz(active)) +
                                        ": executed trap (__trap()), at " + where(in));
                }
                top.pc += 1;
                continue;
            case opcode::cluster_barrier:
                if (active && cluster_barrier(in, active))
                {
                    m_barrier = &in;
                    return status::yielded;  // the wait runs again after the cluster's other warps have run
                }
                top.pc += 1;
                continue;
            case opcode::mbarrier:
                top.pc += 1;
                if (active && mbarrier_operation(in, active))
                {
                    m_barrier = &in;
                    return status::yielded;
                }
                continue;
            case opcode::unsupported:
                throw sim_error(sim_error::kind::unsupported, "kernel '" + m_launch.kernel + "', " +
                                                                  thread_name(static_cast<unsigned>(__builtin_ctz(top.mask))) +
                                                                  ": " + in.text + ", " + location(in));
            default:
                if (active)
                {
                    execute(in, active);
                    if (traced && ((active >> m_trace_lane) & 1))
                    {
                        trace_writes(in);
                    }
                    if (in.releases && m_block.sync_checks)  // what came before is ordered (warp_block_spin.cpp)
                    {
                        announce_sync(sync_scope::block);
                    }
                    if (in.strong && !m_launch.cooperative && block_spin(in, active))
                    {
                        m_stack.back().pc += 1;
                        m_barrier = &in;
                        return status::yielded;  // a poll that saw nothing change: the block's other warps run
                    }
                }
                m_stack.back().pc += 1;
                continue;
            }
        }
        return status::exited;
    }

    void warp_interpreter::arrive(const instruction& in, std::uint32_t active)
    {
        // bar.sync a{, b}; bar.arrive a, b; bar.red.op d, a{, b}, {!}c. The barrier and the count are the same for every
        // lane (PTX requires it), so the first active lane's are read.
        const bool reduction = in.var == variant::bar_red_popc || in.var == variant::bar_red_and || in.var == variant::bar_red_or;
        const unsigned first = reduction ? 1 : 0;
        const unsigned lane = static_cast<unsigned>(__builtin_ctz(active));
        source id = fetch(in.operands[first], 0);
        m_arrival.id = static_cast<unsigned>(id.p[id.stride * lane]);
        if (m_arrival.id > 15)
        {
            throw sim_error(sim_error::kind::launch_failed, "kernel '" + m_launch.kernel + "': barrier " +
                                                                std::to_string(m_arrival.id) +
                                                                " (a CTA has barriers 0 to 15), at " + where(in));
        }
        m_arrival.count = 0;
        if (in.operand_count == first + (reduction ? 3 : 2))
        {
            source count = fetch(in.operands[first + 1], 1);
            m_arrival.count = static_cast<unsigned>(count.p[count.stride * lane]);
            if (m_arrival.count == 0 || m_arrival.count % 32 != 0 || m_arrival.count > 1024)
            {
                throw sim_error(sim_error::kind::launch_failed,
                                "kernel '" + m_launch.kernel + "': a barrier's thread count of " +
                                    std::to_string(m_arrival.count) +
                                    " (PTX: a multiple of the warp size, 32 to 1024), at " + where(in));
            }
        }
        m_arrival.lanes = active;
        m_arrival.votes = 0;
        if (reduction)
        {
            const operand& predicate = in.operands[in.operand_count - 1];
            source p = fetch(predicate, 2);
            XCUDA_SIM_LANES(active)
            {
                m_arrival.votes += (p.p[p.stride * l] & 1) != predicate.negate;
            }
        }
    }

    void warp_interpreter::finish_reduction(unsigned votes, unsigned threads)
    {
        const instruction& in = *m_barrier;
        std::uint64_t* d = destination(in.operands[0]);
        std::uint64_t value = in.var == variant::bar_red_popc ? votes
                              : in.var == variant::bar_red_and ? (votes == threads ? 1 : 0)
                                                               : (votes > 0 ? 1 : 0);
        XCUDA_SIM_LANES(m_arrival.lanes)
        {
            d[l] = value;
        }
    }

    void warp_interpreter::call(const instruction& in, std::uint32_t active)
    {
        const ptx_function& callee = m_launch.program->functions[static_cast<std::size_t>(in.callee)];
        if (!callee.has_body && callee.name == "vprintf" && m_launch.printf_output && in.call_arguments.size() == 2)
        {
            device_printf(in, active);
            return;
        }
        if (!callee.has_body && m_launch.heap && (callee.name == "malloc" || callee.name == "free") &&
            in.call_arguments.size() == 1)
        {
            heap_call(in, active, callee.name == "malloc");
            return;
        }
        if (!callee.has_body && callee.name == "__assertfail" && in.call_arguments.size() == 5)
        {
            device_assert(in, active);
        }
        if (!callee.has_body)
        {
            throw sim_error(sim_error::kind::unsupported, "kernel '" + m_launch.kernel + "': a call of " + callee.name +
                                                              ", which this module declares but does not define (" +
                                                              (callee.name == "vprintf" ? "device printf is" : "linking is") +
                                                              " not implemented by the simulator), at " + where(in));
        }
        if (in.call_arguments.size() != callee.params.size())
        {
            throw sim_error(sim_error::kind::unsupported, "kernel '" + m_launch.kernel + "': a call of " + callee.name +
                                                              " with " + std::to_string(in.call_arguments.size()) +
                                                              " arguments for its " + std::to_string(callee.params.size()) +
                                                              " parameters, at " + where(in));
        }
        std::size_t caller_depth = m_depth - 1;
        const ptx_function& caller_function = *m_function;
        push_frame(in.callee, active, &in);
        const frame& caller = m_frames[caller_depth];  // after push_frame: m_frames may have moved
        for (std::size_t k = 0; k < callee.params.size(); ++k)
        {
            const ptx_symbol& from = m_launch.program->symbols[static_cast<std::size_t>(in.call_arguments[k])];
            const ptx_symbol& to = m_launch.program->symbols[static_cast<std::size_t>(callee.params[k])];
            std::size_t bytes = std::min(from.size, to.size);
            for (unsigned l = 0; l < 32; ++l)
            {
                std::memcpy(m_frame->params.data() + l * callee.frame_bytes + to.offset,
                            caller.params.data() + l * caller_function.frame_bytes + from.offset, bytes);
            }
        }
    }

    void warp_interpreter::execute(const instruction& in, std::uint32_t active)
    {
        switch (in.op)
        {
        case opcode::ld:
        case opcode::st:
            load_store(in, active);
            if (in.strong && m_launch.cooperative)
            {
                spin_point(in, active);
            }
            return;
        case opcode::mov:
            move(in, active);
            return;
        case opcode::cvt:
            convert(in, active);
            return;
        case opcode::cvta:
            address_convert(in, active);
            return;
        case opcode::setp:
            compare_set(in, active);
            return;
        case opcode::shfl:
            shuffle(in, active);
            return;
        case opcode::vote:
        case opcode::activemask:
            vote(in, active);
            return;
        case opcode::redux:
        case opcode::match:
            collective(in, active);
            return;
        case opcode::atom:
        case opcode::red:
            atomic(in, active);
            return;
        case opcode::prmt:
            permute(in, active);
            return;
        case opcode::bmsk:
            bit_mask(in, active);
            return;
        case opcode::dp4a:
        case opcode::dp2a:
            dot_product(in, active);
            return;
        case opcode::add_carry:
        case opcode::sub_carry:
        case opcode::mad_carry:
            carry_arithmetic(in, active);
            return;
        case opcode::async_copy:
            async_copy_operation(in, active);
            return;
        case opcode::matrix:
            matrix_operation(in, active);
            return;
        case opcode::cluster_address:
            cluster_address(in, active);
            return;
        case opcode::tex:
        case opcode::tld4:
        case opcode::suld:
        case opcode::sust:
        case opcode::txq:
        case opcode::suq:
            texture_family(in, active);
            return;
        case opcode::half_arithmetic:
            half_arithmetic(in, active);
            return;
        case opcode::rounded_arithmetic:
            rounded_arithmetic(in, active);
            return;
        case opcode::rounded_convert:
            rounded_convert(in, active);
            return;
        case opcode::membar:
        case opcode::nop:
            return;
        default:
            arithmetic(in, active);
            return;
        }
    }

    void warp_interpreter::move(const instruction& in, std::uint32_t active)
    {
        const operand& d = in.operands[0];
        const operand& a = in.operands[1];
        if (d.what == operand::kind::vector)  // mov.b64 {%r1, %r2}, %rd1: unpack
        {
            source s = fetch(a, 0);
            unsigned piece = in.type.bits / d.count;
            XCUDA_SIM_LANES(active)
            {
                std::uint64_t v = s.p[s.stride * l];
                for (unsigned k = 0; k < d.count; ++k)
                {
                    if (d.regs[k] >= 0)
                    {
                        std::uint64_t part = piece == 64 ? v : (v >> (k * piece)) & ((1ull << piece) - 1);
                        m_registers[static_cast<std::size_t>(d.regs[k]) * 32 + l] = part;
                    }
                }
            }
            return;
        }
        std::uint64_t* out = destination(d);
        if (a.what == operand::kind::vector)  // mov.b64 %rd1, {%r1, %r2}: pack
        {
            unsigned piece = in.type.bits / a.count;
            XCUDA_SIM_LANES(active)
            {
                std::uint64_t v = 0;
                for (unsigned k = 0; k < a.count; ++k)
                {
                    std::uint64_t part = m_registers[static_cast<std::size_t>(a.regs[k]) * 32 + l];
                    v |= (piece == 64 ? part : part & ((1ull << piece) - 1)) << (k * piece);
                }
                out[l] = v;
            }
            return;
        }
        source s = fetch(a, 0);
        std::uint64_t keep = in.type.bits >= 64 ? ~0ull : in.type.kind == 'p' ? 1ull : (1ull << in.type.bits) - 1;
        XCUDA_SIM_LANES(active)
        {
            out[l] = s.p[s.stride * l] & keep;
        }
    }

    void warp_interpreter::address_convert(const instruction& in, std::uint32_t active)
    {
        source s = fetch(in.operands[1], 0);
        std::uint64_t* out = destination(in.operands[0]);
        auto shared = reinterpret_cast<std::uintptr_t>(m_block.shared);
        auto local = reinterpret_cast<std::uintptr_t>(m_frame->local.data());
        XCUDA_SIM_LANES(active)
        {
            std::uint64_t a = s.p[s.stride * l];
            std::uint64_t lane_local = local + static_cast<std::uint64_t>(l) * m_function->local_bytes;
            switch (in.space)
            {
            case state_space::shared: a = in.to ? a - shared : a + shared; break;
            case state_space::local: a = in.to ? a - lane_local : a + lane_local; break;
            default: break;  // global, const, param: generic addresses are host addresses already
            }
            out[l] = in.type.bits == 32 ? a & 0xffffffffu : a;
        }
    }
}
