#include "declaration_parser.hpp"

#include <algorithm>
#include <unordered_map>

#include "constant_expression.hpp"
#include "source_lexer.hpp"
#include "errors.hpp"
#include "parse_interrupts.hpp"

namespace xcuda::cxx
{
    namespace
    {
    }

    declaration_parser::declaration_parser(std::vector<token> toks, std::vector<std::string> files,
                                           std::vector<std::string> doubts)
        : declarator_reader(std::move(toks))
        , m_files(std::move(files))
        , m_doubts(std::move(doubts))
    {
    }

    // Why the reader is not sure of the tokens [begin, end): the first doubt among them, "" if none.
    std::string declaration_parser::doubt_in(std::size_t begin, std::size_t end) const
    {
        for (std::size_t k = begin; k < end && k < m_toks.size(); ++k)
        {
            int d = m_toks[k].doubt;
            if (d >= 0)
            {
                return static_cast<std::size_t>(d) < m_doubts.size() ? m_doubts[static_cast<std::size_t>(d)]
                                                                     : "an #if the reader could not decide";
            }
        }
        return {};
    }

    std::vector<kernel_signature> declaration_parser::run()
    {
        std::vector<found_kernel> found;
        std::size_t statement = 0;
        std::size_t i = 0;
        while (i < m_toks.size())
        {
            parse_interrupts::step();
            const token& t = m_toks[i];
            if (is_punct(t, "{"))
            {
                if (!m_scopes.empty() && m_scopes.back().is_record && is_brace_initializer(statement, i))
                {
                    std::size_t close = npos;
                    try
                    {
                        close = match(i, m_toks.size(), "a member initializer");
                    }
                    catch (const signature_error&)
                    {
                        m_scopes.back().unknown = true;
                    }
                    if (close != npos)
                    {
                        i = close + 1;  // `int n{0};`: the braces belong to the member
                        continue;
                    }
                }
                open_scope(statement, i);
                statement = ++i;
            }
            else if (is_punct(t, "}"))
            {
                m_close = i;
                statement = ++i;
                close_scope();
                m_after.statement = statement;
            }
            else if (is_punct(t, ";"))
            {
                if (m_after.active && m_after.statement == statement)
                {
                    declare_after_type(i);
                }
                else if (!m_scopes.empty() && m_scopes.back().is_record)
                {
                    record_member(statement, i);
                }
                else
                {
                    record_alias(statement, i);
                }
                m_after.active = false;
                statement = ++i;
            }
            else if (is_identifier(t, "__global__"))
            {
                i = parse_kernel(statement, i, found);
                statement = i;
            }
            else if (is_identifier(t, "__constant__") || is_identifier(t, "__device__") || is_identifier(t, "__managed__"))
            {
                std::size_t next = parse_variable(statement, i);
                if (next != i + 1)
                {
                    statement = next;
                }
                i = next;
            }
            else
            {
                ++i;
            }
        }
        std::vector<kernel_signature> kernels = merge(found);
        // An explicit instantiation (template __global__ void f<256>(const float*, int);) often leaves
        // its parameters unnamed: the template's names and default arguments are its own.
        for (kernel_signature& instance : kernels)
        {
            std::size_t angle = instance.name.find('<');
            if (angle == std::string::npos || instance.is_template())
            {
                continue;
            }
            std::string base = instance.qualified_name.substr(0, instance.qualified_name.find('<'));
            for (const kernel_signature& t : kernels)
            {
                if (t.is_template() && t.qualified_name == base && t.parameters.size() == instance.parameters.size())
                {
                    for (std::size_t i = 0; i < t.parameters.size(); ++i)
                    {
                        if (instance.parameters[i].name.empty())
                        {
                            instance.parameters[i].name = t.parameters[i].name;
                        }
                        if (instance.parameters[i].default_value.empty())
                        {
                            instance.parameters[i].default_value = t.parameters[i].default_value;
                        }
                    }
                    break;
                }
            }
        }
        return kernels;
    }

