#pragma once
// Turns NVRTC's log into messages a notebook user can act on: the log keeps the cell's own line
// numbers (the program is named "cell", never a file path), followed by the offending source lines,
// numbered, and the options that were used. Pure text functions: no CUDA, no NVRTC, no Python; what
// they need to know of the compiler (the archs it supports, for a hint) is passed in. The HTML form
// of the messages is a view (views/diagnostics_view).

#include <string>
#include <vector>

#include "diagnostic.hpp"

namespace xcuda
{
    class diagnostics
    {
    public:
        // The name the compiler gives the cell in its messages ("cell(3): error: ..."), never a path.
        static constexpr const char* program_name = "cell";

        // The log's messages with their cell line, caret column, source line and a hint where one is known.
        // supported_archs: the compiler's targets (for the hint on an unsupported --arch).
        static std::vector<diagnostic> parse(const std::string& source, const std::string& log,
                                             const std::vector<int>& supported_archs = {});

        // A hint for a message that is one of the known traps, else "".
        static std::string hint_for(const std::string& message, const std::vector<int>& supported_archs = {});

        // The source lines the log names as errors ("cell(3): error: ..."), 1-based, in order, unique.
        static std::vector<int> error_lines(const std::string& log);

        // "NVRTC could not compile the cell:" + log + numbered source lines around each error + options.
        static std::string format_compile_error(const std::string& source, const std::string& log,
                                                const std::vector<std::string>& options,
                                                const std::string& status,
                                                const std::vector<int>& supported_archs = {});

        // The messages with `lines` added to each located line (a cell shown under a %%cuda line: +1).
        static std::vector<diagnostic> shifted(std::vector<diagnostic> messages, int lines);
        // The log with `lines` added to each "cell(N)" at the start of a line.
        static std::string shifted_log(const std::string& log, int lines);

        // Lines first..last of source (clamped), each prefixed with its number; `mark` gets "> ".
        static std::string numbered_lines(const std::string& source, int first, int last,
                                          const std::vector<int>& marks);
    };
}
