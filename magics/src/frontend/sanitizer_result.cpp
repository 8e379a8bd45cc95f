#include "sanitizer_result.hpp"

#include "errors.hpp"
#include "text.hpp"

namespace xcuda
{
    void sanitize_options::check_keyword(const std::string& keyword, const std::string& takes)
    {
        if (keyword != "tool" && keyword != "keep")
        {
            throw argument_type_error("sanitize() got an unexpected keyword '" + keyword + "' (it takes " + takes + ")");
        }
    }

    sanitizer_result sanitizer_result::from_output(const std::string& output, const std::string& tool,
                                                   const std::string& source, const std::string& cell_file)
    {
        sanitizer_result r;
        r.report = sanitizer_report::parse(output, tool, cell_file);
        r.output = output;
        r.source = source;
        return r;
    }

    std::optional<std::string> sanitizer_result::kernel_of(const sanitizer_finding& finding)
    {
        if (finding.locations.empty())
        {
            return std::nullopt;
        }
        return finding.locations.front().function;
    }

    std::optional<int> sanitizer_result::cell_line_of(const sanitizer_finding& finding) const
    {
        if (!finding.locations.empty() && finding.locations.front().file == report.cell_file &&
            finding.locations.front().line > 0)
        {
            return report.lines.editor_line(finding.locations.front().line);
        }
        return std::nullopt;
    }

    std::string sanitizer_result::html() const
    {
        std::string line = launch.empty() ? "" : "<p>" + text::html_escape(launch) + ", replayed in a child process</p>";
        return report.html(source) + line;
    }
}
