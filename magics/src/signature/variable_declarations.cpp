// The declaration parser's module variables (declaration_parser.hpp): __constant__, __device__ and
// __managed__ declarations read into module_variable entries (type, extents, the symbol the compiler
// gives them). The scopes, records and types it uses are in declaration_parser.cpp.
#include "declaration_parser.hpp"

#include <algorithm>

#include "constant_expression.hpp"
#include "errors.hpp"
#include "source_lexer.hpp"

namespace xcuda::cxx
{
    std::size_t declaration_parser::parse_variable(std::size_t statement, std::size_t at)
    {
        for (const scope& s : m_scopes)
        {
            if (!s.is_namespace && s.linkage == -1)
            {
                return at + 1;  // in a record, a function body or another brace: not a module variable
            }
        }
        // The end of the statement, and whether it declares a function: a '(' before any '=' or '{'.
        std::size_t end = npos;
        std::size_t cut = npos;
        int depth = 0;
        for (std::size_t j = statement; j < m_toks.size(); ++j)
        {
            const token& t = m_toks[j];
            if (t.kind != token_kind::punct)
            {
                if (j < at && t.kind == token_kind::identifier && (t.text == "template" || t.text == "extern" ||
                                                                 t.text == "__shared__" || t.text == "typedef"))
                {
                    return at + 1;
                }
                if (depth == 0 && cut == npos && j > at && t.kind == token_kind::identifier &&
                    (t.text == "__shared__" || t.text == "__global__"))
                {
                    return at + 1;
                }
                continue;
            }
            if (depth == 0 && cut == npos && t.text == "(" && j > at && !(j > 0 && is_attribute_call(m_toks[j - 1].text)))
            {
                return at + 1;  // a __device__ function (or a call-style initializer, not read)
            }
            if (t.text == "(" || t.text == "[" || t.text == "{")
            {
                if (depth == 0 && t.text == "{" && cut == npos)
                {
                    cut = j;  // `int x{3};`
                }
                ++depth;
            }
            else if (t.text == ")" || t.text == "]" || t.text == "}")
            {
                if (--depth < 0)
                {
                    return at + 1;
                }
            }
            else if (depth == 0 && t.text == "=" && cut == npos)
            {
                cut = j;
            }
            else if (depth == 0 && t.text == ";")
            {
                end = j;
                break;
            }
        }
        if (end == npos)
        {
            return at + 1;
        }
        if (cut == npos)
        {
            cut = end;
        }
        std::string space = "__device__";
        std::size_t begin = statement;
        for (std::size_t j = statement; j < cut; ++j)
        {
            const token& t = m_toks[j];
            if (is_identifier(t, "__constant__"))
                space = "__constant__";
            else if (is_identifier(t, "__managed__"))
                space = "__managed__";
        }
        // Leading words that say where the variable lives, not what it is.
        while (begin < cut && m_toks[begin].kind == token_kind::identifier &&
               (m_toks[begin].text == "static" || m_toks[begin].text == "__device__" ||
                m_toks[begin].text == "__constant__" || m_toks[begin].text == "__managed__" ||
                m_toks[begin].text == "constexpr" || m_toks[begin].text == "inline" ||
                m_toks[begin].text == "__host__" || m_toks[begin].text == "volatile"))
        {
            ++begin;
        }
        // Each declarator without its initializer: `__device__ int a = 1, b[2] = {3, 4};` is a and b.
        auto without_initializer = [&](std::pair<std::size_t, std::size_t> part) {
            int nesting = 0;
            for (std::size_t j = part.first; j < part.second; ++j)
            {
                const token& t = m_toks[j];
                if (t.kind != token_kind::punct)
                    continue;
                if (t.text == "(" || t.text == "[")
                    ++nesting;
                else if (t.text == ")" || t.text == "]")
                    --nesting;
                else if (nesting == 0 && (t.text == "=" || t.text == "{"))
                    return std::make_pair(part.first, j);
            }
            return part;
        };
        try
        {
            auto parts = split(begin, end, true);
            auto first_part = without_initializer(parts[0]);
            declarator first = parse_declarator(first_part.first, first_part.second, "a module variable");
            add_variable(first, space, line_at(first_part.first), m_toks[at].file);
            for (std::size_t p = 1; p < parts.size(); ++p)
            {
                auto part = without_initializer(parts[p]);
                add_variable(next_declarator(first, part.first, part.second), space, line_at(part.first),
                             m_toks[at].file);
            }
        }
        catch (const signature_error&)
        {
            // A declaration the reader cannot follow: get_global says the variable is not known.
        }
        return end + 1;
    }

    void declaration_parser::add_variable(const declarator& d, const std::string& space, int line, std::size_t file)
    {
        if (d.name.empty() || d.references != 0 || d.pack)
        {
            return;
        }
        module_variable v;
        v.name = d.name;
        v.qualified_name = qualified(d.name);
        v.space = space;
        v.line = line;
        v.file = file < m_files.size() ? m_files[file] : std::string();
        v.is_const = d.base_const;
        if (!d.function_pointer.empty() || !d.levels.empty())
        {
            v.is_pointer = true;
            v.layout = pointer_layout();
            v.type = d.function_pointer.empty() ? spell(d.base_const, d.base_volatile, d.base_spelling(), d.levels,
                                                        d.levels.size())
                                                : d.function_pointer;
        }
        else
        {
            v.type = d.base_spelling();
            try
            {
                resolved_type r = resolve(d, line);
                if (!r.levels.empty())
                {
                    v.is_pointer = true;
                    v.layout = pointer_layout();
                }
                else
                {
                    v.layout = r.layout;
                }
            }
            catch (const signature_error&)
            {
            }
        }
        for (const std::string& dim : d.dims)
        {
            constant_value value = evaluate_constant(dim);
            if (value.kind != constant_value::type::integer || value.value <= 0 || value.value > (1LL << 32))
            {
                v.layout = nullptr;  // an extent the reader cannot evaluate: the size is unknown
                v.extents.push_back(0);
                continue;
            }
            v.extents.push_back(static_cast<std::size_t>(value.value));
        }
        // The symbol: at global scope the name itself (C++ does not mangle those); inside namespaces
        // _ZN <length><name>... E, the Itanium mangling of a namespace-scope variable.
        std::vector<std::string> names;
        for (const scope& s : m_scopes)
        {
            names.insert(names.end(), s.names.begin(), s.names.end());
        }
        if (names.empty())
        {
            v.symbol = v.name;
        }
        else
        {
            v.symbol = "_ZN";
            for (const std::string& n : names)
            {
                v.symbol += std::to_string(n.size()) + n;
            }
            v.symbol += std::to_string(v.name.size()) + v.name + "E";
        }
        m_variables.push_back(std::move(v));
    }
}
