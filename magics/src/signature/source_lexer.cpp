#include "source_lexer.hpp"

#include <algorithm>
#include <utility>

#include "constant_expression.hpp"
#include "errors.hpp"
#include "kernel_signature.hpp"

namespace xcuda::cxx
{
    namespace
    {
    }

    source_lexer::source_lexer(const std::string& source, include_resolver* includes, int file,
                               preprocessor_state* state, std::string file_name)
        : m_src(source)
        , m_state(state ? *state : m_own_state)
        , m_includes(includes)
        , m_file(file)
        , m_file_name(std::move(file_name))
    {
    }

    source_lexer::source_lexer(const std::string& source, include_resolver* includes, int file, source_lexer& parent,
                               std::string file_name)
        : m_src(source)
        , m_state(parent.m_state)
        , m_includes(includes)
        , m_file(file)
        , m_file_name(std::move(file_name))
        , m_base_doubt(parent.current_doubt())
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
                t.doubt = current_doubt();
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

    int source_lexer::current_doubt() const
    {
        return m_conditions.empty() ? m_base_doubt : m_conditions.back().doubt;
    }

    int source_lexer::add_doubt(const std::string& directive, int line, const std::string& why)
    {
        m_state.doubts.push_back("`" + directive + "` (line " + std::to_string(line) + " of " + m_file_name +
                                 "): " + why);
        return static_cast<int>(m_state.doubts.size()) - 1;
    }

    namespace
    {
        // In an #if condition: the index of the ")" closing the parenthesized argument after in[at] (a
        // function-like macro's or __has_include's), or `at` when no "(" follows; the end when unclosed.
        std::size_t past_parenthesized_argument(const std::vector<token>& in, std::size_t at)
        {
            if (at + 1 >= in.size() || !is_punct(in[at + 1], "("))
            {
                return at;
            }
            int depth = 0;
            std::size_t i = at + 1;
            for (; i < in.size(); ++i)
            {
                depth += is_punct(in[i], "(") ? 1 : is_punct(in[i], ")") ? -1 : 0;
                if (depth == 0)
                {
                    break;
                }
            }
            return i;
        }

        // Reserved names NVRTC never defines (other compilers' and platforms'), and those it defines
        // only for an option that the prelude then defines itself (-G, -rdc, -ewp, -device-int128).
        bool known_undefined(const std::string& name)
        {
            static const std::set<std::string> names{
                "__GNUC__", "__GNUC_MINOR__", "__GNUC_PATCHLEVEL__", "__clang__", "__clang_major__", "_MSC_VER",
                "_WIN32", "_WIN64", "__APPLE__", "__MACH__", "__NVCC__", "__HIP__", "__HIPCC__", "__HIP_PLATFORM_AMD__",
                "__HIP_PLATFORM_HCC__", "__HIP_PLATFORM_NVIDIA__", "__HIP_DEVICE_COMPILE__", "__INTEL_COMPILER",
                "__INTEL_LLVM_COMPILER", "__x86_64__", "__x86_64", "__aarch64__", "__powerpc64__", "__linux__",
                "__linux", "__unix__", "__unix", "__OPENCL_VERSION__", "__SYCL_DEVICE_ONLY__", "_OPENMP",
                "__NVCOMPILER", "__ELF__", "__MINGW32__", "__CYGWIN__", "__EMSCRIPTEN__", "__CUDACC_DEBUG__",
                "__CUDACC_RDC__", "__CUDACC_EWP__", "__CUDACC_RTC_INT128__", "__CUDACC_RTC_FLOAT128__",
                "__CUDACC_EXTENDED_LAMBDA__", "__CUDACC_RELAXED_CONSTEXPR__", "__CUDA_ARCH_FEAT_SM90_ALL",
                "__CUDA_ARCH_FEAT_SM100_ALL", "__CUDA_ARCH_FEAT_SM101_ALL", "__CUDA_ARCH_FEAT_SM103_ALL",
                "__CUDA_ARCH_FEAT_SM110_ALL", "__CUDA_ARCH_FEAT_SM120_ALL", "__CUDA_ARCH_FEAT_SM121_ALL",
                "__CUDA_ARCH_SPECIFIC__", "__CUDA_ARCH_FAMILY_SPECIFIC__"};
            return names.count(name) != 0;
        }

