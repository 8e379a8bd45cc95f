#include "declarator_reader.hpp"

#include <algorithm>

#include "constant_expression.hpp"
#include "errors.hpp"

namespace xcuda::cxx
{
    namespace
    {
    }

    declarator_reader::declarator_reader(std::vector<token> toks)
        : m_toks(std::move(toks))
    {
    }

    bool declarator_reader::is_ignored_qualifier(const std::string& w)
    {
        return w == "__restrict__" || w == "__restrict" || w == "restrict" || w == "__grid_constant__"
               || w == "register" || w == "__device__" || w == "__constant__" || w == "mutable"
               || w == "__device_builtin__";
    }

    bool declarator_reader::is_attribute_call(const std::string& w)
    {
        return w == "__launch_bounds__" || w == "__attribute__" || w == "__declspec" || w == "__cluster_dims__"
               || w == "__maxnreg__" || w == "__align__" || w == "alignas" || w == "__launch_bounds"
               || w == "__block_size__" || w == "_Pragma" || w == "__pragma";
    }

    const token* declarator_reader::at(std::size_t i) const
    {
        return i < m_toks.size() ? &m_toks[i] : nullptr;
    }

    bool declarator_reader::punct_at(std::size_t i, const char* text) const
    {
        return i < m_toks.size() && is_punct(m_toks[i], text);
    }

    bool declarator_reader::identifier_at(std::size_t i) const
    {
        return i < m_toks.size() && m_toks[i].kind == token_kind::identifier;
    }

    int declarator_reader::line_at(std::size_t i) const
    {
        if (m_toks.empty())
        {
            return 1;
        }
        return m_toks[std::min(i, m_toks.size() - 1)].line;
    }

    // Index of the bracket that closes the one at `open`; ()[]{} must nest properly.
    std::size_t declarator_reader::match(std::size_t open, std::size_t limit, const std::string& what) const
    {
        std::string expected;
        for (std::size_t i = open; i < limit; ++i)
        {
            const token& t = m_toks[i];
            if (t.kind != token_kind::punct || t.text.size() != 1)
            {
                continue;
            }
            char c = t.text[0];
            if (c == '(' || c == '[' || c == '{')
            {
                expected += c == '(' ? ')' : c == '[' ? ']' : '}';
            }
            else if (c == ')' || c == ']' || c == '}')
            {
                if (expected.empty() || expected.back() != c)
                {
                    throw signature_error(t.line, "unbalanced brackets in " + what + ": unexpected '"
                                                      + t.text + "' where '" + std::string(1, expected.back())
                                                      + "' was expected");
                }
                expected.pop_back();
                if (expected.empty())
                {
                    return i;
                }
            }
        }
        throw signature_error(line_at(open), "unbalanced brackets in " + what + ": '" + m_toks[open].text
                                                 + "' is never closed");
    }

    // Index of the '>' that closes the '<' at `open`, or npos if it is not a template bracket.
    std::size_t declarator_reader::match_angle(std::size_t open, std::size_t limit) const
    {
        int angles = 0;
        int parens = 0;
        for (std::size_t i = open; i < limit && i < m_toks.size(); ++i)
        {
            const token& t = m_toks[i];
            if (t.kind != token_kind::punct)
            {
                continue;
            }
            if (t.text == "(" || t.text == "[")
            {
                ++parens;
            }
            else if (t.text == ")" || t.text == "]")
            {
                if (--parens < 0)
                {
                    return npos;
                }
            }
            else if (t.text == ";" || t.text == "{" || t.text == "}")
            {
                return npos;
            }
            else if (parens == 0 && t.text == "<")
            {
                ++angles;
            }
            else if (parens == 0 && t.text == ">" && --angles == 0)
            {
                return i;
            }
        }
        return npos;
    }

    // Splits [begin, end) at top-level commas; angle brackets count only after a name.
    std::vector<std::pair<std::size_t, std::size_t>> declarator_reader::split(std::size_t begin, std::size_t end,
                                                                               bool angles) const
    {
        std::vector<std::pair<std::size_t, std::size_t>> parts;
        int depth = 0;
        int angle = 0;
        std::size_t start = begin;
        for (std::size_t i = begin; i < end; ++i)
        {
            const token& t = m_toks[i];
            if (t.kind != token_kind::punct)
            {
                continue;
            }
            if (t.text == "(" || t.text == "[" || t.text == "{")
            {
                ++depth;
            }
            else if (t.text == ")" || t.text == "]" || t.text == "}")
            {
                --depth;
            }
            else if (angles && depth == 0 && t.text == "<" && i > begin
                     && (m_toks[i - 1].kind == token_kind::identifier))
            {
                ++angle;
            }
            else if (angles && depth == 0 && t.text == ">" && angle > 0)
            {
                --angle;
            }
            else if (t.text == "," && depth == 0 && angle == 0)
            {
                parts.emplace_back(start, i);
                start = i + 1;
            }
        }
        if (angle != 0 && angles)
        {
            return split(begin, end, false);  // `a < b` in a default argument, not a template
        }
        parts.emplace_back(start, end);
        return parts;
    }

