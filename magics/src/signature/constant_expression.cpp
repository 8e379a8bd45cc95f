#include "constant_expression.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "source_lexer.hpp"
#include "type_model.hpp"

namespace xcuda::cxx
{
    namespace
    {
        using value = constant_value;
        using vtype = constant_value::type;

        value integer(long long v, bool is_unsigned = false)
        {
            value r;
            r.kind = vtype::integer;
            r.value = v;
            r.is_unsigned = is_unsigned;
            return r;
        }

        value floating(double v)
        {
            value r;
            r.kind = vtype::floating;
            r.real = v;
            return r;
        }

        value boolean(bool b)
        {
            value r;
            r.kind = vtype::boolean;
            r.value = b ? 1 : 0;
            return r;
        }

        double as_real(const value& v)
        {
            if (v.kind == vtype::floating)
            {
                return v.real;
            }
            return v.is_unsigned ? static_cast<double>(static_cast<unsigned long long>(v.value))
                                 : static_cast<double>(v.value);
        }

        bool arithmetic(const value& v)
        {
            return v.kind == vtype::integer || v.kind == vtype::floating || v.kind == vtype::boolean;
        }

        bool truth(const value& v)
        {
            return v.kind == vtype::floating ? v.real != 0 : v.value != 0;
        }

        value number_literal(std::string text)
        {
            std::string digits;
            for (char c : text)
            {
                if (c != '\'')
                {
                    digits += c;
                }
            }
            bool hex = digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
            bool is_float = !hex && (digits.find_first_of(".eE") != std::string::npos);
            if (hex && digits.find_first_of("pP") != std::string::npos)
            {
                is_float = true;
            }
            if (is_float)
            {
                while (!digits.empty() && std::strchr("fFlL", digits.back()) != nullptr)
                {
                    digits.pop_back();
                }
                char* end = nullptr;
                double v = std::strtod(digits.c_str(), &end);
                if (end == nullptr || *end != '\0' || digits.empty())
                {
                    return {};
                }
                return floating(v);
            }
            bool is_unsigned = false;
            while (!digits.empty() && std::strchr("uUlLzZ", digits.back()) != nullptr)
            {
                is_unsigned = is_unsigned || digits.back() == 'u' || digits.back() == 'U';
                digits.pop_back();
            }
            int base = 10;
            std::size_t start = 0;
            if (hex)
            {
                base = 16;
                start = 2;
            }
            else if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B'))
            {
                base = 2;
                start = 2;
            }
            else if (digits.size() > 1 && digits[0] == '0')
            {
                base = 8;
                start = 1;
            }
            if (start >= digits.size())
            {
                return digits == "0" ? integer(0) : value();
            }
            errno = 0;
            char* end = nullptr;
            unsigned long long v = std::strtoull(digits.c_str() + start, &end, base);
            if (end == nullptr || *end != '\0' || errno != 0)
            {
                return {};
            }
            return integer(static_cast<long long>(v), is_unsigned || v > 0x7fffffffffffffffULL);
        }

        class evaluator
        {
        public:
            evaluator(const std::vector<token>& t, std::size_t begin, std::size_t end)
                : m_t(t)
                , m_i(begin)
                , m_end(end)
            {
            }

            value run()
            {
                value v = conditional();
                return m_ok && m_i == m_end ? v : value();
            }

        private:
            bool punct(const char* text, std::size_t k = 0) const
            {
                return m_i + k < m_end && is_punct(m_t[m_i + k], text);
            }

            bool word(const char* text, std::size_t k = 0) const
            {
                return m_i + k < m_end && is_identifier(m_t[m_i + k], text);
            }

            // `<<` and `>>` are two tokens to the lexer (so `>>` closes templates); here they are one.
            bool pair(const char* first, const char* second) const
            {
                return punct(first) && punct(second, 1) && !m_t[m_i + 1].space_before;
            }

            value fail()
            {
                m_ok = false;
                return {};
            }

            value conditional()
            {
                value c = binary(0);
                if (!punct("?"))
                {
                    return c;
                }
                ++m_i;
                value a = conditional();
                if (!punct(":"))
                {
                    return fail();
                }
                ++m_i;
                value b = conditional();
                if (!arithmetic(c))
                {
                    return fail();
                }
                return truth(c) ? a : b;
            }

