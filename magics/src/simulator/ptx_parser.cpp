#include "ptx_parser.hpp"

#include "ptx_decoder.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <functional>
#include <tuple>
#include <set>
#include <unordered_map>

namespace xcuda::sim
{
    namespace
    {
        struct token
        {
            enum class kind
            {
                ident,
                number,
                string,
                punct,
                end
            };
            kind what = kind::end;
            std::string text;
            int line = 0;
        };

        std::vector<token> tokenize(const std::string& s)
        {
            std::vector<token> out;
            int line = 1;
            std::size_t i = 0, n = s.size();
            auto ident_char = [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
            };
            while (i < n)
            {
                char c = s[i];
                if (c == '\n')
                {
                    ++line;
                    ++i;
                }
                else if (std::isspace(static_cast<unsigned char>(c)))
                {
                    ++i;
                }
                else if (c == '/' && i + 1 < n && s[i + 1] == '/')
                {
                    while (i < n && s[i] != '\n')
                    {
                        ++i;
                    }
                }
                else if (c == '/' && i + 1 < n && s[i + 1] == '*')
                {
                    i += 2;
                    while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
                    {
                        line += s[i] == '\n';
                        ++i;
                    }
                    i += 2;
                }
                else if (c == '"')
                {
                    std::size_t start = ++i;
                    while (i < n && s[i] != '"')
                    {
                        ++i;
                    }
                    out.push_back({token::kind::string, s.substr(start, i - start), line});
                    ++i;
                }
                else if (std::isdigit(static_cast<unsigned char>(c)))
                {
                    std::size_t start = i;
                    while (i < n && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.'))
                    {
                        ++i;
                    }
                    out.push_back({token::kind::number, s.substr(start, i - start), line});
                }
                else if (ident_char(c))
                {
                    std::size_t start = i;
                    while (i < n && (ident_char(s[i]) || (s[i] == ':' && i + 1 < n && s[i + 1] == ':')))
                    {
                        i += s[i] == ':' ? 2 : 1;
                    }
                    out.push_back({token::kind::ident, s.substr(start, i - start), line});
                }
                else
                {
                    out.push_back({token::kind::punct, std::string(1, c), line});
                    ++i;
                }
            }
            out.push_back({token::kind::end, "", line});
            return out;
        }

        std::uint64_t align_up(std::uint64_t value, std::uint64_t align)
        {
            return align <= 1 ? value : (value + align - 1) / align * align;
        }

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

        // A literal as written: an integer, or the bits of a 0f (f32) / 0d (f64) float.
        struct literal
        {
            char kind = 'i';  // 'i', 'f' (f32 bits), 'd' (f64 bits)
            std::uint64_t bits = 0;
        };

        class parser
        {
        public:
            explicit parser(const std::string& text) : m_tokens(tokenize(text)) {}

            ptx_program run()
            {
                while (peek().what != token::kind::end)
                {
                    top_level();
                }
                for (auto& [function_index, pc, name] : m_call_fixups)
                {
                    int callee = m_program.find_function(name);
                    instruction& in = m_program.functions[function_index].code[pc];
                    if (callee < 0)
                    {
                        fail_at(0, "call of '" + name + "', a function this module does not define");
                    }
                    in.callee = callee;
                }
                for (ptx_symbol& symbol : m_program.symbols)
                {
                    if (symbol.dynamic_shared)
                    {
                        symbol.offset = align_up(m_program.static_shared_bytes, m_program.dynamic_shared_align);
                    }
                }
                for (ptx_function& f : m_program.functions)
                {
                    ptx_program::compute_reconvergence(f);
                }
                return std::move(m_program);
            }

        private:
            // ---- tokens ----
            const token& peek(std::size_t ahead = 0) const
            {
                std::size_t i = std::min(m_at + ahead, m_tokens.size() - 1);
                return m_tokens[i];
            }
            const token& next()
            {
                const token& t = peek();
                if (m_at < m_tokens.size() - 1)
                {
                    ++m_at;
                }
                return t;
            }
            bool accept(const char* text)
            {
                if (peek().what != token::kind::end && peek().what != token::kind::string && peek().text == text)
                {
                    next();
                    return true;
                }
                return false;
            }
            void expect(const char* text)
            {
                if (!accept(text))
                {
                    fail("expected '" + std::string(text) + "'");
                }
            }
            [[noreturn]] void fail(const std::string& what) const
            {
                const token& t = peek();
                fail_at(t.line, what + (t.what == token::kind::end ? " at the end of the text" : ", found '" + t.text + "'"));
            }
            [[noreturn]] static void fail_at(int line, const std::string& what)
            {
                throw sim_error(sim_error::kind::invalid_ptx,
                                "the simulator cannot read this PTX" +
                                    (line > 0 ? " (PTX line " + std::to_string(line) + ")" : std::string()) + ": " + what);
            }
            void skip_line(int line)
            {
                while (peek().what != token::kind::end && peek().line == line)
                {
                    next();
                }
            }
            std::string identifier()
            {
                if (peek().what != token::kind::ident)
                {
                    fail("expected a name");
                }
                return next().text;
            }
            std::uint64_t integer()
            {
                bool negative = accept("-");
                if (peek().what != token::kind::number)
                {
                    fail("expected a number");
                }
                literal value = number(next().text, peek().line);
                return negative ? ~value.bits + 1 : value.bits;
            }
            static literal number(const std::string& text, int line)
            {
                literal value;
                std::string t = text;
                if (!t.empty() && (t.back() == 'U' || t.back() == 'u'))
                {
                    t.pop_back();
                }
                try
                {
                    if (t.size() > 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F') && t.size() == 10)
                    {
                        value.kind = 'f';
                        value.bits = std::stoull(t.substr(2), nullptr, 16);
                    }
                    else if (t.size() > 2 && t[0] == '0' && (t[1] == 'd' || t[1] == 'D') && t.size() == 18)
                    {
                        value.kind = 'd';
                        value.bits = std::stoull(t.substr(2), nullptr, 16);
                    }
                    else if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
                    {
                        value.bits = std::stoull(t.substr(2), nullptr, 16);
                    }
                    else if (t.find('.') != std::string::npos || t.find('e') != std::string::npos)
                    {
                        double d = std::stod(t);
                        value.kind = 'd';
                        std::memcpy(&value.bits, &d, 8);
                    }
                    else if (t.size() > 1 && t[0] == '0')
                    {
                        value.bits = std::stoull(t, nullptr, 8);
                    }
                    else
                    {
                        value.bits = std::stoull(t, nullptr, 10);
                    }
                }
                catch (const std::exception&)
                {
                    fail_at(line, "'" + text + "' is not a number");
                }
                return value;
            }

            // ---- module level ----
            void top_level()
            {
                const token& t = peek();
                int line = t.line;
                if (t.what != token::kind::ident)
                {
                    fail("expected a directive");
                }
                std::string word = t.text;
                if (word == ".version")
                {
                    next();
                    m_program.version = next().text;
                }
                else if (word == ".target")
                {
                    next();
                    m_program.target = identifier();
                    while (accept(","))
                    {
                        std::string feature = identifier();
                        if (feature == "texmode_independent" || feature == "map_f64_to_f32")
                        {
                            fail_at(line, ".target " + feature + " is not supported by the simulator");
                        }
                    }
                }
                else if (word == ".address_size")
                {
                    next();
                    if (integer() != 64)
                    {
                        fail_at(line, "the simulator runs only .address_size 64");
                    }
                }
                else if (word == ".file")
                {
                    next();
                    int index = static_cast<int>(integer());
                    if (peek().what == token::kind::string)
                    {
                        m_program.files[index] = next().text;
                    }
                    skip_line(line);
                }
                else if (word == ".visible" || word == ".extern" || word == ".weak" || word == ".common")
                {
                    next();
                    m_extern = word == ".extern";
                    top_level();
                    m_extern = false;
                }
                else if (word == ".entry" || word == ".func")
                {
                    next();
                    function(word == ".entry");
                }
                else if (word == ".global" || word == ".const" || word == ".shared")
                {
                    next();
                    variable(word == ".global" ? state_space::global : word == ".const" ? state_space::constant : state_space::shared, -1);
                }
                else if (word == ".pragma")
                {
                    while (!accept(";"))
                    {
                        next();
                    }
                }
                else if (word == ".section")
                {
                    // Debug information (.debug_str, .debug_info with -G): nothing the simulator runs.
                    next();
                    identifier();
                    expect("{");
                    for (int depth = 1; depth > 0;)
                    {
                        const token& t = next();
                        if (t.what == token::kind::end)
                        {
                            fail("a .section that never ends");
                        }
                        depth += t.what == token::kind::punct && t.text == "{" ? 1 : t.what == token::kind::punct && t.text == "}" ? -1 : 0;
                    }
                }
                else
                {
                    fail("the directive is not one the simulator knows");
                }
            }

            // [.align N] [.v2|.v4] .type name[N]... [= initialiser] ;  (the space is already read)
            void variable(state_space space, int function_index)
            {
                int line = peek().line;
                ptx_symbol symbol;
                symbol.space = space;
                symbol.function = function_index;
                ptx_type type;
                bool typed = false;
                unsigned vector = 1;
                while (peek().what == token::kind::ident && peek().text[0] == '.')
                {
                    std::string attribute = next().text.substr(1);
                    if (attribute == "align")
                    {
                        symbol.align = static_cast<std::uint32_t>(integer());
                    }
                    else if (attribute == "v2" || attribute == "v4")
                    {
                        vector = attribute == "v2" ? 2 : 4;
                    }
                    else if (parse_type_name(attribute, type))
                    {
                        typed = true;
                    }
                    else if (attribute == "ptr" || attribute == "global" || attribute == "shared" || attribute == "const" ||
                             attribute == "local")
                    {
                        // .param .u64 .ptr .global .align 1 name: an attribute of an entry's pointer
                    }
                    else
                    {
                        fail_at(line, "the variable attribute ." + attribute + " is not supported by the simulator");
                    }
                }
                if (!typed)
                {
                    fail_at(line, "a variable without a type");
                }
                symbol.name = identifier();
                std::uint64_t elements = 1;
                bool unsized = false;
                while (accept("["))
                {
                    if (accept("]"))
                    {
                        unsized = true;
                        continue;
                    }
                    elements *= integer();
                    expect("]");
                }
                std::uint64_t element_bytes = type.bytes() * vector;
                symbol.size = elements * element_bytes;
                if (symbol.align < element_bytes && vector == 1)
                {
                    symbol.align = static_cast<std::uint32_t>(type.bytes());
                }
                if (accept("="))
                {
                    if (space != state_space::global && space != state_space::constant)
                    {
                        fail_at(line, "an initialiser on a ." + std::string(space_name(space)) + " variable");
                    }
                    symbol.initial.assign(symbol.size, 0);
                    std::uint64_t at = 0;
                    std::function<void()> values = [&] {
                        if (accept("{"))
                        {
                            do
                            {
                                values();
                            } while (accept(","));
                            expect("}");
                            return;
                        }
                        bool negative = accept("-");
                        if (peek().what != token::kind::number)
                        {
                            fail_at(line, "an initialiser of '" + symbol.name +
                                              "' that is not a number (addresses of variables are not supported)");
                        }
                        literal value = number(next().text, line);
                        std::uint64_t bits = negative ? ~value.bits + 1 : value.bits;
                        if (type.is_float() && value.kind == 'i')
                        {
                            double d = negative ? -static_cast<double>(value.bits) : static_cast<double>(value.bits);
                            if (type.bits == 32)
                            {
                                float f = static_cast<float>(d);
                                std::uint32_t b;
                                std::memcpy(&b, &f, 4);
                                bits = b;
                            }
                            else
                            {
                                std::memcpy(&bits, &d, 8);
                            }
                        }
                        if (at + type.bytes() > symbol.initial.size())
                        {
                            fail_at(line, "the initialiser of '" + symbol.name + "' has more values than the variable holds");
                        }
                        std::memcpy(symbol.initial.data() + at, &bits, type.bytes());
                        at += type.bytes();
                    };
                    values();
                }
                expect(";");
                if (space == state_space::shared)
                {
                    if (unsized || (m_extern && symbol.size == 0))
                    {
                        symbol.dynamic_shared = true;
                        symbol.size = 0;
                        m_program.dynamic_shared_align = std::max(m_program.dynamic_shared_align, symbol.align);
                    }
                    else
                    {
                        symbol.offset = align_up(m_program.static_shared_bytes, symbol.align);
                        m_program.static_shared_bytes = symbol.offset + symbol.size;
                    }
                }
                else if (space == state_space::local)
                {
                    ptx_function& f = m_program.functions[static_cast<std::size_t>(function_index)];
                    symbol.offset = align_up(f.local_bytes, symbol.align);
                    f.local_bytes = static_cast<std::uint32_t>(symbol.offset + symbol.size);
                }
                else if (space == state_space::func_param)
                {
                    ptx_function& f = m_program.functions[static_cast<std::size_t>(function_index)];
                    symbol.offset = align_up(f.frame_bytes, std::max<std::uint32_t>(symbol.align, 1));
                    f.frame_bytes = static_cast<std::uint32_t>(symbol.offset + symbol.size);
                }
                else if (space == state_space::param)
                {
                    ptx_function& f = m_program.functions[static_cast<std::size_t>(function_index)];
                    symbol.offset = align_up(f.param_bytes, std::max<std::uint32_t>(symbol.align, 1));
                    f.param_bytes = static_cast<std::uint32_t>(symbol.offset + symbol.size);
                }
                else if (m_extern && unsized)
                {
                    fail_at(line, "the extern variable '" + symbol.name + "' is defined in no module the simulator has");
                }
                add_symbol(std::move(symbol));
            }

            int add_symbol(ptx_symbol symbol)
            {
                int index = static_cast<int>(m_program.symbols.size());
                if (symbol.function < 0)
                {
                    m_module_scope[symbol.name] = index;
                }
                else
                {
                    m_function_scope[symbol.name] = index;
                }
                m_program.symbols.push_back(std::move(symbol));
                return index;
            }

            int find_symbol(const std::string& name) const
            {
                auto it = m_function_scope.find(name);
                if (it != m_function_scope.end())
                {
                    return it->second;
                }
                it = m_module_scope.find(name);
                return it == m_module_scope.end() ? -1 : it->second;
            }

            // A parameter list: ( .param ... name, ... ), each laid out in the function's parameter area.
            std::vector<int> parameters(int function_index, bool entry)
            {
                std::vector<int> list;
                expect("(");
                if (accept(")"))
                {
                    return list;
                }
                do
                {
                    if (!accept(".param"))
                    {
                        fail("expected .param");
                    }
                    std::size_t before = m_program.symbols.size();
                    variable_in_list(entry ? state_space::param : state_space::func_param, function_index);
                    list.push_back(static_cast<int>(before));
                } while (accept(","));
                expect(")");
                return list;
            }

            // As variable(), for a parameter (ends at ',' or ')' instead of ';').
            void variable_in_list(state_space space, int function_index)
            {
                // Reuse variable() by reading up to the name, then faking the terminator.
                std::size_t start = m_at;
                int depth = 0;
                std::size_t end = start;
                while (true)
                {
                    const token& t = m_tokens[end];
                    if (t.what == token::kind::end)
                    {
                        fail("an unterminated parameter list");
                    }
                    if (t.what == token::kind::punct && t.text == "[")
                    {
                        ++depth;
                    }
                    if (t.what == token::kind::punct && t.text == "]")
                    {
                        --depth;
                    }
                    if (depth == 0 && t.what == token::kind::punct && (t.text == "," || t.text == ")"))
                    {
                        break;
                    }
                    ++end;
                }
                token saved = m_tokens[end];
                m_tokens[end] = {token::kind::punct, ";", saved.line};
                variable(space, function_index);
                --m_at;
                m_tokens[end] = saved;
            }

            void function(bool entry)
            {
                int line = peek().line;
                ptx_function f;
                f.entry = entry;
                int index = static_cast<int>(m_program.functions.size());
                m_function_scope.clear();
                m_registers.clear();
                m_register_bits.clear();
                // A function declared before (a prototype) and now defined reuses its slot.
                m_program.functions.push_back(f);
                std::vector<int> results;
                if (!entry && peek().text == "(")
                {
                    results = parameters(index, false);
                }
                std::string name = identifier();
                int earlier = m_program.find_function(name);
                if (earlier >= 0 && earlier != index)
                {
                    // Drop the new slot; define the declared one. Its symbols were made for the new index.
                    for (int r : results)
                    {
                        m_program.symbols[static_cast<std::size_t>(r)].function = earlier;
                    }
                    m_program.functions.pop_back();
                    index = earlier;
                    m_program.functions[static_cast<std::size_t>(index)].frame_bytes = 0;
                    for (int r : results)
                    {
                        ptx_symbol& s = m_program.symbols[static_cast<std::size_t>(r)];
                        s.offset = 0;
                        m_program.functions[static_cast<std::size_t>(index)].frame_bytes = static_cast<std::uint32_t>(s.size);
                    }
                }
                ptx_function& target = m_program.functions[static_cast<std::size_t>(index)];
                target.name = name;
                target.entry = entry;
                if (results.size() > 1)
                {
                    fail_at(line, "a function with more than one return value");
                }
                target.result = results.empty() ? -1 : results[0];
                if (peek().text == "(")
                {
                    target.params = parameters(index, entry);
                }
                else
                {
                    target.params.clear();
                }
                // Performance directives: .maxntid 256, 1, 1 / .reqntid / .minnctapersm / .maxnreg / .noreturn
                while (peek().what == token::kind::ident && peek().text[0] == '.')
                {
                    std::string directive = next().text;
                    std::uint64_t threads = 1;
                    std::vector<std::uint32_t> numbers;
                    while (peek().what == token::kind::number || peek().text == ",")
                    {
                        const std::string number = next().text;
                        if (number != ",")
                        {
                            threads *= std::strtoull(number.c_str(), nullptr, 0);
                            numbers.push_back(static_cast<std::uint32_t>(std::strtoull(number.c_str(), nullptr, 0)));
                        }
                    }
                    if (directive == ".maxntid" || directive == ".reqntid")
                    {
                        m_program.functions[static_cast<std::size_t>(index)].max_threads = static_cast<std::uint32_t>(threads);
                    }
                    else if (directive == ".reqnctapercluster")  // __cluster_dims__(x, y, z)
                    {
                        auto& cluster = m_program.functions[static_cast<std::size_t>(index)].cluster_dims;
                        for (std::size_t i = 0; i < 3; ++i)
                        {
                            cluster[i] = i < numbers.size() ? numbers[i] : 1;
                        }
                    }
                }
                if (accept(";"))
                {
                    return;  // a declaration
                }
                expect("{");
                const std::size_t opening = m_at - 1;
                try
                {
                    body(index);
                }
                catch (const sim_error& e)
                {
                    refuse_body(index, opening, e);
                    return;
                }
                ptx_function& done = m_program.functions[static_cast<std::size_t>(index)];
                done.has_body = true;
                done.register_count = static_cast<std::uint32_t>(m_registers.size());
                done.register_bits = m_register_bits;
                done.register_names.assign(m_registers.size(), std::string());
                for (const auto& [name, register_index] : m_registers)
                {
                    done.register_names[static_cast<std::size_t>(register_index)] = name;
                }
                for (auto& [pc, slot, label] : m_label_fixups)
                {
                    auto it = done.labels.find(label);
                    if (it == done.labels.end())
                    {
                        fail_at(done.code[pc].line, "a branch to '" + label + "', a label " + done.name + " does not have");
                    }
                    done.code[pc].operands[slot].value = it->second;
                }
                m_label_fixups.clear();
            }

            // A body the parser cannot read: the function is kept, refused (ptx_function::refused names the PTX
            // line, its text and the source line of the last .loc), and reading goes on after its closing brace,
            // so that the module's other kernels load and run.
            void refuse_body(int index, std::size_t opening, const sim_error& e)
            {
                const int line = m_tokens[std::min(m_at, m_tokens.size() - 1)].line;
                std::string text;
                for (const token& t : m_tokens)
                {
                    text += t.line == line && t.what != token::kind::end ? (text.empty() ? "" : " ") + t.text : "";
                }
                ptx_function& f = m_program.functions[static_cast<std::size_t>(index)];
                f.refused = std::string(e.what()) + (text.empty() ? "" : ", at '" + text + "'");
                f.refused_line = m_line;  // the file is named once known: NVRTC writes .file after the functions
                f.refused_file = m_file;
                f.code.clear();
                f.labels.clear();
                f.has_body = true;
                m_label_fixups.clear();
                m_call_fixups.erase(std::remove_if(m_call_fixups.begin(), m_call_fixups.end(),
                                                   [&](const auto& fixup) { return std::get<0>(fixup) == index; }),
                                    m_call_fixups.end());
                m_at = opening;  // to the brace that matches the body's opening one
                for (int depth = 0; m_tokens[m_at].what != token::kind::end;)
                {
                    const token& t = m_tokens[m_at++];
                    depth += t.what == token::kind::punct ? (t.text == "{") - (t.text == "}") : 0;
                    if (depth == 0)
                    {
                        return;
                    }
                }
                throw e;  // a body that never ends: the module cannot be read past it
            }

            void body(int index)
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
                        m_program.uses_reserved_shared |= special->second >= special_register::reserved_smem_begin;
                        return o;
                    }
                    auto it = m_registers.find(name);
                    if (it == m_registers.end())
                    {
                        if (name.rfind("%pm", 0) == 0 || name.rfind("%cluster", 0) == 0 ||
                            name.rfind("%nclusterid", 0) == 0 || name.rfind("%clusterid", 0) == 0 || name.rfind("%is_explicit_cluster", 0) == 0)
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


            std::vector<token> m_tokens;
            std::size_t m_at = 0;
            ptx_program m_program;
            bool m_extern = false;
            std::unordered_map<std::string, int> m_module_scope;
            std::unordered_map<std::string, int> m_function_scope;
            std::unordered_map<std::string, int> m_registers;
            std::vector<std::uint8_t> m_register_bits;  // by register index
            std::vector<std::tuple<std::uint32_t, std::size_t, std::string>> m_label_fixups;
            std::vector<std::tuple<int, std::uint32_t, std::string>> m_call_fixups;
            std::string m_callee_name;
            std::uint32_t m_line = 0;
            std::uint8_t m_file = 0;
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