    // `template <class T, int N = 4> struct Name ... {`: remembered for its instances (not a partial or
    // explicit specialization, whose name is followed by `<`).
    void declaration_parser::record_class_template(std::size_t begin, std::size_t brace)
    {
        if (begin + 1 >= brace || !is_identifier(m_toks[begin], "template") || !punct_at(begin + 1, "<"))
        {
            return;
        }
        try
        {
            std::size_t close = match_angle(begin + 1, brace);
            std::size_t k = close + 1;
            if (k >= brace || !(is_identifier(m_toks[k], "struct") || is_identifier(m_toks[k], "class")))
            {
                return;
            }
            std::size_t name = k + 1;
            while (name < brace)
            {
                const token& t = m_toks[name];
                if (is_punct(t, "[") && punct_at(name + 1, "["))
                {
                    name = match(name, brace, "an attribute") + 1;
                }
                else if (t.kind == token_kind::identifier && is_attribute_call(t.text) && punct_at(name + 1, "("))
                {
                    name = match(name + 1, brace, "an attribute") + 1;
                }
                else if (t.kind == token_kind::identifier && is_ignored_qualifier(t.text))
                {
                    ++name;
                }
                else
                {
                    break;
                }
            }
            if (name >= brace || m_toks[name].kind != token_kind::identifier)
            {
                return;
            }
            if (punct_at(name + 1, "<"))
            {
                // A specialization: which instances it covers is the compiler's business, so none of this
                // template's instances is read from the primary template (the layout probe sizes them).
                m_class_templates[m_toks[name].text].specialized = true;
                m_class_templates[qualified(m_toks[name].text)].specialized = true;
                return;
            }
            class_template t;
            for (const auto& part : split(begin + 2, close, true))
            {
                std::size_t equals = part.second;
                for (std::size_t j = part.first; j < part.second; ++j)
                {
                    if (is_punct(m_toks[j], "="))
                    {
                        equals = j;
                        break;
                    }
                }
                if (equals == part.first || m_toks[equals - 1].kind != token_kind::identifier)
                {
                    return;  // an unnamed parameter: its instances cannot be spelled here
                }
                t.parameters.push_back(m_toks[equals - 1].text);
                t.defaults.emplace_back(m_toks.begin() + static_cast<std::ptrdiff_t>(std::min(equals + 1, part.second)),
                                        m_toks.begin() + static_cast<std::ptrdiff_t>(part.second));
            }
            std::size_t end = match(brace, m_toks.size(), "a class template");
            t.body.assign(m_toks.begin() + static_cast<std::ptrdiff_t>(k), m_toks.begin() + static_cast<std::ptrdiff_t>(end + 1));
            t.body[name - k].text = "xcuda_instance";
            std::string qualified_name = qualified(m_toks[name].text);
            for (const std::string& key : {m_toks[name].text, qualified_name})
            {
                bool specialized = m_class_templates.count(key) != 0 && m_class_templates[key].specialized;
                m_class_templates[key] = t;
                m_class_templates[key].specialized = specialized;
            }
        }
        catch (const signature_error&)
        {
            // Not a class template the reader can instantiate: its instances stay unknown.
        }
    }