        // Macro names the toolkit's and the C library's headers define, which a cell may test after
        // including one of them.
        bool toolkit_name(const std::string& name)
        {
            static const char* const prefixes[] = {"CUDA", "CUDART", "CUB_", "THRUST_", "CCCL", "LIBCUDACXX", "NV_",
                                                   "NVRTC", "CUBLAS", "CUFFT", "CURAND", "CUSPARSE", "CUTLASS",
                                                   "FLT_", "DBL_", "LDBL_", "INT", "UINT", "LONG_", "ULONG_", "LLONG_",
                                                   "ULLONG_", "SHRT_", "USHRT_", "SCHAR_", "UCHAR_", "CHAR_", "SIZE_",
                                                   "PTRDIFF_", "WCHAR_", "M_", "EXIT_", "RAND_MAX", "HUGE_VAL", "FP_",
                                                   "MATH_", "EOF", "BUFSIZ", "NAN", "INFINITY", "assert", "offsetof",
                                                   "true", "false", "bool", "static_assert"};
            for (const char* p : prefixes)
            {
                if (name.rfind(p, 0) == 0)
                {
                    return true;
                }
            }
            return false;
        }
    }

    // Why a name nobody defined may be defined after all; "" when it is certainly not (then it is 0).
    std::string source_lexer::unknown_name_problem(const std::string& name) const
    {
        bool reserved = name.size() >= 2 && name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'));
        const std::string& unread = m_state.unread_header;
        if (reserved && !known_undefined(name))
        {
            return name + " is not one of the NVRTC macros xcuda's reader knows: NVRTC may predefine it" +
                   (unread.empty() ? std::string() : " or " + unread + " may define it");
        }
        if (!reserved && !unread.empty() && toolkit_name(name))
        {
            return name + " may be defined by " + unread + ", which xcuda's reader does not read";
        }
        return {};
    }

    source_lexer::decision source_lexer::evaluate_defined(const std::string& directive, const std::string& name, int line)
    {
        auto it = m_state.macros.find(name);
        if (name == "NULL" && it == m_state.macros.end())
        {
            return {1, -1};  // NVRTC defines it (as 0); the reader keeps it as a word
        }
        if (it != m_state.macros.end())
        {
            if (it->second.doubt >= 0)
            {
                return {0, add_doubt(directive, line, name + " is defined or undefined depending on " +
                                                          m_state.doubts[static_cast<std::size_t>(it->second.doubt)])};
            }
            return {1, -1};
        }
        std::string problem = unknown_name_problem(name);
        if (!problem.empty())
        {
            return {0, add_doubt(directive, line, problem)};
        }
        return {0, -1};
    }

