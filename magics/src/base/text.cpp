#include "text.hpp"

#include <cstdio>

namespace xcuda::text
{
    std::string html_escape(const std::string& text)
    {
        std::string out;
        out.reserve(text.size());
        for (char c : text)
        {
            switch (c)
            {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
            }
        }
        return out;
    }

    std::vector<std::string> split_lines(const std::string& text)
    {
        std::vector<std::string> out;
        std::size_t start = 0;
        while (start < text.size())
        {
            std::size_t nl = text.find('\n', start);
            std::size_t stop = nl == std::string::npos ? text.size() : nl;
            std::string line = text.substr(start, stop - start);
            if (!line.empty() && line.back() == '\r')
            {
                line.pop_back();
            }
            out.push_back(std::move(line));
            if (nl == std::string::npos)
            {
                break;
            }
            start = nl + 1;
        }
        return out;
    }

    std::string trim(const std::string& text)
    {
        const char* blanks = " \t\r\n";
        std::size_t first = text.find_first_not_of(blanks);
        if (first == std::string::npos)
        {
            return {};
        }
        return text.substr(first, text.find_last_not_of(blanks) - first + 1);
    }

    bool blank(const std::string& text)
    {
        return text.find_first_not_of(" \t\r\n") == std::string::npos;
    }

    std::string format(const char* pattern, double value)
    {
        char out[64];
        std::snprintf(out, sizeof out, pattern, value);
        return out;
    }

    std::string bytes(double count)
    {
        if (count >= 1e9)
            return format("%.2f GB", count / 1e9);
        if (count >= 1e6)
            return format("%.1f MB", count / 1e6);
        if (count >= 1e3)
            return format("%.1f kB", count / 1e3);
        return format("%.0f B", count);
    }
}