    // Matrix<float>: the template's tokens with its parameters replaced, read as a struct of its own with
    // the types known here; no layout when the arguments do not fit it.
    resolved_type declaration_parser::instantiate_class(const std::string& spelling) const
    {
        auto cached = m_instances.find(spelling);
        if (cached != m_instances.end())
        {
            return cached->second;
        }
        resolved_type none;
        none.spelling = spelling;
        std::size_t open = spelling.find('<');
        std::size_t close = spelling.rfind('>');
        if (open == std::string::npos || close == std::string::npos || close < open || m_instance_depth >= 8)
        {
            return none;
        }
        std::string base = spelling.substr(0, open);
        while (!base.empty() && base.back() == ' ')
        {
            base.pop_back();
        }
        auto it = m_class_templates.find(base);
        if (it == m_class_templates.end())
        {
            return none;
        }
        const class_template& t = it->second;
        if (t.specialized || t.body.empty() || t.body.size() > *m_instance_budget)
        {
            return none;
        }
        *m_instance_budget -= t.body.size();
        std::vector<token> argument_tokens;
        std::vector<macro_definition> no_macros;
        try
        {
            source_lexer(spelling.substr(open + 1, close - open - 1)).run(argument_tokens, no_macros);
        }
        catch (const std::exception&)
        {
            return none;
        }
        std::vector<std::vector<token>> arguments(1);
        int depth = 0;
        for (const token& a : argument_tokens)
        {
            depth += (is_punct(a, "<") || is_punct(a, "(")) ? 1 : (is_punct(a, ">") || is_punct(a, ")")) ? -1 : 0;
            if (depth == 0 && is_punct(a, ","))
            {
                arguments.emplace_back();
                continue;
            }
            arguments.back().push_back(a);
        }
        if (arguments.size() == 1 && arguments[0].empty())
        {
            arguments.clear();
        }
        if (arguments.size() > t.parameters.size())
        {
            return none;
        }
        for (std::size_t i = arguments.size(); i < t.parameters.size(); ++i)
        {
            if (t.defaults[i].empty())
            {
                return none;
            }
            arguments.push_back(t.defaults[i]);
        }
        std::vector<token> body;
        for (const token& b : t.body)
        {
            std::size_t p = 0;
            for (; p < t.parameters.size(); ++p)
            {
                if (b.kind == token_kind::identifier && b.text == t.parameters[p])
                {
                    break;
                }
            }
            if (p == t.parameters.size())
            {
                body.push_back(b);
                continue;
            }
            for (token a : arguments[p])
            {
                a.line = b.line;
                a.file = b.file;
                a.doubt = b.doubt;
                body.push_back(std::move(a));
            }
        }
        token semicolon;
        semicolon.text = ";";
        body.push_back(semicolon);
        declaration_parser instance(std::move(body), m_files, m_doubts);
        instance.m_types = m_types;
        instance.m_class_templates = m_class_templates;
        instance.m_instance_depth = m_instance_depth + 1;
        instance.m_instance_budget = m_instance_budget;
        try
        {
            instance.run();
        }
        catch (const signature_error&)
        {
            return none;
        }
        resolved_type r = instance.m_types.resolve_name("xcuda_instance");
        if (!r.layout)
        {
            return none;
        }
        r.spelling = spelling;
        m_instances[spelling] = r;
        return r;
    }

    void declaration_parser::open_scope(std::size_t begin, std::size_t brace)
    {
        record_class_template(begin, brace);
        scope s;
        if (open_record(begin, brace, s))
        {
            s.begin = begin;
            m_scopes.push_back(std::move(s));
            return;
        }
        s = scope();
        std::size_t k = begin;
        if (identifier_at(k) && m_toks[k].text == "inline")
        {
            ++k;
        }
        if (k < brace && is_identifier(m_toks[k], "namespace"))
        {
            s.is_namespace = true;
            for (++k; k < brace; ++k)
            {
                const token& t = m_toks[k];
                if (is_punct(t, "[") || is_identifier(t, "__attribute__"))
                {
                    std::size_t open = is_punct(t, "[") ? k : k + 1;
                    if (open >= brace || !punct_at(open, is_punct(t, "[") ? "[" : "("))
                    {
                        break;
                    }
                    try
                    {
                        k = match(open, brace, "a namespace attribute");
                    }
                    catch (const signature_error&)
                    {
                        s = scope();  // not something to read a kernel's name from
                        break;
                    }
                }
                else if (t.kind == token_kind::identifier && t.text != "inline")
                {
                    s.names.push_back(t.text);
                }
                else if (!is_punct(t, "::") && t.kind != token_kind::identifier)
                {
                    s = scope();  // not a namespace definition after all
                    break;
                }
            }
        }
        else if (k + 2 == brace && is_identifier(m_toks[k], "extern") && m_toks[k + 1].kind == token_kind::string)
        {
            s.linkage = m_toks[k + 1].text == "\"C\"" ? 1 : 0;
        }
        m_scopes.push_back(std::move(s));
    }