    // Replaces `defined X`, macros and names in a condition as the preprocessor does; `why` gets the
    // first thing that makes the value unknown.
    void source_lexer::expand_condition(const std::vector<token>& in, std::vector<token>& out,
                                        std::vector<std::string>& active, std::string& why, int line)
    {
        auto number = [&out](long long v) {
            token t;
            t.kind = token_kind::number;
            t.text = std::to_string(v);
            t.space_before = true;
            out.push_back(std::move(t));
        };
        for (std::size_t i = 0; i < in.size(); ++i)
        {
            if (out.size() > signature_limits::condition_tokens)
            {
                throw usage_error("line " + std::to_string(line) + " of " + m_file_name + ": an #if condition expands to over " +
                                  std::to_string(signature_limits::condition_tokens) +
                                  " tokens, xcuda's limit; simplify the macros it uses");
            }
            const token& t = in[i];
            if (t.kind != token_kind::identifier)
            {
                out.push_back(t);
                continue;
            }
            if (t.text == "defined")
            {
                std::size_t k = i + 1;
                bool paren = k < in.size() && is_punct(in[k], "(");
                k += paren ? 1 : 0;
                if (k >= in.size() || in[k].kind != token_kind::identifier || (paren && (k + 1 >= in.size() || !is_punct(in[k + 1], ")"))))
                {
                    if (why.empty())
                    {
                        why = "a malformed defined()";
                    }
                    number(0);
                    continue;
                }
                const std::string& name = in[k].text;
                auto it = m_state.macros.find(name);
                if (name == "NULL" && it == m_state.macros.end())
                {
                    number(1);  // NVRTC defines it
                }
                else if (it != m_state.macros.end())
                {
                    if (it->second.doubt >= 0 && why.empty())
                    {
                        why = name + " is defined or undefined depending on " +
                              m_state.doubts[static_cast<std::size_t>(it->second.doubt)];
                    }
                    number(1);
                }
                else
                {
                    std::string problem = unknown_name_problem(name);
                    if (!problem.empty() && why.empty())
                    {
                        why = problem;
                    }
                    number(0);
                }
                i = paren ? k + 1 : k;
                continue;
            }
            if (t.text == "__has_include" || t.text == "__has_include_next" || t.text == "__has_builtin" ||
                t.text == "__has_attribute" || t.text == "__has_cpp_attribute" || t.text == "__has_feature")
            {
                if (why.empty())
                {
                    why = t.text + "(...) is not evaluated by xcuda's reader";
                }
                number(0);
                i = past_parenthesized_argument(in, i);
                continue;
            }
            auto it = m_state.macros.find(t.text);
            if (it != m_state.macros.end() && std::find(active.begin(), active.end(), t.text) == active.end())
            {
                const preprocessor_state::macro& m = it->second;
                if (m.doubt >= 0 && why.empty())
                {
                    why = t.text + " is defined (or its value set) depending on " +
                          m_state.doubts[static_cast<std::size_t>(m.doubt)];
                }
                if (m.function_like)
                {
                    if (why.empty())
                    {
                        why = "the function-like macro " + t.text + "(...) is not evaluated by xcuda's reader";
                    }
                    number(0);
                    i = past_parenthesized_argument(in, i);
                    continue;
                }
                if (active.size() >= 64)
                {
                    if (why.empty())
                    {
                        why = "macros nest deeper than 64 levels";
                    }
                    number(0);
                    continue;
                }
                active.push_back(t.text);
                std::vector<token> body = m.body;  // a copy: expanding may define nothing, but keep it simple
                expand_condition(body, out, active, why, line);
                active.pop_back();
                continue;
            }
            if (t.text == "true" || t.text == "false" || t.text == "NULL")
            {
                number(t.text == "true" ? 1 : 0);
                continue;
            }
            std::string problem = unknown_name_problem(t.text);
            if (!problem.empty() && why.empty())
            {
                why = problem;
            }
            number(0);  // a name no macro defines is 0
        }
    }

    source_lexer::decision source_lexer::evaluate(const std::string& directive, const std::vector<token>& c, int line)
    {
        std::string text = directive + " " + join_as_written(c, 0, c.size());
        if (text.size() > 120)
        {
            text = text.substr(0, 117) + "...";
        }
        std::vector<token> expanded;
        std::vector<std::string> active;
        std::string why;
        expand_condition(c, expanded, active, why, line);
        if (!why.empty())
        {
            return {0, add_doubt(text, line, why)};
        }
        constant_value v = evaluate_constant(expanded, 0, expanded.size());
        if (v.kind != constant_value::type::integer && v.kind != constant_value::type::boolean)
        {
            return {0, add_doubt(text, line, "xcuda's reader cannot evaluate this condition")};
        }
        return {v.value != 0 ? 1 : 0, -1};
    }

    void source_lexer::open_condition(decision value)
    {
        int outer = current_doubt();
        if (!active())
        {
            m_conditions.push_back({false, false, true, -1, outer, outer});
            return;
        }
        m_conditions.push_back({true, false, false, -1, outer, outer});
        next_branch(value);
    }

