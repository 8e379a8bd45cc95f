#include "matrix_decoder.hpp"

#include <cstdio>
#include <map>

namespace xcuda::sim
{
    namespace
    {
        // An element type's code in matrix_shape, or 0.
        char element_code(const std::string& m)
        {
            static const std::map<std::string, char> codes = {{"f16", 'h'}, {"bf16", 'b'}, {"tf32", 't'}, {"f32", 'f'},
                                                              {"s8", 's'},  {"u8", 'u'},   {"s32", 'i'}};
            auto found = codes.find(m);
            return found == codes.end() ? 0 : found->second;
        }

        // "m16n8k16" -> 16, 8, 16.
        bool read_shape(const std::string& m, matrix_shape& shape)
        {
            unsigned a = 0, b = 0, c = 0;
            if (std::sscanf(m.c_str(), "m%un%uk%u", &a, &b, &c) != 3 || m != "m" + std::to_string(a) + "n" + std::to_string(b) + "k" + std::to_string(c))
            {
                return false;
            }
            shape.m = static_cast<std::uint8_t>(a);
            shape.n = static_cast<std::uint8_t>(b);
            shape.k = static_cast<std::uint8_t>(c);
            return true;
        }

        bool wide_input(char t) { return t == 'h' || t == 'b'; }
        bool byte_input(char t) { return t == 's' || t == 'u'; }

        // The shapes and types the simulator computes: "" when it runs them, else why not.
        std::string check(const matrix_shape& s, bool wmma, const std::string& text)
        {
            const std::string shape = "m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" + std::to_string(s.k);
            bool fits;
            if (wmma)
            {
                bool big = shape == "m16n16k16" || shape == "m32n8k16" || shape == "m8n32k16";
                fits = (big && (wide_input(s.a) || byte_input(s.a))) || (shape == "m16n16k8" && s.a == 't');
            }
            else
            {
                fits = (shape == "m16n8k16" && wide_input(s.a)) || (shape == "m16n8k8" && (wide_input(s.a) || s.a == 't')) ||
                       (shape == "m16n8k32" && byte_input(s.a));
            }
            bool accumulators = byte_input(s.a) ? s.c == 'i' && s.d == 'i' && byte_input(s.b)
                                                : (s.c == 'f' || (s.c == 'h' && s.a == 'h')) && (s.d == 'f' || (s.d == 'h' && s.a == 'h')) &&
                                                      s.b == s.a;
            if (!fits || !accumulators)
            {
                return "'" + text + "': the simulator's matrix operations are wmma m16n16k16/m32n8k16/m8n32k16 (f16, bf16, "
                                    "s8, u8) and m16n16k8 (tf32), mma.sync m16n8k16 (f16, bf16), m16n8k8 (tf32, f16, bf16) "
                                    "and m16n8k32 (s8, u8), with f32, f16 or s32 accumulators";
            }
            return "";
        }

        // The modifiers from parts[first] on: .sync/.aligned, a state space, layouts (row, col), .satfinite, element
        // types and the shape. "" when each is one of those, else the refusal.
        std::string read_modifiers(const std::vector<std::string>& parts, std::size_t first, const std::string& text,
                                   instruction& in, std::vector<std::string>& layouts, std::vector<char>& types)
        {
            for (std::size_t k = first; k < parts.size(); ++k)
            {
                const std::string& m = parts[k];
                if (m == "sync" || m == "aligned")
                {
                    continue;
                }
                if (m == "global" || m == "shared" || m == "shared::cta")
                {
                    in.space = m == "global" ? state_space::global : state_space::shared;
                }
                else if (m == "row" || m == "col")
                {
                    layouts.push_back(m);
                }
                else if (m == "satfinite")
                {
                    in.shape.satfinite = true;
                }
                else if (element_code(m))
                {
                    types.push_back(element_code(m));
                }
                else if (!read_shape(m, in.shape))
                {
                    return "the modifier ." + m + " of '" + text + "' is not implemented by the simulator";
                }
            }
            return "";
        }

        // wmma.load.{a,b,c}.sync.aligned.{row,col}.shape{.space}.type d, [p]{, stride};
        // wmma.store.d.sync.aligned.{row,col}.shape{.space}.type [p], s{, stride};
        // wmma.mma.sync.aligned.{row,col}.{row,col}.shape.dtype{.atype.btype}.ctype{.satfinite} d, a, b, c;
        std::string decode_wmma(const std::vector<std::string>& parts, const std::string& text, instruction& in)
        {
            matrix_shape& s = in.shape;
            const std::string operation = parts.size() > 1 ? parts[1] : "";
            std::vector<char> types;
            std::vector<std::string> layouts;
            std::size_t first = 2;
            if (operation == "load" || operation == "store")
            {
                in.var = operation == "load" ? variant::wmma_load : variant::wmma_store;
                s.role = parts.size() > 2 ? parts[2][0] : 0;
                first = 3;
            }
            else if (operation == "mma")
            {
                in.var = variant::wmma_mma;
                s.role = 'm';
            }
            else
            {
                return "the instruction '" + text + "' is not implemented by the simulator";
            }
            std::string refusal = read_modifiers(parts, first, text, in, layouts, types);
            if (!refusal.empty())
            {
                return refusal;
            }
            if (in.var == variant::wmma_mma)
            {
                // .dtype.ctype (f16 and f32 accumulators of f16 inputs) or .dtype.atype.btype.ctype
                if (layouts.size() != 2 || (types.size() != 2 && types.size() != 4) || in.operand_count != 4)
                {
                    return "'" + text + "' is not a wmma.mma the simulator knows";
                }
                s.d = types.front();
                s.c = types.back();
                s.a = s.b = types.size() == 4 ? types[1] : 'h';
                s.b = types.size() == 4 ? types[2] : 'h';
                return check(s, true, text);
            }
            if (layouts.size() != 1 || types.size() != 1 || (s.role != 'a' && s.role != 'b' && s.role != 'c' && s.role != 'd') ||
                (in.operand_count != 2 && in.operand_count != 3))
            {
                return "'" + text + "' is not a wmma.load/store the simulator knows";
            }
            s.column = layouts[0] == "col";
            // The types the shape is checked with: the matrix's own, and a partner that makes a valid operation.
            char t = types[0];
            bool accumulator = s.role == 'c' || s.role == 'd';
            s.a = s.b = accumulator ? (t == 'i' ? 's' : s.k == 8 ? 't' : 'h') : t;
            s.c = s.d = accumulator ? t : (byte_input(t) ? 'i' : 'f');
            refusal = check(s, true, text);
            s.a = s.b = s.c = s.d = t;  // what moves: elements of this type
            return refusal;
        }

