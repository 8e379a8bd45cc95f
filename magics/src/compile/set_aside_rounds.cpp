#include "set_aside_rounds.hpp"

#include <map>

#include "diagnostics.hpp"

namespace xcuda
{
    namespace
    {
        bool is_refusal(const diagnostic& d)
        {
            return d.line > 0 && d.column > 0 &&
                   (d.message.find("host functions are not allowed in JIT mode") != std::string::npos ||
                    d.message.find("host variables are not allowed in JIT mode") != std::string::npos);
        }

        // Each host function (or variable) set aside from the cell, said as NVRTC says a warning (located, the
        // line, a caret), so the cell shows it where it shows warnings and the editor marks the line.
        std::string cell_warnings(const set_aside_code& aside, const std::vector<diagnostic>& refusals)
        {
            std::string text;
            for (const auto& [name, line] : aside.functions)
            {
                int column = 1;
                std::string shown;
                std::string what = "function";
                for (const diagnostic& d : refusals)
                {
                    if (d.line == line && d.file.empty() && d.column > 0)
                    {
                        column = d.column;
                        shown = d.source_line;
                        if (d.message.find("host variables") != std::string::npos)
                        {
                            what = "variable";
                        }
                        break;
                    }
                }
                text += std::string(diagnostics::program_name) + "(" + std::to_string(line) + "): warning: host " + what + " \"" +
                        name + "\" set aside: nvcc compiles it for the host and NVRTC for the device only, and no kernel "
                        "calls it (in a notebook the host side is Python; to call it from kernels, mark it __device__)\n";
                text += "  " + shown + "\n  " + std::string(static_cast<std::size_t>(column - 1), ' ') + "^\n\n";
            }
            return text;
        }

        // One warning for each header a round set host code aside from, at the first line, naming them all.
        std::string header_warning(const std::string& file, const set_aside_code& aside)
        {
            std::string names;
            for (const auto& function : aside.functions)
            {
                names += (names.empty() ? "" : ", ") + function.first;
            }
            return file + "(" + std::to_string(aside.functions.front().second) + "): warning: host code set aside from "
                   "this header (" + std::to_string(aside.functions.size()) + ": " + names + "): nvcc compiles it for "
                   "the host and NVRTC for the device only, and no kernel calls it (to call one from kernels, mark it "
                   "__device__)\n\n";
        }

        bool blank_at(const std::string& text, int line, int column)
        {
            std::size_t at = 0;
            for (int l = 1; l < line && at != std::string::npos; ++l)
            {
                at = text.find('\n', at);
                at = at == std::string::npos ? at : at + 1;
            }
            at = at == std::string::npos ? at : at + static_cast<std::size_t>(column - 1);
            return at < text.size() && text[at] == ' ';
        }
    }

    bool set_aside_rounds::set_aside(const std::vector<diagnostic>& log)
    {
        std::map<std::string, std::vector<std::pair<int, int>>> positions;
        for (const diagnostic& d : log)
        {
            if (is_refusal(d))
            {
                positions[d.file].emplace_back(d.line, d.column);
            }
        }
        bool any = false;
        for (const auto& [file, at] : positions)
        {
            set_aside_code aside = file.empty() ? host_code::set_aside(cell, at) : headers.set_aside(file, at, cell);
            if (aside.functions.empty())
            {
                continue;
            }
            any = true;
            if (file.empty())
            {
                cell = aside.source;
            }
            warnings += file.empty() ? cell_warnings(aside, log) : header_warning(file, aside);
            for (const auto& function : aside.functions)
            {
                names.push_back(function.first);
            }
        }
        return any;
    }

    std::vector<diagnostic> set_aside_rounds::mentioning_set_aside(const std::vector<diagnostic>& log) const
    {
        std::vector<diagnostic> found;
        for (const diagnostic& d : log)
        {
            for (const std::string& name : names)
            {
                if (d.message.find("\"" + name + "\"") != std::string::npos)
                {
                    found.push_back(d);
                    break;
                }
            }
        }
        return found;
    }

    bool set_aside_rounds::all_blanked(const std::vector<diagnostic>& errors) const
    {
        for (const diagnostic& d : errors)
        {
            const std::string* text = text_of(d.file);
            if (text == nullptr || d.line <= 0 || d.column <= 0 || !blank_at(*text, d.line, d.column))
            {
                return false;
            }
        }
        return true;
    }

    const std::string* set_aside_rounds::text_of(const std::string& file) const
    {
        return file.empty() ? &cell : headers.text_of(file);
    }
}
