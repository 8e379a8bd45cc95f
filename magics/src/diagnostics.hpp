#pragma once
// Turns NVRTC's log into messages a notebook user can act on: the log keeps the cell's own line
// numbers (the program is named "cell", never a file path), followed by the offending source lines,
// numbered, and the options that were used. Pure text functions: no CUDA, no Python.

#include <string>
#include <vector>

namespace xcuda
{
    class diagnostics
    {
    public:
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