            // Binary operators by precedence, lowest first.
            int precedence(std::string& op) const
            {
                if (punct("||")) { op = "||"; return 1; }
                if (punct("&&")) { op = "&&"; return 2; }
                if (punct("|")) { op = "|"; return 3; }
                if (punct("^")) { op = "^"; return 4; }
                if (punct("&")) { op = "&"; return 5; }
                if (punct("==") || punct("!=")) { op = m_t[m_i].text; return 6; }
                if (pair("<", "<")) { op = "<<"; return 8; }
                if (pair(">", ">")) { op = ">>"; return 8; }
                if (pair(">", "=")) { op = ">="; return 7; }
                if (punct("<=") || punct("<") || punct(">")) { op = m_t[m_i].text; return 7; }
                if (punct("+") || punct("-")) { op = m_t[m_i].text; return 9; }
                if (punct("*") || punct("/") || punct("%")) { op = m_t[m_i].text; return 10; }
                return 0;
            }

            value binary(int min)
            {
                value left = unary();
                for (;;)
                {
                    std::string op;
                    int p = precedence(op);
                    if (p == 0 || p <= min || !m_ok)
                    {
                        return left;
                    }
                    m_i += (op == "<<" || op == ">>" || op == ">=") ? 2 : 1;
                    value right = binary(p);
                    left = apply(op, left, right);
                }
            }

            value apply(const std::string& op, const value& a, const value& b)
            {
                if (!arithmetic(a) || !arithmetic(b))
                {
                    return fail();
                }
                if (op == "&&") return boolean(truth(a) && truth(b));
                if (op == "||") return boolean(truth(a) || truth(b));
                bool real = a.kind == vtype::floating || b.kind == vtype::floating;
                if (op == "==") return boolean(real ? as_real(a) == as_real(b) : a.value == b.value);
                if (op == "!=") return boolean(real ? as_real(a) != as_real(b) : a.value != b.value);
                if (op == "<") return boolean(real ? as_real(a) < as_real(b) : a.value < b.value);
                if (op == ">") return boolean(real ? as_real(a) > as_real(b) : a.value > b.value);
                if (op == "<=") return boolean(real ? as_real(a) <= as_real(b) : a.value <= b.value);
                if (op == ">=") return boolean(real ? as_real(a) >= as_real(b) : a.value >= b.value);
                if (real)
                {
                    double x = as_real(a);
                    double y = as_real(b);
                    if (op == "+") return floating(x + y);
                    if (op == "-") return floating(x - y);
                    if (op == "*") return floating(x * y);
                    if (op == "/") return floating(x / y);
                    return fail();
                }
                bool u = a.is_unsigned || b.is_unsigned;
                auto x = static_cast<unsigned long long>(a.value);
                auto y = static_cast<unsigned long long>(b.value);
                if (op == "+") return integer(static_cast<long long>(x + y), u);
                if (op == "-") return integer(static_cast<long long>(x - y), u);
                if (op == "*") return integer(static_cast<long long>(x * y), u);
                if (op == "&") return integer(static_cast<long long>(x & y), u);
                if (op == "|") return integer(static_cast<long long>(x | y), u);
                if (op == "^") return integer(static_cast<long long>(x ^ y), u);
                if (op == "<<" || op == ">>")
                {
                    if (b.value < 0 || b.value > 63)
                    {
                        return fail();
                    }
                    if (op == "<<") return integer(static_cast<long long>(x << y), u);
                    return u ? integer(static_cast<long long>(x >> y), true) : integer(a.value >> b.value);
                }
                if (b.value == 0 || (!u && a.value == (-0x7fffffffffffffffLL - 1) && b.value == -1))
                {
                    return fail();
                }
                if (op == "/") return u ? integer(static_cast<long long>(x / y), true) : integer(a.value / b.value);
                if (op == "%") return u ? integer(static_cast<long long>(x % y), true) : integer(a.value % b.value);
                return fail();
            }

