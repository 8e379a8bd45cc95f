// The declaration parser's kernels (declaration_parser.hpp): a __global__ declaration read into a
// kernel_signature, its parameters typed (make_parameter), template parameters, and the merge of a kernel
// declared and later defined. The scopes, records and types it uses are in declaration_parser.cpp.
#include "declaration_parser.hpp"

#include <algorithm>
#include <unordered_map>

#include "constant_expression.hpp"
#include "errors.hpp"
#include "source_lexer.hpp"

namespace xcuda::cxx
{
    namespace
    {
        // The '=' that starts a parameter's default value (at bracket depth 0 in [begin, end)), or end.
        std::size_t default_value_at(const std::vector<token>& toks, std::size_t begin, std::size_t end)
        {
            int depth = 0;
            for (std::size_t i = begin; i < end; ++i)
            {
                const token& t = toks[i];
                if (t.kind != token_kind::punct)
                {
                    continue;
                }
                if (t.text == "(" || t.text == "[" || t.text == "{" || t.text == "<")
                {
                    ++depth;
                }
                else if (t.text == ")" || t.text == "]" || t.text == "}" || t.text == ">")
                {
                    --depth;
                }
                else if (t.text == "=" && depth == 0)
                {
                    return i;
                }
            }
            return end;
        }

        // The element type of a parameter (what its pointer points to, or the value itself): `written` are
        // the declarator's levels with the first array extent as one more (less that one when `extents`,
        // the other extents, is not empty), `levels` the whole type's (an alias's first).
        std::string parameter_element_type(const declarator& d, const resolved_type& r, const std::string& base,
                                           std::vector<pointer_level> written,
                                           const std::vector<pointer_level>& levels, const std::string& extents)
        {
            if (!extents.empty())
            {
                std::string element = spell(false, d.base_volatile, base, written, written.size()) + extents;
                if (!written.empty())
                {
                    written.back() = pointer_level();
                    element = spell(d.base_const, d.base_volatile, base, written, written.size()) + extents;
                }
                return element;
            }
            if (!written.empty() || !d.dims.empty())
            {
                std::vector<pointer_level> w = d.levels;
                if (!d.dims.empty())
                {
                    w.emplace_back();
                }
                return pointee(d.base_const, d.base_volatile, base, w);
            }
            if (!levels.empty())
            {
                return pointee(r.base_const, false, r.spelling, levels);
            }
            return spell(false, d.base_volatile, base, written, 0);
        }

        // A parameter's type as written, whether it is a pointer, its kind, constness, size, layout and
        // element type, from its declarator d and its resolved base type r (with `base` its spelling).
        void type_parameter(const declarator& d, const resolved_type& r, const std::string& base, kernel_parameter& p)
        {
            // Arrays decay: the first extent becomes a pointer level, the others stay in the type.
            std::vector<pointer_level> written = d.levels;
            std::string extents;
            if (!d.dims.empty())
            {
                written.emplace_back();
                for (std::size_t i = 1; i < d.dims.size(); ++i)
                {
                    extents += "[" + d.dims[i] + "]";
                }
            }

            // The whole type: levels of an alias first, then the written ones.
            bool base_const = d.base_const;
            std::vector<pointer_level> levels = r.levels;
            if (!levels.empty())
            {
                levels.back().is_const = levels.back().is_const || d.base_const;
                base_const = r.base_const;
            }
            else
            {
                base_const = base_const || r.base_const;
            }
            levels.insert(levels.end(), written.begin(), written.end());

            if (extents.empty())
            {
                p.type = spell(d.base_const, d.base_volatile, base, written, written.size());
            }
            else
            {
                written.pop_back();
                p.type = spell(d.base_const, d.base_volatile, base, written, written.size()) + " (*)" + extents;
            }
            p.is_pointer = !levels.empty();
            p.kind = levels.size() <= 1 && extents.empty() ? r.kind : scalar_kind::unknown;
            if (levels.empty())
            {
                p.is_const = base_const;
            }
            else if (levels.size() == 1)
            {
                p.is_const = base_const;
            }
            else
            {
                p.is_const = levels[levels.size() - 2].is_const;
            }
            p.size = p.is_pointer ? 8 : r.size;
            if (levels.size() <= 1 && extents.empty())
            {
                p.layout = r.layout;
            }
            if (levels.empty() && extents.empty())
            {
                p.handle_object = r.handle;
            }
            p.element_type = parameter_element_type(d, r, base, written, levels, extents);
        }
    }

