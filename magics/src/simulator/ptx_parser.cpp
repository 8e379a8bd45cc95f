#include "ptx_parser.hpp"

#include "ptx_decoder.hpp"
#include "ptx_module_reader.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace xcuda::sim
{
    namespace
    {

        const std::unordered_map<std::string, special_register>& special_names()
        {
            static const std::unordered_map<std::string, special_register> names = [] {
                std::unordered_map<std::string, special_register> n = {
                    {"%tid.x", special_register::tid_x}, {"%tid.y", special_register::tid_y},
                    {"%tid.z", special_register::tid_z}, {"%ntid.x", special_register::ntid_x},
                    {"%ntid.y", special_register::ntid_y}, {"%ntid.z", special_register::ntid_z},
                    {"%ctaid.x", special_register::ctaid_x}, {"%ctaid.y", special_register::ctaid_y},
                    {"%ctaid.z", special_register::ctaid_z}, {"%nctaid.x", special_register::nctaid_x},
                    {"%nctaid.y", special_register::nctaid_y}, {"%nctaid.z", special_register::nctaid_z},
                    {"%laneid", special_register::laneid}, {"%warpid", special_register::warpid},
                    {"%nwarpid", special_register::nwarpid}, {"%smid", special_register::smid},
                    {"%nsmid", special_register::nsmid}, {"%gridid", special_register::gridid},
                    {"%lanemask_eq", special_register::lanemask_eq}, {"%lanemask_le", special_register::lanemask_le},
                    {"%lanemask_lt", special_register::lanemask_lt}, {"%lanemask_ge", special_register::lanemask_ge},
                    {"%lanemask_gt", special_register::lanemask_gt}, {"%clock", special_register::clock},
                    {"%clock64", special_register::clock64}, {"%globaltimer", special_register::globaltimer},
                    {"%dynamic_smem_size", special_register::dynamic_smem_size},
                    {"%cluster_ctarank", special_register::cluster_ctarank},
                    {"%cluster_nctarank", special_register::cluster_nctarank},
                    {"%cluster_ctaid.x", special_register::cluster_ctaid_x}, {"%cluster_ctaid.y", special_register::cluster_ctaid_y},
                    {"%cluster_ctaid.z", special_register::cluster_ctaid_z}, {"%cluster_nctaid.x", special_register::cluster_nctaid_x},
                    {"%cluster_nctaid.y", special_register::cluster_nctaid_y}, {"%cluster_nctaid.z", special_register::cluster_nctaid_z},
                    {"%clusterid.x", special_register::clusterid_x}, {"%clusterid.y", special_register::clusterid_y},
                    {"%clusterid.z", special_register::clusterid_z}, {"%nclusterid.x", special_register::nclusterid_x},
                    {"%nclusterid.y", special_register::nclusterid_y}, {"%nclusterid.z", special_register::nclusterid_z},
                    {"%is_explicit_cluster", special_register::is_explicit_cluster},
                    {"%reserved_smem_offset_begin", special_register::reserved_smem_begin},
                    {"%reserved_smem_offset_end", special_register::reserved_smem_end},
                    {"%reserved_smem_offset_cap", special_register::reserved_smem_cap},
                    {"%reserved_smem_offset_0", special_register::reserved_smem_0},
                    {"%reserved_smem_offset_1", special_register::reserved_smem_1},
                };
                for (int k = 0; k < 32; ++k)
                {
                    n.emplace("%envreg" + std::to_string(k), k == 1   ? special_register::envreg1
                                                             : k == 2 ? special_register::envreg2
                                                                      : special_register::envreg);
                }
                return n;
            }();
            return names;
        }

        // Reads the function bodies of a module whose module level ptx_module_reader reads.
        class parser : public ptx_module_reader
        {
        public:
            using ptx_module_reader::ptx_module_reader;

        private:
            void body(int index) override
            {
                int depth = 1;
                while (depth > 0)
                {
                    const token& t = peek();
                    if (t.what == token::kind::end)
                    {
                        fail("a function body that never ends");
                    }
                    if (t.what == token::kind::punct && t.text == "{")
                    {
                        next();
                        ++depth;
                        continue;
                    }
                    if (t.what == token::kind::punct && t.text == "}")
                    {
                        next();
                        --depth;
                        continue;
                    }
                    if (t.what == token::kind::ident && peek(1).what == token::kind::punct && peek(1).text == ":" &&
                        t.text[0] != '.')
                    {
                        m_program.functions[static_cast<std::size_t>(index)].labels[t.text] =
                            static_cast<std::uint32_t>(m_program.functions[static_cast<std::size_t>(index)].code.size());
                        next();
                        next();
                        continue;
                    }
                    if (t.what == token::kind::ident && t.text == ".loc")
                    {
                        int line = t.line;
                        next();
                        m_file = static_cast<std::uint8_t>(integer());
                        m_line = static_cast<std::uint32_t>(integer());
                        skip_line(line);
                        continue;
                    }
                    if (t.what == token::kind::ident && (t.text == ".reg" || t.text.rfind(".reg.", 0) == 0))
                    {
                        std::string type_name = t.text.substr(4);  // cuda_fp16.h's inline asm: ".reg.b16 h, r;"
                        next();
                        registers(type_name);
                        continue;
                    }
                    if (t.what == token::kind::ident && (t.text == ".shared" || t.text == ".local" || t.text == ".param"))
                    {
                        std::string word = next().text;
                        variable(word == ".shared" ? state_space::shared : word == ".local" ? state_space::local : state_space::func_param, index);
                        continue;
                    }
                    if (t.what == token::kind::ident && t.text == ".callprototype")
                    {
                        // "prototype_0 : .callprototype ..." (its label already read): only for indirect
                        // calls, which are refused where they are made.
                        while (!accept(";"))
                        {
                            next();
                        }
                        continue;
                    }
                    if (t.what == token::kind::ident && t.text == ".pragma")
                    {
                        while (!accept(";"))
                        {
                            next();
                        }
                        continue;
                    }
                    statement(index);
                }
            }

            void registers(const std::string& given)  // given: the type of a ".reg.b16" token, else ""
            {
                ptx_type type;
                std::string type_name = given.empty() ? identifier() : given;
                if (type_name.size() < 2 || !parse_type_name(type_name.substr(1), type))
                {
                    if (type_name == ".v2" || type_name == ".v4")
                    {
                        fail("vector registers are not supported by the simulator");
                    }
                    fail("the register type " + type_name + " is not supported by the simulator");
                }
                do
                {
                    std::string name = identifier();
                    if (accept("<"))
                    {
                        std::uint64_t count = integer();
                        expect(">");
                        for (std::uint64_t k = 0; k < count; ++k)
                        {
                            declare_register(name + std::to_string(k), type.bits);
                        }
                    }
                    else
                    {
                        declare_register(name, type.bits);
                    }
                } while (accept(","));
                expect(";");
            }

            void declare_register(const std::string& name, unsigned bits)
            {
                if (m_registers.find(name) == m_registers.end())
                {
                    int index = static_cast<int>(m_registers.size());
                    m_registers[name] = index;
                    m_register_bits.push_back(static_cast<std::uint8_t>(bits));
                }
            }

            // ---- instructions ----
            void statement(int index)
            {
                instruction in;
                in.line = m_line;
                in.file = m_file;
                int line = peek().line;
                std::size_t first = m_at;
                if (accept("@"))
                {
                    in.guard_negated = accept("!");
                    in.guard = register_index(identifier());
                }
                std::string opcode_text = identifier();
                std::vector<operand> operands;
                std::vector<std::string> label_names(6);
                bool is_call = opcode_text == "call" || opcode_text.rfind("call.", 0) == 0;
                if (is_call)
                {
                    call_operands(in);
                }
                else if (!accept(";"))
                {
                    do
                    {
                        if (operands.size() == 6)
                        {
                            fail("more operands than any instruction takes");
                        }
                        operand o = read_operand(label_names[operands.size()]);
                        operands.push_back(o);
                        if (accept("|"))
                        {
                            in.pair = true;
                            operands.push_back(read_operand(label_names[operands.size()]));
                        }
                    } while (accept(","));
                    expect(";");
                }
                // The text as written, for messages.
                for (std::size_t k = first; k < m_at - 1; ++k)
                {
                    const token& t = m_tokens[k];
                    if (!in.text.empty() && t.text != "," && t.text != "]" && t.text != "}" && t.text != ")" &&
                        t.text != "|" && in.text.back() != '[' && in.text.back() != '{' && in.text.back() != '(' &&
                        in.text.back() != '@' && in.text.back() != '!' && in.text.back() != '|')
                    {
                        in.text += ' ';
                    }
                    in.text += t.text;
                }
                in.operand_count = static_cast<std::uint8_t>(operands.size());
                for (std::size_t k = 0; k < operands.size(); ++k)
                {
                    in.operands[k] = operands[k];
                }
                std::string why = ptx_decoder::decode(opcode_text, in);
                if (!why.empty())
                {
                    in.op = opcode::unsupported;
                    in.text = why + " (" + in.text + ")";
                }
                else
                {
                    finish_literals(in);
                }
                ptx_function& f = m_program.functions[static_cast<std::size_t>(index)];
                std::uint32_t pc = static_cast<std::uint32_t>(f.code.size());
                for (std::size_t k = 0; k < operands.size(); ++k)
                {
                    if (in.operands[k].what == operand::kind::label)
                    {
                        if (in.op != opcode::bra && in.op != opcode::unsupported)
                        {
                            fail_at(line, "'" + label_names[k] + "' is neither a register nor a variable");
                        }
                        m_label_fixups.push_back({pc, k, label_names[k]});
                    }
                }
                if (is_call && in.op == opcode::call)
                {
                    m_call_fixups.push_back({index, pc, m_callee_name});
                }
                f.code.push_back(std::move(in));
            }

            // call[.uni] [(result),] name [, (arguments)] ;
            void call_operands(instruction& in)
            {
                if (accept("("))
                {
                    std::string name = identifier();
                    in.call_result = find_symbol(name);
                    if (in.call_result < 0)
                    {
                        fail("a call's result '" + name + "' that is not declared");
                    }
                    expect(")");
                    expect(",");
                }
                if (peek().what != token::kind::ident || peek().text[0] == '%')
                {
                    m_callee_name.clear();
                    while (!accept(";"))
                    {
                        next();
                    }
                    in.operand_count = 0;
                    in.callee = -2;  // indirect
                    return;
                }
                m_callee_name = identifier();
                if (accept(","))
                {
                    expect("(");
                    if (!accept(")"))
                    {
                        do
                        {
                            std::string name = identifier();
                            int symbol = find_symbol(name);
                            if (symbol < 0)
                            {
                                fail("a call argument '" + name + "' that is not declared");
                            }
                            in.call_arguments.push_back(symbol);
                        } while (accept(","));
                        expect(")");
                    }
                }
                if (accept(","))
                {
                    identifier();  // a prototype: only indirect calls have one
                    in.callee = -2;
                }
                expect(";");
            }

            int register_index(const std::string& name)
            {
                auto it = m_registers.find(name);
                if (it == m_registers.end())
                {
                    fail("the register " + name + " is not declared");
                }
                return it->second;
            }

            // The registers of a vector operand up to its '}' (its '{' read): at most 4, '_' a sink (-1).
            void read_vector(operand& o)
            {
                do
                {
                    if (o.count == 8)  // 8: a wmma fragment
                    {
                        fail("a vector of more than 8 elements");
                    }
                    std::string name = identifier();
                    o.regs[o.count++] = name == "_" ? -1 : register_index(name);
                } while (accept(","));
                expect("}");
            }

            operand read_operand(std::string& label_name)
            {
                operand o;
                if (accept("["))
                {
                    o.what = operand::kind::address;
                    if (peek().what == token::kind::ident)
                    {
                        std::string name = next().text;
                        if (name[0] == '%' || m_registers.count(name))  // inline asm may name registers without %
                        {
                            o.reg = register_index(name);
                        }
                        else
                        {
                            o.symbol = find_symbol(name);
                            if (o.symbol < 0)
                            {
                                fail("the address names '" + name + "', which is not declared");
                            }
                        }
                        if (accept("+"))
                        {
                            o.value = integer();
                        }
                        else if (peek().text == "-")
                        {
                            o.value = integer();
                        }
                    }
                    else
                    {
                        o.value = integer();
                    }
                    if (accept(","))  // [handle, {coordinates}]: tex, tld4, suld, sust
                    {
                        expect("{");
                        o.what = operand::kind::texture;
                        read_vector(o);
                    }
                    expect("]");
                    return o;
                }
                if (accept("{"))
                {
                    o.what = operand::kind::vector;
                    read_vector(o);
                    return o;
                }
                if (accept("!"))
                {
                    o = read_operand(label_name);
                    o.negate = true;
                    return o;
                }
                if (peek().text == "-" || peek().what == token::kind::number)
                {
                    bool negative = accept("-");
                    literal value = number(next().text, peek().line);
                    o.what = operand::kind::imm;
                    o.count = static_cast<std::uint8_t>(value.kind);
                    o.value = value.bits;
                    if (negative)
                    {
                        if (value.kind == 'i')
                        {
                            o.value = ~value.bits + 1;
                        }
                        else
                        {
                            o.value ^= value.kind == 'f' ? 0x80000000ull : 0x8000000000000000ull;
                        }
                    }
                    return o;
                }
                std::string name = identifier();
                if (name == "_")
                {
                    o.what = operand::kind::sink;
                    return o;
                }
                if (name[0] != '%' && m_registers.count(name))  // a register of an inline asm block: { .reg .pred p; }
                {
                    o.what = operand::kind::reg;
                    o.reg = m_registers.at(name);
                    return o;
                }
                if (name[0] == '%')
                {
                    auto special = special_names().find(name);
                    if (special != special_names().end())
                    {
                        o.what = operand::kind::special;
                        o.special = special->second;
                        m_program.uses_reserved_shared |= special->second >= special_register::reserved_smem_begin &&
                                                          special->second <= special_register::reserved_smem_1;
                        return o;
                    }
                    auto it = m_registers.find(name);
                    if (it == m_registers.end())
                    {
                        if (name.rfind("%pm", 0) == 0)
                        {
                            fail("the special register " + name + " is not supported by the simulator");
                        }
                        fail("the register " + name + " is not declared");
                    }
                    o.what = operand::kind::reg;
                    o.reg = it->second;
                    return o;
                }
                if (name == "WARP_SZ")
                {
                    o.what = operand::kind::imm;  // PTX's constant for the warp size (warpSize in C++)
                    o.value = 32;
                    return o;
                }
                int symbol = find_symbol(name);
                if (symbol >= 0)
                {
                    o.what = operand::kind::symbol;
                    o.symbol = symbol;
                    return o;
                }
                o.what = operand::kind::label;  // resolved (or refused) at the function's end
                label_name = name;
                return o;
            }

            // Literals take the instruction's type: an integer written for a float operand is that
            // number; a 0f literal for an f64 operand is widened.
            void finish_literals(instruction& in)
            {
                for (std::size_t k = 0; k < in.operand_count; ++k)
                {
                    operand& o = in.operands[k];
                    if (o.what != operand::kind::imm)
                    {
                        continue;
                    }
                    ptx_type t = in.type;
                    if ((in.op == opcode::cvt && k == 1) || (in.op == opcode::rounded_convert && k >= 1) ||
                        (in.op == opcode::half_arithmetic && in.family_op == opcode::set && k >= 1))
                    {
                        t = in.source_type;  // cvt's and set's operands are of the source type
                    }
                    // A shift amount, or an operand of an integer type: the literal's bits as they are (a
                    // 0f literal given to a .b32 operand is its bit pattern, as PTX allows).
                    bool shift_amount = (in.op == opcode::shl || in.op == opcode::shr) && k == 2;
                    if (shift_amount || !t.is_float())
                    {
                        o.count = 0;
                        continue;
                    }
                    if (o.count == 'i')
                    {
                        double d = static_cast<double>(static_cast<std::int64_t>(o.value));
                        if (t.bits == 32)
                        {
                            float f = static_cast<float>(d);
                            std::uint32_t b;
                            std::memcpy(&b, &f, 4);
                            o.value = b;
                        }
                        else
                        {
                            std::memcpy(&o.value, &d, 8);
                        }
                    }
                    else if (o.count == 'f' && t.bits == 64)
                    {
                        float f;
                        std::uint32_t b = static_cast<std::uint32_t>(o.value);
                        std::memcpy(&f, &b, 4);
                        double d = f;
                        std::memcpy(&o.value, &d, 8);
                    }
                    else if (o.count == 'd' && t.bits == 32)
                    {
                        double d;
                        std::memcpy(&d, &o.value, 8);
                        float f = static_cast<float>(d);
                        std::uint32_t b;
                        std::memcpy(&b, &f, 4);
                        o.value = b;
                    }
                    o.count = 0;
                }
            }


            std::string m_callee_name;
        };

    }
}

namespace xcuda::sim
{
    ptx_program ptx_parser::parse
(const std::string& text)
    {
        if (text.size() >= 4 && static_cast<unsigned char>(text[0]) == 0x7f && text.compare(1, 3, "ELF") == 0)
        {
            throw sim_error(sim_error::kind::invalid_ptx,
                            "the simulator was given a CUBIN (an ELF file of SASS); it runs PTX only: load the module's PTX");
        }
        parser p(text);
        return p.run();
    }
}