            // `(type)`, `(type*)` at m_i: the cast's target, or false if it is not a cast.
            bool read_cast(bool& to_pointer, std::vector<std::string>& words, std::size_t& after) const
            {
                std::size_t k = m_i + 1;
                words.clear();
                to_pointer = false;
                bool named = false;
                for (; k < m_end && !is_punct(m_t[k], ")"); ++k)
                {
                    const token& t = m_t[k];
                    if (is_punct(t, "*"))
                    {
                        to_pointer = true;
                    }
                    else if (t.kind == token_kind::identifier && builtin_words().count(t.text) != 0)
                    {
                        words.push_back(t.text);
                    }
                    else if (t.kind == token_kind::identifier && (t.text == "const" || t.text == "volatile"))
                    {
                    }
                    else if (t.kind == token_kind::identifier && to_pointer == false && words.empty() && !named)
                    {
                        named = true;  // (MyType*)0: only a pointer cast of a name is read
                    }
                    else
                    {
                        return false;
                    }
                }
                if (k >= m_end || (words.empty() && !named) || (named && !to_pointer))
                {
                    return false;
                }
                after = k + 1;
                return after < m_end;  // something must follow a cast
            }

            value cast(const value& v, bool to_pointer, const std::vector<std::string>& words)
            {
                if (to_pointer)
                {
                    if ((v.kind == vtype::integer && v.value == 0) || v.kind == vtype::null_pointer)
                    {
                        value r;
                        r.kind = vtype::null_pointer;
                        return r;
                    }
                    return fail();
                }
                if (!arithmetic(v))
                {
                    return fail();
                }
                resolved_type r;
                try
                {
                    r = builtin_type(words, 0);
                }
                catch (const std::exception&)
                {
                    return fail();
                }
                switch (r.kind)
                {
                case scalar_kind::boolean: return boolean(truth(v));
                case scalar_kind::f16:
                case scalar_kind::bf16:
                case scalar_kind::f32:
                case scalar_kind::f64:
                case scalar_kind::fp8_e4m3:
                case scalar_kind::fp8_e5m2: return floating(as_real(v));
                case scalar_kind::f16x2:
                case scalar_kind::bf16x2: return fail();
                case scalar_kind::unknown: return fail();
                default:
                {
                    if (v.kind == vtype::floating)
                    {
                        if (!std::isfinite(v.real) || std::fabs(v.real) > 9.2e18)
                        {
                            return fail();
                        }
                        return integer(static_cast<long long>(v.real));
                    }
                    bool u = r.kind == scalar_kind::u8 || r.kind == scalar_kind::u16 || r.kind == scalar_kind::u32 ||
                             r.kind == scalar_kind::u64;
                    std::size_t bits = scalar_kind_size(r.kind) * 8;
                    auto x = static_cast<unsigned long long>(v.value);
                    if (bits < 64)
                    {
                        x &= (1ULL << bits) - 1;
                        if (!u && (x >> (bits - 1)) != 0)
                        {
                            x |= ~((1ULL << bits) - 1);  // sign-extend
                        }
                    }
                    return integer(static_cast<long long>(x), u);
                }
                }
            }

