#include "diagnostics.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>


namespace xcuda
{
    std::vector<int> diagnostics::error_lines(const std::string& log)
    {
        // NVRTC writes "cell(LINE): error: message" (and "warning"); only errors are collected.
        const std::string prefix = std::string(program_name) + "(";
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

    std::string diagnostics::hint_for(const std::string& message, const std::vector<int>& supported_archs)
    {
        static const char* host_headers[] = {"iostream", "fstream", "sstream", "string\"", "vector\"", "thread",
                                             "mutex", "cstdio", "stdio.h", "map\"", "memory\""};
        if (message.find("cannot open source file") != std::string::npos)
        {
            for (const char* header : host_headers)
            {
                if (message.find(header) != std::string::npos)
                {
                    return "NVRTC compiles device code only: host headers such as <iostream> or <vector> are not "
                           "available. Use printf for output, and <cuda/std/...> (libcu++) headers for the standard "
                           "library in device code.";
                }
            }
            return "the header was not found: the toolkit's include folder is searched; add others with -I, or "
                   "define it in a %%cuda_header cell.";
        }
        if (message.find("gpu-architecture") != std::string::npos || message.find("invalid value for --gpu") != std::string::npos ||
            message.find("unsupported gpu architecture") != std::string::npos)
        {
            std::string archs;
            for (int arch : supported_archs)
            {
                archs += (archs.empty() ? "" : ", ") + std::to_string(arch);
            }
            return "this NVRTC compiles for sm_XX / compute_XX with XX in: " + archs + ".";
        }
        if (message.find("is undefined") != std::string::npos &&
            (message.find("\"printf\"") != std::string::npos || message.find("\"assert\"") != std::string::npos))
        {
            return "NVRTC has printf and assert built in for device code; do not include <cstdio> or <cassert>.";
        }
        return {};
    }

    std::vector<diagnostic> diagnostics::parse(const std::string& source, const std::string& log,
                                               const std::vector<int>& supported_archs)
    {
        // NVRTC writes "cell(LINE): SEVERITY: MESSAGE", then the source line indented by two spaces,
        // then a caret line under the column.
        std::vector<std::string> source_lines;
        {
            std::istringstream in(source);
            std::string line;
            while (std::getline(in, line))
            {
                source_lines.push_back(line);
            }
        }
        std::vector<std::string> lines;
        {
            std::istringstream in(log);
            std::string line;
            while (std::getline(in, line))
            {
                lines.push_back(line);
            }
        }
        const std::string prefix = std::string(program_name) + "(";
        std::vector<diagnostic> result;
        for (std::size_t i = 0; i < lines.size(); ++i)
        {
            const std::string& line = lines[i];
            diagnostic d;
            std::size_t rest = 0;
            if (line.rfind(prefix, 0) == 0)
            {
                std::size_t close = line.find("): ", prefix.size());
                if (close == std::string::npos)
                {
                    continue;
                }
                try
                {
                    d.line = std::stoi(line.substr(prefix.size(), close - prefix.size()));
                }
                catch (const std::exception&)
                {
                    continue;
                }
                rest = close + 3;
            }
            else if (line.rfind("error: ", 0) == 0 || line.rfind("warning: ", 0) == 0 ||
                     line.find("nvrtc: error") != std::string::npos)
            {
                rest = line.find("nvrtc: ") == 0 ? 7 : 0;
            }
            else
            {
                continue;
            }
            std::size_t colon = line.find(": ", rest);
            if (colon == std::string::npos)
            {
                continue;
            }
            d.severity = line.substr(rest, colon - rest);
            if (d.severity != "error" && d.severity != "warning" && d.severity != "remark" &&
                d.severity != "catastrophic error")
            {
                continue;
            }
            d.message = line.substr(colon + 2);
            if (d.line > 0 && d.line <= static_cast<int>(source_lines.size()))
            {
                d.source_line = source_lines[static_cast<std::size_t>(d.line - 1)];
                if (i + 2 < lines.size())
                {
                    std::size_t caret = lines[i + 2].find('^');
                    if (caret != std::string::npos && lines[i + 2].find_first_not_of(" ^") == std::string::npos &&
                        caret >= 2)
                    {
                        d.column = static_cast<int>(caret - 2) + 1;
                    }
                }
            }
            d.hint = hint_for(d.message, supported_archs);
            result.push_back(d);
        }
        return result;
    }

    std::string diagnostics::format_compile_error(const std::string& source, const std::string& log,
                                                  const std::vector<std::string>& options,
                                                  const std::string& status,
                                                  const std::vector<int>& supported_archs)
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
        std::string hints;
        for (const auto& d : parse(source, log, supported_archs))
        {
            if (!d.hint.empty() && hints.find(d.hint) == std::string::npos)
            {
                hints += "\nhint: " + d.hint;
            }
        }
        message += hints.empty() ? "" : hints + "\n";
        message += "\nOptions:";
        for (const auto& option : options)
        {
            message += " " + option;
        }
        return message;
    }

    std::vector<diagnostic> diagnostics::shifted(std::vector<diagnostic> messages, int lines)
    {
        for (diagnostic& d : messages)
        {
            if (d.line > 0)
            {
                d.line += lines;
            }
        }
        return messages;
    }

    std::string diagnostics::shifted_log(const std::string& log, int lines)
    {
        const std::string prefix = std::string(program_name) + "(";
        std::string out;
        std::istringstream in(log);
        std::string line;
        bool first = true;
        while (std::getline(in, line))
        {
            out += first ? "" : "\n";
            first = false;
            std::size_t close = line.find(')', prefix.size());
            if (line.rfind(prefix, 0) == 0 && close != std::string::npos && close > prefix.size() &&
                line.find_first_not_of("0123456789", prefix.size()) == close && close - prefix.size() < 10)
            {
                int number = std::stoi(line.substr(prefix.size(), close - prefix.size()));
                line = prefix + std::to_string(number + lines) + line.substr(close);
            }
            out += line;
        }
        return out;
    }
}