    // The largest alignas(N) / __align__(N) / __attribute__((aligned(N))) in [begin, end); 0 if none.
    std::size_t declarator_reader::alignment_in(std::size_t begin, std::size_t end, const type_model& types,
                                                 bool& unreadable) const
    {
        std::size_t alignment = 0;
        for (std::size_t k = begin; k < end; ++k)
        {
            const token& t = m_toks[k];
            if (t.kind != token_kind::identifier ||
                !(t.text == "alignas" || t.text == "__align__" || t.text == "__builtin_align__" || t.text == "aligned"
                  || t.text == "__aligned__"))
            {
                continue;
            }
            if (!punct_at(k + 1, "("))
            {
                if (t.text == "aligned" || t.text == "__aligned__")
                {
                    alignment = std::max<std::size_t>(alignment, 16);  // GCC's largest alignment on x86-64
                }
                continue;
            }
            std::size_t close = match(k + 1, end, "an alignment");
            constant_value v = evaluate_constant(m_toks, k + 2, close);
            if (v.kind == constant_value::type::integer && v.value > 0 && v.value <= 4096)
            {
                alignment = std::max<std::size_t>(alignment, static_cast<std::size_t>(v.value));
            }
            else
            {
                resolved_type r = types.resolve_name(join_canonical(m_toks, k + 2, close));  // alignas(float4)
                if (r.layout && r.layout->known())
                {
                    alignment = std::max(alignment, r.layout->alignment);
                }
                else
                {
                    unreadable = true;
                }
            }
            k = close;
        }
        return alignment;
    }

    // `*p`, `q[4]`, `&r` after a comma: the first declarator's base type with its own declarator.
    declarator declarator_reader::next_declarator(const declarator& first, std::size_t begin, std::size_t end) const
    {
        declarator d;
        d.base_const = first.base_const;
        d.base_volatile = first.base_volatile;
        d.builtin = first.builtin;
        d.type_name = first.type_name;
        d.elaborated = first.elaborated;
        for (std::size_t k = begin; k < end; ++k)
        {
            const token& t = m_toks[k];
            if (is_punct(t, "*"))
            {
                d.levels.emplace_back();
            }
            else if (is_punct(t, "&") || is_punct(t, "&&"))
            {
                d.references += static_cast<int>(t.text.size());
            }
            else if (is_punct(t, "[") && !punct_at(k + 1, "["))
            {
                std::size_t close = match(k, end, "a declarator");
                d.dims.push_back(join_canonical(m_toks, k + 1, close));
                k = close;
            }
            else if (t.kind == token_kind::identifier && is_attribute_call(t.text) && punct_at(k + 1, "("))
            {
                k = match(k + 1, end, "an attribute");
            }
            else if (t.kind == token_kind::identifier && t.text == "const" && !d.levels.empty())
            {
                d.levels.back().is_const = true;
            }
            else if (t.kind == token_kind::identifier && !is_ignored_qualifier(t.text) && t.text != "const"
                     && t.text != "volatile")
            {
                d.name = t.text;
            }
        }
        return d;
    }

