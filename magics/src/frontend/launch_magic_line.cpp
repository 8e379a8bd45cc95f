#include "launch_magic_line.hpp"

#include <cctype>

#include "errors.hpp"
#include "text.hpp"

namespace xcuda
{
    std::vector<launch_magic_line::span> launch_magic_line::split_top_level(const std::string& text, bool commas)
    {
        std::vector<span> pieces;
        int depth = 0;
        char quote = 0;
        std::size_t begin = std::string::npos;
        for (std::size_t i = 0; i < text.size(); ++i)
        {
            char c = text[i];
            bool separator = !quote && depth == 0 && (commas ? c == ',' : std::isspace(static_cast<unsigned char>(c)) != 0);
            if (separator)
            {
                if (begin != std::string::npos || commas)
                {
                    pieces.push_back({begin == std::string::npos ? i : begin, i});
                }
                begin = std::string::npos;
                continue;
            }
            if (begin == std::string::npos)
            {
                begin = i;
            }
            if (quote)
            {
                if (c == '\\')
                    ++i;
                else if (c == quote)
                    quote = 0;
            }
            else if (c == '\'' || c == '"')
                quote = c;
            else if (c == '(' || c == '[' || c == '{')
                ++depth;
            else if (c == ')' || c == ']' || c == '}')
                --depth;
        }
        if (begin != std::string::npos || (commas && !pieces.empty()))
        {
            pieces.push_back({begin == std::string::npos ? text.size() : begin, text.size()});
        }
        return pieces;
    }

    bool launch_magic_line::split_call(const std::string& expression, std::string& callee, std::string& arguments)
    {
        std::string text = text::trim(expression);
        if (text.empty() || text.back() != ')')
        {
            return false;
        }
        int depth = 0;
        char quote = 0;
        for (std::size_t i = text.size(); i-- > 0;)
        {
            char c = text[i];
            if (quote)
            {
                if (c == quote)
                    quote = 0;
                continue;
            }
            if (c == '\'' || c == '"')
                quote = c;
            else if (c == ')' || c == ']' || c == '}')
                ++depth;
            else if (c == '(' || c == '[' || c == '{')
            {
                if (--depth == 0)
                {
                    if (c != '(' || i == 0)
                        return false;
                    callee = text.substr(0, i);
                    arguments = text.substr(i + 1, text.size() - i - 2);
                    return !text::blank(callee);
                }
            }
        }
        return false;
    }

    launch_magic_line::launch_text launch_magic_line::launch(const magic_arguments& declared, const std::string& text)
    {
        launch_text found;
        std::string arguments;
        if (!split_call(text, found.callee, arguments))
        {
            throw usage_error(declared.problem("expected a launch such as saxpy[grid, block](a, x, y, out, n), got '" +
                                               text + "'"));
        }
        found.arguments = "(" + arguments + (text::blank(arguments) ? ")" : ",)");
        return found;
    }

    usage_error launch_magic_line::not_a_launcher(const magic_arguments& declared, const std::string& callee)
    {
        return usage_error(declared.problem("'" + callee + "' is not a kernel with a launch configuration; write "
                                            "kernel[grid, block](...)"));
    }

    std::array<std::string, 3> launch_magic_line::three_expressions(const magic_arguments& declared, const std::string& text,
                                                                   const is_expression& compiles)
    {
        std::vector<span> by_comma = split_top_level(text, true);
        auto piece = [&](const span& s) { return text::trim(text.substr(s.begin, s.end - s.begin)); };
        if (by_comma.size() > 1)
        {
            if (by_comma.size() != 3)
            {
                throw usage_error(declared.problem("expected three expressions (kernel, sizes, make_args), got " +
                                                   std::to_string(by_comma.size()) + " separated by commas in '" + text + "'"));
            }
            return {piece(by_comma[0]), piece(by_comma[1]), piece(by_comma[2])};
        }
        std::vector<span> words = split_top_level(text, false);
        if (words.size() < 3)
        {
            throw usage_error(declared.problem("expected three expressions (kernel, sizes, make_args), got '" + text + "'"));
        }
        auto part = [&](std::size_t first, std::size_t last) {
            return text.substr(words[first].begin, words[last - 1].end - words[first].begin);
        };
        std::vector<std::array<std::string, 3>> readings;
        for (std::size_t i = 1; i + 1 < words.size(); ++i)
        {
            for (std::size_t j = i + 1; j < words.size(); ++j)
            {
                std::array<std::string, 3> reading{part(0, i), part(i, j), part(j, words.size())};
                if (compiles(reading[0]) && compiles(reading[1]) && compiles(reading[2]))
                {
                    readings.push_back(reading);
                }
            }
        }
        if (readings.empty())
        {
            throw usage_error(declared.problem("could not read three Python expressions (kernel, sizes, make_args) from '" +
                                               text + "'"));
        }
        if (readings.size() > 1)
        {
            throw usage_error(declared.problem("'" + text + "' reads as three expressions in more than one way: separate "
                                               "kernel, sizes and make_args with commas"));
        }
        return readings.front();
    }
}
