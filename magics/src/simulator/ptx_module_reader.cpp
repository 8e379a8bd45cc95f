#include "ptx_module_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>

namespace xcuda::sim
{
    namespace
    {
        std::uint64_t align_up(std::uint64_t value, std::uint64_t align)
        {
            return align <= 1 ? value : (value + align - 1) / align * align;
        }
    }

    std::vector<ptx_module_reader::token> ptx_module_reader::tokenize(const std::string& s)
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

    ptx_module_reader::ptx_module_reader(const std::string& text) : m_tokens(tokenize(text)) {}

    ptx_program ptx_module_reader::run()
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

    std::uint64_t ptx_module_reader::integer()
    {
        bool negative = accept("-");
        if (peek().what != token::kind::number)
        {
            fail("expected a number");
        }
        literal value = number(next().text, peek().line);
        return negative ? ~value.bits + 1 : value.bits;
    }

    ptx_module_reader::literal ptx_module_reader::number(const std::string& text, int line)
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

    void ptx_module_reader::top_level()
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

    void ptx_module_reader::variable(state_space space, int function_index)
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

    int ptx_module_reader::add_symbol(ptx_symbol symbol)
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

    int ptx_module_reader::find_symbol(const std::string& name) const
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
    std::vector<int> ptx_module_reader::parameters(int function_index, bool entry)
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
    void ptx_module_reader::variable_in_list(state_space space, int function_index)
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

    void ptx_module_reader::function(bool entry)
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
            else if (directive == ".maxclusterrank" && !numbers.empty())  // __launch_bounds__(t, b, most blocks per cluster)
            {
                m_program.functions[static_cast<std::size_t>(index)].max_cluster_rank = numbers[0];
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
    void ptx_module_reader::refuse_body(int index, std::size_t opening, const sim_error& e)
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
}
