#pragma once
// SASS from a CUBIN, through the toolkit's nvdisasm (with line information) or, failing that,
// cuobjdump -sass (without). Runs the tool as a child process on a private temporary file.
// No driver and no GPU needed; no Python state (callers may release the GIL).

#include <string>

namespace xcuda
{
    class disassembler
    {
    public:
        // The SASS text (file names in its line information without their folders); throws
        // tool_not_found_error naming the missing tools and how to get them, or std::runtime_error with the
        // tool's own message when it fails.
        static std::string disassemble(const std::string& cubin, bool line_info = true);
        // The SASS text with the folders of the file names in its line information dropped ("cell").
        static std::string without_build_paths(const std::string& sass);

        // The path of the first tool found ("" when none): nvdisasm, else cuobjdump.
        static std::string tool();

    private:
        static std::string find(const std::string& name);
    };
}
