#include "help_transform.hpp"

#include <sstream>

#include "text.hpp"

namespace xcuda
{
    bool help_transform::asks_for_help(const std::string& first_line)
    {
        std::istringstream words(first_line);
        std::string magic, word;
        words >> magic;
        if (magic != "%%cuda" && magic != "%%cuda_header" && magic != "%%cuda_program")
        {
            return false;
        }
        bool help = false;
        while (words >> word)
        {
            help = help || word == "-h" || word == "--help";
        }
        return help;
    }

    bool help_transform::needs_body(const std::vector<std::string>& lines)
    {
        if (lines.empty() || !asks_for_help(lines[0]))
        {
            return false;
        }
        for (std::size_t i = 1; i < lines.size(); ++i)
        {
            if (!text::blank(lines[i]))
            {
                return false;
            }
        }
        return true;
    }

    std::vector<std::string> help_transform::with_body(const std::string& first_line)
    {
        return {first_line.empty() || first_line.back() != '\n' ? first_line + "\n" : first_line, "\n"};
    }
}
