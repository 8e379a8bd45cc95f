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
            else if (is_identifier(m_toks[begin], "namespace") && begin + 3 < end && identifier_at(begin + 1) &&
                     punct_at(begin + 2, "="))
            {
                // namespace img = ::image::v1;
                std::string target;
                for (std::size_t k = begin + 3; k < end; ++k)
                {
                    const token& t = m_toks[k];
                    if (t.kind == token_kind::identifier || (is_punct(t, "::") && !target.empty()))
                    {
                        target += t.text;
                    }
                    else if (!is_punct(t, "::"))
                    {
                        return;  // not a namespace's name
                    }
                }
                const std::string& name = m_toks[begin + 1].text;
                m_types.define_namespace_alias(name, target);
                std::string full = qualified(name);
                if (full != name)
                {
                    m_types.define_namespace_alias(full, target);
                }
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
        // Also by its qualified name, as records are: `image::pixel`, or `img::pixel` through a namespace alias.
        std::string full = qualified(d.name);
        if (full != d.name)
        {
            m_types.define_alias(full, r);
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
}
