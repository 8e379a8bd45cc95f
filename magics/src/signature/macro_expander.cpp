#include "macro_expander.hpp"

#include <algorithm>
#include <iterator>
#include <memory>
#include <utility>

#include "parse_interrupts.hpp"

namespace xcuda::cxx
{
    macro_expander::macro_expander(const std::vector<macro_definition>& macros)
        : m_macros(macros)
    {
    }

    std::vector<token> macro_expander::run(std::vector<token> tokens)
    {
        std::reverse(tokens.begin(), tokens.end());
        std::vector<token> out;
        expand(tokens, out, 0, true);
        return out;
    }

    bool macro_expander::hidden(const token& t, int id)
    {
        return t.hidden && std::binary_search(t.hidden->begin(), t.hidden->end(), id);
    }

    void macro_expander::hide_in(std::vector<int>& hidden, int id)
    {
        auto it = std::lower_bound(hidden.begin(), hidden.end(), id);
        if (it == hidden.end() || *it != id)
        {
            hidden.insert(it, id);
        }
    }

    void macro_expander::restore(std::vector<token>& stack, std::vector<token>& consumed)
    {
        for (auto it = consumed.rbegin(); it != consumed.rend(); ++it)
        {
            stack.push_back(std::move(*it));
        }
    }

    // `stack` holds the input reversed (back() is the next token), so that an expansion is
    // rescanned together with what follows it.
    void macro_expander::expand(std::vector<token>& stack, std::vector<token>& out, int depth, bool top)
    {
        while (!stack.empty())
        {
            parse_interrupts::step();
            token t = std::move(stack.back());
            stack.pop_back();
            if (t.kind == token_kind::define)
            {
                if (top)
                {
                    m_table[m_macros[static_cast<std::size_t>(t.macro)].name] = t.macro;
                }
                continue;
            }
            if (t.kind == token_kind::undef)
            {
                if (top)
                {
                    m_table.erase(t.text);
                }
                continue;
            }
            auto it = t.kind == token_kind::identifier && m_budget > 0 && depth <= max_depth
                          ? m_table.find(t.text)
                          : m_table.end();
            if (it == m_table.end() || hidden(t, it->second))
            {
                out.push_back(std::move(t));
                continue;
            }
            int id = it->second;
            const macro_definition& m = m_macros[static_cast<std::size_t>(id)];
            std::vector<std::vector<token>> args;
            std::vector<token> consumed;
            if (m.function_like)
            {
                if (stack.empty() || !is_punct(stack.back(), "(") || !collect_arguments(stack, args, consumed)
                    || !match_arity(m, args))
                {
                    restore(stack, consumed);
                    out.push_back(std::move(t));
                    continue;
                }
            }
            std::vector<token> result = substitute(m, id, t, args, depth);
            if (m_budget <= 0 || static_cast<long>(result.size()) > m_budget)
            {
                m_budget = 0;
                restore(stack, consumed);
                out.push_back(std::move(t));
                continue;
            }
            m_budget -= static_cast<long>(result.size()) + 1;
            // What a macro defined under an undecided #if produces, or a doubtful use of any macro,
            // is as doubtful (token::doubt).
            int doubt = m.doubt >= 0 ? m.doubt : t.doubt;
            for (auto r = result.rbegin(); r != result.rend(); ++r)
            {
                if (r->doubt < 0)
                {
                    r->doubt = doubt;
                }
                stack.push_back(std::move(*r));
            }
        }
    }

    bool macro_expander::collect_arguments(std::vector<token>& stack, std::vector<std::vector<token>>& args,
                                           std::vector<token>& consumed)
    {
        consumed.push_back(std::move(stack.back()));
        stack.pop_back();
        int depth = 1;
        std::vector<token> current;
        while (!stack.empty())
        {
            token t = std::move(stack.back());
            stack.pop_back();
            consumed.push_back(t);
            if (t.kind == token_kind::define || t.kind == token_kind::undef)
            {
                return false;
            }
            if (is_punct(t, "("))
            {
                ++depth;
            }
            else if (is_punct(t, ")") && --depth == 0)
            {
                args.push_back(std::move(current));
                return true;
            }
            else if (is_punct(t, ",") && depth == 1)
            {
                args.push_back(std::move(current));
                current.clear();
                continue;
            }
            current.push_back(std::move(t));
        }
        return false;
    }

