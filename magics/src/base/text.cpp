#include "text.hpp"

#include <algorithm>

#include <cstdint>
#include <cstdio>

namespace xcuda::text
{
    bool is_line_space(char c)
    {
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
    }

    bool starts_with(const std::string& text, const std::string& prefix)
    {
        return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
    }

    namespace
    {
        const char* const replacement = "\xEF\xBF\xBD";  // U+FFFD

        // Length of the valid UTF-8 sequence at s[i], or 0. Overlong forms, surrogates and code
        // points past U+10FFFF are invalid (nlohmann::json, which carries Jupyter messages, rejects them).
        std::size_t utf8_sequence(const std::string& s, std::size_t i, std::uint32_t& cp)
        {
            const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
            unsigned char c = byte(i);
            std::size_t len = 0;
            if (c < 0x80)
            {
                cp = c;
                return 1;
            }
            if (c >= 0xC2 && c <= 0xDF)
            {
                len = 2;
                cp = c & 0x1F;
            }
            else if (c >= 0xE0 && c <= 0xEF)
            {
                len = 3;
                cp = c & 0x0F;
            }
            else if (c >= 0xF0 && c <= 0xF4)
            {
                len = 4;
                cp = c & 0x07;
            }
            else
            {
                return 0;
            }
            if (i + len > s.size())
            {
                return 0;
            }
            for (std::size_t k = 1; k < len; ++k)
            {
                if ((byte(i + k) & 0xC0) != 0x80)
                {
                    return 0;
                }
                cp = (cp << 6) | (byte(i + k) & 0x3F);
            }
            if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))
                || (cp >= 0xD800 && cp <= 0xDFFF))
            {
                return 0;
            }
            return len;
        }

        // Valid UTF-8 with every character XML 1.0 cannot hold (controls but tab, U+FFFE/U+FFFF)
        // replaced by U+FFFD; for_markup also escapes the five XML specials and replaces line breaks
        // (callers lay out lines themselves).
        std::string repair(const std::string& s, bool for_markup)
        {
            std::string out;
            out.reserve(s.size() + s.size() / 8);
            std::size_t i = 0;
            while (i < s.size())
            {
                std::uint32_t cp = 0;
                std::size_t len = utf8_sequence(s, i, cp);
                if (len == 0)
                {
                    out += replacement;
                    ++i;
                    continue;
                }
                bool text_break = !for_markup && (cp == '\n' || cp == '\r');
                if ((cp < 0x20 && cp != '\t' && !text_break) || cp == 0x7F || cp == 0xFFFE || cp == 0xFFFF)
                {
                    out += replacement;
                }
                else if (for_markup && cp == '&')
                {
                    out += "&amp;";
                }
                else if (for_markup && cp == '<')
                {
                    out += "&lt;";
                }
                else if (for_markup && cp == '>')
                {
                    out += "&gt;";
                }
                else if (for_markup && cp == '"')
                {
                    out += "&quot;";
                }
                else if (for_markup && cp == '\'')
                {
                    out += "&#39;";
                }
                else
                {
                    out.append(s, i, len);
                }
                i += len;
            }
            return out;
        }
    }

    std::string xml_safe(const std::string& text, bool markup)
    {
        return repair(text, markup);
    }

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

    std::string binary_bytes(std::size_t count)
    {
        double value = static_cast<double>(count);
        if (count >= (std::size_t(1) << 30))
            return format("%.2f GiB", value / (std::size_t(1) << 30));
        if (count >= (std::size_t(1) << 20))
            return format("%.1f MiB", value / (std::size_t(1) << 20));
        if (count >= 1024)
            return format("%.1f KiB", value / 1024);
        return std::to_string(count) + " B";
    }

    std::string nul_position(const std::string& text)
    {
        std::size_t at = text.find('\0');
        if (at == std::string::npos)
        {
            return {};
        }
        std::size_t line_start = text.rfind('\n', at);
        std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
        std::size_t column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
        return "line " + std::to_string(line) + ", column " + std::to_string(column);
    }
}
