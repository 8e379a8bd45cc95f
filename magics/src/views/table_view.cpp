#include "table_view.hpp"

#include <algorithm>

#include "text.hpp"

namespace xcuda
{
    std::string table_view::html(const text_table& table)
    {
        using text::html_escape;
        std::string out = "<h4>" + html_escape(table.title) + "</h4>";
        if (table.rows.empty())
        {
            return out + "<p>" + html_escape(table.empty_text) + "</p>";
        }
        // Left-aligned, as the text beside it: JupyterLab's and Notebook 7's output CSS centres tables and
        // right-aligns every cell (`:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td`), Notebook 6's
        // (.rendered_html td) too; these rules are more specific than each.
        out += "<style>table.xcuda-table,.jp-RenderedHTMLCommon table.xcuda-table{margin-left:0;margin-right:auto}"
               "table.xcuda-table th,table.xcuda-table td,.jp-RenderedHTMLCommon table.xcuda-table th,"
               ".jp-RenderedHTMLCommon table.xcuda-table td{text-align:left}</style>";
        out += "<table class=\"xcuda-table\"><thead><tr>";
        for (const auto& column : table.columns)
        {
            out += "<th>" + html_escape(column) + "</th>";
        }
        out += "</tr></thead><tbody>";  // an all-empty header row is harmless in HTML
        const char* cell_open = table.numbers ? "<td style=\"text-align:right\">" : "<td>";
        for (const auto& row : table.rows)
        {
            out += "<tr>";
            for (const auto& cell : row)
            {
                out += cell_open + html_escape(cell) + "</td>";
            }
            out += "</tr>";
        }
        return out + "</tbody></table>";
    }

    std::string table_view::text(const text_table& table)
    {
        std::string out = table.title + "\n";
        if (table.rows.empty())
        {
            return out + "  " + table.empty_text + "\n";
        }
        std::vector<std::size_t> widths(table.columns.size(), 0);
        for (std::size_t c = 0; c < table.columns.size(); ++c)
        {
            widths[c] = table.columns[c].size();
            for (const auto& row : table.rows)
            {
                widths[c] = std::max(widths[c], c < row.size() ? row[c].size() : 0);
            }
        }
        auto line = [&](const std::vector<std::string>& cells) {
            std::string text = table.numbers ? "" : " ";
            for (std::size_t c = 0; c < cells.size() && c < widths.size(); ++c)
            {
                std::string pad(widths[c] - cells[c].size(), ' ');
                text += table.numbers ? (c ? "  " : "") + pad + cells[c] : " " + cells[c] + pad + " ";
            }
            while (!text.empty() && text.back() == ' ')
            {
                text.pop_back();
            }
            return text + "\n";
        };
        bool header = std::any_of(table.columns.begin(), table.columns.end(), [](const std::string& c) { return !c.empty(); });
        if (header)
        {
            out += line(table.columns);
        }
        for (const auto& row : table.rows)
        {
            out += line(row);
        }
        return out;
    }
}
