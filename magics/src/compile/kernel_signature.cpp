#include <cctype>
#include "kernel_signature.hpp"

#include <algorithm>
#include <iterator>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>

/*
 * How the signatures are found
 * ----------------------------
 * The source is user text typed in a notebook cell, so nothing here assumes it is valid C++. Three
 * passes, each linear in the size of the text and each bounded:
 *
 * 1. source_lexer turns the text into tokens that carry their line and whether white space came
 *    before them. Comments, string/char/raw-string literals and backslash continuations are consumed
 *    whole, so a `__global__` inside them is never seen. Preprocessor lines are taken out of the
 *    stream: #define and #undef become marker tokens (so macros apply from their definition on),
 *    #if 0 / #if 1 / #ifdef of a macro defined above are honoured, and every other condition keeps
 *    all its branches (duplicates are merged in step 3).
 * 2. macro_expander expands the object-like and function-like macros of the source (with #, ## and
 *    __VA_ARGS__) the way the preprocessor does, with a hide set per token against recursion and a
 *    global token budget against exponential definitions; past the budget tokens pass unexpanded.
 * 3. kernel_signature_parser walks the expanded tokens once, keeping a scope stack (namespace,
 *    extern "C" block, other braces) and the start of the current declaration. At each `__global__`
 *    it reads the declaration around it: the template header and extern "C" before it, attributes
 *    (__launch_bounds__, [[...]], __attribute__((...)), unknown macro-like attributes) skipped, the
 *    name as the first identifier followed by its parameter list, and each parameter as a small
 *    declarator (base type, cv, pointer levels, name, arrays, default). typedef/using aliases seen on
 *    the way resolve to scalar kinds. A declaration and a later definition with the same parameter
 *    types are merged into one entry.
 *
 * Every failure is a signature_error naming the line; every loop consumes at least one token.
 */

namespace xcuda
{
    const char* scalar_kind_name(scalar_kind k)
    {
        switch (k)
        {
        case scalar_kind::boolean: return "bool";
        case scalar_kind::i8: return "int8";
        case scalar_kind::u8: return "uint8";
        case scalar_kind::i16: return "int16";
        case scalar_kind::u16: return "uint16";
        case scalar_kind::i32: return "int32";
        case scalar_kind::u32: return "uint32";
        case scalar_kind::i64: return "int64";
        case scalar_kind::u64: return "uint64";
        case scalar_kind::f16: return "float16";
        case scalar_kind::bf16: return "bfloat16";
        case scalar_kind::f32: return "float32";
        case scalar_kind::f64: return "float64";
        case scalar_kind::unknown: break;
        }
        return "unknown";
    }

    std::size_t scalar_kind_size(scalar_kind k)
    {
        switch (k)
        {
        case scalar_kind::boolean:
        case scalar_kind::i8:
        case scalar_kind::u8: return 1;
        case scalar_kind::i16:
        case scalar_kind::u16:
        case scalar_kind::f16:
        case scalar_kind::bf16: return 2;
        case scalar_kind::i32:
        case scalar_kind::u32:
        case scalar_kind::f32: return 4;
        case scalar_kind::i64:
        case scalar_kind::u64:
        case scalar_kind::f64: return 8;
        case scalar_kind::unknown: break;
        }
        return 0;
    }

    std::string kernel_signature::to_string() const
    {
        std::string s = name + "(";
        for (std::size_t i = 0; i < parameters.size(); ++i)
        {
            const kernel_parameter& p = parameters[i];
            if (i != 0)
            {
                s += ", ";
            }
            std::string decl = p.type;
            std::size_t fp = decl.find("(*)");
            if (fp != std::string::npos && !p.name.empty())
            {
                decl.insert(fp + 2, p.name);  // void (*cb)(int)
            }
            else if (!p.name.empty())
            {
                decl += " " + p.name;
            }
            s += decl;
            if (!p.default_value.empty())
            {
                s += " = " + p.default_value;
            }
        }
        return s + ")";
    }

    namespace
    {
        constexpr std::size_t npos = std::string::npos;

        enum class token_kind
        {
            identifier,
            number,
            string,
            character,
            punct,
            define,  // marker: macro m_macros[macro] is defined from here on
            undef    // marker: the macro named `text` is undefined from here on
        };

        struct token
        {
            token_kind kind = token_kind::punct;
            std::string text;
            int line = 0;
            bool space_before = false;
            bool paste_operator = false;  // a '##' written in a macro body
            int macro = -1;
            // Sorted ids of the macros that must not expand this token again; shared between the
            // tokens of one expansion, so long macro chains do not copy it per token.
            std::shared_ptr<const std::vector<int>> hidden;
        };

        struct macro_definition
        {
            std::string name;
            bool function_like = false;
            bool variadic = false;
            std::vector<std::string> parameters;
            std::vector<token> body;
        };

        bool is_identifier_start(int c)
        {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
        }

        bool is_identifier_char(int c)
        {
            return is_identifier_start(c) || (c >= '0' && c <= '9');
        }

        bool is_digit(int c)
        {
            return c >= '0' && c <= '9';
        }

        bool is_punct(const token& t, const char* text)
        {
            return t.kind == token_kind::punct && t.text == text;
        }

        bool is_identifier(const token& t, const char* text)
        {
            return t.kind == token_kind::identifier && t.text == text;
        }