    // Parses one declarator in [begin, end); `what` names it in error messages.
    declarator declarator_reader::parse_declarator(std::size_t begin, std::size_t end, const std::string& what) const
    {
        declarator d;
        bool named = false;
        std::size_t k = begin;
        auto unexpected = [&](std::size_t i)
        {
            return signature_error(m_toks[i].line, what + ": unexpected '" + m_toks[i].text + "'");
        };
        while (k < end)
        {
            const token& t = m_toks[k];
            const std::string& w = t.text;
            if (is_punct(t, "[") && punct_at(k + 1, "["))
            {
                k = match(k, end, what) + 1;  // [[maybe_unused]]
                continue;
            }
            if (t.kind == token_kind::identifier && is_attribute_call(w) && k + 1 < end && punct_at(k + 1, "("))
            {
                k = match(k + 1, end, what) + 1;
                continue;
            }
            if (t.kind == token_kind::identifier && is_ignored_qualifier(w))
            {
                ++k;
                continue;
            }
            if (t.kind == token_kind::identifier && (w == "const" || w == "volatile"))
            {
                if (named)
                {
                    throw unexpected(k);
                }
                bool c = w == "const";
                if (d.levels.empty())
                {
                    (c ? d.base_const : d.base_volatile) = true;
                }
                else
                {
                    (c ? d.levels.back().is_const : d.levels.back().is_volatile) = true;
                }
                ++k;
                continue;
            }
            if (t.kind == token_kind::identifier && builtin_words().count(w) != 0)
            {
                if (named || !d.type_name.empty() || !d.levels.empty() || d.references != 0)
                {
                    throw unexpected(k);
                }
                d.builtin.push_back(w);
                ++k;
                continue;
            }
            if (t.kind == token_kind::identifier
                && (w == "struct" || w == "class" || w == "union" || w == "enum" || w == "typename"))
            {
                if (d.has_base() || !d.elaborated.empty())
                {
                    throw unexpected(k);
                }
                d.elaborated = w;
                ++k;
                continue;
            }
            if ((t.kind == token_kind::identifier || is_punct(t, "::")) && !d.has_base())
            {
                k = read_type_name(k, end, d, what);
                continue;
            }
            if (t.kind == token_kind::identifier && !named)
            {
                d.name = w;
                named = true;
                ++k;
                continue;
            }
            if (is_punct(t, "*") && d.has_base() && !named && d.references == 0)
            {
                d.levels.emplace_back();
                ++k;
                continue;
            }
            if ((is_punct(t, "&") || is_punct(t, "&&")) && d.has_base() && !named)
            {
                d.references += static_cast<int>(w.size());
                ++k;
                continue;
            }
            if (is_punct(t, "...") && d.has_base() && !named && !d.pack)
            {
                d.pack = true;
                ++k;
                continue;
            }
            if (is_punct(t, "...") && !d.has_base())
            {
                throw signature_error(t.line, what + ": C-style variadic parameters ('...') are not "
                                                     "supported in kernels");
            }
            if (is_punct(t, "[") && d.has_base())
            {
                std::size_t close = match(k, end, what);
                d.dims.push_back(join_canonical(m_toks, k + 1, close));
                k = close + 1;
                named = true;  // nothing but more extents may follow
                continue;
            }
            if (is_punct(t, "(") && d.has_base() && !named && d.function_pointer.empty())
            {
                k = read_function_pointer(k, end, d, what);
                named = true;
                continue;
            }
            throw unexpected(k);
        }
        if (!d.has_base())
        {
            throw signature_error(line_at(begin < end ? begin : end), what + ": no type");
        }
        return d;
    }

    // A possibly qualified, possibly templated name: ::cuda::std::int32_t, Foo<Bar<int>, 3>.
    std::size_t declarator_reader::read_type_name(std::size_t k, std::size_t end, declarator& d,
                                                   const std::string& what) const
    {
        std::size_t begin = k;
        bool expect_name = true;
        if (is_punct(m_toks[k], "::"))
        {
            ++k;
        }
        while (k < end)
        {
            const token& t = m_toks[k];
            if (expect_name && t.kind == token_kind::identifier && t.text == "template")
            {
                ++k;  // T::template rebind<U>
                continue;
            }
            if (expect_name && t.kind == token_kind::identifier)
            {
                ++k;
                expect_name = false;
                if (k < end && is_punct(m_toks[k], "<"))
                {
                    std::size_t close = match_angle(k, end);
                    if (close == npos)
                    {
                        throw signature_error(m_toks[k].line, what + ": unbalanced '<' in type");
                    }
                    k = close + 1;
                }
                continue;
            }
            if (!expect_name && is_punct(t, "::"))
            {
                ++k;
                expect_name = true;
                continue;
            }
            break;
        }
        if (expect_name)
        {
            throw signature_error(line_at(k), what + ": incomplete type name '"
                                                  + join_canonical(m_toks, begin, k) + "'");
        }
        d.type_name = join_canonical(m_toks, begin, k);
        return k;
    }

    // R (*name)(args): kept as a spelling; a device function pointer is passed as 8 bytes.
    std::size_t declarator_reader::read_function_pointer(std::size_t k, std::size_t end, declarator& d,
                                                          const std::string& what) const
    {
        std::size_t close = match(k, end, what);
        std::string inner;
        for (std::size_t i = k + 1; i < close; ++i)
        {
            const token& t = m_toks[i];
            if (t.kind == token_kind::identifier && t.text != "const" && !is_ignored_qualifier(t.text))
            {
                d.name = t.text;
            }
            else if (t.kind == token_kind::punct && t.text != "*" && t.text != "&")
            {
                throw signature_error(t.line, what + ": unexpected '" + t.text + "'");
            }
            else if (t.kind == token_kind::punct)
            {
                inner += t.text;
            }
        }
        if (inner.empty() || close + 1 >= end || !is_punct(m_toks[close + 1], "("))
        {
            throw signature_error(m_toks[k].line, what + ": unexpected '('");
        }
        std::size_t args_close = match(close + 1, end, what);
        d.function_pointer = spell(d.base_const, d.base_volatile, d.base_spelling(), d.levels, d.levels.size())
                             + " (" + inner + ")(" + join_canonical(m_toks, close + 2, args_close) + ")";
        return args_close + 1;
    }

}
