#include "cell_lines.hpp"

#include <cctype>

namespace xcuda
{
    namespace
    {
        // The last part of a path ("/srv/notebooks/cell" -> "cell").
        std::string last_part(const std::string& file)
        {
            std::size_t slash = file.find_last_of('/');
            return slash == std::string::npos ? file : file.substr(slash + 1);
        }
    }

    cell_lines cell_lines::cell(int execution_count, std::set<std::string> header_cells)
    {
        cell_lines lines;
        lines.m_execution_count = execution_count > 0 ? execution_count : 0;
        lines.m_label = execution_count > 0 ? "Cell In[" + std::to_string(execution_count) + "]" : "the %%cuda cell";
        lines.m_lines_above = 1;  // the %%cuda line
        lines.m_header_cells = std::move(header_cells);
        return lines;
    }

    cell_lines cell_lines::header_cell(const std::string& name, bool under_magic_line)
    {
        cell_lines lines;
        lines.m_label = "header cell " + name;
        lines.m_lines_above = under_magic_line ? 1 : 0;
        return lines;
    }

    int cell_lines::editor_line(int source_line) const noexcept
    {
        return source_line > 0 ? source_line + m_lines_above : 0;
    }

    int cell_lines::source_line(int editor_line) const noexcept
    {
        return editor_line > m_lines_above ? editor_line - m_lines_above : 0;
    }

    bool cell_lines::names_program(const std::string& file)
    {
        // NVRTC's program name, "cell"; PTX's .file writes it under the kernel's working folder.
        return last_part(file) == "cell";
    }

    std::string cell_lines::place::where() const
    {
        return line > 0 ? label + ", line " + std::to_string(line) : label;
    }

    cell_lines::place cell_lines::locate(const std::string& file, int line) const
    {
        place p;
        if (file.empty() || names_program(file))
        {
            p.own = true;
            p.label = m_label;
            p.line = editor_line(line);
            return p;
        }
        // NVRTC names an included header cell by its #include name; .file may put a folder before it.
        std::string name = m_header_cells.count(file) ? file : last_part(file);
        p.file = name;
        if (m_header_cells.count(name))
        {
            p.label = "header cell " + name;
            p.line = line > 0 ? line + 1 : 0;  // under its %%cuda_header line
        }
        else
        {
            p.label = name;
            p.line = line > 0 ? line : 0;
        }
        return p;
    }

    std::vector<diagnostic> cell_lines::shown(std::vector<diagnostic> messages) const
    {
        for (diagnostic& d : messages)
        {
            if (d.line > 0)
            {
                d.line = locate(d.file, d.line).line;
            }
        }
        return messages;
    }

    std::string cell_lines::located_report(const std::string& text, place* first) const
    {
        // The simulator writes "line N of FILE" (warp_interpreter::location); FILE runs to the next ",",
        // ";", ")", newline or the end, a sentence's full stop left out.
        static const std::string marker = "line ";
        std::string out;
        bool found = false;
        std::size_t at = 0;
        while (at < text.size())
        {
            std::size_t hit = text.find(marker, at);
            std::size_t digits = hit == std::string::npos ? hit : hit + marker.size();
            std::size_t end = digits;
            while (end != std::string::npos && end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])))
            {
                ++end;
            }
            bool word_start = hit != std::string::npos &&
                              (hit == 0 || !std::isalnum(static_cast<unsigned char>(text[hit - 1])));
            if (hit == std::string::npos || end == digits || end - digits > 9 || !word_start ||
                text.compare(end, 4, " of ") != 0)
            {
                std::size_t stop = hit == std::string::npos ? text.size() : hit + 1;
                out.append(text, at, stop - at);
                at = stop;
                continue;
            }
            std::size_t name_start = end + 4;
            std::size_t name_end = text.find_first_of(",;)\n", name_start);
            name_end = name_end == std::string::npos ? text.size() : name_end;
            while (name_end > name_start && (text[name_end - 1] == '.' || text[name_end - 1] == ' '))
            {
                --name_end;
            }
            place p = locate(text.substr(name_start, name_end - name_start), std::stoi(text.substr(digits, end - digits)));
            out.append(text, at, hit - at);
            out += p.where();
            if (first && !found)
            {
                *first = p;
            }
            found = true;
            at = name_end;
        }
        return out;
    }
}
