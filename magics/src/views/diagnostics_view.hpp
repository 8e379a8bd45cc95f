#pragma once
// Compile diagnostics as a person reads them, in HTML (notebooks) and in plain text (consoles, converted
// notebooks) that say the same: where (the cell's name, line, column), what, the source line with a caret
// under the column, and a hint for the known traps. Colours use JupyterLab's CSS variables with fallbacks
// for Notebook 6 and nbconvert, so the text stays readable on dark themes.

#include <string>
#include <vector>

#include "diagnostic.hpp"

namespace xcuda
{
    class diagnostics_view
    {
    public:
        // `cell`: how to name the source in the heading (cell_lines::label: "Cell In[5]"); "" for none.
        static std::string html(const std::vector<diagnostic>& messages, const std::string& cell = "");
        static std::string text(const std::vector<diagnostic>& messages, const std::string& cell = "");

        // "line 4, column 8" (or "line 4", or "" when the message is not located).
        static std::string where(const diagnostic& d);
        // One line for a whole failed compile: "1 error in Cell In[5], line 4, column 8: ..." ("" for
        // `cell` says "the source").
        static std::string summary(const std::vector<diagnostic>& messages, const std::string& cell);
    };
}
