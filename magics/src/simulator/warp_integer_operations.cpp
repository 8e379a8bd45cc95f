// warp_interpreter's integer families of round 2 (issue 46): prmt in every mode, the byte dot products
// dp4a/dp2a, and extended-precision arithmetic through the carry flag (add.cc/addc, sub.cc/subc,
// mad.cc/madc, which NVRTC emits for unsigned __int128). Each reads as the PTX ISA defines it; kept apart
// from warp_operations.cpp so that the hot arithmetic switch stays as it was.

#include <algorithm>
#include <cstdint>

#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    namespace
    {
        // The byte of b:a (eight bytes, a the low four) that prmt's mode puts at position k of the result,
        // for the selector's two low bits s (PTX ISA, prmt: the tables of the f4e ... rc16 modes).
        unsigned mode_byte(variant mode, unsigned s, unsigned k)
        {
            switch (mode)
            {
            case variant::prmt_f4e: return (s + k) & 7;        // forward 4 extract: 3210, 4321, 5432, 6543
            case variant::prmt_b4e: return (s + 8 - k) & 7;    // backward 4 extract: 5670, 6701, 7012, 0123
            case variant::prmt_rc8: return s;                  // replicate the byte: 0000, 1111, 2222, 3333
            case variant::prmt_ecl: return k > s ? k : s;      // edge clamp left: 3210, 3211, 3222, 3333
            case variant::prmt_ecr: return k < s ? k : s;      // edge clamp right: 0000, 1110, 2210, 3210
            default: return 2 * (s & 1) + (k & 1);             // rc16, replicate a half: 1010, 3232, 1010, 3232
            }
        }
    }

    // bmsk.mode.b32 d, a, b (PTX ISA, bmsk): ones from bit a for b bits. .clamp takes a and b up to 32 as
    // they are and clamps them there; .wrap takes their low five bits. Bits past 31 are dropped (CUB's radix
    // sort extracts its digits with it).
    void warp_interpreter::bit_mask(const instruction& in, std::uint32_t active)
    {
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        source b = fetch(in.operands[2], 1);
        const bool clamp = in.var == variant::bmsk_clamp;
        XCUDA_SIM_LANES(active)
        {
            std::uint64_t start = static_cast<std::uint32_t>(a.p[a.stride * l]);
            std::uint64_t width = static_cast<std::uint32_t>(b.p[b.stride * l]);
            start = clamp ? std::min<std::uint64_t>(start, 32) : start & 31;
            width = clamp ? std::min<std::uint64_t>(width, 32) : width & 31;
            std::uint64_t ones = (1ull << std::min<std::uint64_t>(start + width, 32)) - 1;
            std::uint64_t below = (1ull << start) - 1;
            d[l] = (ones & ~below) & 0xffffffffu;
        }
    }

    void warp_interpreter::permute(const instruction& in, std::uint32_t active)
    {
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        source b = fetch(in.operands[2], 1);
        source c = fetch(in.operands[3], 2);
        XCUDA_SIM_LANES(active)
        {
            std::uint64_t bytes8 = (a.p[a.stride * l] & 0xffffffffu) | ((b.p[b.stride * l] & 0xffffffffu) << 32);
            std::uint32_t selector = static_cast<std::uint32_t>(c.p[c.stride * l]);
            std::uint32_t r = 0;
            for (unsigned k = 0; k < 4; ++k)
            {
                std::uint32_t byte;
                if (in.var == variant::none)
                {
                    // the default mode: a nibble per result byte, its bit 3 replicates the chosen byte's sign
                    unsigned s = (selector >> (4 * k)) & 0xf;
                    byte = (bytes8 >> (8 * (s & 7))) & 0xff;
                    if (s & 8)
                    {
                        byte = (byte & 0x80) ? 0xff : 0;
                    }
                }
                else
                {
                    byte = (bytes8 >> (8 * mode_byte(in.var, selector & 3, k))) & 0xff;
                }
                r |= byte << (8 * k);
            }
            d[l] = r;
        }
    }

    void warp_interpreter::dot_product(const instruction& in, std::uint32_t active)
    {
        // dp4a.atype.btype d, a, b, c: d = c + the four products of a's and b's bytes;
        // dp2a.{lo,hi}.atype.btype: c + a's two 16-bit halves times b's bytes 0,1 (lo) or 2,3 (hi).
        // Each part is signed or unsigned as its type says; the sum wraps at 32 bits.
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        source b = fetch(in.operands[2], 1);
        source c = fetch(in.operands[3], 2);
        const bool a_signed = in.type.is_signed(), b_signed = in.source_type.is_signed();
        auto part = [](std::uint32_t v, unsigned at, unsigned width, bool is_signed) -> std::int64_t {
            std::uint32_t field = (v >> at) & ((1u << width) - 1);
            if (is_signed && ((field >> (width - 1)) & 1))
            {
                return static_cast<std::int64_t>(field) - (std::int64_t{1} << width);
            }
            return field;
        };
        XCUDA_SIM_LANES(active)
        {
            std::uint32_t x = static_cast<std::uint32_t>(a.p[a.stride * l]);
            std::uint32_t y = static_cast<std::uint32_t>(b.p[b.stride * l]);
            std::int64_t sum = static_cast<std::int64_t>(static_cast<std::uint32_t>(c.p[c.stride * l]));
            if (in.op == opcode::dp4a)
            {
                for (unsigned k = 0; k < 4; ++k)
                {
                    sum += part(x, 8 * k, 8, a_signed) * part(y, 8 * k, 8, b_signed);
                }
            }
            else
            {
                unsigned first = in.var == variant::hi ? 2 : 0;
                for (unsigned k = 0; k < 2; ++k)
                {
                    sum += part(x, 16 * k, 16, a_signed) * part(y, 8 * (first + k), 8, b_signed);
                }
            }
            d[l] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(sum));
        }
    }

    void warp_interpreter::carry_arithmetic(const instruction& in, std::uint32_t active)
    {
        // The carry flag is one bit per lane (m_carry). add: a + b (+ CF); sub: a - (b + CF), the flag a
        // borrow; mad.lo/.hi: the product's low or high half + c (+ CF). .cc writes the carry (borrow) out.
        // Signed and unsigned are the same bits.
        std::uint64_t* d = destination(in.operands[0]);
        source a = fetch(in.operands[1], 0);
        source b = fetch(in.operands[2], 1);
        source c = in.op == opcode::mad_carry ? fetch(in.operands[3], 2) : source{a.p, 0};
        const unsigned width = in.type.bits;
        const unsigned __int128 mask = width == 64 ? ~std::uint64_t{0} : 0xffffffffu;
        std::uint32_t carry = m_carry;
        XCUDA_SIM_LANES(active)
        {
            unsigned __int128 x = a.p[a.stride * l] & mask, y = b.p[b.stride * l] & mask;
            unsigned __int128 in_carry = in.carry_in ? (carry >> l) & 1 : 0;
            unsigned __int128 r;
            bool out;
            if (in.op == opcode::sub_carry)
            {
                r = x - y - in_carry;
                out = x < y + in_carry;  // a borrow
            }
            else
            {
                unsigned __int128 addend = y;
                if (in.op == opcode::mad_carry)
                {
                    unsigned __int128 product = x * y;  // both below 2^64: exact in 128 bits
                    bool is_signed = in.type.is_signed();
                    if (is_signed)
                    {
                        __int128 sx = width == 64 ? static_cast<__int128>(static_cast<std::int64_t>(static_cast<std::uint64_t>(x)))
                                                  : static_cast<__int128>(static_cast<std::int32_t>(static_cast<std::uint32_t>(x)));
                        __int128 sy = width == 64 ? static_cast<__int128>(static_cast<std::int64_t>(static_cast<std::uint64_t>(y)))
                                                  : static_cast<__int128>(static_cast<std::int32_t>(static_cast<std::uint32_t>(y)));
                        product = static_cast<unsigned __int128>(sx * sy);
                    }
                    addend = (in.var == variant::hi ? product >> width : product) & mask;
                    x = c.p[c.stride * l] & mask;
                }
                r = x + addend + in_carry;
                out = (r >> width) & 1;
            }
            d[l] = static_cast<std::uint64_t>(r & mask);
            if (in.carry_out)
            {
                m_carry = (m_carry & ~(1u << l)) | (static_cast<std::uint32_t>(out) << l);
            }
        }
    }
}
