#pragma once
// Where a compiled source sits in the notebook's editor, and the one place that turns a line of that
// source into the line a person sees. Every message and view that names a line goes through here:
// NVRTC's log ("cell(4): error"), PTX's .loc (the views, --ptx), the simulator's fault, race and trace
// reports ("line 4 of /server/folder/cell"), ncu's and compute-sanitizer's per-line figures.
//
// Why one unit: NVRTC is handed the cell's body, without its %%cuda line, under the program name
// "cell", so its lines are one less than the editor's; each view once added (or forgot) that line on
// its own, and the same source line had three numbers. A %%cuda cell is named as IPython names it
// ("Cell In[5]"), a header cell by its own name; never by the path NVRTC writes into .file (the kernel's
// working folder and "cell", a file that does not exist).
//
// A value (copyable, immutable once made): safe to read from any thread.

#include <set>
#include <string>
#include <vector>

#include "diagnostic.hpp"

namespace xcuda
{
    class cell_lines
    {
    public:
        // A source given as a string (xcuda.compile): its lines as they are, named "the source".
        cell_lines() = default;
        // A %%cuda cell run as In[execution_count] (0: not known, e.g. outside IPython): its body starts
        // on the editor's line 2. header_cells: the names of the header cells it includes (their bodies
        // start on line 2 of their own cells too); other included files keep their lines.
        static cell_lines cell(int execution_count, std::set<std::string> header_cells = {});
        // The lines of a header cell NAME seen on its own (the source of a kernel it defines): "header cell
        // NAME", its body under its %%cuda_header line when it has one.
        static cell_lines header_cell(const std::string& name, bool under_magic_line);

        // "Cell In[5]", "the %%cuda cell" (number unknown) or "the source".
        const std::string& label() const noexcept { return m_label; }
        int execution_count() const noexcept { return m_execution_count; }
        // Lines above the source in the editor: 1 under a magic line, 0 for a string.
        int lines_above() const noexcept { return m_lines_above; }

        // A line of the source, as the editor counts it (0, no line, stays 0).
        int editor_line(int source_line) const noexcept;
        // The other way: a line of the editor, as the source handed to the compiler counts it (0 above it).
        int source_line(int editor_line) const noexcept;

        // A line of line information located: whose (the cell's own, a header cell's, another file's),
        // its label and its line in that cell's editor.
        struct place
        {
            bool own = false;    // the cell's own source (the editor of the cell that compiled it)
            std::string file;    // "" for the cell itself, else the header cell's name or the file's last part
            std::string label;   // "Cell In[5]", "header cell NAME", or the file's last part
            int line = 0;        // the editor's line (0: none)
            // "Cell In[5], line 7" (or only the label without a line).
            std::string where() const;
        };
        // file: as the compiler or the line information names it ("cell", "/srv/notebooks/cell", a header
        // cell's name, "/usr/local/cuda/include/x.h"); line: the compiler's (1-based, 0: none).
        place locate(const std::string& file, int line) const;
        // Whether a file name of line information is the program NVRTC compiled: "cell", or a path to it.
        static bool names_program(const std::string& file);

        // Compile messages with the editor's lines: the cell's own and header cells' moved down by their
        // magic line, other files' left as they are.
        std::vector<diagnostic> shown(std::vector<diagnostic> messages) const;

        // A report of the simulator with each "line N of FILE" (the .loc line and .file name of the PTX)
        // said as "Cell In[5], line N+1": the one rewrite of the simulator's fault, race and barrier texts.
        // The first place it names (the faulting instruction) is returned through `first` when given.
        std::string located_report(const std::string& text, place* first = nullptr) const;

    private:
        std::string m_label = "the source";
        int m_execution_count = 0;
        int m_lines_above = 0;
        std::set<std::string> m_header_cells;
    };
}
