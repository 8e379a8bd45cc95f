#pragma once
// IPython refuses a cell magic whose body is empty before calling it ("the cell body is empty"), so a
// cell of `%%cuda -h` alone would never reach the magic's help. The module installs a transform among
// the shell's input_transformers_cleanup (they see the cell's lines before IPython turns magics into
// calls) that asks this class: only a %%cuda, %%cuda_header or %%cuda_program line with -h or --help
// and nothing but blank lines below it gets one empty line of body; every other cell passes unchanged.
// Pure text; no state.

#include <string>
#include <vector>

namespace xcuda
{
    class help_transform
    {
    public:
        // Whether the cell's first line is one of xcuda's cell magics asking for help (-h or --help).
        static bool asks_for_help(const std::string& first_line);
        // Whether the cell (its lines, each with its newline) needs a body for its help to show.
        static bool needs_body(const std::vector<std::string>& lines);
        // The lines to give IPython instead: the first line, newline-terminated, and an empty line.
        static std::vector<std::string> with_body(const std::string& first_line);
    };
}
