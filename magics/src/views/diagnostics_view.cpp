#include "diagnostics_view.hpp"

#include <algorithm>

#include "text.hpp"

namespace xcuda
{
    namespace
    {
        std::string caret_under(const diagnostic& d)
        {
            return d.column ? std::string(static_cast<std::size_t>(d.column - 1), ' ') + "^" : "";
        }

        bool is_error(const diagnostic& d)
        {
            return d.severity == "error" || d.severity == "catastrophic error";
        }
    }

    std::string diagnostics_view::where(const diagnostic& d)
    {
        // A header cell has a name ("vecmath.cuh"); a path is a header NVRTC found in a folder (the toolkit's
        // include folder, or one of -I).
        std::string file = d.file.empty()                            ? std::string()
                           : d.file.find('/') == std::string::npos ? "header cell " + d.file
                                                                     : "header " + d.file;
        if (!d.line)
        {
            return file;
        }
        return file + (file.empty() ? "" : ", ") + "line " + std::to_string(d.line) +
               (d.column ? ", column " + std::to_string(d.column) : "");
    }

    std::string diagnostics_view::html(const std::vector<diagnostic>& messages, const std::string& cell)
    {
        auto escape = text::html_escape;
        std::string out =
            "<div class=\"xcuda-diagnostics\"><style>"
            ".xcuda-diagnostics{color:var(--jp-content-font-color1,#212121)}"
            ".xcuda-diagnostics .error{color:var(--jp-error-color1,#b00020)}"
            ".xcuda-diagnostics .warning{color:var(--jp-warn-color1,#8a6d00)}"
            ".xcuda-diagnostics pre{margin:2px 0 8px 0;background:var(--jp-layout-color2,#f5f5f5);padding:2px 4px}"
            ".xcuda-diagnostics .hint{color:var(--jp-info-color1,#205080)}</style>";
        if (!cell.empty())
        {
            out += "<div><b>" + escape(cell) + "</b></div>";
        }
        for (const auto& d : messages)
        {
            std::string severity = is_error(d) ? "error" : d.severity;
            std::string place = where(d);
            out += "<div class=\"" + escape(severity) + "\"><b>" + (place.empty() ? "" : escape(place) + ": ") +
                   escape(d.severity) + "</b>: " + escape(d.message) + "</div>";
            if (!d.source_line.empty())
            {
                std::string caret = caret_under(d);
                out += "<pre>" + escape(d.source_line) + (caret.empty() ? "" : "\n" + caret) + "</pre>";
            }
            if (!d.hint.empty())
            {
                out += "<div class=\"hint\">hint: " + escape(d.hint) + "</div>";
            }
        }
        return out + "</div>";
    }

    std::string diagnostics_view::text(const std::vector<diagnostic>& messages, const std::string& cell)
    {
        std::string out = cell.empty() ? "" : cell + "\n";
        for (const auto& d : messages)
        {
            std::string place = where(d);
            out += (place.empty() ? "" : place + ": ") + d.severity + ": " + d.message + "\n";
            if (!d.source_line.empty())
            {
                out += "    " + d.source_line + "\n";
                std::string caret = caret_under(d);
                if (!caret.empty())
                {
                    out += "    " + caret + "\n";
                }
            }
            if (!d.hint.empty())
            {
                out += "  hint: " + d.hint + "\n";
            }
        }
        return out;
    }

    std::string diagnostics_view::summary(const std::vector<diagnostic>& messages, const std::string& cell)
    {
        std::size_t errors = static_cast<std::size_t>(std::count_if(messages.begin(), messages.end(), is_error));
        auto first = std::find_if(messages.begin(), messages.end(), is_error);
        std::string count = errors == 0 ? std::string("NVRTC failed") : std::to_string(errors) + (errors == 1 ? " error" : " errors");
        std::string text = count + " in " + (cell.empty() ? std::string("the source") : cell);
        if (first != messages.end())
        {
            std::string place = where(*first);
            text += (errors > 1 ? "; the first, " : ", ") + (place.empty() ? std::string() : place + ": ") + first->message;
        }
        return text + " (shown above)";
    }
}
