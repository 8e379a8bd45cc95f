#include "sanitizer_report.hpp"

#include <cctype>
#include <cstdlib>

#include "text.hpp"

namespace xcuda
{
    namespace
    {
        const std::string prefix = "=========";

        long long number(const std::string& text)
        {
            std::string digits;
            for (char c : text)
            {
                if (c >= '0' && c <= '9')
                {
                    digits += c;
                }
                else if (c != ',')
                {
                    break;
                }
            }
            return digits.empty() ? 0 : std::atoll(digits.c_str());
        }

        // The number just before `word` in text ("(1 error, 0 warnings)", "error"), or none.
        std::optional<long long> count_before(const std::string& text, const std::string& word)
        {
            std::size_t at = text.find(" " + word);
            if (at == std::string::npos || at == 0)
            {
                return std::nullopt;
            }
            std::size_t start = at;
            while (start > 0 && (std::isdigit(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == ','))
            {
                --start;
            }
            if (start == at)
            {
                return std::nullopt;
            }
            return number(text.substr(start, at - start));
        }

        // "(232,0,0)" at position at (the '('), or "".
        std::string triple_at(const std::string& text, std::size_t at)
        {
            if (at >= text.size() || text[at] != '(')
            {
                return "";
            }
            std::size_t close = text.find(')', at);
            return close == std::string::npos ? "" : text.substr(at, close - at + 1);
        }

        // "FUNCTION+0xOFF in FILE:LINE [N hazards]" after " at " in text; false when there is none.
        bool read_location(const std::string& text, sanitizer_location& location)
        {
            std::size_t at = text.find(" at ");
            std::size_t start = at == std::string::npos ? (text::starts_with(text, "at ") ? 3 : std::string::npos) : at + 4;
            if (start == std::string::npos)
            {
                return false;
            }
            std::string rest = text.substr(start);
            std::size_t hazards = rest.rfind(" [");
            if (hazards != std::string::npos && rest.find("hazard", hazards) != std::string::npos)
            {
                location.hazards = number(rest.substr(hazards + 2));
                rest = rest.substr(0, hazards);
            }
            std::size_t in = rest.rfind(" in ");
            std::string code = in == std::string::npos ? rest : rest.substr(0, in);
            std::size_t plus = code.rfind("+0x");
            if (plus == std::string::npos)
            {
                return false;
            }
            location.function = code.substr(0, plus);
            location.offset = code.substr(plus + 1);
            if (in != std::string::npos)
            {
                std::string place = rest.substr(in + 4);
                std::size_t colon = place.rfind(':');
                if (colon != std::string::npos)
                {
                    location.file = place.substr(0, colon);
                    location.line = static_cast<int>(number(place.substr(colon + 1)));
                }
            }
            // What comes before " at ": racecheck's "Write access", "and Read access", "Write Thread (32,0,0)".
            std::string before = at == std::string::npos ? "" : text::trim(text.substr(0, at));
            if (text::starts_with(before, "and "))
            {
                before = before.substr(4);
            }
            if (text::starts_with(before, "Error: Race reported between "))
            {
                before = before.substr(29);
            }
            std::size_t thread = before.find("Thread (");
            if (thread != std::string::npos)
            {
                location.thread = triple_at(before, thread + 7);
                before = text::trim(before.substr(0, thread));
            }
            std::size_t access = before.find(" access");
            location.access = access == std::string::npos ? before : before.substr(0, access);
            return true;
        }

        std::string kind_of(const std::string& title)
        {
            if (title.find("Race reported") != std::string::npos || title.find("hazard") != std::string::npos)
                return "race";
            if (text::starts_with(title, "Program hit"))
                return "api";
            if (text::starts_with(title, "Leaked"))
                return "leak";
            if (title.find("Uninitialized") != std::string::npos || title.find("uninitialized") != std::string::npos)
                return "uninitialized";
            if (title.find("Barrier") != std::string::npos || title.find("barrier") != std::string::npos ||
                title.find("Divergent") != std::string::npos || title.find("syncwarp") != std::string::npos)
                return "synchronization";
            if (title.find("Invalid") != std::string::npos || title.find("Misaligned") != std::string::npos ||
                title.find("out of bounds") != std::string::npos)
                return "memory access";
            return "other";
        }

        // "Write by thread (32,0,0) at line 24 (race+0xa0), 160 hazards: cell[t] = t;"
        std::string where(const sanitizer_location& l, const std::vector<std::string>& source_lines,
                          const std::string& cell_file, const cell_lines& lines, bool html)
        {
            std::string text = l.function + "+" + l.offset;
            if (l.line > 0)
            {
                text = (l.file == cell_file ? "line " + std::to_string(lines.editor_line(l.line))
                                            : l.file + ":" + std::to_string(l.line)) +
                       " (" + text + ")";
            }
            else
            {
                text += " (no line information)";
            }
            text = (l.access.empty() ? std::string() : l.access + (l.thread.empty() ? "" : " by thread " + l.thread) + " ") +
                   "at " + text;
            if (l.hazards)
            {
                text += ", " + std::to_string(l.hazards) + " hazards";
            }
            std::string code;
            if (l.file == cell_file && l.line > 0 && static_cast<std::size_t>(l.line) <= source_lines.size())
            {
                code = text::trim(source_lines[static_cast<std::size_t>(l.line) - 1]);
            }
            if (html)
            {
                return text::html_escape(text) + (code.empty() ? "" : ": <code>" + text::html_escape(code) + "</code>");
            }
            return text + (code.empty() ? "" : ": " + code);
        }
    }