        // mma.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype d, a, b, c;
        std::string decode_mma(const std::vector<std::string>& parts, const std::string& text, instruction& in)
        {
            matrix_shape& s = in.shape;
            in.var = variant::mma_sync;
            s.role = 'M';
            std::vector<char> types;
            std::vector<std::string> layouts;
            std::string refusal = read_modifiers(parts, 1, text, in, layouts, types);
            if (!refusal.empty())
            {
                return refusal;
            }
            if (layouts != std::vector<std::string>{"row", "col"} || (types.size() != 4 && types.size() != 2) ||
                in.operand_count != 4 || in.space != state_space::generic)
            {
                return "'" + text + "' is not an mma.sync the simulator knows (.row.col, with d, a, b, c)";
            }
            s.d = types.front();
            s.c = types.back();
            s.a = types.size() == 4 ? types[1] : 'h';
            s.b = types.size() == 4 ? types[2] : 'h';
            std::string refusal_of_types = check(s, false, text);
            if (!refusal_of_types.empty())
            {
                return refusal_of_types;
            }
            // Each fragment has exactly the registers the ISA lists: its elements times their bits, over 32 lanes.
            auto bits = [](char t) { return t == 'h' || t == 'b' ? 16u : t == 's' || t == 'u' ? 8u : 32u; };
            const unsigned wanted[4] = {s.m * s.n * bits(s.d) / 1024, s.m * s.k * bits(s.a) / 1024,
                                        s.k * s.n * bits(s.b) / 1024, s.m * s.n * bits(s.c) / 1024};
            for (unsigned k = 0; k < 4; ++k)
            {
                const operand& o = in.operands[k];
                unsigned count = o.what == operand::kind::vector ? o.count : o.what == operand::kind::reg ? 1 : 0;
                if (count != wanted[k])
                {
                    return "'" + text + "': operand " + std::to_string(k + 1) + " has " + std::to_string(count) +
                           " registers; the fragment has " + std::to_string(wanted[k]);
                }
            }
            return "";
        }

        // ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared{::cta}}.b16 r, [p];
        std::string decode_ldmatrix(const std::vector<std::string>& parts, const std::string& text, instruction& in)
        {
            matrix_shape& s = in.shape;
            in.var = variant::ldmatrix;
            s.role = 'L';
            bool shape = false, b16 = false;
            for (std::size_t k = 1; k < parts.size(); ++k)
            {
                const std::string& m = parts[k];
                if (m == "x1" || m == "x2" || m == "x4")
                {
                    s.m = static_cast<std::uint8_t>(m[1] - '0');
                }
                else if (m == "m8n8")
                {
                    shape = true;
                }
                else if (m == "trans")
                {
                    s.transposed = true;
                }
                else if (m == "b16")
                {
                    b16 = true;
                }
                else if (m == "shared" || m == "shared::cta")
                {
                    in.space = state_space::shared;
                }
                else if (m != "sync" && m != "aligned")
                {
                    return "the modifier ." + m + " of '" + text + "' is not implemented by the simulator (ldmatrix.m8n8.b16)";
                }
            }
            bool registers = in.operand_count == 2 && (s.m == 1 ? in.operands[0].what == operand::kind::reg
                                                                : in.operands[0].what == operand::kind::vector &&
                                                                      in.operands[0].count == s.m);
            if (!shape || !b16 || !s.m || !registers || in.operands[1].what != operand::kind::address)
            {
                return "'" + text + "' is not an ldmatrix the simulator knows (ldmatrix.sync.aligned.m8n8.x1/.x2/.x4{.trans}.b16)";
            }
            return "";
        }
    }

    bool matrix_decoder::decode(const std::vector<std::string>& parts, const std::string& text, instruction& in,
                                std::string& refusal)
    {
        const std::string& base = parts[0];
        if (text == "cvt.rna.tf32.f32")  // wmma::__float_to_tf32: the rounding of a tensor core's tf32 input
        {
            in.op = opcode::matrix;
            in.var = variant::tf32_convert;
            in.type = ptx_type{'b', 32};
            bool registers = in.operand_count == 2 && in.operands[0].what == operand::kind::reg &&
                             in.operands[1].what == operand::kind::reg;
            refusal = registers ? "" : "'" + text + "' is not a cvt.rna.tf32.f32 the simulator knows (two registers)";
            return true;
        }
        if (base != "wmma" && base != "mma" && base != "ldmatrix")
        {
            return false;
        }
        in.op = opcode::matrix;
        refusal = base == "wmma" ? decode_wmma(parts, text, in) : base == "mma" ? decode_mma(parts, text, in)
                                                                                 : decode_ldmatrix(parts, text, in);
        return true;
    }
}
