#include "code_view.hpp"

#include "instruction_notes.hpp"
#include "text.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace xcuda
{
    namespace
    {
        // ----- text repair and escaping (text::xml_safe: valid UTF-8, XML's characters only) ------

        std::string escape(const std::string& s)
        {
            return text::xml_safe(s, true);
        }

        std::string clean_text(const std::string& s)
        {
            return text::xml_safe(s, false);
        }

        using text::split_lines;

        // Trimmed, with runs of blanks as one space: PTX separates opcode and operands with a tab,
        // nvdisasm pads with twenty spaces; neither means anything in a text view or a diff.
        std::string collapse_space(const std::string& s)
        {
            std::string out;
            bool pending = false;
            for (char c : s)
            {
                if (text::is_line_space(c))
                {
                    pending = !out.empty();
                    continue;
                }
                if (pending)
                {
                    out += ' ';
                    pending = false;
                }
                out += c;
            }
            return out;
        }

        bool is_alpha(char c)
        {
            return std::isalpha(static_cast<unsigned char>(c)) != 0;
        }

        bool is_digit(char c)
        {
            return std::isdigit(static_cast<unsigned char>(c)) != 0;
        }

        bool is_word(char c)
        {
            return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$';
        }

        bool is_hex_digit(char c)
        {
            return std::isxdigit(static_cast<unsigned char>(c)) != 0;
        }

        // "/*0040*/" at position i: its length, or 0.
        std::size_t sass_address_at(const std::string& s, std::size_t i)
        {
            if (s.compare(i, 2, "/*") != 0)
            {
                return 0;
            }
            std::size_t k = i + 2;
            while (k < s.size() && is_hex_digit(s[k]))
            {
                ++k;
            }
            if (k == i + 2 || s.compare(k, 2, "*/") != 0)
            {
                return 0;
            }
            return k + 2 - i;
        }

        std::string span(const char* cls, const std::string& text)
        {
            return std::string("<span class=\"") + cls + "\">" + escape(text) + "</span>";
        }

        // An opcode with what it does as its hover text (instruction_notes), where that is known.
        std::string op_span(const std::string& opcode, bool sass)
        {
            std::string note = sass ? instruction_notes::sass(opcode) : instruction_notes::ptx(opcode);
            if (note.empty())
            {
                return span("op", opcode);
            }
            return "<span class=\"op\" title=\"" + escape(note) + "\">" + escape(opcode) + "</span>";
        }

        // Consumes a number starting at i: 42, -3, 0x1f, 0f40400000 (PTX float bits), 0.5,
        // 1.84467440737095516160e+19.
        std::size_t number_end(const std::string& s, std::size_t i)
        {
            std::size_t k = i;
            if (k < s.size() && (s[k] == '-' || s[k] == '+'))
            {
                ++k;
            }
            while (k < s.size())
            {
                char c = s[k];
                if (is_word(c) && c != '$')
                {
                    ++k;
                }
                else if (c == '.' && k + 1 < s.size() && is_digit(s[k + 1]))
                {
                    ++k;
                }
                else if ((c == '+' || c == '-') && (s[k - 1] == 'e' || s[k - 1] == 'E') && k + 1 < s.size()
                         && is_digit(s[k + 1]) && !(s.compare(i, 2, "0x") == 0))
                {
                    ++k;
                }
                else
                {
                    break;
                }
            }
            return k;
        }

        // ----- PTX highlighting ---------------------------------------------------------------

        std::string ptx_line_html(const std::string& line)
        {
            std::string out;
            bool expect_opcode = true;  // the next word starts a statement
            std::size_t i = 0;
            while (i < line.size())
            {
                char c = line[i];
                if (c == '/' && i + 1 < line.size() && line[i + 1] == '/')
                {
                    out += span("cmt", line.substr(i));
                    break;
                }
                if (c == '/' && i + 1 < line.size() && line[i + 1] == '*')
                {
                    std::size_t close = line.find("*/", i + 2);
                    std::size_t stop = close == std::string::npos ? line.size() : close + 2;
                    out += span("cmt", line.substr(i, stop - i));
                    i = stop;
                    continue;
                }
                if (c == '"')
                {
                    std::size_t close = line.find('"', i + 1);
                    std::size_t stop = close == std::string::npos ? line.size() : close + 1;
                    out += span("str", line.substr(i, stop - i));
                    i = stop;
                    continue;
                }
                if (c == '@' || c == '%')
                {
                    // A guard (@%p1, @!%p1) or a register (%rd2, %tid.x, %ctaid.y).
                    std::size_t k = i + 1;
                    if (c == '@')
                    {
                        if (k < line.size() && line[k] == '!')
                        {
                            ++k;
                        }
                        if (k < line.size() && line[k] == '%')
                        {
                            ++k;
                        }
                    }
                    while (k < line.size() && is_word(line[k]))
                    {
                        ++k;
                    }
                    if (k + 1 < line.size() && line[k] == '.' && std::string("xyzw").find(line[k + 1]) != std::string::npos
                        && (k + 2 == line.size() || !is_word(line[k + 2])))
                    {
                        k += 2;
                    }
                    out += span("reg", line.substr(i, k - i));
                    i = k;
                    continue;
                }
                if (c == '$')
                {
                    std::size_t k = i + 1;
                    while (k < line.size() && is_word(line[k]))
                    {
                        ++k;
                    }
                    out += span("lbl", line.substr(i, k - i));
                    i = k;
                    continue;
                }
                if (c == '.' && i + 1 < line.size() && is_alpha(line[i + 1]))
                {
                    std::size_t k = i + 1;
                    while (k < line.size() && is_word(line[k]))
                    {
                        ++k;
                    }
                    out += span("dir", line.substr(i, k - i));
                    expect_opcode = false;
                    i = k;
                    continue;
                }
                bool signed_number = (c == '-' && i + 1 < line.size() && is_digit(line[i + 1])
                                      && (i == 0 || !is_word(line[i - 1])));
                if (is_digit(c) || signed_number)
                {
                    std::size_t k = number_end(line, i);
                    out += span("num", line.substr(i, k - i));
                    i = k;
                    continue;
                }
                if (is_alpha(c) || c == '_')
                {
                    std::size_t k = i;
                    while (k < line.size() && (is_word(line[k])
                                               || (expect_opcode && line[k] == '.' && k + 1 < line.size()
                                                   && is_word(line[k + 1]))))
                    {
                        ++k;
                    }
                    std::string word = line.substr(i, k - i);
                    bool is_label_definition = k < line.size() && line[k] == ':';
                    if (is_label_definition)
                    {
                        out += span("lbl", word);
                    }
                    else if (expect_opcode)
                    {
                        out += op_span(word, false);
                    }
                    else
                    {
                        out += escape(word);
                    }
                    expect_opcode = false;
                    i = k;
                    continue;
                }
                if (c == ';' || c == '{')
                {
                    expect_opcode = true;  // inline asm puts "{add.f16 ...;" on one line
                }
                out += escape(std::string(1, c));
                ++i;
            }
            return out;
        }

        // ----- SASS highlighting --------------------------------------------------------------

        bool is_sass_register(const std::string& word)
        {
            std::string base = word.substr(0, word.find('.'));
            if (base == "RZ" || base == "URZ" || base == "PT" || base == "UPT" || base == "SRZ")
            {
                return true;
            }
            if (base.compare(0, 3, "SR_") == 0 && base.size() > 3)
            {
                return true;
            }
            for (const char* prefix : {"UR", "UP", "R", "P", "B"})
            {
                std::string p = prefix;
                if (base.size() > p.size() && base.compare(0, p.size(), p) == 0
                    && std::all_of(base.begin() + static_cast<std::ptrdiff_t>(p.size()), base.end(), is_digit))
                {
                    return true;
                }
            }
            return false;
        }

        std::string sass_line_html(const std::string& line)
        {
            std::string out;
            std::string trimmed = collapse_space(line);
            bool executable = false;
            {
                std::size_t first = line.find_first_not_of(" \t");
                executable = (first != std::string::npos && sass_address_at(line, first) != 0)
                             || (!trimmed.empty() && trimmed.back() == ';' && trimmed[0] != '.');
            }
            if (!trimmed.empty() && trimmed[0] != '/' && !executable)
            {
                // Directives, labels, "Function : saxpy" headers.
                if (trimmed.back() == ':')
                {
                    std::size_t first = line.find_first_not_of(" \t");
                    return escape(line.substr(0, first)) + span("lbl", line.substr(first));
                }
                if (trimmed[0] == '.')
                {
                    std::size_t first = line.find_first_not_of(" \t");
                    std::size_t word_end = line.find_first_of(" \t", first);
                    if (word_end == std::string::npos)
                    {
                        word_end = line.size();
                    }
                    return escape(line.substr(0, first)) + span("dir", line.substr(first, word_end - first))
                           + escape(line.substr(word_end));
                }
                return span("hdr", line);
            }
            bool expect_opcode = executable;
            std::size_t i = 0;
            while (i < line.size())
            {
                char c = line[i];
                if (std::size_t len = sass_address_at(line, i))
                {
                    out += span("addr", line.substr(i, len));
                    i += len;
                    continue;
                }
                if (c == '/' && i + 1 < line.size() && (line[i + 1] == '/' || line[i + 1] == '*'))
                {
                    out += span("cmt", line.substr(i));
                    break;
                }
                if (c == '`')
                {
                    std::size_t close = line.find(')', i);
                    std::size_t stop = close == std::string::npos ? line.size() : close + 1;
                    out += span("lbl", line.substr(i, stop - i));
                    i = stop;
                    continue;
                }
                if (c == '@')
                {
                    std::size_t k = i + 1;
                    if (k < line.size() && line[k] == '!')
                    {
                        ++k;
                    }
                    while (k < line.size() && is_word(line[k]))
                    {
                        ++k;
                    }
                    out += span("reg", line.substr(i, k - i));
                    i = k;
                    continue;
                }
                if (c == 'c' && i + 1 < line.size() && line[i + 1] == '[' && (i == 0 || !is_word(line[i - 1])))
                {
                    // Constant bank c[0x0][0x160]: one operand although it has two brackets.
                    std::size_t k = line.find(']', i);
                    if (k != std::string::npos && k + 1 < line.size() && line[k + 1] == '[')
                    {
                        k = line.find(']', k + 1);
                    }
                    std::size_t stop = k == std::string::npos ? line.size() : k + 1;
                    out += span("cb", line.substr(i, stop - i));
                    i = stop;
                    continue;
                }
                if (is_digit(c) || ((c == '+' || c == '-') && i + 1 < line.size() && is_digit(line[i + 1])
                                    && (i == 0 || !is_word(line[i - 1]))))
                {
                    std::size_t k = number_end(line, i);
                    out += span("num", line.substr(i, k - i));
                    i = k;
                    continue;
                }
                if (is_alpha(c) || c == '_' || c == '$')
                {
                    std::size_t k = i;
                    while (k < line.size()
                           && (is_word(line[k]) || (line[k] == '.' && k + 1 < line.size() && is_word(line[k + 1]))))
                    {
                        ++k;
                    }
                    std::string word = line.substr(i, k - i);
                    if (expect_opcode)
                    {
                        out += op_span(word, true);
                        expect_opcode = false;
                    }
                    else if (is_sass_register(word))
                    {
                        out += span("reg", word);
                    }
                    else if (word == "INF" || word == "QNAN")
                    {
                        out += span("num", word);
                    }
                    else
                    {
                        out += escape(word);
                    }
                    i = k;
                    continue;
                }
                out += escape(std::string(1, c));
                ++i;
            }
            return out;
        }

        std::string code_line_html(code_listing::dialect language, const std::string& text)
        {
            return language == code_listing::dialect::sass ? sass_line_html(text) : ptx_line_html(text);
        }

        const char* dialect_class(code_listing::dialect language)
        {
            return language == code_listing::dialect::sass ? "xcuda-sass" : "xcuda-ptx";
        }

        // Token colours, scoped to the listing classes so that nothing else on the page changes. Two
        // sets: for a light page (Notebook 6, nbconvert, JupyterLab's light theme) and, where JupyterLab
        // or Notebook 7 marks its theme dark (body[data-jp-theme-light=false]), for a dark one. Each
        // keeps 4.5:1 against the page and the translucent line colours below (the browser tests
        // measure it); JupyterLab's own editor colours do not on those lines (4.2:1 light, 3.9:1 dark).
        // Plain text follows the theme through --jp-content-font-color1.
        // No '<' or '&' in here: the block must stay valid XML text.
        std::string token_style()
        {
            std::string css;
            struct rule
            {
                const char* token;
                const char* light;
                const char* dark;
                const char* extra;
            };
            const rule rules[] = {
                {"op", "#0033b3", "#82aaff", ";font-weight:bold"},
                {"reg", "#871094", "#d7a0ff", ""},
                {"num", "#1750eb", "#f5a97f", ""},
                {"dir", "#8a5100", "#e5c07b", ""},
                {"lbl", "#05701a", "#98c379", ""},
                {"cmt", "#5f5f5f", "#a8a8a8", ";font-style:italic"},
                {"str", "#05701a", "#98c379", ""},
                {"addr", "#5f5f5f", "#a8a8a8", ""},
                {"cb", "#00627a", "#56d4e0", ""},
            };
            const std::string dark = "body[data-jp-theme-light=\"false\"] ";
            for (const auto& r : rules)
            {
                std::string selector = std::string(".xcuda-ptx .") + r.token + ",.xcuda-sass ." + r.token;
                std::string dark_selector = dark + ".xcuda-ptx ." + r.token + "," + dark + ".xcuda-sass ." + r.token;
                css += selector + "{color:" + r.light + r.extra + "}\n";
                css += dark_selector + "{color:" + r.dark + "}\n";
            }
            css += ".xcuda-ptx .hdr,.xcuda-sass .hdr{color:var(--jp-content-font-color1,#000000);font-weight:bold}\n";
            css += ".xcuda-ptx,.xcuda-sass{font-family:monospace;font-size:12px;line-height:1.35;"
                   "color:var(--jp-content-font-color1,#000000)}\n";
            // Secondary text (line numbers, diff markers): a grey that keeps 4.5:1 on the line colours.
            css += ".xcuda-sbs .xn,.xcuda-cmp .m{color:#5f5f5f}\n";
            css += dark + ".xcuda-sbs .xn," + dark + ".xcuda-cmp .m{color:#a8a8a8}\n";
            return css;
        }

        std::string highlight(const std::string& text, code_listing::dialect language)
        {
            std::string out = "<div class=\"xcuda-code\"><style>\n" + token_style() + "</style><pre class=\""
                              + dialect_class(language) + "\">";
            for (const std::string& line : split_lines(text))
            {
                out += code_line_html(language, line);
                out += '\n';
            }
            out += "</pre></div>";
            return out;
        }

        // ----- side by side -------------------------------------------------------------------

        // Line colours: translucent tints over whatever the theme's background is, pastel on a light
        // page and deep on a dark one, so that the theme's own text colour stays readable on both.
        constexpr int palette_size = 12;
        const char* const palette[palette_size] = {
            "rgba(255,64,64,.16)",  "rgba(32,128,255,.16)", "rgba(48,200,32,.16)", "rgba(255,190,0,.2)",
            "rgba(160,64,255,.16)", "rgba(0,200,180,.18)",  "rgba(255,64,170,.14)", "rgba(150,200,0,.2)",
            "rgba(96,96,255,.16)",  "rgba(255,128,32,.18)", "rgba(32,170,96,.16)",  "rgba(180,150,60,.18)"};

        std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 1469598103934665603ULL)
        {
            for (unsigned char c : s)
            {
                h ^= c;
                h *= 1099511628211ULL;
            }
            return h;
        }

        // Unique on the page: the same content rendered twice (a re-run cell) still gets two ids,
        // so each script binds to its own container.
        std::string container_id(const std::string& prefix, std::uint64_t content_hash)
        {
            static std::atomic<unsigned long> counter{0};
            char buffer[64];
            std::snprintf(buffer, sizeof buffer, "%s-%08llx-%lu", prefix.c_str(),
                          static_cast<unsigned long long>(content_hash & 0xffffffffULL), ++counter);
            return buffer;
        }

        std::string text_or_space(const std::string& html)
        {
            return html.empty() ? std::string("&#160;") : html;
        }

        // ----- diff ---------------------------------------------------------------------------

        // Replaces the digits of register and label names so that allocation does not count as change.
        std::string normalise_instruction(const std::string& text)
        {
            std::string s = collapse_space(text);
            std::size_t first = 0;
            if (std::size_t len = sass_address_at(s, 0))
            {
                first = len;
            }
            std::size_t enc = s.find("/* 0x");
            std::size_t comment = s.find("//");
            std::size_t stop = std::min(enc, comment);
            s = collapse_space(s.substr(first, stop == std::string::npos ? std::string::npos : stop - first));

            std::string out;
            std::size_t i = 0;
            while (i < s.size())
            {
                char c = s[i];
                bool token_start = i == 0 || !is_word(s[i - 1]);
                if (c == '%' && i + 1 < s.size() && is_alpha(s[i + 1]))
                {
                    std::size_t k = i + 1;
                    while (k < s.size() && is_alpha(s[k]))
                    {
                        ++k;
                    }
                    std::size_t d = k;
                    while (d < s.size() && is_digit(s[d]))
                    {
                        ++d;
                    }
                    out.append(s, i, k - i);
                    if (d > k && (d == s.size() || !is_word(s[d])))
                    {
                        out += '#';
                        i = d;
                    }
                    else
                    {
                        i = k;
                    }
                    continue;
                }
                if (s.compare(i, 6, "$L__BB") == 0)
                {
                    std::size_t k = i + 6;
                    while (k < s.size() && (is_digit(s[k]) || s[k] == '_'))
                    {
                        ++k;
                    }
                    out += "$L__BB#";
                    i = k;
                    continue;
                }
                if (s.compare(i, 5, ".L_x_") == 0)
                {
                    std::size_t k = i + 5;
                    while (k < s.size() && is_digit(s[k]))
                    {
                        ++k;
                    }
                    out += ".L_x_#";
                    i = k;
                    continue;
                }
                if (token_start && (is_alpha(c) || c == '_' || c == '$'))
                {
                    std::size_t k = i;
                    while (k < s.size() && is_word(s[k]))
                    {
                        ++k;
                    }
                    std::string word = s.substr(i, k - i);
                    std::size_t param = word.rfind("_param_");
                    if (param != std::string::npos && param > 0)
                    {
                        out += word.substr(param + 1);
                    }
                    else if (is_sass_register(word) && word.find_first_of("0123456789") != std::string::npos
                             && word.compare(0, 3, "SR_") != 0)
                    {
                        out += word.substr(0, word.find_first_of("0123456789")) + "#";
                    }
                    else
                    {
                        out += word;
                    }
                    i = k;
                    continue;
                }
                out += c;
                ++i;
            }
            return out;
        }

        enum class row_kind
        {
            same,
            removed,
            added,
            changed
        };

        struct diff_row
        {
            row_kind kind;
            const code_line* left;   // null for added
            const code_line* right;  // null for removed
        };

        struct diff_result
        {
            std::vector<diff_row> rows;
            std::size_t left_count = 0;
            std::size_t right_count = 0;
            std::size_t only_left = 0;
            std::size_t only_right = 0;
        };

        std::vector<const code_line*> instructions_of(const code_listing& listing)
        {
            std::vector<const code_line*> out;
            for (const code_line& l : listing)
            {
                if (l.kind == code_line::instruction)
                {
                    out.push_back(&l);
                }
            }
            return out;
        }

        constexpr std::size_t max_lcs_cells = 4u * 1024u * 1024u;

        diff_result diff(const code_listing& left, const code_listing& right)
        {
            const std::vector<const code_line*> a = instructions_of(left);
            const std::vector<const code_line*> b = instructions_of(right);
            std::vector<std::string> na;
            std::vector<std::string> nb;
            for (const code_line* l : a)
            {
                na.push_back(normalise_instruction(l->text));
            }
            for (const code_line* l : b)
            {
                nb.push_back(normalise_instruction(l->text));
            }

            diff_result result;
            result.left_count = a.size();
            result.right_count = b.size();

            std::size_t head = 0;
            while (head < a.size() && head < b.size() && na[head] == nb[head])
            {
                ++head;
            }
            std::size_t tail = 0;
            while (tail < a.size() - head && tail < b.size() - head
                   && na[a.size() - 1 - tail] == nb[b.size() - 1 - tail])
            {
                ++tail;
            }
            const std::size_t n = a.size() - head - tail;
            const std::size_t m = b.size() - head - tail;

            // Edit script over the middle: 'e' equal, 'd' only left, 'i' only right.
            std::string ops;
            if (n != 0 && m != 0 && (n + 1) * (m + 1) <= max_lcs_cells)
            {
                std::vector<std::uint32_t> table((n + 1) * (m + 1), 0);
                const auto at = [&](std::size_t x, std::size_t y) -> std::uint32_t& { return table[x * (m + 1) + y]; };
                for (std::size_t x = n; x-- > 0;)
                {
                    for (std::size_t y = m; y-- > 0;)
                    {
                        at(x, y) = na[head + x] == nb[head + y] ? at(x + 1, y + 1) + 1
                                                                : std::max(at(x + 1, y), at(x, y + 1));
                    }
                }
                std::size_t x = 0;
                std::size_t y = 0;
                while (x < n && y < m)
                {
                    if (na[head + x] == nb[head + y])
                    {
                        ops += 'e';
                        ++x;
                        ++y;
                    }
                    else if (at(x + 1, y) >= at(x, y + 1))
                    {
                        ops += 'd';
                        ++x;
                    }
                    else
                    {
                        ops += 'i';
                        ++y;
                    }
                }
                ops.append(n - x, 'd');
                ops.append(m - y, 'i');
            }
            else
            {
                ops.append(n, 'd');
                ops.append(m, 'i');
            }

            for (std::size_t k = 0; k < head; ++k)
            {
                result.rows.push_back({row_kind::same, a[k], b[k]});
            }
            std::size_t x = head;
            std::size_t y = head;
            std::size_t k = 0;
            while (k < ops.size())
            {
                if (ops[k] == 'e')
                {
                    result.rows.push_back({row_kind::same, a[x++], b[y++]});
                    ++k;
                    continue;
                }
                std::vector<const code_line*> removed;
                std::vector<const code_line*> added;
                while (k < ops.size() && ops[k] != 'e')
                {
                    if (ops[k] == 'd')
                    {
                        removed.push_back(a[x++]);
                    }
                    else
                    {
                        added.push_back(b[y++]);
                    }
                    ++k;
                }
                result.only_left += removed.size();
                result.only_right += added.size();
                std::size_t pairs = std::min(removed.size(), added.size());
                for (std::size_t p = 0; p < pairs; ++p)
                {
                    result.rows.push_back({row_kind::changed, removed[p], added[p]});
                }
                for (std::size_t p = pairs; p < removed.size(); ++p)
                {
                    result.rows.push_back({row_kind::removed, removed[p], nullptr});
                }
                for (std::size_t p = pairs; p < added.size(); ++p)
                {
                    result.rows.push_back({row_kind::added, nullptr, added[p]});
                }
            }
            for (std::size_t t = 0; t < tail; ++t)
            {
                result.rows.push_back({row_kind::same, a[a.size() - tail + t], b[b.size() - tail + t]});
            }
            return result;
        }

        std::string summary(const diff_result& d)
        {
            return std::to_string(d.left_count) + " instructions left, " + std::to_string(d.right_count) + " right; "
                   + std::to_string(d.only_left) + " only left, " + std::to_string(d.only_right) + " only right";
        }

        const char* row_class(row_kind kind)
        {
            switch (kind)
            {
                case row_kind::same:
                    return "same";
                case row_kind::removed:
                    return "removed";
                case row_kind::added:
                    return "added";
                case row_kind::changed:
                    return "changed";
            }
            return "same";
        }
    }

    std::string code_view::highlight_ptx_html(const std::string& ptx)
    {
        return highlight(ptx, code_listing::dialect::ptx);
    }

    std::string code_view::highlight_sass_html(const std::string& sass)
    {
        return highlight(sass, code_listing::dialect::sass);
    }

    std::string code_view::side_by_side_html(const std::string& source, const code_listing& listing,
                                             const std::string& title,
                                             const std::map<int, std::pair<std::string, double>>& notes,
                                             const cell_lines& lines)
    {
        const std::vector<std::string> source_lines = split_lines(source);
        const auto groups = listing.by_source_line();

        // Colours follow source order, so neighbouring lines differ and a re-render is stable.
        std::map<int, int> colour;
        for (const auto& group : groups)
        {
            if (group.first > 0)
            {
                colour.emplace(group.first, static_cast<int>(colour.size() % palette_size));
            }
        }
        auto line_class = [&](int line)
        {
            auto found = colour.find(line);
            return found == colour.end() ? std::string("xl") : "xl xc-" + std::to_string(found->second);
        };

        std::uint64_t h = fnv1a(title);
        h = fnv1a(source, h);
        for (const code_line& l : listing)
        {
            h = fnv1a(l.text, h);
        }
        const std::string id = container_id("xcuda-sbs", h);
        const std::string scope = "#" + id;

        std::string css;
        css += token_style();
        css += scope + "{font-family:monospace;font-size:12px;color:var(--jp-content-font-color1,#000000)}\n";
        css += scope + " .xc-title{font-weight:bold;margin:2px 0 4px 0}\n";
        css += scope + " .xc-cols{display:flex;gap:12px;align-items:flex-start}\n";
        css += scope + " .xc-col{flex:1 1 50%;min-width:0;overflow:auto;max-height:70vh;"
               "border:1px solid var(--jp-border-color2,#dddddd)}\n";
        css += scope + " .xl{white-space:pre;padding:0 4px;cursor:default}\n";
        css += scope + " .xn{display:inline-block;min-width:3em;text-align:right;margin-right:8px}\n";
        css += scope + " .xp{font-style:italic;margin-left:2em}\n";
        for (int k = 0; k < palette_size; ++k)
        {
            css += scope + " .xc-" + std::to_string(k) + "{background:" + palette[k] + "}\n";
        }
        css += scope + " .xl.xc-hover," + scope + " .xl.xc-pin{outline:2px solid #d08000;outline-offset:-1px}\n";
        // Hover without script, where :has() is supported.
        for (const auto& entry : colour)
        {
            std::string sel = ".xl[data-line=\"" + std::to_string(entry.first) + "\"]";
            css += scope + ":has(" + sel + ":hover) " + sel + "{outline:2px solid #d08000;outline-offset:-1px}\n";
        }

        std::string out;
        out += "<div class=\"xcuda-sbs\" id=\"" + id + "\"><style>\n" + css + "</style>";
        out += "<div class=\"xc-title\">" + text_or_space(escape(title)) + "</div>";
        out += "<div class=\"xc-cols\"><div class=\"xc-col xc-src\">";
        for (std::size_t i = 0; i < source_lines.size(); ++i)
        {
            int n = static_cast<int>(i + 1);
            auto note = notes.find(n);
            // A profile's figures: a bar under the number as long as the line's share, the text after it.
            std::string bar = note == notes.end() ? std::string()
                                                  : " style=\"background:linear-gradient(to right,rgba(220,60,40,.45) " +
                                                        std::to_string(static_cast<int>(100 * note->second.second)) +
                                                        "%,transparent 0)\"";
            out += "<div class=\"" + line_class(n) + "\" data-line=\"" + std::to_string(n) + "\"><span class=\"xn\"" +
                   bar + ">" + std::to_string(lines.editor_line(n)) + "</span><span class=\"xt\">" + text_or_space(escape(source_lines[i])) +
                   "</span>" +
                   (note == notes.end() ? std::string() : "<span class=\"xp\">" + escape(note->second.first) + "</span>") +
                   "</div>";
        }
        out += "</div><div class=\"xc-col " + std::string(dialect_class(listing.language())) + "\">";
        for (const code_line& l : listing)
        {
            if (l.kind == code_line::blank)
            {
                continue;
            }
            int n = l.kind == code_line::instruction ? l.source_line : 0;
            out += "<div class=\"" + line_class(n) + "\" data-line=\"" + std::to_string(n) + "\">"
                   + text_or_space(code_line_html(listing.language(), l.text)) + "</div>";
        }
        out += "</div></div>";
        // Event delegation: one set of listeners on the container, whatever the number of lines.
        // No '<', '&' or "]]>" in the body, so it is valid inside CDATA and as HTML script text.
        out += "<script>//<![CDATA[\n"
               "(function () {\n"
               "  var root = document.getElementById(\"" + id + "\");\n"
               "  if (!root) { return; }\n"
               "  var pinned = null;\n"
               "  function mark(n, cls, on) {\n"
               "    var els = root.querySelectorAll('.xl[data-line=\"' + n + '\"]');\n"
               "    for (var i = 0; i !== els.length; i++) { els[i].classList.toggle(cls, on); }\n"
               "  }\n"
               "  function lineOf(ev) {\n"
               "    var el = ev.target.closest ? ev.target.closest('.xl') : null;\n"
               "    if (!el || !root.contains(el)) { return null; }\n"
               "    var n = el.getAttribute('data-line');\n"
               "    return n === '0' ? null : n;\n"
               "  }\n"
               "  root.addEventListener('mouseover', function (ev) { var n = lineOf(ev); if (n !== null) { mark(n, 'xc-hover', true); } });\n"
               "  root.addEventListener('mouseout', function (ev) { var n = lineOf(ev); if (n !== null) { mark(n, 'xc-hover', false); } });\n"
               "  root.addEventListener('click', function (ev) {\n"
               "    var n = lineOf(ev);\n"
               "    if (pinned !== null) { mark(pinned, 'xc-pin', false); }\n"
               "    pinned = (n === pinned) ? null : n;\n"
               "    if (pinned !== null) { mark(pinned, 'xc-pin', true); }\n"
               "  });\n"
               "})();\n"
               "//]]></script>";
        out += "</div>";
        return out;
    }

    std::string code_view::grouped_text(const std::string& source, const code_listing& listing,
                                        const std::map<int, std::pair<std::string, double>>& notes,
                                        const cell_lines& lines)
    {
        const std::vector<std::string> source_lines = split_lines(source);
        std::vector<std::string> functions = listing.functions();
        bool titled = functions.size() > 1;
        bool has_unnamed = std::any_of(listing.begin(), listing.end(), [](const code_line& l)
                                       { return l.kind == code_line::instruction && l.function.empty(); });
        if (functions.empty() || has_unnamed)
        {
            functions.insert(functions.begin(), std::string());
        }

        std::string out;
        for (const std::string& function : functions)
        {
            std::map<int, std::vector<const code_line*>> groups;
            for (const code_line& l : listing)
            {
                if (l.kind == code_line::instruction && l.function == function)
                {
                    groups[l.source_line].push_back(&l);
                }
            }
            if (groups.empty())
            {
                continue;
            }
            if (titled)
            {
                out += "== " + (function.empty() ? std::string("(outside any function)") : function) + " ==\n";
            }
            auto emit = [&](const std::vector<const code_line*>& lines)
            {
                for (const code_line* l : lines)
                {
                    out += "        " + collapse_space(l->text) + "\n";
                }
            };
            for (const auto& group : groups)
            {
                if (group.first == 0)
                {
                    continue;
                }
                std::string number = std::to_string(lines.editor_line(group.first));
                if (number.size() < 4)
                {
                    number.insert(0, 4 - number.size(), ' ');
                }
                std::size_t index = static_cast<std::size_t>(group.first - 1);
                std::string text = index < source_lines.size() ? source_lines[index] : std::string();
                auto note = notes.find(group.first);
                out += number + " | " + text + (note == notes.end() ? "" : "  [" + note->second.first + "]") + "\n";
                emit(group.second);
            }
            auto unmapped = groups.find(0);
            if (unmapped != groups.end())
            {
                out += "(no source line)\n";
                emit(unmapped->second);
            }
        }
        return clean_text(out);
    }

    std::string code_view::compare_html(const std::string& left_title, const code_listing& left,
                                        const std::string& right_title, const code_listing& right)
    {
        const diff_result d = diff(left, right);
        const char* left_class = dialect_class(left.language());
        const char* right_class = dialect_class(right.language());

        std::string out = "<div class=\"xcuda-cmp\"><style>\n" + token_style()
                          + ".xcuda-cmp table{border-collapse:collapse;font-family:monospace;font-size:12px}\n"
                            // Left, not centred and right-aligned as JupyterLab's output CSS has tables.
                            "div.xcuda-cmp table,.jp-RenderedHTMLCommon div.xcuda-cmp table{margin-left:0;margin-right:auto}\n"
                            ".xcuda-cmp td,.xcuda-cmp th{padding:0 6px;white-space:pre;text-align:left}\n"
                            ".jp-RenderedHTMLCommon div.xcuda-cmp td,.jp-RenderedHTMLCommon div.xcuda-cmp th{text-align:left}\n"
                            ".xcuda-cmp{color:var(--jp-content-font-color1,#000000)}\n"
                            ".xcuda-cmp .m{width:1em}\n"
                            ".xcuda-cmp tr.removed td.l,.xcuda-cmp tr.changed td.l{background:rgba(255,64,64,.16)}\n"
                            ".xcuda-cmp tr.added td.r,.xcuda-cmp tr.changed td.r{background:rgba(48,200,32,.18)}\n"
                            ".xcuda-cmp .xc-summary{font-family:monospace;margin:2px 0 4px 0}\n"
                            "</style>";
        out += "<div class=\"xc-summary\">" + escape(summary(d)) + "</div>";
        out += "<table><thead><tr><th class=\"m\"></th><th>" + escape(left_title) + "</th><th class=\"m\"></th><th>"
               + escape(right_title) + "</th></tr></thead><tbody>";
        for (const diff_row& row : d.rows)
        {
            const char* left_marker = row.kind == row_kind::removed || row.kind == row_kind::changed ? "-" : "";
            const char* right_marker = row.kind == row_kind::added || row.kind == row_kind::changed ? "+" : "";
            std::string lhs = row.left ? code_line_html(left.language(), collapse_space(row.left->text)) : "";
            std::string rhs = row.right ? code_line_html(right.language(), collapse_space(row.right->text)) : "";
            out += std::string("<tr class=\"") + row_class(row.kind) + "\"><td class=\"m\">" + left_marker
                   + "</td><td class=\"l " + left_class + "\">" + lhs + "</td><td class=\"m\">" + right_marker
                   + "</td><td class=\"r " + right_class + "\">" + rhs + "</td></tr>";
        }
        out += "</tbody></table></div>";
        return out;
    }

    std::string code_view::compare_text(const std::string& left_title, const code_listing& left,
                                        const std::string& right_title, const code_listing& right)
    {
        const diff_result d = diff(left, right);
        constexpr std::size_t max_width = 72;  // wider left texts are not padded, never cut
        std::size_t width = left_title.size();
        for (const diff_row& row : d.rows)
        {
            if (row.left)
            {
                width = std::max(width, collapse_space(row.left->text).size());
            }
        }
        width = std::min(width, max_width);
        auto pad = [&](std::string s)
        {
            if (s.size() < width)
            {
                s.append(width - s.size(), ' ');
            }
            return s;
        };

        std::string out = summary(d) + "\n";
        out += "  " + pad(left_title) + " | " + right_title + "\n";
        for (const diff_row& row : d.rows)
        {
            const char marker = row.kind == row_kind::same      ? ' '
                                : row.kind == row_kind::removed ? '-'
                                : row.kind == row_kind::added   ? '+'
                                                                : '~';
            std::string lhs = row.left ? collapse_space(row.left->text) : "";
            std::string rhs = row.right ? collapse_space(row.right->text) : "";
            std::string line = std::string(1, marker) + " " + pad(lhs) + " |";
            if (!rhs.empty())
            {
                line += " " + rhs;
            }
            out += line + "\n";
        }
        return clean_text(out);
    }
}