    sanitizer_report sanitizer_report::parse(const std::string& output, const std::string& tool,
                                             const std::string& cell_file)
    {
        sanitizer_report report;
        report.tool = tool;
        report.cell_file = cell_file;
        sanitizer_finding* open = nullptr;
        for (const std::string& raw : text::split_lines(output))
        {
            if (!text::starts_with(raw, prefix))
            {
                report.program_output += raw + "\n";
                open = nullptr;
                continue;
            }
            std::string body = raw.substr(prefix.size());
            std::string line = text::trim(body);
            bool continuation = text::starts_with(body, "    ");
            if (line.empty())
            {
                open = nullptr;
                continue;
            }
            if (!continuation)
            {
                open = nullptr;
                if (line == "COMPUTE-SANITIZER")
                {
                    continue;
                }
                if (line.find("SUMMARY:") != std::string::npos)
                {
                    if (text::starts_with(line, "LEAK SUMMARY:"))
                    {
                        report.leaked_bytes = number(line.substr(14));
                        continue;
                    }
                    report.summary = line;
                    std::string counts = line.substr(line.find("SUMMARY:") + 8);
                    std::size_t paren = counts.find('(');
                    std::string inner = paren == std::string::npos ? counts : counts.substr(paren);
                    report.errors = count_before(inner, "error");
                    report.warnings = count_before(inner, "warning");
                    continue;
                }
                report.findings.emplace_back();
                open = &report.findings.back();
                open->title = text::starts_with(line, "Error: ") && line.find("Race reported") == std::string::npos
                                  ? line.substr(7)
                                  : line;
                open->kind = kind_of(line);
                std::size_t block = open->title.find(" in block (");
                if (block != std::string::npos)
                {
                    open->block = triple_at(open->title, block + 10);
                    open->title = open->title.substr(0, block);  // the block is shown beside the title
                }
                sanitizer_location location;
                if (open->kind == "race" && read_location(line, location))
                {
                    open->locations.push_back(location);
                    open->title = "Race between " + location.access + " and other accesses";
                }
                continue;
            }
            if (!open)
            {
                continue;
            }
            if (text::starts_with(line, "Saved host backtrace") || text::starts_with(line, "Host Frame:"))
            {
                continue;  // the replay program's own frames: nothing of the user's
            }
            if (text::starts_with(line, "by thread ("))
            {
                open->thread = triple_at(line, 10);
                std::size_t block = line.find("in block (");
                if (block != std::string::npos)
                {
                    open->block = triple_at(line, block + 9);
                }
                continue;
            }
            sanitizer_location location;
            if ((text::starts_with(line, "at ") || line.find(" at ") != std::string::npos) && line.find("+0x") != std::string::npos &&
                read_location(line, location))
            {
                open->locations.push_back(location);
                continue;
            }
            open->details.push_back(line);
        }
        for (sanitizer_finding& f : report.findings)
        {
            if (f.title.compare(0, 12, "Race between") == 0 && f.locations.size() > 1)
            {
                // racecheck's analysis: the first access races with each one after it.
                std::string others;
                for (std::size_t i = 1; i < f.locations.size(); ++i)
                {
                    others += (i == 1 ? "" : i + 1 == f.locations.size() ? " and " : ", ") + f.locations[i].access;
                }
                f.title = "Race on shared memory: a " + f.locations[0].access + " against " + others + " accesses";
            }
        }
        return report;
    }

