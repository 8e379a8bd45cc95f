#pragma once
// compute-sanitizer's text report read into findings, each with its kernel, its source lines and the
// thread and block that hit it, for %cuda_sanitize to show against the cell's own lines.
//
// The format, as compute-sanitizer 2025.3 writes it (tests/fixtures/sanitizer/ has real ones):
//   ========= COMPUTE-SANITIZER
//   ========= Invalid __global__ write of size 4 bytes              a finding starts: "=== " + text
//   =========     at oob_write+0xc0 in cell:18                      its lines: "===     " + text
//   =========     by thread (232,0,0) in block (3,0,0)
//   =========     Access to 0x7f76fa800fa0 is out of bounds
//   =========                                                       a bare prefix ends it
//   ========= Error: Race reported between Write access at shared_race+0xa0 in cell:24
//   =========     and Read access at shared_race+0xb0 in cell:25 [640 hazards]
//   ========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "..." on CUDA API call to X.
//   ========= ERROR SUMMARY: 2 errors    /  RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
// Lines without the prefix are the program's own output (a kernel's printf, xcuda-replay's messages).
// Locations are "FUNCTION+0xOFFSET in FILE:LINE", or without " in FILE:LINE" when the code has no
// line information; paths are file names (--strip-paths, the default).
//
// Pure C++ over text; no state; never throws.

#include <optional>
#include <string>
#include <vector>

#include "cell_lines.hpp"

namespace xcuda
{
    struct sanitizer_location
    {
        std::string function;  // as the sanitizer names it (demangled for C++ kernels)
        std::string offset;    // "0xc0"
        std::string file;      // "cell", or a header's name; "" without line information
        int line = 0;
        std::string access;    // racecheck: "Write", "Read"
        std::string thread;    // racecheck hazards: "(32,0,0)"
        long long hazards = 0; // racecheck: "[640 hazards]"
    };

    struct sanitizer_finding
    {
        std::string title;   // the first line, "Error: " dropped
        std::string kind;    // "memory access", "race", "uninitialized", "synchronization", "api", "leak", "other"
        std::vector<sanitizer_location> locations;
        std::string thread;  // "(232,0,0)" when reported
        std::string block;   // "(3,0,0)"
        std::vector<std::string> details;  // the lines that are neither a location nor thread/block
    };

    class sanitizer_report
    {
    public:
        std::string tool;  // memcheck, racecheck, initcheck, synccheck
        std::vector<sanitizer_finding> findings;
        std::optional<long long> errors;    // from the summary line
        std::optional<long long> warnings;  // racecheck's summary
        std::string summary;                // the summary line as written
        long long leaked_bytes = 0;         // --leak-check full: the LEAK SUMMARY's bytes
        std::string program_output;         // lines that are not the sanitizer's

        std::string cell_file = "cell";     // the file whose lines are the cell's
        cell_lines lines;                   // how the editor numbers the cell's lines (what the text shows)

        // cell_file: the name the cell's lines carry (NVRTC's program name, "cell").
        static sanitizer_report parse(const std::string& output, const std::string& tool,
                                      const std::string& cell_file = "cell");

        // Findings about the kernel's own code (not the API errors that follow a fault).
        std::size_t kernel_findings() const;
        bool clean() const;

        // The findings as text and as HTML: each with its kernel, thread and block, and every
        // location in the cell (file cell_file) shown with the source line's text; the first 20
        // findings, then how many more.
        std::string text(const std::string& source) const;
        std::string html(const std::string& source) const;
    };
}