    // `[typedef] struct|class|union [attributes] [Name] [final] [: bases] {` or
    // `[typedef] enum [class] [Name] [: type] {`: fills `s` and returns true; false for any other brace.
    bool declaration_parser::open_record(std::size_t begin, std::size_t brace, scope& s)
    {
        std::size_t k = begin;
        if (k < brace && is_identifier(m_toks[k], "typedef"))
        {
            s.is_typedef = true;
            ++k;
        }
        if (k >= brace || m_toks[k].kind != token_kind::identifier)
        {
            return false;
        }
        const std::string& keyword = m_toks[k].text;
        if (keyword == "struct" || keyword == "class" || keyword == "union")
        {
            s.is_record = true;
            s.public_access = keyword != "class";
            s.is_union = keyword == "union";
        }
        else if (keyword == "enum")
        {
            s.is_enum = true;
            if (k + 1 < brace && (is_identifier(m_toks[k + 1], "class") || is_identifier(m_toks[k + 1], "struct")))
            {
                ++k;
            }
        }
        else
        {
            return false;
        }
        ++k;
        try
        {
            bool unreadable = false;
            s.alignment = alignment_in(k, brace, m_types, unreadable);
            s.unknown = unreadable;
            while (k < brace)
            {
                const token& t = m_toks[k];
                if (is_punct(t, "[") && punct_at(k + 1, "["))
                {
                    k = match(k, brace, "an attribute") + 1;
                }
                else if (t.kind == token_kind::identifier && is_attribute_call(t.text) && punct_at(k + 1, "("))
                {
                    k = match(k + 1, brace, "an attribute") + 1;
                }
                else if (t.kind == token_kind::identifier && (is_ignored_qualifier(t.text) || t.text == "final"))
                {
                    ++k;
                }
                else if (t.kind == token_kind::identifier)
                {
                    s.record_name = t.text;
                    ++k;
                    if (punct_at(k, "<"))
                    {
                        return false;  // a partial or explicit specialization of a class template
                    }
                }
                else if (is_punct(t, "::"))
                {
                    ++k;  // struct ns::Name { }: the last name is the record's
                }
                else
                {
                    break;
                }
            }
            if (k < brace && is_punct(m_toks[k], ":"))
            {
                if (s.is_enum)
                {
                    declarator d = parse_declarator(k + 1, brace, "the underlying type of an enum");
                    resolved_type r = resolve(d, line_at(k));
                    if (!d.levels.empty() || r.kind == scalar_kind::unknown)
                    {
                        return false;
                    }
                    s.underlying = r;
                    k = brace;
                }
                else
                {
                    for (const auto& part : split(k + 1, brace, true))
                    {
                        std::size_t b = part.first;
                        while (b < part.second && m_toks[b].kind == token_kind::identifier &&
                               (m_toks[b].text == "public" || m_toks[b].text == "private" ||
                                m_toks[b].text == "protected" || m_toks[b].text == "virtual"))
                        {
                            s.unknown = s.unknown || m_toks[b].text == "virtual";
                            ++b;
                        }
                        declarator d = parse_declarator(b, part.second, "a base class");
                        resolved_type r = resolve(d, line_at(b));
                        s.bases.push_back(r.layout && r.layout->is_record() ? r.layout : nullptr);
                        if (r.layout && !r.layout->is_record() && r.layout->known() && r.layout->size == 1)
                        {
                            s.bases.back() = r.layout;  // an empty base
                        }
                    }
                    k = brace;
                }
            }
            if (k != brace)
            {
                return false;
            }
        }
        catch (const signature_error&)
        {
            return false;
        }
        if (s.is_enum && s.underlying.kind == scalar_kind::unknown)
        {
            s.underlying = builtin_type({"int"}, 0);
        }
        return true;
    }

    // In a record, `{` after a member's name is its initializer (`int n{0};`, `float v[2] = {1, 2};`),
    // not a scope: no keyword that opens one, no parentheses.
    bool declaration_parser::is_brace_initializer(std::size_t begin, std::size_t brace) const
    {
        if (begin >= brace)
        {
            return false;
        }
        bool named = false;
        for (std::size_t k = begin; k < brace; ++k)
        {
            const token& t = m_toks[k];
            if (t.kind == token_kind::identifier)
            {
                const std::string& w = t.text;
                if (w == "struct" || w == "class" || w == "union" || w == "enum" || w == "namespace" || w == "extern"
                    || w == "typedef" || w == "template" || w == "operator")
                {
                    return false;
                }
                named = true;
            }
            else if (is_punct(t, "(") || is_punct(t, ")") || is_punct(t, "}") || is_punct(t, ":"))
            {
                return false;
            }
        }
        const token& last = m_toks[brace - 1];
        return named && (last.kind == token_kind::identifier || is_punct(last, "=") || is_punct(last, "]"));
    }