    kernel_parameter declaration_parser::make_parameter(std::size_t begin, std::size_t end,
                                                        const std::string& what) const
    {
        kernel_parameter p;
        std::size_t equals = default_value_at(m_toks, begin, end);
        if (equals != end)
        {
            if (equals + 1 == end)
            {
                throw signature_error(m_toks[equals].line, what + ": '=' without a default value");
            }
            p.default_value = join_as_written(m_toks, equals + 1, end);
        }
        declarator d = parse_declarator(begin, equals, what);
        p.name = d.name;
        int line = m_toks[begin].line;
        resolved_type r = resolve(d, line);
        std::string base = d.base_spelling();
        std::string doubt = doubt_in(begin, equals);
        if (doubt.empty())
        {
            doubt = r.doubt;
        }
        if (!doubt.empty())
        {
            // Typed as written, but with no kind, size or layout: a launch is refused (kernel_parameter::refusal).
            p.refusal = "its type depends on " + doubt +
                        ". Decide the condition for the reader: -D or -U on the %%cuda line, or a #define in the cell";
            r.kind = scalar_kind::unknown;
            r.size = 0;
            r.layout = nullptr;
        }

        if (!d.function_pointer.empty())
        {
            p.type = d.function_pointer;
            p.is_pointer = true;
            p.size = 8;
            return p;
        }
        if (d.builtin.size() == 1 && d.builtin[0] == "void" && d.levels.empty() && d.dims.empty())
        {
            throw signature_error(line, what + ": a parameter cannot have type void");
        }
        type_parameter(d, r, base, p);

        if (d.references != 0)
        {
            // A reference cannot be filled from the host; kept visible but without kind or size.
            p.type += d.references == 2 ? "&&" : "&";
            p.kind = scalar_kind::unknown;
            p.size = 0;
            p.layout = nullptr;
        }
        if (d.pack)
        {
            p.type += "...";
            p.kind = scalar_kind::unknown;
            p.size = 0;
            p.layout = nullptr;
        }
        return p;
    }

    // Reads the declaration whose `__global__` is at `global`; returns where to go on.
    std::size_t declaration_parser::parse_kernel(std::size_t statement, std::size_t global,
                                                 std::vector<found_kernel>& found)
    {
        found_kernel f;
        kernel_signature& k = f.signature;
        m_template_names.clear();
        read_kernel_prefix(statement, global, k);
        kernel_name where = find_kernel_name(global, k);
        name_kernel(where, global, k);
        read_kernel_parameters(where.open, where.close, k);
        f.definition = has_body(where.close);
        f.key = k.qualified_name + "<" + std::to_string(k.template_parameters.size()) + ">(";
        for (const kernel_parameter& p : k.parameters)
        {
            f.key += (p.is_pointer ? p.element_type + (p.is_const ? " const*" : "*") : p.element_type) + ",";
        }
        m_template_names.clear();
        found.push_back(std::move(f));
        return where.close + 1;
    }

    void declaration_parser::read_kernel_prefix(std::size_t statement, std::size_t global, kernel_signature& k)
    {
        bool template_seen = false;
        for (std::size_t j = statement; j < global; ++j)
        {
            if (is_identifier(m_toks[j], "template") && punct_at(j + 1, "<"))
            {
                std::size_t close = match_angle(j + 1, global);
                if (close == npos)
                {
                    throw signature_error(m_toks[j].line, "unbalanced '<' in the template header of a kernel");
                }
                if (!template_seen)
                {
                    template_seen = true;
                    read_template_parameters(j + 2, close, k);
                }
                j = close;
            }
            else if (is_identifier(m_toks[j], "extern") && j + 1 < global && m_toks[j + 1].kind == token_kind::string)
            {
                k.extern_c = k.extern_c || m_toks[j + 1].text == "\"C\"";
            }
        }
    }

