#include "diagnostics_view.hpp"

#include "text.hpp"

namespace xcuda
{
    std::string diagnostics_view::html(const std::vector<diagnostic>& messages)
    {
        auto escape = text::html_escape;
        std::string out = "<div class=\"xcuda-diagnostics\"><style>.xcuda-diagnostics .error{color:#b00020}"
                          ".xcuda-diagnostics .warning{color:#8a6d00}.xcuda-diagnostics pre{margin:2px 0 8px 0}"
                          ".xcuda-diagnostics .hint{color:#205080}</style>";
        for (const auto& d : messages)
        {
            std::string severity = d.severity == "catastrophic error" ? "error" : d.severity;
            out += "<div class=\"" + escape(severity) + "\"><b>" +
                   (d.file.empty() ? std::string() : "header cell " + escape(d.file) + (d.line ? ", " : ": ")) +
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