    // A closing brace: a record's layout or an enum's type becomes a named type, and the type of the
    // declarators that may follow it.
    void declaration_parser::close_scope()
    {
        m_after.active = false;
        if (m_scopes.empty())
        {
            return;
        }
        scope s = std::move(m_scopes.back());
        m_scopes.pop_back();
        if (!s.is_record && !s.is_enum)
        {
            return;
        }
        resolved_type r;
        if (s.is_enum)
        {
            r = s.underlying;
        }
        else if (!s.unknown)
        {
            auto layout = std::make_shared<value_layout>();
            std::size_t offset = 0;
            std::size_t alignment = std::max<std::size_t>(1, s.alignment);
            auto up = [](std::size_t n, std::size_t a) { return a ? (n + a - 1) / a * a : n; };
            auto place = [&layout](const std::string& name, std::size_t at, const value_layout::field* f,
                                   const member* m) {
                value_layout::field out = f ? *f : value_layout::field();
                if (m)
                {
                    out.type = m->type;
                    out.extents = m->extents;
                }
                out.name = name;
                out.offset = at;
                layout->fields.push_back(std::move(out));
            };
            for (const auto& base : s.bases)
            {
                if (!base || !base->known())
                {
                    s.unknown = true;
                    break;
                }
                if (base->fields.empty())
                {
                    continue;  // an empty base takes no room
                }
                offset = up(offset, base->alignment);
                for (const auto& f : base->fields)
                {
                    place(f.name, offset + f.offset, &f, nullptr);
                }
                offset += base->size;
                alignment = std::max(alignment, base->alignment);
            }
            for (const member& m : s.members)
            {
                if (!m.type || !m.type->known())
                {
                    s.unknown = true;
                    break;
                }
                std::size_t a = std::max(m.type->alignment, m.alignment);
                std::size_t count = 1;
                for (std::size_t e : m.extents)
                {
                    count *= e;
                }
                std::size_t size = m.type->size * count;
                std::size_t at = s.is_union ? 0 : up(offset, a);
                if (m.name.empty() && m.type->is_record() && m.extents.empty())
                {
                    for (const auto& f : m.type->fields)
                    {
                        place(f.name, at + f.offset, &f, nullptr);  // an anonymous struct or union member
                    }
                }
                else
                {
                    place(m.name, at, nullptr, &m);
                }
                offset = s.is_union ? std::max(offset, size) : at + size;
                alignment = std::max(alignment, a);
            }
            if (!s.unknown)
            {
                layout->alignment = alignment;
                layout->private_fields = s.private_fields;
                layout->size = std::max<std::size_t>(1, up(offset, alignment));
                r.size = layout->size;
                r.layout = std::move(layout);
            }
        }
        r.doubt = s.doubt.empty() ? doubt_in(s.begin, m_close + 1) : s.doubt;
        std::string name = s.record_name;
        if (name.empty())
        {
            name = "(anonymous " + std::string(s.is_enum ? "enum" : s.is_union ? "union" : "struct") + " " +
                   std::to_string(++m_anonymous) + ")";
        }
        r.spelling = name;
        m_types.define_alias(name, r);
        std::string full = qualified(name);
        if (full != name)
        {
            m_types.define_alias(full, r);
        }
        m_after.type = r;
        m_after.type.spelling = name;
        m_after.is_typedef = s.is_typedef;
        m_after.active = true;
        if (!m_scopes.empty() && m_scopes.back().is_record && !s.record_name.empty())
        {
            m_types.define_alias(m_scopes.back().record_name + "::" + name, r);
        }
    }