        // Joins tokens back into text, keeping one space wherever the source had white space.
        std::string join_as_written(const std::vector<token>& toks, std::size_t begin, std::size_t end)
        {
            std::string s;
            for (std::size_t i = begin; i < end; ++i)
            {
                if (i != begin && toks[i].space_before)
                {
                    s += ' ';
                }
                s += toks[i].text;
            }
            return s;
        }

        // Joins tokens into a canonical type spelling: spaces only between words and after commas.
        std::string join_canonical(const std::vector<token>& toks, std::size_t begin, std::size_t end)
        {
            std::string s;
            for (std::size_t i = begin; i < end; ++i)
            {
                const std::string& t = toks[i].text;
                if (!s.empty() && !t.empty()
                    && ((is_identifier_char(static_cast<unsigned char>(s.back()))
                         && is_identifier_char(static_cast<unsigned char>(t.front())))
                        || s.back() == ','))
                {
                    s += ' ';
                }
                s += t;
            }
            return s;
        }

        /* ---------------------------------------------------------------- lexer */

        class source_lexer
        {
        public:
            explicit source_lexer(const std::string& source)
                : m_src(source)
            {
            }

            void run(std::vector<token>& tokens, std::vector<macro_definition>& macros)
            {
                for (;;)
                {
                    bool space = skip_space(false, !active());
                    if (peek() < 0)
                    {
                        break;
                    }
                    if (peek() == '#' && m_line_start)
                    {
                        ++m_pos;
                        m_line_start = false;
                        directive(tokens, macros);
                        continue;
                    }
                    m_line_start = false;
                    token t;
                    if (!next_token(t, false, !active()))
                    {
                        break;
                    }
                    t.space_before = t.space_before || space;
                    if (active())
                    {
                        tokens.push_back(std::move(t));
                    }
                }
            }

        private:
            // One #if group: whether the text around it is kept, whether this branch is kept, and
            // whether a branch known to be true was already taken (so #else is dropped).
            struct condition
            {
                bool parent_active;
                bool active;
                bool taken;
            };

            int peek(std::size_t k = 0) const
            {
                std::size_t p = m_pos + k;
                return p < m_src.size() ? static_cast<unsigned char>(m_src[p]) : -1;
            }

            std::size_t splice_length() const
            {
                if (peek() != '\\')
                {
                    return 0;
                }
                if (peek(1) == '\n')
                {
                    return 2;
                }
                if (peek(1) == '\r' && peek(2) == '\n')
                {
                    return 3;
                }
                return 0;
            }

