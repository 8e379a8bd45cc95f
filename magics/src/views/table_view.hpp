#pragma once
// Tables a person reads: %cuda_info and %cuda_status reports, %cuda_bench results. One table model,
// rendered as HTML (notebooks) and as aligned text (consoles, converted notebooks), so both say the same.

#include <string>
#include <vector>

namespace xcuda
{
    struct text_table
    {
        std::string title;
        std::vector<std::string> columns;  // all empty: no header row
        std::vector<std::vector<std::string>> rows;
        std::string empty_text;            // shown instead of a table without rows
        bool numbers = false;              // right-aligned cells, columns two spaces apart, no indent
    };

    class table_view
    {
    public:
        // <h4>title</h4><table>... (or <p>empty_text</p>), cells escaped.
        static std::string html(const text_table& table);
        // The title line, then the columns aligned.
        static std::string text(const text_table& table);
    };
}