    std::string declaration_parser::qualified(const std::string& name) const
    {
        std::string prefix;
        for (const scope& s : m_scopes)
        {
            for (const std::string& n : s.names)
            {
                prefix += n + "::";
            }
            if (s.is_record && !s.record_name.empty())
            {
                prefix += s.record_name + "::";
            }
        }
        return prefix + name;
    }

    // A statement in a record's braces: a data member (or several), or something that is not one.
    void declaration_parser::record_member(std::size_t begin, std::size_t end)
    {
        scope& record = m_scopes.back();
        std::size_t k = begin;
        while (k + 1 < end && m_toks[k].kind == token_kind::identifier
               && (m_toks[k].text == "public" || m_toks[k].text == "private" || m_toks[k].text == "protected")
               && punct_at(k + 1, ":"))
        {
            record.public_access = m_toks[k].text == "public";
            k += 2;
        }
        if (k >= end || record.unknown)
        {
            return;
        }
        const std::string& first = m_toks[k].text;
        if (first == "typedef" || first == "using")
        {
            record_alias(k, end);
            return;
        }
        if (first == "static" || first == "friend" || first == "template" || first == "static_assert"
            || first == "enum" || first == "struct" || first == "class" || first == "union" || first == "constexpr"
            || first == "inline" || first == "operator" || first == "explicit" || first == "~")
        {
            if ((first == "struct" || first == "class" || first == "union" || first == "enum") && k + 2 < end)
            {
                // `struct Other member;`: an elaborated member type
            }
            else
            {
                return;
            }
        }
        std::size_t cut = end;
        int depth = 0;
        for (std::size_t j = k; j < end; ++j)
        {
            const token& t = m_toks[j];
            if (is_identifier(t, "virtual"))
            {
                record.unknown = true;  // a vtable pointer the layout cannot place
                return;
            }
            if (t.kind != token_kind::punct)
            {
                continue;
            }
            if (t.text == "(" || t.text == "[" || t.text == "<")
            {
                ++depth;
            }
            else if (t.text == ")" || t.text == "]" || t.text == ">")
            {
                --depth;
            }
            else if (depth == 0 && (t.text == "=" || t.text == "{"))
            {
                cut = std::min(cut, j);  // a default member initializer
            }
            else if (depth == 0 && t.text == ":" && cut == end)
            {
                record.unknown = true;  // a bit-field
                return;
            }
        }
        bool unreadable = false;
        std::size_t alignment = 0;
        declarator d;
        std::vector<std::pair<std::size_t, std::size_t>> parts;
        try
        {
            alignment = alignment_in(k, cut, m_types, unreadable);
            parts = split(k, cut, true);
            d = parse_declarator(parts[0].first, parts[0].second, "a member");
        }
        catch (const signature_error&)
        {
            // A member function (or a constructor, an operator): not data. Anything else unreadable
            // leaves the record without a layout.
            bool function = false;
            for (std::size_t j = k; j < cut; ++j)
            {
                function = function || is_punct(m_toks[j], "(");
            }
            record.unknown = record.unknown || !function;
            return;
        }
        if (unreadable)
        {
            record.unknown = true;
            return;
        }
        add_member(record, d, alignment);
        for (std::size_t p = 1; p < parts.size(); ++p)
        {
            add_member(record, next_declarator(d, parts[p].first, parts[p].second), alignment);
        }
    }

    void declaration_parser::add_member(scope& record, const declarator& d, std::size_t alignment)
    {
        if (d.name.empty() && d.levels.empty())
        {
            return;
        }
        member m;
        m.name = d.name;
        m.alignment = alignment;
        record.private_fields = record.private_fields || !record.public_access;
        if (d.references != 0 || d.pack)
        {
            record.unknown = true;
            return;
        }
        if (!d.function_pointer.empty() || !d.levels.empty())
        {
            m.type = pointer_layout();
        }
        else
        {
            resolved_type r;
            try
            {
                r = resolve(d, 0);
            }
            catch (const signature_error&)
            {
                record.unknown = true;
                return;
            }
            if (!r.doubt.empty() && r.levels.empty() && record.doubt.empty())
            {
                record.doubt = r.doubt;  // a member of a type the reader is not sure of
            }
            m.type = r.levels.empty() ? r.layout : pointer_layout();
        }
        for (const std::string& dim : d.dims)
        {
            constant_value v = evaluate_constant(dim);
            if (v.kind != constant_value::type::integer || v.value <= 0 || v.value > (1LL << 32))
            {
                record.unknown = true;
                return;
            }
            m.extents.push_back(static_cast<std::size_t>(v.value));
        }
        if (!m.type)
        {
            record.unknown = true;
            return;
        }
        record.members.push_back(std::move(m));
    }