    bool macro_expander::match_arity(const macro_definition& m, std::vector<std::vector<token>>& args)
    {
        std::size_t named = m.parameters.size();
        if (named == 0 && args.size() == 1 && args[0].empty())
        {
            args.clear();
        }
        if (!m.variadic)
        {
            return args.size() == named;
        }
        if (args.size() < named)
        {
            if (args.size() + 1 < named)
            {
                return false;
            }
            args.resize(named);
        }
        std::vector<token> rest;
        for (std::size_t i = named; i < args.size(); ++i)
        {
            if (i != named)
            {
                token comma;
                comma.text = ",";
                rest.push_back(comma);
            }
            rest.insert(rest.end(), args[i].begin(), args[i].end());
        }
        args.resize(named);
        args.push_back(std::move(rest));
        return true;
    }

    std::vector<token> macro_expander::substitute(const macro_definition& m, int id, const token& call,
                                                  std::vector<std::vector<token>>& args, int depth)
    {
        auto parameter = [&](const token& b) -> int
        {
            if (!m.function_like || b.kind != token_kind::identifier)
            {
                return -1;
            }
            for (std::size_t i = 0; i < m.parameters.size(); ++i)
            {
                if (m.parameters[i] == b.text)
                {
                    return static_cast<int>(i);
                }
            }
            return m.variadic && b.text == "__VA_ARGS__" ? static_cast<int>(m.parameters.size()) : -1;
        };
        std::vector<token> r;
        const std::vector<token>& body = m.body;
        for (std::size_t k = 0; k < body.size(); ++k)
        {
            const token& b = body[k];
            if (m.function_like && is_punct(b, "#") && k + 1 < body.size() && parameter(body[k + 1]) >= 0)
            {
                const std::vector<token>& a = args[static_cast<std::size_t>(parameter(body[k + 1]))];
                std::string text = join_as_written(a, 0, a.size());
                token s;
                s.kind = token_kind::string;
                s.text = "\"";
                for (char c : text)
                {
                    if (c == '"' || c == '\\')
                    {
                        s.text += '\\';
                    }
                    s.text += c;
                }
                s.text += '"';
                s.space_before = b.space_before;
                r.push_back(std::move(s));
                ++k;
                continue;
            }
            int p = parameter(b);
            if (p < 0)
            {
                r.push_back(b);
                continue;
            }
            bool raw = (k > 0 && body[k - 1].paste_operator) || (k + 1 < body.size() && body[k + 1].paste_operator);
            std::vector<token> a = args[static_cast<std::size_t>(p)];
            if (!raw)
            {
                std::vector<token> stack(a.rbegin(), a.rend());
                a.clear();
                expand(stack, a, depth + 1, false);
            }
            if (!a.empty())
            {
                a.front().space_before = b.space_before;
            }
            if (a.size() > static_cast<std::size_t>(std::max(m_budget, 0L)))
            {
                m_budget = 0;  // the caller then leaves the macro unexpanded
                return {};
            }
            r.insert(r.end(), a.begin(), a.end());
        }
        std::vector<token> pasted;
        for (std::size_t k = 0; k < r.size(); ++k)
        {
            if (r[k].paste_operator)
            {
                if (!pasted.empty() && k + 1 < r.size())
                {
                    token& left = pasted.back();
                    const token& right = r[++k];
                    left.text += right.text;
                    bool word = true;
                    for (char c : left.text)
                    {
                        word = word && is_identifier_char(static_cast<unsigned char>(c));
                    }
                    left.kind = !word ? token_kind::punct
                                : is_digit(static_cast<unsigned char>(left.text[0])) ? token_kind::number
                                                                                      : token_kind::identifier;
                }
                continue;
            }
            pasted.push_back(std::move(r[k]));
        }
        std::vector<int> call_ids = call.hidden ? *call.hidden : std::vector<int>();
        hide_in(call_ids, id);
        m_budget -= static_cast<long>(call_ids.size() / 16);  // the work of building sets counts
        auto call_hidden = std::make_shared<const std::vector<int>>(std::move(call_ids));
        for (std::size_t k = 0; k < pasted.size(); ++k)
        {
            token& t = pasted[k];
            t.line = call.line;
            t.file = call.file;
            t.paste_operator = false;
            if (!t.hidden || t.hidden == call.hidden)
            {
                t.hidden = call_hidden;
            }
            else if (t.hidden != call_hidden)
            {
                std::vector<int> both;
                std::set_union(t.hidden->begin(), t.hidden->end(), call_hidden->begin(), call_hidden->end(),
                               std::back_inserter(both));
                m_budget -= static_cast<long>(both.size() / 16);
                t.hidden = std::make_shared<const std::vector<int>>(std::move(both));
            }
            if (k == 0)
            {
                t.space_before = call.space_before;
            }
        }
        return pasted;
    }
}