            void count_lines(std::size_t begin, std::size_t end)
            {
                m_line += static_cast<int>(std::count(m_src.begin() + static_cast<std::ptrdiff_t>(begin),
                                                      m_src.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
            }

            bool active() const
            {
                return m_conditions.empty() || m_conditions.back().active;
            }

            // Skips white space, comments and line splices; in a directive, stops at the newline.
            bool skip_space(bool in_directive, bool lenient)
            {
                bool any = false;
                for (;;)
                {
                    int c = peek();
                    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v')
                    {
                        ++m_pos;
                    }
                    else if (c == '\n')
                    {
                        if (in_directive)
                        {
                            return any;
                        }
                        ++m_pos;
                        ++m_line;
                        m_line_start = true;
                    }
                    else if (c == '\\' && splice_length() != 0)
                    {
                        m_pos += splice_length();
                        ++m_line;
                    }
                    else if (c == '/' && peek(1) == '/')
                    {
                        m_pos += 2;
                        while (peek() >= 0 && peek() != '\n')
                        {
                            std::size_t n = splice_length();
                            if (n != 0)
                            {
                                m_pos += n;
                                ++m_line;
                            }
                            else
                            {
                                ++m_pos;
                            }
                        }
                    }
                    else if (c == '/' && peek(1) == '*')
                    {
                        int start = m_line;
                        std::size_t end = m_src.find("*/", m_pos + 2);
                        if (end == npos)
                        {
                            if (!lenient)
                            {
                                throw signature_error(start, "unterminated /* comment");
                            }
                            end = m_src.size();
                            count_lines(m_pos, end);
                            m_pos = end;
                        }
                        else
                        {
                            count_lines(m_pos, end);
                            m_pos = end + 2;
                        }
                    }
                    else
                    {
                        return any;
                    }
                    any = true;
                }
            }

            void read_quoted(token& t, std::size_t begin, bool lenient)
            {
                int quote = peek();
                int start = m_line;
                ++m_pos;
                for (;;)
                {
                    int c = peek();
                    if (c < 0 || c == '\n')
                    {
                        if (!lenient)
                        {
                            throw signature_error(start, quote == '"' ? "unterminated string literal"
                                                                      : "unterminated character literal");
                        }
                        break;
                    }
                    ++m_pos;
                    if (c == quote)
                    {
                        break;
                    }
                    if (c == '\\' && peek() >= 0)
                    {
                        if (peek() == '\n')
                        {
                            ++m_line;
                        }
                        ++m_pos;
                    }
                }
                t.kind = quote == '"' ? token_kind::string : token_kind::character;
                t.text = m_src.substr(begin, m_pos - begin);
            }

            // R"delim( ... )delim", m_pos on the opening quote.
            void read_raw(token& t, std::size_t begin, bool lenient)
            {
                int start = m_line;
                ++m_pos;
                std::size_t open = m_src.find('(', m_pos);
                bool valid = open != npos && open - m_pos <= 16;
                if (valid)
                {
                    for (std::size_t i = m_pos; i < open; ++i)
                    {
                        char c = m_src[i];
                        if (c == ' ' || c == ')' || c == '\\' || c == '\n' || c == '\t' || c == '"')
                        {
                            valid = false;
                        }
                    }
                }
                if (!valid)
                {
                    if (!lenient)
                    {
                        throw signature_error(start, "invalid raw string literal delimiter");
                    }
                    t.kind = token_kind::string;
                    t.text = m_src.substr(begin, m_pos - begin);
                    return;
                }
                std::string closing = ")" + m_src.substr(m_pos, open - m_pos) + "\"";
                std::size_t end = m_src.find(closing, open + 1);
                if (end == npos)
                {
                    if (!lenient)
                    {
                        throw signature_error(start, "unterminated raw string literal");
                    }
                    end = m_src.size();
                }
                else
                {
                    end += closing.size();
                }
                count_lines(m_pos, end);
                m_pos = end;
                t.kind = token_kind::string;
                t.text = m_src.substr(begin, end - begin);
            }

            // Reads one token; false at the end of the text (or of the directive line).
            bool next_token(token& t, bool in_directive, bool lenient)
            {
                t = token();
                t.space_before = skip_space(in_directive, lenient);
                int c = peek();
                if (c < 0 || (in_directive && c == '\n'))
                {
                    return false;
                }
                t.line = m_line;
                std::size_t begin = m_pos;
                if (is_identifier_start(c))
                {
                    while (is_identifier_char(peek()))
                    {
                        ++m_pos;
                    }
                    std::string word = m_src.substr(begin, m_pos - begin);
                    if (peek() == '"' && (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR"))
                    {
                        read_raw(t, begin, lenient);
                        return true;
                    }
                    if ((peek() == '"' || peek() == '\'') && (word == "L" || word == "u" || word == "U" || word == "u8"))
                    {
                        read_quoted(t, begin, lenient);
                        return true;
                    }
                    t.kind = token_kind::identifier;
                    t.text = std::move(word);
                    return true;
                }
                if (is_digit(c) || (c == '.' && is_digit(peek(1))))
                {
                    ++m_pos;
                    for (;;)
                    {
                        int d = peek();
                        int prev = static_cast<unsigned char>(m_src[m_pos - 1]);
                        if (is_identifier_char(d) || d == '.')
                        {
                            ++m_pos;
                        }
                        else if ((d == '+' || d == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P'))
                        {
                            ++m_pos;
                        }
                        else if (d == '\'' && is_identifier_char(peek(1)))
                        {
                            m_pos += 2;  // digit separator 1'000'000
                        }
                        else
                        {
                            break;
                        }
                    }
                    t.kind = token_kind::number;
                    t.text = m_src.substr(begin, m_pos - begin);
                    return true;
                }
                if (c == '"' || c == '\'')
                {
                    read_quoted(t, begin, lenient);
                    return true;
                }
                static const char* const multi[] = {"...", "::", "->", "##", "==", "!=", "<=", "&&", "||"};
                t.kind = token_kind::punct;
                for (const char* m : multi)
                {
                    if (m_src.compare(m_pos, std::char_traits<char>::length(m), m) == 0)
                    {
                        t.text = m;
                        m_pos += t.text.size();
                        return true;
                    }
                }
                t.text = std::string(1, static_cast<char>(c));
                ++m_pos;
                return true;
            }

            std::vector<token> rest_of_line()
            {
                std::vector<token> toks;
                token t;
                while (next_token(t, true, true))
                {
                    toks.push_back(std::move(t));
                }
                return toks;
            }

            // 1 or 0 when the condition is known from the source alone, -1 when it is not (it may
            // depend on NVRTC's predefined macros or -D options).
            int evaluate(const std::vector<token>& c) const
            {
                if (c.size() == 1 && (c[0].kind == token_kind::number || c[0].kind == token_kind::identifier))
                {
                    if (c[0].text == "0" || c[0].text == "false")
                    {
                        return 0;
                    }
                    if (c[0].text == "1" || c[0].text == "true")
                    {
                        return 1;
                    }
                    return -1;
                }
                std::size_t i = 0;
                bool negate = false;
                if (i < c.size() && is_punct(c[i], "!"))
                {
                    negate = true;
                    ++i;
                }
                if (i >= c.size() || !is_identifier(c[i], "defined"))
                {
                    return -1;
                }
                ++i;
                bool paren = i < c.size() && is_punct(c[i], "(");
                if (paren)
                {
                    ++i;
                }
                if (i >= c.size() || c[i].kind != token_kind::identifier)
                {
                    return -1;
                }
                std::string name = c[i++].text;
                if (paren)
                {
                    if (i >= c.size() || !is_punct(c[i], ")"))
                    {
                        return -1;
                    }
                    ++i;
                }
                if (i != c.size() || m_defined.count(name) == 0)
                {
                    return -1;
                }
                return negate ? 0 : 1;
            }

            void open_condition(int value)
            {
                bool parent = active();
                if (!parent)
                {
                    m_conditions.push_back({false, false, true});
                }
                else
                {
                    m_conditions.push_back({true, value != 0, value == 1});
                }
            }

            void directive(std::vector<token>& tokens, std::vector<macro_definition>& macros)
            {
                token name;
                if (!next_token(name, true, true))
                {
                    return;  // the null directive
                }
                const std::string& d = name.text;
                if (name.kind != token_kind::identifier)
                {
                    rest_of_line();
                    return;
                }
                if (d == "if")
                {
                    open_condition(evaluate(rest_of_line()));
                }
                else if (d == "ifdef" || d == "ifndef")
                {
                    std::vector<token> rest = rest_of_line();
                    int value = -1;
                    if (!rest.empty() && m_defined.count(rest[0].text) != 0)
                    {
                        value = d == "ifdef" ? 1 : 0;
                    }
                    open_condition(value);
                }
                else if (d == "elif" || d == "elifdef" || d == "elifndef" || d == "else")
                {
                    std::vector<token> rest = rest_of_line();
                    if (m_conditions.empty() || !m_conditions.back().parent_active)
                    {
                        return;
                    }
                    condition& c = m_conditions.back();
                    if (c.taken)
                    {
                        c.active = false;
                    }
                    else if (d == "elif")
                    {
                        int value = evaluate(rest);
                        c.active = value != 0;
                        c.taken = value == 1;
                    }
                    else
                    {
                        c.active = true;
                    }
                }
                else if (d == "endif")
                {
                    rest_of_line();
                    if (!m_conditions.empty())
                    {
                        m_conditions.pop_back();
                    }
                }
                else if (d == "define" && active())
                {
                    define(tokens, macros);
                }
                else if (d == "undef" && active())
                {
                    std::vector<token> rest = rest_of_line();
                    if (!rest.empty() && rest[0].kind == token_kind::identifier)
                    {
                        token marker;
                        marker.kind = token_kind::undef;
                        marker.text = rest[0].text;
                        marker.line = name.line;
                        tokens.push_back(std::move(marker));
                        m_defined.erase(rest[0].text);
                    }
                }
                else
                {
                    rest_of_line();  // #include, #pragma, #error, #line, inactive #define ...
                }
            }

            void define(std::vector<token>& tokens, std::vector<macro_definition>& macros)
            {
                token name;
                if (!next_token(name, true, true) || name.kind != token_kind::identifier)
                {
                    rest_of_line();
                    return;
                }
                macro_definition m;
                m.name = name.text;
                if (peek() == '(')  // no space between name and '(': function-like
                {
                    m.function_like = true;
                    ++m_pos;
                    token p;
                    bool ok = false;
                    while (next_token(p, true, true))
                    {
                        if (is_punct(p, ")"))
                        {
                            ok = true;
                            break;
                        }
                        if (is_punct(p, ","))
                        {
                            continue;
                        }
                        if (is_punct(p, "..."))
                        {
                            m.variadic = true;
                        }
                        else if (p.kind == token_kind::identifier)
                        {
                            m.parameters.push_back(p.text);
                        }
                        else
                        {
                            break;
                        }
                    }
                    if (!ok)
                    {
                        rest_of_line();
                        return;  // malformed: ignored, as promised
                    }
                }
                m.body = rest_of_line();
                for (token& t : m.body)
                {
                    t.paste_operator = is_punct(t, "##");
                }
                token marker;
                marker.kind = token_kind::define;
                marker.macro = static_cast<int>(macros.size());
                marker.line = name.line;
                m_defined.insert(m.name);
                macros.push_back(std::move(m));
                tokens.push_back(std::move(marker));
            }

            const std::string& m_src;
            std::size_t m_pos = 0;
            int m_line = 1;
            bool m_line_start = true;
            std::vector<condition> m_conditions;
            std::set<std::string> m_defined;
        };

        /* ---------------------------------------------------------------- macro expansion */

        class macro_expander
        {
        public:
            explicit macro_expander(const std::vector<macro_definition>& macros)
                : m_macros(macros)
            {
            }

            std::vector<token> run(std::vector<token> tokens)
            {
                std::reverse(tokens.begin(), tokens.end());
                std::vector<token> out;
                expand(tokens, out, 0, true);
                return out;
            }

        private:
            static constexpr int max_depth = 64;

            static bool hidden(const token& t, int id)
            {
                return t.hidden && std::binary_search(t.hidden->begin(), t.hidden->end(), id);
            }

            static void hide_in(std::vector<int>& hidden, int id)
            {
                auto it = std::lower_bound(hidden.begin(), hidden.end(), id);
                if (it == hidden.end() || *it != id)
                {
                    hidden.insert(it, id);
                }
            }

            static void restore(std::vector<token>& stack, std::vector<token>& consumed)
            {
                for (auto it = consumed.rbegin(); it != consumed.rend(); ++it)
                {
                    stack.push_back(std::move(*it));
                }
            }

            // `stack` holds the input reversed (back() is the next token), so that an expansion is
            // rescanned together with what follows it.
            void expand(std::vector<token>& stack, std::vector<token>& out, int depth, bool top)
            {
                while (!stack.empty())
                {
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
                    for (auto r = result.rbegin(); r != result.rend(); ++r)
                    {
                        stack.push_back(std::move(*r));
                    }
                }
            }

            static bool collect_arguments(std::vector<token>& stack, std::vector<std::vector<token>>& args,
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

            static bool match_arity(const macro_definition& m, std::vector<std::vector<token>>& args)
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

            std::vector<token> substitute(const macro_definition& m, int id, const token& call,
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

            const std::vector<macro_definition>& m_macros;
            std::unordered_map<std::string, int> m_table;
            long m_budget = 1L << 18;  // tokens produced by all expansions together: far above any cell
        };

        /* ---------------------------------------------------------------- types */

        struct pointer_level
        {
            bool is_const = false;
            bool is_volatile = false;
        };

        // What a base type name stands for once aliases are followed.
        struct resolved_type
        {
            scalar_kind kind = scalar_kind::unknown;
            std::size_t size = 0;
            std::string spelling;               // the base type after aliases
            bool base_const = false;            // const on the base inside an alias
            std::vector<pointer_level> levels;  // pointer levels inside an alias
        };

        std::string spell(bool is_const, bool is_volatile, const std::string& base,
                          const std::vector<pointer_level>& levels, std::size_t count)
        {
            std::string s;
            if (is_const)
            {
                s += "const ";
            }
            if (is_volatile)
            {
                s += "volatile ";
            }
            s += base;
            for (std::size_t i = 0; i < count; ++i)
            {
                s += "*";
                if (levels[i].is_const)
                {
                    s += " const";
                }
                if (levels[i].is_volatile)
                {
                    s += " volatile";
                }
            }
            return s;
        }

        // Element type of a pointer made of `levels` over `base`: drop the last level and the cv of
        // what remains on top.
        std::string pointee(bool is_const, bool is_volatile, const std::string& base,
                            const std::vector<pointer_level>& levels)
        {
            if (levels.size() <= 1)
            {
                return spell(false, false, base, levels, 0);
            }
            std::vector<pointer_level> inner(levels.begin(), levels.end() - 1);
            inner.back() = pointer_level();
            return spell(is_const, is_volatile, base, inner, inner.size());
        }

        const std::set<std::string>& builtin_words()
        {
            static const std::set<std::string> words = {
                "void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float", "double",
                "wchar_t", "char8_t", "char16_t", "char32_t", "__int128", "auto"};
            return words;
        }

        bool is_ignored_qualifier(const std::string& w)
        {
            return w == "__restrict__" || w == "__restrict" || w == "restrict" || w == "__grid_constant__"
                   || w == "register" || w == "__device__" || w == "__constant__";
        }

        // Attribute-like names followed by a parenthesized argument list that is skipped whole.
        bool is_attribute_call(const std::string& w)
        {
            return w == "__launch_bounds__" || w == "__attribute__" || w == "__declspec" || w == "__cluster_dims__"
                   || w == "__maxnreg__" || w == "__align__" || w == "alignas" || w == "__launch_bounds"
                   || w == "__block_size__" || w == "_Pragma" || w == "__pragma";
        }

        resolved_type builtin_type(const std::vector<std::string>& words, int line)
        {
            int n_long = 0, n_short = 0, n_signed = 0, n_unsigned = 0, n_int = 0, n_other = 0;
            std::string other;
            std::string spelling;
            for (const std::string& w : words)
            {
                spelling += spelling.empty() ? w : " " + w;
                if (w == "long") ++n_long;
                else if (w == "short") ++n_short;
                else if (w == "signed") ++n_signed;
                else if (w == "unsigned") ++n_unsigned;
                else if (w == "int") ++n_int;
                else
                {
                    ++n_other;
                    other = w;
                }
            }
            resolved_type r;
            r.spelling = spelling;
            auto set = [&r](scalar_kind k)
            {
                r.kind = k;
                r.size = scalar_kind_size(k);
            };
            bool sign = n_signed + n_unsigned <= 1;
            bool u = n_unsigned == 1;
            bool ok = true;
            if (n_other > 1)
            {
                ok = false;
            }
            else if (n_other == 1)
            {
                bool plain = n_long + n_short + n_signed + n_unsigned + n_int == 0;
                if (other == "char" && n_long + n_short + n_int == 0 && sign) set(u ? scalar_kind::u8 : scalar_kind::i8);
                else if (other == "__int128" && n_long + n_short + n_int == 0 && sign) r.size = 16;
                else if (other == "double" && n_long == 1 && plain == false && n_short + n_signed + n_unsigned + n_int == 0) r.size = 16;
                else if (!plain) ok = false;
                else if (other == "bool") set(scalar_kind::boolean);
                else if (other == "float") set(scalar_kind::f32);
                else if (other == "double") set(scalar_kind::f64);
                else if (other == "char8_t") set(scalar_kind::u8);
                else if (other == "char16_t") set(scalar_kind::u16);
                else if (other == "char32_t") set(scalar_kind::u32);
                else if (other == "wchar_t") set(scalar_kind::i32);
                // void, auto: no kind, no size
            }
            else if (!sign || n_int > 1 || n_short > 1 || n_long > 2 || (n_short != 0 && n_long != 0))
            {
                ok = false;
            }
            else if (n_short == 1)
            {
                set(u ? scalar_kind::u16 : scalar_kind::i16);
            }
            else if (n_long != 0)
            {
                set(u ? scalar_kind::u64 : scalar_kind::i64);  // LP64: long is 8 bytes
            }
            else
            {
                set(u ? scalar_kind::u32 : scalar_kind::i32);
            }
            if (!ok)
            {
                throw signature_error(line, "invalid type '" + spelling + "'");
            }
            return r;
        }

        // Sizes of the CUDA vector and packed types that have no scalar kind.
        std::size_t vector_type_size(const std::string& name)
        {
            static const std::unordered_map<std::string, std::size_t> table = []
            {
                std::unordered_map<std::string, std::size_t> t;
                const std::pair<const char*, std::size_t> scalars[] = {
                    {"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2}, {"int", 4}, {"uint", 4},
                    {"long", 8}, {"ulong", 8}, {"longlong", 8}, {"ulonglong", 8}, {"float", 4}, {"double", 8}};
                for (const auto& s : scalars)
                {
                    for (std::size_t n = 1; n <= 4; ++n)
                    {
                        t[std::string(s.first) + std::to_string(n)] = s.second * n;
                    }
                    if (s.second == 8)
                    {
                        t[std::string(s.first) + "4_16a"] = 32;
                        t[std::string(s.first) + "4_32a"] = 32;
                    }
                }
                t["dim3"] = 12;
                t["__half2"] = t["half2"] = 4;
                t["__nv_bfloat162"] = t["nv_bfloat162"] = 4;
                t["__nv_fp8_e4m3"] = t["__nv_fp8_e5m2"] = 1;
                t["__nv_fp8x2_e4m3"] = t["__nv_fp8x2_e5m2"] = 2;
                t["__nv_fp8x4_e4m3"] = t["__nv_fp8x4_e5m2"] = 4;
                return t;
            }();
            auto it = table.find(name);
            return it == table.end() ? 0 : it->second;
        }

        scalar_kind named_scalar(const std::string& name)
        {
            static const std::unordered_map<std::string, scalar_kind> table = {
                {"int8_t", scalar_kind::i8},       {"uint8_t", scalar_kind::u8},
                {"int16_t", scalar_kind::i16},     {"uint16_t", scalar_kind::u16},
                {"int32_t", scalar_kind::i32},     {"uint32_t", scalar_kind::u32},
                {"int64_t", scalar_kind::i64},     {"uint64_t", scalar_kind::u64},
                {"size_t", scalar_kind::u64},      {"ssize_t", scalar_kind::i64},
                {"ptrdiff_t", scalar_kind::i64},   {"intptr_t", scalar_kind::i64},
                {"uintptr_t", scalar_kind::u64},   {"__half", scalar_kind::f16},
                {"half", scalar_kind::f16},        {"__nv_half", scalar_kind::f16},
                {"__nv_bfloat16", scalar_kind::bf16}, {"nv_bfloat16", scalar_kind::bf16}};
            auto it = table.find(name);
            return it == table.end() ? scalar_kind::unknown : it->second;
        }

        // "::std::size_t" -> "size_t": the namespaces that hold the standard spellings.
        std::string strip_std(std::string name)
        {
            for (bool changed = true; changed;)
            {
                changed = false;
                for (const char* prefix : {"::", "std::", "cuda::"})
                {
                    std::size_t n = std::char_traits<char>::length(prefix);
                    if (name.compare(0, n, prefix) == 0 && name.size() > n)
                    {
                        name.erase(0, n);
                        changed = true;
                    }
                }
            }
            return name;
        }

        // A declarator as written: `const float* __restrict__ const x[] = nullptr`.
        struct declarator
        {
            bool base_const = false;
            bool base_volatile = false;
            std::vector<std::string> builtin;  // builtin type words, in written order
            std::string type_name;             // or a (qualified, templated) type name
            std::string elaborated;            // struct/class/union/enum/typename
            std::vector<pointer_level> levels;
            std::vector<std::string> dims;     // array extents
            int references = 0;
            bool pack = false;
            std::string function_pointer;      // spelling when the declarator is `R (*name)(args)`
            std::string name;

            bool has_base() const { return !builtin.empty() || !type_name.empty(); }
            std::string base_spelling() const
            {
                std::string b;
                for (const std::string& w : builtin)
                {
                    b += b.empty() ? w : " " + w;
                }
                if (!elaborated.empty())
                {
                    b = elaborated + " " + type_name;
                }
                else if (!type_name.empty())
                {
                    b = type_name;
                }
                return b;
            }
        };

        /* ---------------------------------------------------------------- parser */

        struct found_kernel
        {
            kernel_signature signature;
            bool definition = false;
            std::string key;  // qualified name + parameter types with top-level cv dropped
        };

        class kernel_signature_parser
        {
        public:
            explicit kernel_signature_parser(std::vector<token> toks)
                : m_toks(std::move(toks))
            {
            }

            std::vector<kernel_signature> run()
            {
                std::vector<found_kernel> found;
                std::size_t statement = 0;
                std::size_t i = 0;
                while (i < m_toks.size())
                {
                    const token& t = m_toks[i];
                    if (is_punct(t, "{"))
                    {
                        open_scope(statement, i);
                        statement = ++i;
                    }
                    else if (is_punct(t, "}"))
                    {
                        if (!m_scopes.empty())
                        {
                            m_scopes.pop_back();
                        }
                        statement = ++i;
                    }
                    else if (is_punct(t, ";"))
                    {
                        record_alias(statement, i);
                        statement = ++i;
                    }
                    else if (is_identifier(t, "__global__"))
                    {
                        i = parse_kernel(statement, i, found);
                        statement = i;
                    }
                    else
                    {
                        ++i;
                    }
                }
                return merge(found);
            }

        private:
            struct scope
            {
                bool is_namespace = false;
                std::vector<std::string> names;
                int linkage = -1;  // 1: extern "C" { }, 0: extern "C++" { }, -1: inherited
            };

            struct alias
            {
                resolved_type type;
            };

            const token* at(std::size_t i) const
            {
                return i < m_toks.size() ? &m_toks[i] : nullptr;
            }

            bool punct_at(std::size_t i, const char* text) const
            {
                return i < m_toks.size() && is_punct(m_toks[i], text);
            }

            bool identifier_at(std::size_t i) const
            {
                return i < m_toks.size() && m_toks[i].kind == token_kind::identifier;
            }

            int line_at(std::size_t i) const
            {
                if (m_toks.empty())
                {
                    return 1;
                }
                return m_toks[std::min(i, m_toks.size() - 1)].line;
            }

            // Index of the bracket that closes the one at `open`; ()[]{} must nest properly.
            std::size_t match(std::size_t open, std::size_t limit, const std::string& what) const
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
            std::size_t match_angle(std::size_t open, std::size_t limit) const
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
            std::vector<std::pair<std::size_t, std::size_t>> split(std::size_t begin, std::size_t end, bool angles) const
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

            void open_scope(std::size_t begin, std::size_t brace)
            {
                scope s;
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

            // typedef T name; / using name = T; — remembered so that `name` resolves to T's kind.
            void record_alias(std::size_t begin, std::size_t end)
            {
                if (begin >= end)
                {
                    return;
                }
                try
                {
                    if (is_identifier(m_toks[begin], "typedef"))
                    {
                        auto parts = split(begin + 1, end, true);
                        declarator first = parse_declarator(parts[0].first, parts[0].second, "a typedef");
                        define_alias(first);
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
                            define_alias(more);
                        }
                    }
                    else if (is_identifier(m_toks[begin], "using") && begin + 2 < end && identifier_at(begin + 1)
                             && punct_at(begin + 2, "="))
                    {
                        declarator d = parse_declarator(begin + 3, end, "a using alias");
                        d.name = m_toks[begin + 1].text;
                        define_alias(d);
                    }
                }
                catch (const signature_error&)
                {
                    // Aliases are a convenience: one the parser cannot read leaves its name unknown.
                }
            }

            void define_alias(const declarator& d)
            {
                if (d.name.empty() || !d.function_pointer.empty() || d.references != 0 || !d.dims.empty())
                {
                    return;
                }
                resolved_type r = resolve(d, 0);
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
                m_aliases[d.name] = r;
            }

            // The base type of `d` after aliases and template parameters.
            resolved_type resolve(const declarator& d, int line) const
            {
                if (!d.builtin.empty())
                {
                    return builtin_type(d.builtin, line);
                }
                resolved_type r;
                r.spelling = d.base_spelling();
                if (!d.elaborated.empty() || m_template_names.count(d.type_name) != 0)
                {
                    return r;
                }
                std::string plain = strip_std(d.type_name);
                scalar_kind k = named_scalar(plain);
                if (k != scalar_kind::unknown)
                {
                    r.kind = k;
                    r.size = scalar_kind_size(k);
                    return r;
                }
                std::size_t v = vector_type_size(plain);
                if (v != 0)
                {
                    r.size = v;
                    return r;
                }
                auto it = m_aliases.find(d.type_name);
                if (it == m_aliases.end())
                {
                    it = m_aliases.find(plain);
                }
                if (it != m_aliases.end())
                {
                    return it->second;
                }
                return r;
            }

            // Parses one declarator in [begin, end); `what` names it in error messages.
            declarator parse_declarator(std::size_t begin, std::size_t end, const std::string& what) const
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
            std::size_t read_type_name(std::size_t k, std::size_t end, declarator& d, const std::string& what) const
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
            std::size_t read_function_pointer(std::size_t k, std::size_t end, declarator& d, const std::string& what) const
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

            kernel_parameter make_parameter(std::size_t begin, std::size_t end, const std::string& what) const
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
                }
                if (d.pack)
                {
                    p.type += "...";
                    p.kind = scalar_kind::unknown;
                    p.size = 0;
                }
                return p;
            }

            // Reads the declaration whose `__global__` is at `global`; returns where to go on.
            std::size_t parse_kernel(std::size_t statement, std::size_t global, std::vector<found_kernel>& found)
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
                k.line = m_toks[name].line;
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

            static bool is_trailing_word(const std::string& w)
            {
                return w == "noexcept" || w == "throw" || w == "const" || w == "volatile" || w == "override"
                       || w == "final" || w == "requires" || w == "try" || w == "mutable" || is_attribute_call(w);
            }

            void read_template_parameters(std::size_t begin, std::size_t end, kernel_signature& k)
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
            static std::vector<kernel_signature> merge(std::vector<found_kernel>& found)
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

            std::vector<token> m_toks;
            std::vector<scope> m_scopes;
            std::unordered_map<std::string, resolved_type> m_aliases;
            std::set<std::string> m_template_names;  // of the kernel being read: they shadow aliases
        };
    }

    std::vector<kernel_signature> parse_kernel_signatures(const std::string& source)
    {
        std::vector<token> tokens;
        std::vector<macro_definition> macros;
        source_lexer(source).run(tokens, macros);
        std::vector<token> expanded = macro_expander(macros).run(std::move(tokens));
        return kernel_signature_parser(std::move(expanded)).run();
    }
}

namespace xcuda
{
    namespace
    {
        // Splits "a, b<c, d>, e(f, g)" at its top-level commas, trimming each piece.
        std::vector<std::string> split_arguments(const std::string& text)
        {
            std::vector<std::string> pieces;
            std::string piece;
            int depth = 0;
            for (char c : text)
            {
                if (c == '<' || c == '(' || c == '[')
                    ++depth;
                else if (c == '>' || c == ')' || c == ']')
                    --depth;
                if (c == ',' && depth == 0)
                {
                    pieces.push_back(piece);
                    piece.clear();
                    continue;
                }
                piece += c;
            }
            pieces.push_back(piece);
            for (auto& p : pieces)
            {
                std::size_t first = p.find_first_not_of(" \t\n");
                std::size_t last = p.find_last_not_of(" \t\n");
                p = first == std::string::npos ? std::string() : p.substr(first, last - first + 1);
            }
            if (pieces.size() == 1 && pieces[0].empty())
            {
                pieces.clear();
            }
            return pieces;
        }

        bool identifier_char(char c)
        {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        }

        // Replaces whole identifiers `name` in text by `value`.
        std::string substitute(const std::string& text, const std::string& name, const std::string& value)
        {
            std::string out;
            for (std::size_t i = 0; i < text.size();)
            {
                if (text.compare(i, name.size(), name) == 0 && (i == 0 || !identifier_char(text[i - 1])) &&
                    (i + name.size() >= text.size() || !identifier_char(text[i + name.size()])))
                {
                    out += value;
                    i += name.size();
                }
                else
                {
                    out += text[i++];
                }
            }
            return out;
        }
    }

    kernel_signature kernel_signature::instantiate(const std::string& expression) const
    {
        std::size_t open = expression.find('<');
        std::size_t close = expression.rfind('>');
        if (!is_template() || open == std::string::npos || close == std::string::npos || close < open)
        {
            throw signature_error(line, "'" + expression + "' does not instantiate template kernel '" + name +
                                            "': write it as " + name + "<type, ...>");
        }
        std::vector<std::string> arguments = split_arguments(expression.substr(open + 1, close - open - 1));
        if (arguments.size() > template_parameters.size())
        {
            throw signature_error(line, "'" + expression + "' gives " + std::to_string(arguments.size()) +
                                            " template arguments; " + name + " takes " +
                                            std::to_string(template_parameters.size()));
        }
        std::string declaration = "extern \"C\" __global__ void xcuda_instance(";
        std::vector<std::pair<std::string, std::string>> bindings;
        for (std::size_t i = 0; i < template_parameters.size(); ++i)
        {
            const std::string& parameter = template_parameters[i];
            std::size_t equals = parameter.find('=');
            std::string head = parameter.substr(0, equals);
            std::size_t end = head.find_last_not_of(" \t");
            std::size_t start = end;
            while (start != std::string::npos && start > 0 && identifier_char(head[start - 1]))
            {
                --start;
            }
            std::string parameter_name = end == std::string::npos ? std::string() : head.substr(start, end - start + 1);
            std::string value;
            if (i < arguments.size())
            {
                value = arguments[i];
            }
            else if (equals != std::string::npos)
            {
                value = split_arguments(parameter.substr(equals + 1)).at(0);
            }
            else
            {
                throw signature_error(line, "'" + expression + "' leaves template parameter '" + parameter +
                                                "' of " + name + " without a value");
            }
            bindings.emplace_back(parameter_name, value);
        }
        for (std::size_t i = 0; i < parameters.size(); ++i)
        {
            std::string type = parameters[i].type;
            for (const auto& [parameter_name, value] : bindings)
            {
                if (!parameter_name.empty())
                {
                    type = substitute(type, parameter_name, value);
                }
            }
            declaration += (i ? ", " : "") + type + " p" + std::to_string(i);
        }
        declaration += ") {}";
        std::vector<kernel_signature> parsed = parse_kernel_signatures(declaration);
        kernel_signature instance = *this;
        instance.template_parameters.clear();
        instance.extern_c = false;
        instance.name = expression;
        std::size_t scope = qualified_name.rfind("::");
        instance.qualified_name = (expression.find("::") == std::string::npos && scope != std::string::npos)
                                      ? qualified_name.substr(0, scope + 2) + expression
                                      : expression;
        for (std::size_t i = 0; i < parameters.size() && i < parsed.at(0).parameters.size(); ++i)
        {
            std::string parameter_name = instance.parameters[i].name;
            std::string default_value = instance.parameters[i].default_value;
            instance.parameters[i] = parsed[0].parameters[i];
            instance.parameters[i].name = parameter_name;
            instance.parameters[i].default_value = default_value;
        }
        return instance;
    }
}