    // `} a, *b;` after a record or enum: typedef names, members of the enclosing record, or
    // variables (which change nothing here).
    void declaration_parser::declare_after_type(std::size_t end)
    {
        declarator base;
        base.type_name = m_after.type.spelling;
        scope* record = (!m_scopes.empty() && m_scopes.back().is_record) ? &m_scopes.back() : nullptr;
        std::size_t begin = m_after.statement;
        if (begin >= end)
        {
            bool anonymous = m_after.type.spelling.rfind("(anonymous", 0) == 0;
            if (record && anonymous && m_after.type.layout && m_after.type.layout->is_record())
            {
                member m;  // struct { union { float f; int i; }; }: its fields are the record's
                m.type = m_after.type.layout;
                record->members.push_back(std::move(m));
            }
            else if (record && anonymous && !m_after.type.layout)
            {
                record->unknown = record->unknown || m_after.type.spelling.find("enum") == std::string::npos;
            }
            return;
        }
        try
        {
            std::string doubt = doubt_in(begin, end);
            for (const auto& part : split(begin, end, true))
            {
                declarator d = next_declarator(base, part.first, part.second);
                if (m_after.is_typedef)
                {
                    define_alias(d, doubt);
                }
                else if (record)
                {
                    add_member(*record, d, 0);
                }
            }
        }
        catch (const signature_error&)
        {
            if (record)
            {
                record->unknown = true;
            }
        }
    }

    // typedef T name; / using name = T; — remembered so that `name` resolves to T's kind.
    void declaration_parser::record_alias(std::size_t begin, std::size_t end)
    {
        if (begin >= end)
        {
            return;
        }
        std::string doubt = doubt_in(begin, end);
        try
        {
            if (is_identifier(m_toks[begin], "typedef"))
            {
                auto parts = split(begin + 1, end, true);
                declarator first = parse_declarator(parts[0].first, parts[0].second, "a typedef");
                define_alias(first, doubt);
                for (std::size_t p = 1; p < parts.size(); ++p)
                {
                    // typedef float real, *real_ptr;
                    declarator more = first;
                    more.levels.clear();
                    more.name.clear();
                    for (std::size_t k = parts[p].first; k < parts[p].second; ++k)
                    {
                        if (is_punct(m_toks[k], "*"))
                        {
                            more.levels.emplace_back();
                        }
                        else if (m_toks[k].kind == token_kind::identifier)
                        {
                            more.name = m_toks[k].text;
                        }
                    }
                    define_alias(more, doubt);
                }
            }
            else if (is_identifier(m_toks[begin], "using") && begin + 2 < end && identifier_at(begin + 1)
                     && punct_at(begin + 2, "="))
            {
                declarator d = parse_declarator(begin + 3, end, "a using alias");
                d.name = m_toks[begin + 1].text;
                define_alias(d, doubt);
            }
        }
        catch (const signature_error&)
        {
            // Aliases are a convenience: one the parser cannot read leaves its name unknown.
        }
    }

    void declaration_parser::define_alias(const declarator& d, const std::string& doubt)
    {
        if (d.name.empty() || !d.function_pointer.empty() || d.references != 0 || !d.dims.empty())
        {
            return;
        }
        resolved_type r = resolve(d, 0);
        if (!doubt.empty())
        {
            r.doubt = doubt;
        }
        bool base_const = d.base_const;
        if (!r.levels.empty())
        {
            r.levels.back().is_const = r.levels.back().is_const || base_const;
        }
        else
        {
            r.base_const = r.base_const || base_const;
        }
        r.levels.insert(r.levels.end(), d.levels.begin(), d.levels.end());
        if (!r.levels.empty() && r.levels.size() > 1)
        {
            r.kind = scalar_kind::unknown;
        }
        m_types.define_alias(d.name, std::move(r));
    }