    declaration_parser::kernel_name declaration_parser::find_kernel_name(std::size_t global, kernel_signature& k) const
    {
        kernel_name decl;
        int global_line = m_toks[global].line;
        std::size_t j = global + 1;
        const std::string no_name = "'__global__' is not followed by a function name";
        while (decl.close == npos)
        {
            if (j >= m_toks.size())
            {
                throw signature_error(global_line, no_name);
            }
            const token& t = m_toks[j];
            if (is_punct(t, ";") || is_punct(t, "{") || is_punct(t, "}") || is_punct(t, "="))
            {
                throw signature_error(global_line, no_name);
            }
            if (is_punct(t, "[") && punct_at(j + 1, "["))
            {
                j = match(j, m_toks.size(), "an attribute") + 1;
                continue;
            }
            if (is_identifier(t, "extern") && j + 1 < m_toks.size() && m_toks[j + 1].kind == token_kind::string)
            {
                k.extern_c = k.extern_c || m_toks[j + 1].text == "\"C\"";
                j += 2;
                continue;
            }
            if (t.kind == token_kind::identifier && is_attribute_call(t.text) && punct_at(j + 1, "("))
            {
                j = match(j + 1, m_toks.size(), "'" + t.text + "'") + 1;
                continue;
            }
            if (is_identifier(t, "__global__") && j != global)
            {
                ++j;
                continue;
            }
            if (t.kind == token_kind::identifier && punct_at(j + 1, "<"))
            {
                std::size_t c = match_angle(j + 1, m_toks.size());
                if (c != npos && punct_at(c + 1, "("))
                {
                    decl.name = j;  // an explicit specialization: f<float>(...)
                    decl.open = c + 1;
                }
                else
                {
                    j = c == npos ? j + 1 : c + 1;
                    continue;
                }
            }
            else if (t.kind == token_kind::identifier && punct_at(j + 1, "(") && builtin_words().count(t.text) == 0
                     && t.text != "const" && t.text != "volatile")
            {
                decl.name = j;
                decl.open = j + 1;
            }
            else if (is_punct(t, "("))
            {
                throw signature_error(t.line, "expected the kernel's name before '('");
            }
            else
            {
                ++j;
                continue;
            }
            decl.close = match(decl.open, m_toks.size(), "the parameter list of '" + m_toks[decl.name].text + "'");
            // MACRO(128) f(...): an attribute macro the source does not define. The real name
            // comes after its parentheses.
            const token* next = at(decl.close + 1);
            if (next != nullptr && next->kind == token_kind::identifier && !is_trailing_word(next->text)
                && (punct_at(decl.close + 2, "(") || punct_at(decl.close + 2, "::") || punct_at(decl.close + 2, "<")))
            {
                j = decl.close + 1;
                decl.close = npos;
            }
        }
        return decl;
    }

    void declaration_parser::name_kernel(const kernel_name& where, std::size_t global, kernel_signature& k) const
    {
        std::size_t name = where.name;
        k.name = m_toks[name].text;
        if (where.open != name + 1)
        {
            k.name += join_canonical(m_toks, name + 1, where.open);  // f<256>: an explicit instantiation
        }
        k.line = m_toks[name].line;
        std::size_t file = static_cast<std::size_t>(m_toks[name].file);
        k.file = file < m_files.size() ? m_files[file] : std::string();
        std::string qualifier;
        std::size_t q = name;
        while (q >= global + 2 && punct_at(q - 1, "::") && identifier_at(q - 2))
        {
            qualifier = m_toks[q - 2].text + "::" + qualifier;
            q -= 2;
        }
        bool global_scope = q >= global + 2 && punct_at(q - 1, "::");
        std::string prefix;
        int linkage = -1;
        for (const scope& s : m_scopes)
        {
            if (s.is_namespace)
            {
                for (const std::string& n : s.names)
                {
                    prefix += n + "::";
                }
            }
            if (s.linkage != -1)
            {
                linkage = s.linkage;
            }
        }
        k.qualified_name = (global_scope ? "" : prefix) + qualifier + k.name;
        k.extern_c = k.extern_c || linkage == 1;
    }

