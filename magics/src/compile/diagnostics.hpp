#pragma once
// Turns NVRTC's log into messages a notebook user can act on: the log keeps the cell's own line
// numbers (the program is named "cell", never a file path) and a header cell's own name and lines,
// followed by the offending source lines, numbered, and the options that were used. NVRTC's internal
// file for name expressions (__nv_name_map) never shows: its message about an overloaded kernel is
// said in the user's words. The log may hold any text the cell made NVRTC echo (#warning, #error):
// every function here takes any text and throws nothing of its own. Pure text functions: no CUDA, no NVRTC, no Python; what
// they need to know of the compiler (the archs it supports, for a hint) is passed in. The HTML form
// of the messages is a view (views/diagnostics_view).

#include <map>
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
        // headers: the header cells given to NVRTC (name -> text), for the messages located in them.
        static std::vector<diagnostic> parse(const std::string& source, const std::string& log,
                                             const std::vector<int>& supported_archs = {},
                                             const std::map<std::string, std::string>& headers = {});

        // The editor's 1-based column (characters, as UTF-16 units) of a byte offset in a UTF-8 line.
        static int editor_column(const std::string& line, std::size_t byte_offset);

        // The 1-based line of the first main() or <<<...>>> launch of a source (comments skipped), with `what`
        // naming it; 0 when the source has none. A %%cuda cell holding one is a whole program.
        static int whole_program_line(const std::string& source, std::string& what);
        // What to do with such a cell: %%cuda_program, or the kernels alone launched from Python.
        static std::string whole_program_message(const std::string& what);

        // A hint for a message that is one of the known traps, else "".
        static std::string hint_for(const std::string& message, const std::vector<int>& supported_archs = {});

        // The source lines the log names as errors ("cell(3): error: ..."), 1-based, in order, unique;
        // of the header cell `file` instead of the cell when it is given.
        static std::vector<int> error_lines(const std::string& log, const std::string& file = program_name);

        // "NVRTC could not compile the cell:" + log + numbered source lines around each error + options.
        static std::string format_compile_error(const std::string& source, const std::string& log,
                                                const std::vector<std::string>& options,
                                                const std::string& status,
                                                const std::vector<int>& supported_archs = {},
                                                const std::map<std::string, std::string>& headers = {});

        // The log with `lines` added to each "cell(N)" at the start of a line (CompileError.log under a
        // %%cuda line; the messages themselves go through cell_lines::shown).
        static std::string shifted_log(const std::string& log, int lines);

        // Lines first..last of source (clamped), each prefixed with its number; `mark` gets "> ".
        static std::string numbered_lines(const std::string& source, int first, int last,
                                          const std::vector<int>& marks);
    };
}
