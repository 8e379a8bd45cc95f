#pragma once
// The option line of %%cuda, parsed in C++ so the magic, its help text and the tests agree.
// IPython has already split the cell into line and body and expanded {variables} in the line;
// this splits the line shell-style and reads the options. Unknown options that start with '-'
// (and everything after a bare "--") pass through to NVRTC as written.

#include <stdexcept>
#include <string>
#include <vector>

#include "nvrtc_compiler.hpp"

namespace xcuda
{
    struct cuda_magic_options
    {
        std::string name;         // --name: bind a module object under this name
        compile_options compile;  // --arch, --std, -D, -I, --lineinfo, --fast-math, pass-through
        bool show_ptx = false;    // --ptx
        bool show_sass = false;   // --sass
        bool help = false;        // -h / --help
    };

    class magic_arguments
    {
    public:
        // Shell-style split: whitespace separates, '...' and "..." quote, backslash escapes.
        static std::vector<std::string> split(const std::string& line);

        // Throws std::invalid_argument naming the bad option and what was expected.
        static cuda_magic_options parse_cuda(const std::string& line);

        // The usage text shown by %%cuda? and %%cuda --help.
        static const std::string& cuda_usage();
    };
}
