// The warp interpreter's fast path: for the instructions most kernels are made of (mov, add, mul, mad, fma,
// logic, shifts, integer cvt, cvta, setp, selp, ld, st), a handler chosen once per instruction and launch
// (block_state::fast_code) with the operation, the C++ type and each operand's kind (register, immediate,
// special register) fixed at compile time. It runs the instruction for all 32 lanes of a warp in one plain
// loop when every lane is active (uniform control flow: the compiler unrolls and vectorises it), else over the
// active lanes. No switch per lane, none per instruction but the run loop's.
//
// Each handler computes exactly what warp_operations.cpp's general path computes (the same wrap_*, bits<T>,
// read_as); an instruction with a modifier it does not know (.sat, .ftz, .cc, a directed rounding, a sink or
// vector operand) gets no handler and runs as before.

#include <cmath>
#include <cstring>
#include <type_traits>

#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    // The interpreter's state the handlers read and write (warp_interpreter names this struct its friend).
    struct warp_fast_access
    {
        static std::uint64_t* registers(warp_interpreter& w) { return w.m_registers; }
        static const std::uint64_t* special(warp_interpreter& w, special_register s)
        {
            return w.m_specials[static_cast<int>(s)];
        }
        static std::uintptr_t shared_window(warp_interpreter& w) { return reinterpret_cast<std::uintptr_t>(w.m_block.shared); }
        static void load_store(warp_interpreter& w, const instruction& in, std::uint32_t active) { w.load_store(in, active); }
        // None while a check plugin watches global accesses (sim_checker): load_store's path tells it.
        static const warp_interpreter::cached_range* cached(const warp_interpreter& w, std::uint64_t a, unsigned bytes)
        {
            return w.m_block.global_checks ? nullptr : w.cached(a, bytes);
        }
    };

    namespace
    {
        using access = warp_fast_access;

        // Runs BODY (with l the lane) for every lane of `active`: a loop of 32 when all are.
#define XCUDA_SIM_EACH_LANE(active, ...)           \
    if ((active) == 0xffffffffu)                   \
    {                                              \
        for (unsigned l = 0; l < 32; ++l)          \
        {                                          \
            __VA_ARGS__;                           \
        }                                          \
    }                                              \
    else                                           \
    {                                              \
        XCUDA_SIM_LANES(active) { __VA_ARGS__; }   \
    }

        enum class kind
        {
            reg,
            imm,
            special,
        };

        // An operand as a handler reads it: a register's 32 lanes, a special register's, or one immediate.
        template <kind K>
        struct reader
        {
            const std::uint64_t* p = nullptr;
            std::uint64_t value = 0;
            reader(warp_interpreter& w, const operand& o)
            {
                if constexpr (K == kind::imm)
                {
                    value = o.value;
                }
                else if constexpr (K == kind::reg)
                {
                    p = access::registers(w) + static_cast<std::size_t>(o.reg) * 32;
                }
                else
                {
                    p = access::special(w, o.special);
                }
            }
            std::uint64_t operator[](unsigned l) const
            {
                if constexpr (K == kind::imm)
                {
                    return value;
                }
                else
                {
                    return p[l];
                }
            }
        };

        bool is(const operand& o, operand::kind k) { return o.what == k; }
        bool value_operand(const operand& o) { return is(o, operand::kind::reg) || is(o, operand::kind::imm); }

        std::uint64_t* destination(warp_interpreter& w, const instruction& in)
        {
            return access::registers(w) + static_cast<std::size_t>(in.operands[0].reg) * 32;
        }

        // The operations, as the general path computes them (warp_operations.cpp): each gives the register's bits.
        struct op_add
        {
            template <class T> static std::uint64_t apply(T x, T y) { return bits<T>(wrap_add<T>(x, y)); }
        };
        struct op_sub
        {
            template <class T> static std::uint64_t apply(T x, T y) { return bits<T>(wrap_sub<T>(x, y)); }
        };
        struct op_mul_lo  // mul.lo and a float's mul
        {
            template <class T> static std::uint64_t apply(T x, T y) { return bits<T>(wrap_mul<T>(x, y)); }
        };
        struct op_mul_wide
        {
            template <class T> static std::uint64_t apply(T x, T y) { return wide_product<T>(x, y); }
        };
        struct op_shl
        {
            template <class T> static std::uint64_t apply(T x, T n)
            {
                using U = std::make_unsigned_t<T>;
                const auto s = static_cast<std::uint32_t>(n);
                return s >= 8 * sizeof(T) ? 0 : bits<T>(static_cast<T>(static_cast<U>(x) << s));
            }
        };
        struct op_shr
        {
            template <class T> static std::uint64_t apply(T x, T n)
            {
                const auto s = static_cast<std::uint32_t>(n);
                if (s >= 8 * sizeof(T))
                {
                    return bits<T>(static_cast<T>(std::is_signed_v<T> && x < T(0) ? ~T(0) : T(0)));
                }
                return bits<T>(static_cast<T>(x >> s));
            }
        };
        struct op_mad_lo
        {
            template <class T> static std::uint64_t apply(T x, T y, std::uint64_t z)
            {
                return bits<T>(wrap_add<T>(wrap_mul<T>(x, y), as<T>(z)));
            }
        };
        struct op_mad_wide
        {
            template <class T> static std::uint64_t apply(T x, T y, std::uint64_t z) { return wide_product<T>(x, y) + z; }
        };
        struct op_fma
        {
            template <class T> static std::uint64_t apply(T x, T y, std::uint64_t z) { return bits<T>(std::fma(x, y, as<T>(z))); }
        };

        // and, or, xor work on the registers' bits whatever the type; shl/shr read the shift as 32 bits of a register.
        template <class Op, class T, kind B>
        void binary(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            std::uint64_t* d = destination(w, in);
            reader<kind::reg> a(w, in.operands[1]);
            reader<B> b(w, in.operands[2]);
            if constexpr (std::is_same_v<Op, op_shl> || std::is_same_v<Op, op_shr>)
            {
                XCUDA_SIM_EACH_LANE(active, d[l] = Op::template apply<T>(as<T>(a[l]), static_cast<T>(static_cast<std::uint32_t>(b[l]))))
            }
            else
            {
                XCUDA_SIM_EACH_LANE(active, d[l] = Op::template apply<T>(as<T>(a[l]), as<T>(b[l])))
            }
        }

        // fma.rn.f32 of three registers with the FMA instructions where the CPU has them (the loop vectorised)
        // rather than a call of fmaf a lane: the same bits, fma being rounded once either way.
        [[gnu::target_clones("fma", "default")]] void fused_lanes(std::uint64_t* d, const std::uint64_t* a,
                                                                 const std::uint64_t* b, const std::uint64_t* c,
                                                                 std::uint32_t active)
        {
            XCUDA_SIM_EACH_LANE(active, d[l] = bits<float>(std::fma(as<float>(a[l]), as<float>(b[l]), as<float>(c[l]))))
        }

        template <class Op, class T, kind B, kind C>
        void ternary(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            std::uint64_t* d = destination(w, in);
            reader<kind::reg> a(w, in.operands[1]);
            reader<B> b(w, in.operands[2]);
            reader<C> c(w, in.operands[3]);
            if constexpr (std::is_same_v<Op, op_fma> && std::is_same_v<T, float> && B == kind::reg && C == kind::reg)
            {
                fused_lanes(d, a.p, b.p, c.p, active);
                return;
            }
            XCUDA_SIM_EACH_LANE(active, d[l] = Op::template apply<T>(as<T>(a[l]), as<T>(b[l]), c[l]))
        }

        template <int Logic, kind B>  // 0 and, 1 or, 2 xor
        void logic(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            std::uint64_t* d = destination(w, in);
            reader<kind::reg> a(w, in.operands[1]);
            reader<B> b(w, in.operands[2]);
            XCUDA_SIM_EACH_LANE(active, d[l] = Logic == 0 ? (a[l] & b[l]) : Logic == 1 ? (a[l] | b[l]) : (a[l] ^ b[l]))
        }

        std::uint64_t kept_bits(ptx_type t)
        {
            return t.bits >= 64 ? ~0ull : t.kind == 'p' ? 1ull : (1ull << t.bits) - 1;
        }

        template <kind A>
        void move(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            std::uint64_t* d = destination(w, in);
            reader<A> a(w, in.operands[1]);
            const std::uint64_t keep = kept_bits(in.type);
            XCUDA_SIM_EACH_LANE(active, d[l] = a[l] & keep)
        }

        // cvt between integers without .sat: read_as(read_as(v, from), to), a sub-word result in 32 bits.
        template <class From, class To>
        void convert(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            std::uint64_t* d = destination(w, in);
            reader<kind::reg> a(w, in.operands[1]);
            auto widened = [](auto v) {
                using V = decltype(v);
                return std::is_signed_v<V> ? static_cast<std::uint64_t>(static_cast<std::int64_t>(v)) : static_cast<std::uint64_t>(v);
            };
            XCUDA_SIM_EACH_LANE(active, d[l] = widened(static_cast<To>(widened(static_cast<From>(a[l])))))
        }

        // cvta of a global, constant or param address (the same host address either way) or a shared one.
        void address_convert(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            std::uint64_t* d = destination(w, in);
            reader<kind::reg> a(w, in.operands[1]);
            const std::uint64_t keep = in.type.bits == 32 ? 0xffffffffu : ~0ull;
            const std::uint64_t shared = in.space == state_space::shared ? access::shared_window(w) : 0;
            const std::uint64_t offset = in.to ? 0 - shared : shared;
            XCUDA_SIM_EACH_LANE(active, d[l] = (a[l] + offset) & keep)
        }

        template <class T, kind B>
        void compare_set(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            std::uint64_t* p = destination(w, in);
            std::uint64_t* q = in.pair ? access::registers(w) + static_cast<std::size_t>(in.operands[1].reg) * 32 : nullptr;
            const unsigned first = in.pair ? 2 : 1;
            reader<kind::reg> a(w, in.operands[first]);
            reader<B> b(w, in.operands[first + 1]);
            by_comparison(in.cmp, [&](auto comparison) {
                constexpr compare C = decltype(comparison)::value;
                const compare cmp = C == compare::none ? in.cmp : C;
                if (!q)
                {
                    XCUDA_SIM_EACH_LANE(active, p[l] = compare_values<T>(cmp, as<T>(a[l]), as<T>(b[l])))
                    return;
                }
                XCUDA_SIM_EACH_LANE(active, {
                    const bool r = compare_values<T>(cmp, as<T>(a[l]), as<T>(b[l]));
                    p[l] = r;
                    q[l] = !r;
                })
            });
        }

        template <kind A, kind B>
        void select(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            std::uint64_t* d = destination(w, in);
            reader<A> a(w, in.operands[1]);
            reader<B> b(w, in.operands[2]);
            reader<kind::reg> p(w, in.operands[3]);
            const std::uint64_t negate = in.operands[3].negate ? 1 : 0;
            const std::uint64_t keep = in.type.bits >= 64 ? ~0ull : (1ull << in.type.bits) - 1;
            XCUDA_SIM_EACH_LANE(active, d[l] = (((p[l] & 1) ^ negate) ? a[l] : b[l]) & keep)
        }

        void load_store(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            access::load_store(w, in, active);
        }

        // Whether each of the 32 addresses r[l] + offset is in [start, start + limit] and has no bit of `misaligned`:
        // with AVX2 where the CPU has it (the 32 lanes four at a time).
        [[gnu::target_clones("avx2", "default")]] bool all_inside(const std::uint64_t* r, std::uint64_t offset,
                                                                 std::uint64_t start, std::uint64_t limit,
                                                                 std::uint64_t misaligned)
        {
            std::uint64_t bad = 0;
            for (unsigned l = 0; l < 32; ++l)
            {
                const std::uint64_t a = r[l] + offset;
                bad |= (a & misaligned) | static_cast<std::uint64_t>(a - start > limit);
            }
            return bad == 0;
        }

        // ld/st of one register at a register address in global, constant or generic space, every lane active: when
        // each lane's address is aligned and inside the allocation the first lane's is in (cached by an earlier
        // access), one pass checks all 32 and one moves the data. Anything else (a lane outside it, a shared or
        // local generic address, a fault to report) runs load_store's lane-by-lane checks.
        template <class U, bool Store>
        void global_access(warp_interpreter& w, const instruction& in, std::uint32_t active)
        {
            const operand& address = in.operands[Store ? 0 : 1];
            const std::uint64_t* r = access::registers(w) + static_cast<std::size_t>(address.reg) * 32;
            const std::uint64_t offset = address.value;
            if (active == 0xffffffffu)
            {
                if (const auto* hit = access::cached(w, r[0] + offset, sizeof(U)))
                {
                    if (all_inside(r, offset, hit->start, hit->end - hit->start - sizeof(U), sizeof(U) - 1))
                    {
                        std::uint64_t* v = access::registers(w) + static_cast<std::size_t>(in.operands[Store ? 1 : 0].reg) * 32;
                        for (unsigned l = 0; l < 32; ++l)
                        {
                            auto* p = reinterpret_cast<std::uint8_t*>(r[l] + offset);
                            if constexpr (Store)
                            {
                                const U x = static_cast<U>(v[l]);
                                std::memcpy(p, &x, sizeof x);
                            }
                            else
                            {
                                U x;
                                std::memcpy(&x, p, sizeof x);
                                v[l] = static_cast<std::uint64_t>(x);
                            }
                        }
                        return;
                    }
                }
            }
            access::load_store(w, in, active);
        }

        fast_handler memory_for(const instruction& in)
        {
            if (in.strong)
            {
                return nullptr;  // a strong load may be a cooperative grid's poll (spin_point)
            }
            const bool store = in.op == opcode::st;
            const operand& address = in.operands[store ? 0 : 1];
            const operand& value = in.operands[store ? 1 : 0];
            const bool plain = in.vector == 1 && in.operand_count == 2 && is(value, operand::kind::reg) &&
                               is(address, operand::kind::address) && address.reg >= 0 &&
                               (in.space == state_space::global || in.space == state_space::constant ||
                                in.space == state_space::generic);
            const bool unsigned_load = !in.type.is_signed();  // a signed load extends its sign: load_store's
            if (!plain || (!store && !unsigned_load && in.type.bits < 64))
            {
                return &load_store;
            }
            switch (in.type.bytes())
            {
            case 4: return store ? &global_access<std::uint32_t, true> : &global_access<std::uint32_t, false>;
            case 8: return store ? &global_access<std::uint64_t, true> : &global_access<std::uint64_t, false>;
            default: return &load_store;
            }
        }
#undef XCUDA_SIM_EACH_LANE


        // The handler of Op for the integer and float types the fast path knows, by the kind of operand b.
        template <class Op, bool Floats, bool Integers>
        fast_handler binary_for(const instruction& in)
        {
            const bool imm = is(in.operands[2], operand::kind::imm);
            fast_handler chosen = nullptr;
            XCUDA_SIM_BY_TYPE(in.type, {
                if constexpr ((std::is_floating_point_v<T> && Floats) ||
                              (std::is_integral_v<T> && Integers && sizeof(T) >= 4))
                {
                    chosen = imm ? &binary<Op, T, kind::imm> : &binary<Op, T, kind::reg>;
                }
            });
            return chosen;
        }

        template <class Op, bool Floats, bool Integers>
        fast_handler ternary_for(const instruction& in)
        {
            const bool b_imm = is(in.operands[2], operand::kind::imm), c_imm = is(in.operands[3], operand::kind::imm);
            fast_handler chosen = nullptr;
            XCUDA_SIM_BY_TYPE(in.type, {
                if constexpr ((std::is_floating_point_v<T> && Floats) ||
                              (std::is_integral_v<T> && Integers && sizeof(T) >= 4))
                {
                    chosen = b_imm ? (c_imm ? &ternary<Op, T, kind::imm, kind::imm> : &ternary<Op, T, kind::imm, kind::reg>)
                                   : (c_imm ? &ternary<Op, T, kind::reg, kind::imm> : &ternary<Op, T, kind::reg, kind::reg>);
                }
            });
            return chosen;
        }

        template <class From>
        fast_handler convert_from(ptx_type to)
        {
            fast_handler chosen = nullptr;
            XCUDA_SIM_BY_TYPE(to, {
                if constexpr (std::is_integral_v<T> && sizeof(T) >= 4)
                {
                    chosen = &convert<From, T>;
                }
            });
            return chosen;
        }

        fast_handler convert_for(const instruction& in)
        {
            fast_handler chosen = nullptr;
            if (in.sat || in.type.is_float() || in.source_type.is_float() || in.type.kind == 'p' || in.source_type.kind == 'p')
            {
                return nullptr;
            }
            XCUDA_SIM_BY_TYPE(in.source_type, {
                if constexpr (std::is_integral_v<T> && sizeof(T) >= 4)
                {
                    chosen = convert_from<T>(in.type);
                }
            });
            return chosen;
        }

        fast_handler compare_for(const instruction& in)
        {
            const unsigned first = in.pair ? 2 : 1;
            if (in.combine != compare::none || in.ftz || in.operand_count != first + 2 ||
                !is(in.operands[first], operand::kind::reg) || !value_operand(in.operands[first + 1]) ||
                (in.pair && !is(in.operands[1], operand::kind::reg)))
            {
                return nullptr;
            }
            const bool imm = is(in.operands[first + 1], operand::kind::imm);
            fast_handler chosen = nullptr;
            XCUDA_SIM_BY_TYPE(in.type, {
                if constexpr (std::is_floating_point_v<T> || sizeof(T) >= 4)
                {
                    chosen = imm ? &compare_set<T, kind::imm> : &compare_set<T, kind::reg>;
                }
            });
            return chosen;
        }

        fast_handler select_for(const instruction& in)
        {
            if (in.operand_count != 4 || !is(in.operands[3], operand::kind::reg) || !value_operand(in.operands[1]) ||
                !value_operand(in.operands[2]))
            {
                return nullptr;
            }
            const bool a_imm = is(in.operands[1], operand::kind::imm), b_imm = is(in.operands[2], operand::kind::imm);
            return a_imm ? (b_imm ? &select<kind::imm, kind::imm> : &select<kind::imm, kind::reg>)
                         : (b_imm ? &select<kind::reg, kind::imm> : &select<kind::reg, kind::reg>);
        }

        fast_handler arithmetic_for(const instruction& in)
        {
            const bool plain = !in.sat && !in.ftz && !in.carry_in && !in.carry_out &&
                               (in.round == rounding::none || in.round == rounding::rn);
            if (in.op == opcode::selp)
            {
                return select_for(in);
            }
            if (!plain || in.operand_count < 3 || !is(in.operands[1], operand::kind::reg) || !value_operand(in.operands[2]))
            {
                return nullptr;
            }
            if (in.operand_count == 4 && !value_operand(in.operands[3]))
            {
                return nullptr;
            }
            const bool three = in.operand_count == 3, four = in.operand_count == 4;
            const bool imm = is(in.operands[2], operand::kind::imm);
            switch (in.op)
            {
            case opcode::add: return three ? binary_for<op_add, true, true>(in) : nullptr;
            case opcode::sub: return three ? binary_for<op_sub, true, true>(in) : nullptr;
            case opcode::mul:
                if (!three || (!in.type.is_float() && in.var != variant::lo && in.var != variant::wide))
                {
                    return nullptr;
                }
                if (in.var == variant::wide)
                {
                    return in.type.bits == 32 ? binary_for<op_mul_wide, false, true>(in) : nullptr;
                }
                return binary_for<op_mul_lo, true, true>(in);
            case opcode::mad:
                if (!four || in.type.is_float() || (in.var != variant::lo && in.var != variant::wide) ||
                    (in.var == variant::wide && in.type.bits != 32))
                {
                    return nullptr;
                }
                return in.var == variant::wide ? ternary_for<op_mad_wide, false, true>(in) : ternary_for<op_mad_lo, false, true>(in);
            case opcode::fma: return four ? ternary_for<op_fma, true, false>(in) : nullptr;
            case opcode::shl: return three ? binary_for<op_shl, false, true>(in) : nullptr;
            case opcode::shr: return three ? binary_for<op_shr, false, true>(in) : nullptr;
            case opcode::and_: return three ? (imm ? &logic<0, kind::imm> : &logic<0, kind::reg>) : nullptr;
            case opcode::or_: return three ? (imm ? &logic<1, kind::imm> : &logic<1, kind::reg>) : nullptr;
            case opcode::xor_: return three ? (imm ? &logic<2, kind::imm> : &logic<2, kind::reg>) : nullptr;
            default: return nullptr;
            }
        }

        fast_handler move_for(const instruction& in)
        {
            const operand& a = in.operands[1];
            if (in.operand_count != 2)
            {
                return nullptr;
            }
            switch (a.what)
            {
            case operand::kind::reg: return &move<kind::reg>;
            case operand::kind::imm: return &move<kind::imm>;
            case operand::kind::special:
            {
                // The clocks are read at the instruction, the cluster's registers when used (cluster_special): only
                // the ones m_specials holds are read from it.
                const bool computed = a.special == special_register::clock || a.special == special_register::clock64 ||
                                      a.special == special_register::globaltimer ||
                                      a.special >= special_register::cluster_ctarank;
                return computed ? nullptr : &move<kind::special>;
            }
            default: return nullptr;
            }
        }
    }

    fast_handler warp_fast_path(const instruction& in)
    {
        if (in.operand_count == 0)
        {
            return nullptr;
        }
        if (in.op == opcode::ld || in.op == opcode::st)
        {
            return memory_for(in);
        }
        if (!is(in.operands[0], operand::kind::reg))
        {
            return nullptr;  // a sink, a vector: the general path
        }
        const bool bits_only = in.op == opcode::mov || in.op == opcode::and_ || in.op == opcode::or_ ||
                               in.op == opcode::xor_ || in.op == opcode::selp;
        if ((in.type.is_half() || in.source_type.is_half()) && !bits_only)
        {
            return nullptr;  // .f16/.bf16 arithmetic: warp_half_operations.cpp
        }
        switch (in.op)
        {
        case opcode::mov: return move_for(in);
        case opcode::cvt: return in.operand_count == 2 && is(in.operands[1], operand::kind::reg) ? convert_for(in) : nullptr;
        case opcode::cvta:
            return in.operand_count == 2 && is(in.operands[1], operand::kind::reg) && in.space != state_space::local
                       ? &address_convert
                       : nullptr;
        case opcode::setp: return compare_for(in);
        default: return arithmetic_for(in);
        }
    }
}