            value unary()
            {
                if (!m_ok || m_i >= m_end || ++m_depth > 256)
                {
                    return fail();  // nesting deeper than any real default: unknown, not a stack overflow
                }
                if (punct("-") || punct("+") || punct("!") || punct("~"))
                {
                    std::string op = m_t[m_i++].text;
                    value v = unary();
                    if (!arithmetic(v))
                    {
                        return fail();
                    }
                    if (op == "!") return boolean(!truth(v));
                    if (op == "+") return v.kind == vtype::boolean ? integer(v.value) : v;
                    if (op == "~")
                    {
                        if (v.kind == vtype::floating)
                        {
                            return fail();
                        }
                        return integer(~v.value, v.is_unsigned);
                    }
                    if (v.kind == vtype::floating) return floating(-v.real);
                    return integer(static_cast<long long>(0ULL - static_cast<unsigned long long>(v.value)), v.is_unsigned);
                }
                if (punct("("))
                {
                    bool to_pointer = false;
                    std::vector<std::string> words;
                    std::size_t after = 0;
                    if (read_cast(to_pointer, words, after))
                    {
                        m_i = after;
                        value v = unary();
                        return m_ok ? cast(v, to_pointer, words) : v;
                    }
                    ++m_i;
                    value v = conditional();
                    if (!punct(")"))
                    {
                        return fail();
                    }
                    ++m_i;
                    return v;
                }
                if ((word("static_cast") || word("reinterpret_cast")) && punct("<", 1))
                {
                    std::vector<std::string> words;
                    bool to_pointer = false;
                    std::size_t k = m_i + 2;
                    for (; k < m_end && !is_punct(m_t[k], ">"); ++k)
                    {
                        if (is_punct(m_t[k], "*"))
                            to_pointer = true;
                        else if (m_t[k].kind == token_kind::identifier && builtin_words().count(m_t[k].text))
                            words.push_back(m_t[k].text);
                        else if (!(m_t[k].kind == token_kind::identifier && to_pointer == false))
                            return fail();
                    }
                    if (k + 1 >= m_end || !is_punct(m_t[k + 1], "("))
                    {
                        return fail();
                    }
                    m_i = k + 2;
                    value v = conditional();
                    if (!punct(")"))
                    {
                        return fail();
                    }
                    ++m_i;
                    return cast(v, to_pointer, words);
                }
                if (word("sizeof") && punct("(", 1))
                {
                    std::vector<std::string> words;
                    std::size_t k = m_i + 2;
                    bool pointer = false;
                    for (; k < m_end && !is_punct(m_t[k], ")"); ++k)
                    {
                        if (is_punct(m_t[k], "*"))
                            pointer = true;
                        else if (m_t[k].kind == token_kind::identifier && builtin_words().count(m_t[k].text))
                            words.push_back(m_t[k].text);
                        else
                            return fail();
                    }
                    if (k >= m_end || (words.empty() && !pointer))
                    {
                        return fail();
                    }
                    m_i = k + 1;
                    if (pointer)
                    {
                        return integer(8, true);
                    }
                    try
                    {
                        resolved_type r = builtin_type(words, 0);
                        return r.size ? integer(static_cast<long long>(r.size), true) : fail();
                    }
                    catch (const std::exception&)
                    {
                        return fail();
                    }
                }
                const token& t = m_t[m_i++];
                if (t.kind == token_kind::number)
                {
                    value v = number_literal(t.text);
                    return v.known() ? v : fail();
                }
                if (t.kind == token_kind::character)
                {
                    // 'a', '\n', '\0': plain characters and the simple escapes.
                    const std::string& s = t.text;
                    if (s.size() == 3 && s[0] == '\'' && s[2] == '\'')
                        return integer(static_cast<unsigned char>(s[1]));
                    if (s.size() == 4 && s[0] == '\'' && s[1] == '\\')
                    {
                        static const std::string from = "ntr0\\'\"ab";
                        static const char to[] = {'\n', '\t', '\r', '\0', '\\', '\'', '"', '\a', '\b'};
                        std::size_t k = from.find(s[2]);
                        if (k != std::string::npos)
                            return integer(to[k]);
                    }
                    return fail();
                }
                if (t.kind == token_kind::identifier)
                {
                    if (t.text == "true" || t.text == "false")
                        return boolean(t.text == "true");
                    if (t.text == "nullptr" || t.text == "NULL")
                    {
                        value r;
                        r.kind = vtype::null_pointer;
                        return r;
                    }
                }
                return fail();
            }

            const std::vector<token>& m_t;
            std::size_t m_i;
            std::size_t m_end;
            bool m_ok = true;
            int m_depth = 0;
        };
    }

    constant_value evaluate_constant(const std::vector<token>& tokens, std::size_t begin, std::size_t end)
    {
        if (begin >= end || end > tokens.size())
        {
            return {};
        }
        try
        {
            return evaluator(tokens, begin, end).run();
        }
        catch (const std::exception&)
        {
            return {};
        }
    }

    constant_value evaluate_constant(const std::string& text)
    {
        std::vector<token> tokens;
        std::vector<macro_definition> macros;
        try
        {
            source_lexer(text).run(tokens, macros);
        }
        catch (const std::exception&)
        {
            return {};
        }
        return evaluate_constant(tokens, 0, tokens.size());
    }
}
