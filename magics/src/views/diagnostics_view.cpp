#include "diagnostics_view.hpp"

#include "text.hpp"

namespace xcuda
{
    std::string diagnostics_view::html(const std::vector<diagnostic>& messages)
    {
        auto escape = text::html_escape;
        std::string out = "<div class=\"xcuda-diagnostics\"><style>.xcuda-diagnostics .error{color:var(--jp-error-color1,#b00020)}"
                          ".xcuda-diagnostics .warning{color:var(--jp-warn-color1,#8a6d00)}.xcuda-diagnostics pre{margin:2px 0 8px 0}"
                          ".xcuda-diagnostics .hint{color:var(--jp-info-color1,#205080)}</style>";
        for (const auto& d : messages)
        {
            std::string severity = d.severity == "catastrophic error" ? "error" : d.severity;
            out += "<div class=\"" + escape(severity) + "\"><b>" +
                   (d.line ? "line " + std::to_string(d.line) + (d.column ? ", column " + std::to_string(d.column) : "") + ": "
                           : std::string()) +
                   escape(d.severity) + "</b>: " + escape(d.message) + "</div>";
            if (!d.source_line.empty())
            {
                std::string caret = d.column ? std::string(static_cast<std::size_t>(d.column - 1), ' ') + "^" : "";
                out += "<pre>" + escape(d.source_line) + (caret.empty() ? "" : "\n" + caret) + "</pre>";
            }
            if (!d.hint.empty())
            {
                out += "<div class=\"hint\">hint: " + escape(d.hint) + "</div>";
            }
        }
        return out + "</div>";
    }
}