    // The next branch of the innermost group, none before it known to be taken.
    void source_lexer::next_branch(decision value)
    {
        condition& c = m_conditions.back();
        if (value.doubt >= 0)
        {
            c.active = true;
            c.doubt = value.doubt;
            c.earlier_doubt = value.doubt;
        }
        else if (value.value != 0)
        {
            c.active = true;
            c.taken = true;
            c.doubt = c.earlier_doubt >= 0 ? c.earlier_doubt : c.outer_doubt;
        }
        else
        {
            c.active = false;
        }
    }

    // Whether the next directive (the line after an #ifndef NAME) is #define NAME: an include guard.
    bool source_lexer::guarded_by(const std::string& macro)
    {
        std::size_t pos = m_pos;
        int line = m_line;
        bool line_start = m_line_start;
        bool guard = false;
        skip_space(false, true);
        if (peek() == '#')
        {
            ++m_pos;
            token a;
            token b;
            guard = next_token(a, true, true) && is_identifier(a, "define") && next_token(b, true, true) &&
                    b.kind == token_kind::identifier && b.text == macro;
        }
        m_pos = pos;
        m_line = line;
        m_line_start = line_start;
        return guard;
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
        if (d == "if" || d == "ifdef" || d == "ifndef")
        {
            if (m_conditions.size() >= signature_limits::condition_nesting)
            {
                throw usage_error("line " + std::to_string(name.line) + " of " + m_file_name + " nests #if groups deeper than xcuda's limit of " +
                                  std::to_string(signature_limits::condition_nesting) + " levels; flatten them");
            }
            std::vector<token> rest = rest_of_line();
            decision value;
            if (!active())
            {
                value = {0, -1};  // not evaluated, as the preprocessor does not
            }
            else if (d == "if")
            {
                value = evaluate("#if", rest, name.line);
            }
            else if (!rest.empty() && rest[0].kind == token_kind::identifier)
            {
                const std::string& macro = rest[0].text;
                value = evaluate_defined("#" + d + " " + macro, macro, name.line);
                if (value.doubt >= 0 && d == "ifndef" && m_state.macros.count(macro) == 0 && guarded_by(macro))
                {
                    // An include guard: the reader reads each header once, as the guard makes the compiler do.
                    m_state.doubts.pop_back();
                    value = {0, -1};
                }
                if (value.doubt < 0 && d == "ifndef")
                {
                    value.value = value.value ? 0 : 1;
                }
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
            if (m_conditions.back().taken)
            {
                m_conditions.back().active = false;
                return;
            }
            decision value{1, -1};
            if (d == "elif")
            {
                value = evaluate("#elif", rest, name.line);
            }
            else if (d != "else" && !rest.empty() && rest[0].kind == token_kind::identifier)
            {
                value = evaluate_defined("#" + d + " " + rest[0].text, rest[0].text, name.line);
                if (value.doubt < 0 && d == "elifndef")
                {
                    value.value = value.value ? 0 : 1;
                }
            }
            next_branch(value);
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
                marker.doubt = current_doubt();
                tokens.push_back(std::move(marker));
                if (marker.doubt < 0)
                {
                    m_state.macros.erase(rest[0].text);
                }
                else
                {
                    preprocessor_state::macro& m = m_state.macros[rest[0].text];
                    m.doubt = marker.doubt;  // maybe undefined from here on
                }
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
        if (rest.empty())
        {
            return;
        }
        if (m_includes == nullptr || m_depth >= 32)
        {
            if (m_state.unread_header.empty())
            {
                m_state.unread_header = "a header";
            }
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
        const std::string* text = name.empty() ? nullptr : m_includes->open(name, angled, file, m_file);
        if (text != nullptr)
        {
            source_lexer(*text, m_includes, file, *this, name).run(tokens, macros);
        }
        else if (!name.empty() && !m_includes->was_read(name) && m_state.unread_header.empty())
        {
            m_state.unread_header = angled ? "<" + name + ">" : "\"" + name + "\"";
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
        marker.doubt = current_doubt();
        m.doubt = marker.doubt;
        preprocessor_state::macro& known = m_state.macros[m.name];
        known.function_like = m.function_like;
        known.body = m.body;
        known.doubt = m.doubt;
        macros.push_back(std::move(m));
        tokens.push_back(std::move(marker));
    }
}
