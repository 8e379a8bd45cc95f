#include "host_code.hpp"

#include <cctype>
#include <set>

namespace xcuda
{
    namespace
    {
        enum class state { code, line_comment, block_comment, string, character, directive };

        bool identifier_char(char c)
        {
            return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
        }

        // The offset just past the bracket that closes the one at `open`, counting only code; npos if none.
        std::size_t closing(const std::string& text, const std::vector<bool>& code, std::size_t open, char opening,
                            char closer)
        {
            int depth = 0;
            for (std::size_t i = open; i < text.size(); ++i)
            {
                if (!code[i])
                {
                    continue;
                }
                if (text[i] == opening)
                {
                    ++depth;
                }
                else if (text[i] == closer && --depth == 0)
                {
                    return i + 1;
                }
            }
            return std::string::npos;
        }

        // Where the function whose name starts at `name` ends: past its body's '}' or its declaration's ';'.
        std::size_t function_end(const std::string& text, const std::vector<bool>& code, std::size_t name)
        {
            std::size_t i = name;
            while (i < text.size() && (!code[i] || text[i] != '('))
            {
                if (code[i] && (text[i] == ';' || text[i] == '{' || text[i] == '}'))
                {
                    return std::string::npos;  // not a function's name after all
                }
                ++i;
            }
            if (i >= text.size() || (i = closing(text, code, i, '(', ')')) == std::string::npos)
            {
                return std::string::npos;
            }
            // After the parameters: qualifiers, a trailing return type, attributes with their own parentheses.
            for (; i < text.size(); ++i)
            {
                if (!code[i])
                {
                    continue;
                }
                if (text[i] == '(' && (i = closing(text, code, i, '(', ')')) == std::string::npos)
                {
                    return std::string::npos;
                }
                if (text[i] == ';')
                {
                    return i + 1;
                }
                if (text[i] == '{')
                {
                    return closing(text, code, i, '{', '}');
                }
                if (text[i] == '}')
                {
                    return std::string::npos;
                }
            }
            return std::string::npos;
        }

        // Where the host variable whose name starts at `name` ends: past its declaration's ';', over an
        // initializer's braces or parentheses (`cublasHandle_t handle;`, `int sizes[] = {1, 2};`).
        std::size_t variable_end(const std::string& text, const std::vector<bool>& code, std::size_t name)
        {
            for (std::size_t i = name; i < text.size(); ++i)
            {
                if (!code[i])
                {
                    continue;
                }
                if ((text[i] == '{' || text[i] == '(') &&
                    (i = closing(text, code, i, text[i], text[i] == '{' ? '}' : ')')) == std::string::npos)
                {
                    return std::string::npos;
                }
                if (text[i] == ';')
                {
                    return i + 1;
                }
                if (text[i] == '}')
                {
                    return std::string::npos;
                }
            }
            return std::string::npos;
        }

        // Where the declaration holding the name at `name` starts: just past the previous ';', '{' or '}' of
        // code, or the previous preprocessor line, or the start of the cell.
        std::size_t declaration_start(const std::string& text, const std::vector<bool>& code, std::size_t name)
        {
            std::size_t i = name;
            while (i > 0)
            {
                char c = text[i - 1];
                if (code[i - 1] && (c == ';' || c == '{' || c == '}'))
                {
                    return i;
                }
                if (c == '\n' && i >= 2 && !code[i - 2] && text[i - 2] != '\n')
                {
                    // The line before ends in something that is not code: a comment or a directive. A
                    // directive line stops the search (it stays); a comment is taken with the function.
                    std::size_t line = text.rfind('\n', i - 2);
                    line = line == std::string::npos ? 0 : line + 1;
                    std::size_t first = text.find_first_not_of(" \t", line);
                    if (first != std::string::npos && first < i - 1 && text[first] == '#')
                    {
                        return i;
                    }
                }
                --i;
            }
            return 0;
        }