    std::size_t sanitizer_report::kernel_findings() const
    {
        std::size_t count = 0;
        for (const sanitizer_finding& f : findings)
        {
            count += f.kind != "api" && f.kind != "leak";
        }
        return count;
    }

    bool sanitizer_report::clean() const
    {
        return findings.empty() && errors.value_or(0) == 0 && leaked_bytes == 0;
    }

    std::string sanitizer_report::text(const std::string& source) const
    {
        std::vector<std::string> source_lines = text::split_lines(source);
        std::string out = "compute-sanitizer --tool " + tool + ": ";
        out += clean() ? "no errors" : (summary.empty() ? std::to_string(findings.size()) + " finding(s)" : summary);
        out += "\n";
        std::size_t shown = 0;
        for (const sanitizer_finding& f : findings)
        {
            if (++shown > 20)
            {
                out += "... and " + std::to_string(findings.size() - 20) + " more (the output attribute has them all)\n";
                break;
            }
            out += std::string(f.kind == "api" ? "- then: " : "- ") + f.title;
            if (!f.thread.empty() || !f.block.empty())
            {
                out += " (" + (f.thread.empty() ? std::string() : "thread " + f.thread) +
                       (f.thread.empty() || f.block.empty() ? "" : " ") +
                       (f.block.empty() ? std::string() : "in block " + f.block) + ")";
            }
            out += "\n";
            for (const sanitizer_location& l : f.locations)
            {
                out += "    " + where(l, source_lines, cell_file, lines, false) + "\n";
            }
            for (const std::string& d : f.details)
            {
                out += "    " + d + "\n";
            }
        }
        if (leaked_bytes)
        {
            out += "leaked " + std::to_string(leaked_bytes) + " bytes\n";
        }
        return out;
    }

    std::string sanitizer_report::html(const std::string& source) const
    {
        std::vector<std::string> source_lines = text::split_lines(source);
        std::string out = "<div class=\"xcuda-sanitize\"><h4>compute-sanitizer --tool " + text::html_escape(tool) + ": " +
                          text::html_escape(clean() ? "no errors" : (summary.empty() ? std::to_string(findings.size()) +
                                                                                           " finding(s)"
                                                                                     : summary)) +
                          "</h4>";
        if (!findings.empty())
        {
            out += "<ul>";
            std::size_t shown = 0;
            for (const sanitizer_finding& f : findings)
            {
                if (++shown > 20)
                {
                    out += "<li>... and " + std::to_string(findings.size() - 20) +
                           " more (the output attribute has them all)</li>";
                    break;
                }
                out += std::string("<li>") + (f.kind == "api" ? "then: " : "") + "<b>" + text::html_escape(f.title) + "</b>";
                if (!f.thread.empty() || !f.block.empty())
                {
                    out += " (" + text::html_escape((f.thread.empty() ? std::string() : "thread " + f.thread) +
                                                    (f.thread.empty() || f.block.empty() ? "" : " ") +
                                                    (f.block.empty() ? std::string() : "in block " + f.block)) +
                           ")";
                }
                out += "<ul>";
                for (const sanitizer_location& l : f.locations)
                {
                    out += "<li>" + where(l, source_lines, cell_file, lines, true) + "</li>";
                }
                for (const std::string& d : f.details)
                {
                    out += "<li>" + text::html_escape(d) + "</li>";
                }
                out += "</ul></li>";
            }
            out += "</ul>";
        }
        if (leaked_bytes)
        {
            out += "<p>leaked " + std::to_string(leaked_bytes) + " bytes</p>";
        }
        return out + "</div>";
    }
}
