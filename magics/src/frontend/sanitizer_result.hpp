#pragma once
// What Launcher.sanitize returns (xcuda.SanitizerReport): compute-sanitizer's report of one launch,
// with the cell's source for the findings' lines. Plain data; no lock: built by one thread, then read.

#include <optional>
#include <string>

#include "sanitizer_report.hpp"

namespace xcuda
{
    // The choices of one sanitizer run (Launcher.sanitize's keywords).
    struct sanitize_options
    {
        std::string tool = "memcheck";
        bool keep = false;

        // argument_type_error (a TypeError) unless keyword is tool or keep; takes: what the call takes, in words.
        static void check_keyword(const std::string& keyword, const std::string& takes);
    };

    class sanitizer_result
    {
    public:
        sanitizer_report report;
        std::string source;
        std::string output;  // compute-sanitizer's whole output
        int status = 0;      // its exit status (the replay's: 3 when the launch failed)
        std::string launch;  // "saxpy[grid=..., block=...] on device 0, 3 buffers (201 MB)"
        std::string folder;

        // A report from recorded compute-sanitizer output (SanitizerReport.from_output).
        static sanitizer_result from_output(const std::string& output, const std::string& tool,
                                            const std::string& source, const std::string& cell_file);

        // The first location's kernel and its line of the cell as the editor counts it (none when the line is
        // not the cell's), of a finding.
        static std::optional<std::string> kernel_of(const sanitizer_finding& finding);
        std::optional<int> cell_line_of(const sanitizer_finding& finding) const;

        std::string html() const;
        std::string text() const { return report.text(source); }
    };
}
