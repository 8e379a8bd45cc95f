#include "source_lexer.hpp"

#include <algorithm>
#include <utility>

#include "errors.hpp"

namespace xcuda::cxx
{
    namespace
    {
    }

    source_lexer::source_lexer(const std::string& source, include_resolver* includes, int file)
        : m_src(source)
        , m_defined(m_own_defined)
        , m_includes(includes)
        , m_file(file)
    {
    }

    source_lexer::source_lexer(const std::string& source, include_resolver* includes, int file, source_lexer& parent)
        : m_src(source)
        , m_defined(parent.m_defined)
        , m_includes(includes)
        , m_file(file)
        , m_depth(parent.m_depth + 1)
    {
    }

    void source_lexer::run(std::vector<token>& tokens, std::vector<macro_definition>& macros)
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
            t.file = m_file;
            if (active())
            {
                tokens.push_back(std::move(t));
            }
        }
    }

    int source_lexer::peek(std::size_t k) const
    {
        std::size_t p = m_pos + k;
        return p < m_src.size() ? static_cast<unsigned char>(m_src[p]) : -1;
    }

    std::size_t source_lexer::splice_length() const
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

    void source_lexer::count_lines(std::size_t begin, std::size_t end)
    {
        m_line += static_cast<int>(std::count(m_src.begin() + static_cast<std::ptrdiff_t>(begin),
                                              m_src.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
    }

    bool source_lexer::active() const
    {
        return m_conditions.empty() || m_conditions.back().active;
    }

    // Skips white space, comments and line splices; in a directive, stops at the newline.
    bool source_lexer::skip_space(bool in_directive, bool lenient)
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

    void source_lexer::read_quoted(token& t, std::size_t begin, bool lenient)
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
    void source_lexer::read_raw(token& t, std::size_t begin, bool lenient)
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
    bool source_lexer::next_token(token& t, bool in_directive, bool lenient)
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

    std::vector<token> source_lexer::rest_of_line()
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
    int source_lexer::evaluate(const std::vector<token>& c) const
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

    void source_lexer::open_condition(int value)
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

    void source_lexer::directive(std::vector<token>& tokens, std::vector<macro_definition>& macros)
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
                marker.file = m_file;
                tokens.push_back(std::move(marker));
                m_defined.erase(rest[0].text);
            }
        }
        else if (d == "include" && active())
        {
            include(tokens, macros);
        }
        else
        {
            rest_of_line();  // #pragma, #error, #line, inactive #define ...
        }
    }

    void source_lexer::include(std::vector<token>& tokens, std::vector<macro_definition>& macros)
    {
        std::vector<token> rest = rest_of_line();
        if (m_includes == nullptr || rest.empty() || m_depth >= 32)
        {
            return;
        }
        std::string name;
        bool angled = false;
        if (rest[0].kind == token_kind::string && rest[0].text.size() >= 2 && rest[0].text.front() == '"')
        {
            name = rest[0].text.substr(1, rest[0].text.size() - 2);
        }
        else if (is_punct(rest[0], "<"))
        {
            angled = true;
            std::size_t i = 1;
            for (; i < rest.size() && !is_punct(rest[i], ">"); ++i)
            {
                name += rest[i].text;
            }
            if (i == rest.size())
            {
                return;
            }
        }
        int file = 0;
        const std::string* text = name.empty() ? nullptr : m_includes->open(name, angled, file);
        if (text != nullptr)
        {
            source_lexer(*text, m_includes, file, *this).run(tokens, macros);
        }
    }

    void source_lexer::define(std::vector<token>& tokens, std::vector<macro_definition>& macros)
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
        marker.file = m_file;
        m_defined.insert(m.name);
        macros.push_back(std::move(m));
        tokens.push_back(std::move(marker));
    }
}
