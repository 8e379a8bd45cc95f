#pragma once
// Compile diagnostics as a person reads them: HTML with the source line and a caret under the
// column (themed with JupyterLab's CSS variables, light fallbacks), and the same in plain text.

#include <string>
#include <vector>

#include "diagnostic.hpp"

namespace xcuda
{
    class diagnostics_view
    {
    public:
        // Each message with its source line, a caret under the column, and the hint.
        static std::string html(const std::vector<diagnostic>& messages);
    };
}