    void declaration_parser::read_kernel_parameters(std::size_t open, std::size_t close, kernel_signature& k) const
    {
        std::size_t pbegin = open + 1;
        std::size_t pend = close;
        if (pend == pbegin || (pend == pbegin + 1 && is_identifier(m_toks[pbegin], "void")))
        {
            return;
        }
        auto parts = split(pbegin, pend, true);
        for (std::size_t i = 0; i < parts.size(); ++i)
        {
            std::string what = "parameter " + std::to_string(i + 1) + " of '" + k.name + "'";
            if (parts[i].first == parts[i].second)
            {
                std::size_t at_token = parts[i].first < pend ? parts[i].first : pend;
                throw signature_error(m_toks[at_token].line, what + " is empty");
            }
            k.parameters.push_back(make_parameter(parts[i].first, parts[i].second, what));
        }
    }

    bool declaration_parser::has_body(std::size_t close) const
    {
        // A definition has its body after the declarator (and after noexcept, attributes...).
        int depth = 0;
        for (std::size_t i = close + 1; i < m_toks.size(); ++i)
        {
            const token& t = m_toks[i];
            if (is_punct(t, "("))
            {
                ++depth;
            }
            else if (is_punct(t, ")"))
            {
                --depth;
            }
            else if (depth <= 0 && (is_punct(t, ";") || is_punct(t, "}") || is_identifier(t, "__global__")))
            {
                return false;
            }
            else if (depth <= 0 && is_punct(t, "{"))
            {
                return true;
            }
        }
        return false;
    }

    bool declaration_parser::is_trailing_word(const std::string& w)
    {
        return w == "noexcept" || w == "throw" || w == "const" || w == "volatile" || w == "override"
               || w == "final" || w == "requires" || w == "try" || w == "mutable" || is_attribute_call(w);
    }

    void declaration_parser::read_template_parameters(std::size_t begin, std::size_t end, kernel_signature& k)
    {
        if (begin >= end)
        {
            return;  // template <>: an explicit specialization
        }
        for (const auto& part : split(begin, end, true))
        {
            if (part.first == part.second)
            {
                throw signature_error(line_at(part.first), "empty template parameter");
            }
            k.template_parameters.push_back(join_as_written(m_toks, part.first, part.second));
            int angle = 0;
            std::string last;
            for (std::size_t i = part.first; i < part.second; ++i)
            {
                const token& t = m_toks[i];
                if (is_punct(t, "<"))
                {
                    ++angle;
                }
                else if (is_punct(t, ">"))
                {
                    --angle;
                }
                else if (is_punct(t, "=") && angle == 0)
                {
                    break;
                }
                else if (angle == 0 && t.kind == token_kind::identifier && builtin_words().count(t.text) == 0
                         && t.text != "typename" && t.text != "class" && t.text != "const")
                {
                    last = t.text;
                }
            }
            if (!last.empty())
            {
                m_template_names.insert(last);
            }
        }
    }

    // A kernel declared and later defined is one kernel: the definition's names and line win,
    // the declaration's default arguments are kept.
    std::vector<kernel_signature> declaration_parser::merge(std::vector<found_kernel>& found)
    {
        std::vector<found_kernel> kept;
        std::unordered_map<std::string, std::size_t> index;
        for (found_kernel& f : found)
        {
            auto known = index.find(f.key);
            if (known == index.end())
            {
                index.emplace(f.key, kept.size());
                kept.push_back(std::move(f));
                continue;
            }
            found_kernel* same = &kept[known->second];
            bool take_new = f.definition && !same->definition;
            kernel_signature& old_sig = same->signature;
            kernel_signature& new_sig = f.signature;
            kernel_signature& winner = take_new ? new_sig : old_sig;
            kernel_signature& other = take_new ? old_sig : new_sig;
            for (std::size_t i = 0; i < winner.parameters.size() && i < other.parameters.size(); ++i)
            {
                kernel_parameter& w = winner.parameters[i];
                const kernel_parameter& o = other.parameters[i];
                if (w.name.empty())
                {
                    w.name = o.name;
                }
                if (w.default_value.empty())
                {
                    w.default_value = o.default_value;
                }
            }
            if (winner.template_parameters.empty())
            {
                winner.template_parameters = other.template_parameters;
            }
            winner.extern_c = winner.extern_c || other.extern_c;
            if (take_new)
            {
                same->signature = std::move(new_sig);
                same->definition = true;
            }
        }
        std::vector<kernel_signature> out;
        out.reserve(kept.size());
        for (found_kernel& f : kept)
        {
            out.push_back(std::move(f.signature));
        }
        return out;
    }
}