namespace xcuda
{
    std::string code_view::annotated_ptx(const std::string& ptx, const std::string& source, const cell_lines& lines)
    {
        code_listing listing = code_listing::from_ptx(ptx);
        bool located = std::any_of(listing.begin(), listing.end(), [](const code_line& l) { return l.source_line > 0; });
        if (!located)
        {
            return ptx;
        }
        const std::vector<std::string> source_lines = split_lines(source);
        std::string out;
        int current = 0;
        std::string function;
        for (const code_line& l : listing)
        {
            if (l.kind == code_line::header || l.function != function)
            {
                current = 0;  // each function starts its own runs
                function = l.function;
            }
            if (l.kind == code_line::instruction && l.source_line > 0 && l.source_line != current)
            {
                current = l.source_line;
                std::size_t index = static_cast<std::size_t>(current - 1);
                std::string number = std::to_string(lines.editor_line(current));
                number.insert(0, number.size() < 4 ? 4 - number.size() : 0, ' ');
                std::string text = index < source_lines.size() ? collapse_space(source_lines[index]) : std::string();
                std::size_t indent = l.text.find_first_not_of(" \t");
                out += l.text.substr(0, indent == std::string::npos ? 0 : indent) + "// " + number + " | " + text + "\n";
            }
            out += l.text + "\n";
        }
        return out;
    }
}
