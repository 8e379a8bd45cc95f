#include "diagnostics.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "nvrtc_compiler.hpp"

namespace xcuda
{
    std::vector<int> diagnostics::error_lines(const std::string& log)
    {
        // NVRTC writes "cell(LINE): error: message" (and "warning"); only errors are collected.
        const std::string prefix = std::string(nvrtc_compiler::program_name) + "(";
        std::vector<int> lines;
        std::istringstream in(log);
        std::string line;
        while (std::getline(in, line))
        {
            if (line.rfind(prefix, 0) != 0)
            {
                continue;
            }
            std::size_t close = line.find(')', prefix.size());
            if (close == std::string::npos || line.find("error", close) == std::string::npos)
            {
                continue;
            }
            try
            {
                int number = std::stoi(line.substr(prefix.size(), close - prefix.size()));
                if (std::find(lines.begin(), lines.end(), number) == lines.end())
                {
                    lines.push_back(number);
                }
            }
            catch (const std::exception&)
            {
                // Not a line number: leave the line to the log.
            }
        }
        return lines;
    }

    std::string diagnostics::numbered_lines(const std::string& source, int first, int last,
                                            const std::vector<int>& marks)
    {
        std::vector<std::string> lines;
        std::istringstream in(source);
        std::string line;
        while (std::getline(in, line))
        {
            lines.push_back(line);
        }
        first = std::max(first, 1);
        last = std::min(last, static_cast<int>(lines.size()));
        std::string out;
        char number[32];
        for (int i = first; i <= last; ++i)
        {
            bool marked = std::find(marks.begin(), marks.end(), i) != marks.end();
            std::snprintf(number, sizeof number, "%s%4d | ", marked ? "> " : "  ", i);
            out += number + lines[static_cast<std::size_t>(i - 1)] + "\n";
        }
        return out;
    }

    std::string diagnostics::format_compile_error(const std::string& source, const std::string& log,
                                                  const std::vector<std::string>& options,
                                                  const std::string& status)
    {
        std::string message = "NVRTC could not compile the cell (" + status + "):\n";
        message += log.empty() ? std::string("(NVRTC wrote no log)") : log;
        message += "\n";
        std::vector<int> lines = error_lines(log);
        if (!lines.empty())
        {
            message += "\nSource:\n";
            int shown_until = 0;
            for (int line : lines)
            {
                int first = std::max(line - 2, shown_until + 1);
                int last = line + 2;
                if (first > last)
                {
                    continue;
                }
                if (shown_until != 0 && first > shown_until + 1)
                {
                    message += "   ...\n";
                }
                message += numbered_lines(source, first, last, lines);
                shown_until = last;
                if (lines.size() > 8 && line >= lines[7])
                {
                    break;  // a cascade of errors: the first few are the useful ones
                }
            }
        }
        message += "\nOptions:";
        for (const auto& option : options)
        {
            message += " " + option;
        }
        return message;
    }
}
