// warp_interpreter's ld and st, and where each lane's access lands (lane_pointers): the hot path of a
// memory-bound kernel, kept apart from warp_interpreter.cpp (control flow, translate's checks) so that
// neither file is long. Each instruction first finds every active lane's pointer, every check of
// translate() made, then moves the data lane after lane in a loop of one width and signedness.

#include <cstring>
#include <type_traits>

#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        // ld of a U (1, 2, 4 or 8 bytes) for each active lane at p[l] + offset. A signed load extends the sign to 64
        // bits; `narrow` (a signed sub-word load into a 32-bit register) keeps the low 32 of them.
        template <class U>
        void load_lanes(std::uint32_t active, std::uint8_t* const* p, unsigned offset, std::uint64_t* r, bool sign,
                        bool narrow)
        {
            if (!sign)
            {
                XCUDA_SIM_LANES(active)
                {
                    U v;
                    std::memcpy(&v, p[l] + offset, sizeof v);
                    r[l] = v;
                }
                return;
            }
            using S = std::make_signed_t<U>;
            const std::uint64_t keep = narrow ? 0xffffffffu : ~0ull;
            XCUDA_SIM_LANES(active)
            {
                S v;
                std::memcpy(&v, p[l] + offset, sizeof v);
                r[l] = static_cast<std::uint64_t>(static_cast<std::int64_t>(v)) & keep;
            }
        }

        // st of the low sizeof(U) bytes of each active lane's register (stride 0: one value for every lane).
        template <class U>
        void store_lanes(std::uint32_t active, std::uint8_t* const* p, unsigned offset, const std::uint64_t* r,
                         unsigned stride)
        {
            XCUDA_SIM_LANES(active)
            {
                U v = static_cast<U>(r[stride * l]);
                std::memcpy(p[l] + offset, &v, sizeof v);
            }
        }
    }

    // p[l] for each active lane: where its access of `bytes` bytes at operand o lands, every check of translate()
    // made (faults name the lane, the race check records it). Two cases skip translate's call per lane: an address
    // without a register (a kernel parameter, a __constant__ or __device__ variable) is one address for every lane,
    // translated once; an aligned register address in the global allocation the last access hit, or inside the
    // block's shared window, is checked inline. Everything else (local, a .func's parameters, a miss, a fault) goes
    // through translate() lane by lane as before.
    void warp_interpreter::lane_pointers(const instruction& in, const operand& o, std::uint32_t active, unsigned bytes,
                                         bool write, std::uint8_t** p)
    {
        if (o.reg < 0)
        {
            bool uniform = in.space == state_space::global || in.space == state_space::constant ||
                           (in.space == state_space::param && m_function->entry);
            if (o.symbol >= 0 &&
                m_launch.program->symbols[static_cast<std::size_t>(o.symbol)].space == state_space::func_param)
            {
                uniform = false;  // each lane's own parameter bytes
            }
            if (uniform)
            {
                std::uint8_t* one = address(in, o, static_cast<unsigned>(__builtin_ctz(active)), bytes, write);
                XCUDA_SIM_LANES(active) { p[l] = one; }
                return;
            }
        }
        else if ((bytes & (bytes - 1)) == 0)
        {
            const std::uint64_t* r = m_registers + static_cast<std::size_t>(o.reg) * 32;
            const std::uint64_t misaligned = bytes - 1;
            switch (in.space)
            {
            case state_space::global:
            case state_space::constant:
            case state_space::generic:
                // A generic address in a global allocation is nowhere else: shared memory, local memory and the
                // parameters are host memory of their own, never one of sim_memory's ranges.
                // The lanes of one access mostly fall in one allocation: the first lane's, looked up once.
            {
                const std::uint64_t first = r[__builtin_ctz(active)] + o.value;
                const cached_range* hit = cached(first, bytes);
                const auto window = reinterpret_cast<std::uintptr_t>(m_block.shared);
                const bool in_shared = first >= window && first < window + m_block.shared_bytes;
                hit = hit || in_shared ? hit : cache(first, bytes);  // a generic shared address: no lookup
                // With a check plugin on global accesses (sim_checker), every lane goes through translate(), which tells it.
                const bool direct = hit && !m_block.global_checks;
                const std::uint64_t start = direct ? hit->start : 0, end = direct ? hit->end : 0;
                XCUDA_SIM_LANES(active)
                {
                    std::uint64_t a = r[l] + o.value;
                    p[l] = (a & misaligned) == 0 && a >= start && a + bytes <= end
                               ? reinterpret_cast<std::uint8_t*>(a)
                               : translate(in.space, a, l, bytes, write, in, false);
                }
                return;
            }
            case state_space::shared:
            {
                const bool checked = m_block.shared_checks != nullptr;  // the check plugins on shared accesses
                const std::uint64_t window = m_block.shared_bytes;
                XCUDA_SIM_LANES(active)
                {
                    std::uint64_t a = r[l] + o.value;
                    if ((a & misaligned) != 0 || a >= window || bytes > window - a)
                    {
                        p[l] = translate(in.space, a, l, bytes, write, in, false);  // the fault
                        continue;
                    }
                    if (checked)
                    {
                        check_shared(in, a, bytes, l, write);
                    }
                    p[l] = m_block.shared + a;
                }
                return;
            }
            default:
                break;
            }
        }
        XCUDA_SIM_LANES(active) { p[l] = address(in, o, l, bytes, write); }
    }

    void warp_interpreter::load_store(const instruction& in, std::uint32_t active)
    {
        const bool store = in.op == opcode::st;
        const operand& addr = in.operands[store ? 0 : 1];
        const operand& value = in.operands[store ? 1 : 0];
        const unsigned size = in.type.bytes();
        const unsigned count = in.vector;
        std::int32_t single[4] = {value.reg, -1, -1, -1};
        const std::int32_t* regs = value.what == operand::kind::vector ? value.regs : single;
        std::uint8_t* p[32];
        const bool immediate = store && value.what != operand::kind::reg && value.what != operand::kind::vector;
        lane_pointers(in, addr, active, immediate ? size : size * count, store, p);
        for (unsigned k = 0; k < (immediate ? 1 : count); ++k)
        {
            if (!immediate && regs[k] < 0)
            {
                continue;
            }
            const unsigned offset = k * size;
            if (store)
            {
                source s = immediate ? fetch(value, 0) : source{m_registers + static_cast<std::size_t>(regs[k]) * 32, 1};
                switch (size)
                {
                case 1: store_lanes<std::uint8_t>(active, p, offset, s.p, s.stride); continue;
                case 2: store_lanes<std::uint16_t>(active, p, offset, s.p, s.stride); continue;
                case 4: store_lanes<std::uint32_t>(active, p, offset, s.p, s.stride); continue;
                default: store_lanes<std::uint64_t>(active, p, offset, s.p, s.stride); continue;
                }
            }
            std::uint64_t* r = m_registers + static_cast<std::size_t>(regs[k]) * 32;
            const bool sign = in.type.is_signed() && size < 8;
            const std::vector<std::uint8_t>& widths = m_function->register_bits;
            const bool wide = static_cast<std::size_t>(regs[k]) < widths.size() && widths[static_cast<std::size_t>(regs[k])] == 64;
            const bool narrow = size < 4 && !wide;  // a signed sub-word load fills a 32-bit register, a .b64 one all of it
            switch (size)
            {
            case 1: load_lanes<std::uint8_t>(active, p, offset, r, sign, narrow); break;
            case 2: load_lanes<std::uint16_t>(active, p, offset, r, sign, narrow); break;
            case 4: load_lanes<std::uint32_t>(active, p, offset, r, sign, narrow); break;
            default: load_lanes<std::uint64_t>(active, p, offset, r, sign, narrow); break;
            }
        }
    }
}