    // The base type of `d` after aliases and template parameters.
    resolved_type declaration_parser::resolve(const declarator& d, int line) const
    {
        if (!d.builtin.empty())
        {
            return builtin_type(d.builtin, line);
        }
        resolved_type r;
        r.spelling = d.base_spelling();
        if (d.elaborated == "typename" || m_template_names.count(d.type_name) != 0)
        {
            return r;
        }
        resolved_type named = m_types.resolve_name(d.type_name);
        if (!named.layout && named.kind == scalar_kind::unknown && d.type_name.find('<') != std::string::npos &&
            !m_class_templates.empty())
        {
            return instantiate_class(d.type_name);
        }
        return named;
    }

    kernel_parameter declaration_parser::make_parameter(std::size_t begin, std::size_t end,
                                                        const std::string& what) const
    {
        kernel_parameter p;
        std::size_t equals = end;
        int depth = 0;
        for (std::size_t i = begin; i < end; ++i)
        {
            const token& t = m_toks[i];
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
                equals = i;
                break;
            }
        }
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

        if (!extents.empty())
        {
            p.element_type = spell(false, d.base_volatile, base, written, written.size()) + extents;
            if (!written.empty())
            {
                written.back() = pointer_level();
                p.element_type = spell(d.base_const, d.base_volatile, base, written, written.size()) + extents;
            }
        }
        else if (!written.empty() || !d.dims.empty())
        {
            std::vector<pointer_level> w = d.levels;
            if (!d.dims.empty())
            {
                w.emplace_back();
            }
            p.element_type = pointee(d.base_const, d.base_volatile, base, w);
        }
        else if (!levels.empty())
        {
            p.element_type = pointee(r.base_const, false, r.spelling, levels);
        }
        else
        {
            p.element_type = spell(false, d.base_volatile, base, written, 0);
        }

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

    // Reads the declaration whose `__global__` is at `global`; returns where to go on.
    std::size_t declaration_parser::parse_kernel(std::size_t statement, std::size_t global,
                                                 std::vector<found_kernel>& found)
    {
        found_kernel f;
        kernel_signature& k = f.signature;
        int global_line = m_toks[global].line;
        bool template_seen = false;
        m_template_names.clear();
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

        std::size_t name = npos;
        std::size_t open = npos;
        std::size_t close = npos;
        std::size_t j = global + 1;
        const std::string no_name = "'__global__' is not followed by a function name";
        while (close == npos)
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
                    name = j;  // an explicit specialization: f<float>(...)
                    open = c + 1;
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
                name = j;
                open = j + 1;
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
            close = match(open, m_toks.size(), "the parameter list of '" + m_toks[name].text + "'");
            // MACRO(128) f(...): an attribute macro the source does not define. The real name
            // comes after its parentheses.
            const token* next = at(close + 1);
            if (next != nullptr && next->kind == token_kind::identifier && !is_trailing_word(next->text)
                && (punct_at(close + 2, "(") || punct_at(close + 2, "::") || punct_at(close + 2, "<")))
            {
                j = close + 1;
                close = npos;
            }
        }

        k.name = m_toks[name].text;
        if (open != name + 1)
        {
            k.name += join_canonical(m_toks, name + 1, open);  // f<256>: an explicit instantiation
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

        std::size_t pbegin = open + 1;
        std::size_t pend = close;
        if (!(pend == pbegin || (pend == pbegin + 1 && is_identifier(m_toks[pbegin], "void"))))
        {
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
                break;
            }
            else if (depth <= 0 && is_punct(t, "{"))
            {
                f.definition = true;
                break;
            }
        }

        f.key = k.qualified_name + "<" + std::to_string(k.template_parameters.size()) + ">(";
        for (const kernel_parameter& p : k.parameters)
        {
            f.key += (p.is_pointer ? p.element_type + (p.is_const ? " const*" : "*") : p.element_type) + ",";
        }
        m_template_names.clear();
        found.push_back(std::move(f));
        return close + 1;
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
