#include "code_listing.hpp"

#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

namespace xcuda
{
    namespace
    {
        std::string trim(const std::string& s)
        {
            std::size_t b = 0;
            std::size_t e = s.size();
            while (b < e && text::is_line_space(s[b]))
            {
                ++b;
            }
            while (e > b && text::is_line_space(s[e - 1]))
            {
                --e;
            }
            return s.substr(b, e - b);
        }

        bool ends_with(const std::string& s, const std::string& suffix)
        {
            return s.size() >= suffix.size()
                   && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
        }

        // A text's lines without their breaks; a last line without "\n" still counts.

        // The compilers name the cell by the program name NVRTC was given, but NVRTC 13 prefixes it
        // with its working directory and nvcc with the path it was given, so a suffix match is the
        // one that holds everywhere.
        bool is_cell_file(const std::string& name, const std::string& source_file)
        {
            if (source_file.empty())
            {
                return false;
            }
            return name == source_file || ends_with(name, "/" + source_file)
                   || ends_with(name, "\\" + source_file);
        }

        // A decimal line number; anything unreadable or implausibly large (hostile input) is 0,
        // which every view already shows as "no source line".
        int parse_line_number(const std::string& s, std::size_t& pos)
        {
            while (pos < s.size() && text::is_line_space(s[pos]))
            {
                ++pos;
            }
            std::size_t start = pos;
            long long value = 0;
            while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])))
            {
                if (pos - start < 10)
                {
                    value = value * 10 + (s[pos] - '0');
                }
                ++pos;
            }
            if (pos == start || pos - start > 9 || value > 100000000)
            {
                return 0;
            }
            return static_cast<int>(value);
        }

        bool is_identifier_char(char c)
        {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%'
                   || c == '.';
        }

        // "$L__BB0_2:" or ".L_x_1:" with nothing but a comment after it; returns the name.
        bool parse_label(const std::string& t, std::string& name)
        {
            std::size_t i = 0;
            while (i < t.size() && is_identifier_char(t[i]))
            {
                ++i;
            }
            if (i == 0 || i >= t.size() || t[i] != ':')
            {
                return false;
            }
            std::string rest = trim(t.substr(i + 1));
            if (!rest.empty() && !text::starts_with(rest, "//"))
            {
                return false;
            }
            name = t.substr(0, i);
            return true;
        }

        // The code part of a PTX line: everything before a "//" that is not inside a string.
        std::string strip_ptx_comment(const std::string& t)
        {
            bool in_string = false;
            for (std::size_t i = 0; i < t.size(); ++i)
            {
                if (t[i] == '"')
                {
                    in_string = !in_string;
                }
                else if (!in_string && t[i] == '/' && i + 1 < t.size() && t[i + 1] == '/')
                {
                    return trim(t.substr(0, i));
                }
            }
            return trim(t);
        }

        // Position just after `word` as a whole token (".entry" in ".visible .entry saxpy("), or npos.
        std::size_t find_token(const std::string& t, const std::string& word)
        {
            std::size_t pos = 0;
            while ((pos = t.find(word, pos)) != std::string::npos)
            {
                bool left_ok = pos == 0 || text::is_line_space(t[pos - 1]);
                std::size_t after = pos + word.size();
                bool right_ok = after == t.size() || text::is_line_space(t[after]) || t[after] == '(';
                if (left_ok && right_ok)
                {
                    return after;
                }
                pos = after;
            }
            return std::string::npos;
        }

        // The function name of ".entry NAME(" or ".func (.param .b32 func_retval0) NAME(": the
        // return-value list of a .func comes first and is skipped.
        std::string ptx_function_name(const std::string& t, std::size_t after_keyword)
        {
            std::size_t i = after_keyword;
            while (i < t.size() && text::is_line_space(t[i]))
            {
                ++i;
            }
            if (i < t.size() && t[i] == '(')
            {
                int depth = 0;
                for (; i < t.size(); ++i)
                {
                    if (t[i] == '(')
                    {
                        ++depth;
                    }
                    else if (t[i] == ')' && --depth == 0)
                    {
                        ++i;
                        break;
                    }
                }
                while (i < t.size() && text::is_line_space(t[i]))
                {
                    ++i;
                }
            }
            std::size_t start = i;
            while (i < t.size() && (is_identifier_char(t[i]) && t[i] != '.'))
            {
                ++i;
            }
            return t.substr(start, i - start);
        }

        // `.loc FILE LINE COL[, function_name F, inlined_at FILE LINE COL]` -> the cell line, or 0.
        int ptx_loc_line(const std::string& code, const std::set<int>& cell_files)
        {
            std::size_t pos = 4;  // after ".loc"
            int file = parse_line_number(code, pos);
            int line = parse_line_number(code, pos);
            if (cell_files.count(file) != 0)
            {
                return line;
            }
            std::size_t at = code.find("inlined_at");
            if (at == std::string::npos)
            {
                return 0;
            }
            pos = at + 10;
            int outer_file = parse_line_number(code, pos);
            int outer_line = parse_line_number(code, pos);
            return cell_files.count(outer_file) != 0 ? outer_line : 0;
        }

        // The `.file` table: NVRTC 13 writes it after all functions, so it is read before mapping.
        std::set<int> ptx_cell_files(const std::vector<std::string>& lines, const std::string& source_file)
        {
            std::set<int> ids;
            for (const std::string& raw : lines)
            {
                std::string t = trim(raw);
                if (!text::starts_with(t, ".file") || t.size() < 6 || !text::is_line_space(t[5]))
                {
                    continue;
                }
                std::size_t pos = 5;
                int id = parse_line_number(t, pos);
                std::size_t q1 = t.find('"', pos);
                std::size_t q2 = q1 == std::string::npos ? q1 : t.find('"', q1 + 1);
                if (id != 0 && q2 != std::string::npos
                    && is_cell_file(t.substr(q1 + 1, q2 - q1 - 1), source_file))
                {
                    ids.insert(id);
                }
            }
            return ids;
        }

        int brace_balance(const std::string& code)
        {
            int balance = 0;
            bool in_string = false;
            for (char c : code)
            {
                if (c == '"')
                {
                    in_string = !in_string;
                }
                else if (!in_string && c == '{')
                {
                    ++balance;
                }
                else if (!in_string && c == '}')
                {
                    --balance;
                }
            }
            return balance;
        }

        bool only_punctuation(const std::string& code)
        {
            return std::all_of(code.begin(), code.end(), [](char c)
                               { return c == '{' || c == '}' || c == '(' || c == ')' || c == ';'
                                        || c == ',' || text::is_line_space(c); });
        }

        // `//## File "/root/out/cell", line 13 inlined at "/root/out/cell", line 17` -> the first
        // position in the chain that is in the cell (the line itself, else the innermost call site).
        int sass_line_info(const std::string& t, const std::string& source_file)
        {
            std::size_t pos = 0;
            while (true)
            {
                std::size_t q1 = t.find('"', pos);
                if (q1 == std::string::npos)
                {
                    return 0;
                }
                std::size_t q2 = t.find('"', q1 + 1);
                if (q2 == std::string::npos)
                {
                    return 0;
                }
                std::string file = t.substr(q1 + 1, q2 - q1 - 1);
                std::size_t kw = t.find("line", q2);
                if (kw == std::string::npos)
                {
                    return 0;
                }
                std::size_t num = kw + 4;
                int line = parse_line_number(t, num);
                if (is_cell_file(file, source_file))
                {
                    return line;
                }
                pos = num;
            }
        }

        bool is_hex(const std::string& s)
        {
            return !s.empty()
                   && std::all_of(s.begin(), s.end(),
                                  [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
        }

        // "/*0040*/" at the start of t: returns the text after it, or false.
        bool split_sass_address(const std::string& t, std::string& rest)
        {
            if (!text::starts_with(t, "/*"))
            {
                return false;
            }
            std::size_t close = t.find("*/", 2);
            if (close == std::string::npos || !is_hex(t.substr(2, close - 2)))
            {
                return false;
            }
            rest = trim(t.substr(close + 2));
            return true;
        }

        // cuobjdump appends the instruction's encoding as "/* 0x000fe20000000800 */".
        std::string strip_encoding(const std::string& raw)
        {
            std::size_t enc = raw.rfind("/* 0x");
            if (enc == std::string::npos || enc == 0)
            {
                return raw;
            }
            std::string before = raw.substr(0, enc);
            while (!before.empty() && text::is_line_space(before.back()))
            {
                before.pop_back();
            }
            return before;
        }
    }

    code_listing::code_listing(dialect language, std::vector<code_line> lines)
        : language_(language)
        , lines_(std::move(lines))
    {
    }

    code_listing code_listing::from_ptx(const std::string& ptx, const std::string& source_file)
    {
        const std::vector<std::string> raw_lines = text::split_lines(ptx);
        const std::set<int> cell_files = ptx_cell_files(raw_lines, source_file);

        std::vector<code_line> out;
        out.reserve(raw_lines.size());
        std::string function;
        int current_line = 0;
        int depth = 0;
        bool statement_open = false;  // the last instruction has not reached its ';' yet
        int continuation_lines = 0;

        for (const std::string& raw : raw_lines)
        {
            const std::string t = trim(raw);
            const std::string code = strip_ptx_comment(t);

            // A bounded join: PTX without the closing ';' (hostile or truncated) must not swallow
            // the rest of the listing.
            if (statement_open && !code.empty() && code[0] != '.' && continuation_lines < 64
                && !text::starts_with(t, "//"))
            {
                std::string name;
                if (!parse_label(t, name))
                {
                    std::string& joined = out.back().text;
                    while (!joined.empty() && text::is_line_space(joined.back()))
                    {
                        joined.pop_back();
                    }
                    joined += " " + code;
                    statement_open = code.back() != ';';
                    ++continuation_lines;
                    depth += brace_balance(code);
                    continue;
                }
            }
            statement_open = false;

            code_line line;
            line.text = raw;
            line.function = function;
            std::string label_name;
            if (t.empty())
            {
                line.kind = code_line::blank;
            }
            else if (text::starts_with(t, "//") || text::starts_with(t, "/*"))
            {
                line.kind = code_line::comment;
            }
            else if (code[0] == '.')
            {
                line.kind = code_line::directive;
                std::size_t after = std::string::npos;
                if (text::starts_with(code, ".loc") && (code.size() == 4 || text::is_line_space(code[4])))
                {
                    current_line = ptx_loc_line(code, cell_files);
                }
                else if (find_token(code, ".extern") != std::string::npos)
                {
                    // A prototype (vprintf): it declares, it does not open a body.
                    if (depth <= 0)
                    {
                        function.clear();
                        line.function.clear();
                    }
                }
                else if ((after = find_token(code, ".entry")) != std::string::npos
                         || (after = find_token(code, ".func")) != std::string::npos)
                {
                    line.kind = code_line::header;
                    function = ptx_function_name(code, after);
                    line.function = function;
                    current_line = 0;
                    depth = 0;
                }
            }
            else if (parse_label(t, label_name))
            {
                line.kind = code_line::label;
            }
            else if (only_punctuation(code))
            {
                line.kind = code_line::directive;
            }
            else
            {
                line.kind = code_line::instruction;
                line.source_line = current_line;
                statement_open = code.back() != ';';
                continuation_lines = 0;
            }

            int balance = brace_balance(code);
            depth += balance;
            out.push_back(std::move(line));
            if (balance < 0 && depth <= 0)
            {
                // The body closed: what follows (module-scope .global data, .file) is in no function.
                depth = 0;
                function.clear();
                current_line = 0;
            }
        }
        return code_listing(dialect::ptx, std::move(out));
    }

    code_listing code_listing::from_sass(const std::string& nvdisasm_output, const std::string& source_file)
    {
        const std::vector<std::string> raw_lines = text::split_lines(nvdisasm_output);
        std::vector<code_line> out;
        out.reserve(raw_lines.size());
        std::string function;
        bool in_text_section = false;
        int current_line = 0;
        std::set<std::string> declared_functions;

        auto enter = [&](const std::string& name)
        {
            if (name != function)
            {
                current_line = 0;
            }
            function = name;
            in_text_section = !name.empty();
        };

        for (const std::string& raw : raw_lines)
        {
            const std::string t = trim(raw);
            code_line line;
            line.text = raw;
            std::string rest;
            std::string label_name;

            if (t.empty())
            {
                line.kind = code_line::blank;
            }
            else if (text::starts_with(t, "/* 0x"))
            {
                continue;  // cuobjdump's second encoding word, on a line of its own
            }
            else if (split_sass_address(t, rest))
            {
                if (rest.empty() || text::starts_with(rest, "/*"))
                {
                    line.kind = code_line::comment;
                }
                else if (rest[0] == '.')
                {
                    line.kind = code_line::directive;  // data: ".byte", ".word", ".dword"
                }
                else
                {
                    line.kind = code_line::instruction;
                    line.text = strip_encoding(raw);
                    line.source_line = current_line;
                }
            }
            else if (text::starts_with(t, "//##"))
            {
                line.kind = code_line::comment;
                current_line = sass_line_info(t, source_file);
            }
            else if (text::starts_with(t, "//-----"))
            {
                // nvdisasm's section banner: "//--------------------- .text.saxpy    -------".
                std::size_t name_at = t.find_first_not_of('-', 2);  // npos: a banner of dashes only
                std::string name = name_at == std::string::npos ? std::string() : trim(t.substr(name_at));
                name = name.substr(0, name.find_first_of(" \t"));
                if (text::starts_with(name, ".text."))
                {
                    enter(name.substr(6));
                    line.kind = code_line::header;
                }
                else if (text::starts_with(name, "."))
                {
                    enter("");
                    line.kind = code_line::comment;
                }
                else
                {
                    line.kind = code_line::comment;
                }
            }
            else if (text::starts_with(t, "//"))
            {
                line.kind = code_line::comment;
            }
            else if (text::starts_with(t, "Function :") || text::starts_with(t, "Function:"))
            {
                enter(trim(t.substr(t.find(':') + 1)));
                line.kind = code_line::header;
            }
            else if (text::starts_with(t, ".section"))
            {
                std::string name = trim(t.substr(8));
                name = name.substr(0, name.find_first_of(", \t"));
                enter(text::starts_with(name, ".text.") ? name.substr(6) : "");
                line.kind = code_line::directive;
            }
            else if (parse_label(t, label_name))
            {
                line.kind = code_line::label;
                if (text::starts_with(label_name, ".text."))
                {
                    enter(label_name.substr(6));
                }
                else if (in_text_section && declared_functions.count(label_name) != 0)
                {
                    // A subroutine inside the kernel's section (a __noinline__ callee, libdevice's
                    // slow paths): the line before it belongs to other code, so until nvdisasm says
                    // otherwise its instructions have no source line.
                    current_line = 0;
                }
                else if (!in_text_section && declared_functions.count(label_name) != 0)
                {
                    // Listings cut from nvdisasm without the section lines: ".type saxpy,@function"
                    // then "saxpy:" opens the function.
                    enter(label_name);
                    in_text_section = false;
                    line.kind = code_line::header;
                }
            }
            else if (t[0] == '.')
            {
                line.kind = code_line::directive;
                if (text::starts_with(t, ".type") && t.find("@function") != std::string::npos)
                {
                    std::string name = trim(t.substr(5));
                    declared_functions.insert(name.substr(0, name.find(',')));
                }
            }
            else if (t.back() == ';' && std::isupper(static_cast<unsigned char>(t[0])))
            {
                // An instruction pasted without its address.
                line.kind = code_line::instruction;
                line.source_line = current_line;
            }
            else
            {
                line.kind = code_line::comment;  // cuobjdump banners: "code for sm_90", "arch = sm_90"
            }
            line.function = function;
            out.push_back(std::move(line));
        }
        return code_listing(dialect::sass, std::move(out));
    }

    std::size_t code_listing::instruction_count() const
    {
        return static_cast<std::size_t>(std::count_if(lines_.begin(), lines_.end(), [](const code_line& l)
                                                      { return l.kind == code_line::instruction; }));
    }

    std::vector<std::string> code_listing::functions() const
    {
        std::vector<std::string> names;
        std::set<std::string> seen;
        for (const code_line& l : lines_)
        {
            if (!l.function.empty() && seen.insert(l.function).second)
            {
                names.push_back(l.function);
            }
        }
        return names;
    }

    code_listing code_listing::only(const std::string& function) const
    {
        std::vector<code_line> kept;
        for (const code_line& l : lines_)
        {
            if (l.function == function && !function.empty())
            {
                kept.push_back(l);
            }
        }
        return code_listing(language_, std::move(kept));
    }

    std::map<int, std::vector<std::size_t>> code_listing::by_source_line() const
    {
        std::map<int, std::vector<std::size_t>> groups;
        for (std::size_t i = 0; i < lines_.size(); ++i)
        {
            if (lines_[i].kind == code_line::instruction)
            {
                groups[lines_[i].source_line].push_back(i);
            }
        }
        return groups;
    }
}