        std::size_t offset_of(const std::string& text, int line, int column)
        {
            std::size_t at = 0;
            for (int l = 1; l < line; ++l)
            {
                at = text.find('\n', at);
                if (at == std::string::npos)
                {
                    return std::string::npos;
                }
                ++at;
            }
            std::size_t end = text.find('\n', at);
            std::size_t target = at + static_cast<std::size_t>(column - 1);
            return (column < 1 || target >= (end == std::string::npos ? text.size() : end)) ? std::string::npos : target;
        }
    }

    std::vector<bool> host_code::code_mask(const std::string& source)
    {
        std::vector<bool> code(source.size(), false);
        state s = state::code;
        bool line_start = true;
        for (std::size_t i = 0; i < source.size(); ++i)
        {
            char c = source[i];
            char next = i + 1 < source.size() ? source[i + 1] : '\0';
            switch (s)
            {
            case state::code:
                if (c == '/' && next == '/') { s = state::line_comment; }
                else if (c == '/' && next == '*') { s = state::block_comment; ++i; }
                else if (c == '"') { s = state::string; }
                else if (c == '\'') { s = state::character; }
                else if (c == '#' && line_start) { s = state::directive; }
                else { code[i] = true; }
                break;
            case state::line_comment:
                if (c == '\n') { s = state::code; }
                break;
            case state::block_comment:
                if (c == '*' && next == '/') { s = state::code; ++i; }
                break;
            case state::string:
                if (c == '\\') { ++i; } else if (c == '"' || c == '\n') { s = state::code; }
                break;
            case state::character:
                if (c == '\\') { ++i; } else if (c == '\'' || c == '\n') { s = state::code; }
                break;
            case state::directive:
                if (c == '\\' && next == '\n') { ++i; } else if (c == '\n') { s = state::code; }
                break;
            }
            if (c == '\n') { line_start = true; }
            else if (c != ' ' && c != '\t') { line_start = false; }
        }
        return code;
    }

    set_aside_code host_code::set_aside(const std::string& source, const std::vector<std::pair<int, int>>& positions,
                                        bool main_too)
    {
        set_aside_code result{source, {}};
        std::vector<bool> code = code_mask(source);
        std::set<std::size_t> done;
        for (const auto& [line, column] : positions)
        {
            std::size_t name = offset_of(source, line, column);
            bool destructor = name != std::string::npos && name + 1 < source.size() && source[name] == '~';
            name += destructor ? 1 : 0;  // NVRTC's caret is at a destructor's ~ (llm.c's ~NvtxRange)
            if (name == std::string::npos || !code[name] || !identifier_char(source[name]))
            {
                continue;
            }
            while (name > 0 && code[name - 1] && identifier_char(source[name - 1]))
            {
                --name;
            }
            std::size_t name_end = name;
            while (name_end < source.size() && identifier_char(source[name_end]))
            {
                ++name_end;
            }
            // main() is the whole program, not a helper beside kernels: its refusal says to use %%cuda_program.
            std::size_t end = function_end(source, code, name);
            if (end == std::string::npos)
            {
                end = variable_end(source, code, name);  // a host variable: NVRTC refuses those too
            }
            if (end == std::string::npos || (!main_too && source.compare(name, name_end - name, "main") == 0) ||
                !done.insert(name).second)
            {
                continue;
            }
            std::size_t start = declaration_start(source, code, name);
            result.functions.emplace_back((destructor ? "~" : "") + source.substr(name, name_end - name), line);
            // Blank the code and comments; newlines and directive lines stay (an #if in the body keeps its
            // #endif, and every later line keeps its number).
            bool in_directive = false;
            for (std::size_t i = start; i < end; ++i)
            {
                if (source[i] == '\n')
                {
                    std::size_t first = source.find_first_not_of(" \t", i + 1);
                    in_directive = first != std::string::npos && source[first] == '#';
                    continue;
                }
                if (i == start)
                {
                    std::size_t line_begin = source.rfind('\n', i);
                    line_begin = line_begin == std::string::npos ? 0 : line_begin + 1;
                    std::size_t first = source.find_first_not_of(" \t", line_begin);
                    in_directive = first != std::string::npos && first <= i && source[first] == '#' && !code[i];
                }
                if (!in_directive)
                {
                    result.source[i] = ' ';
                }
            }
        }
        return result;
    }
}
