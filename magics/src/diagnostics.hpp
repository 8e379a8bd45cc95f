#pragma once
// Turns NVRTC's log into messages a notebook user can act on: the log keeps the cell's own line
// numbers (the program is named "cell", never a file path), followed by the offending source lines,
// numbered, and the options that were used. Pure text functions: no CUDA, no Python.

#include <string>
#include <vector>

namespace xcuda
{
    // One message of NVRTC's log, located in the cell.
    struct diagnostic
    {
        int line = 0;          // 1-based line of the cell (0: not located, e.g. an option error)
        int column = 0;        // 1-based column of NVRTC's caret (0: none)
        std::string severity;  // "error", "warning", "remark"
        std::string message;
        std::string source_line;
        std::string hint;      // what to do, for the known traps ("" otherwise)
    };

    class diagnostics
    {
    public:
        // The log's messages with their cell line, caret column, source line and a hint where one is known.
        static std::vector<diagnostic> parse(const std::string& source, const std::string& log);

        // The messages as HTML: each with its source line, a caret under the column, and the hint.
        static std::string html(const std::vector<diagnostic>& messages);

        // A hint for a message that is one of the known traps, else "".
        static std::string hint_for(const std::string& message);

        // The source lines the log names as errors ("cell(3): error: ..."), 1-based, in order, unique.
        static std::vector<int> error_lines(const std::string& log);

        // "NVRTC could not compile the cell:" + log + numbered source lines around each error + options.
        static std::string format_compile_error(const std::string& source, const std::string& log,
                                                const std::vector<std::string>& options,
                                                const std::string& status);

        // Lines first..last of source (clamped), each prefixed with its number; `mark` gets "> ".
        static std::string numbered_lines(const std::string& source, int first, int last,
                                          const std::vector<int>& marks);
    };
}
