#pragma once
// The option line of %%cuda: its declaration for the one magic-argument parser (base/magic_arguments),
// and the reading of the parsed options into compile_options. Unknown options pass to NVRTC when they
// are NVRTC 13 options by name (-maxrregcount=32, --ftz=true); anything after a bare "--" passes as
// written; any other word starting with '-' is refused (with a did-you-mean for our own options).

#include <string>

#include "magic_arguments.hpp"
#include "nvrtc_compiler.hpp"

namespace xcuda
{
    struct cuda_cell_options
    {
        std::string name;         // --name: bind a module object under this name
        compile_options compile;  // --arch, --std, -D, -I, --lineinfo, --fast-math, NVRTC's own options
        bool show_ptx = false;    // --ptx
        bool show_sass = false;   // --sass
        bool help = false;        // -h / --help
    };

    class cuda_cell_arguments
    {
    public:
        // Throws usage_error naming the bad option and what was expected, ending with "(see %%cuda -h)".
        static cuda_cell_options parse(const std::string& line);
        // The usage text of %%cuda? and %%cuda -h.
        static const std::string& usage();
        // Whether word ("-maxrregcount=32", "--ftz=true") is one of NVRTC 13's options by name.
        static bool is_nvrtc_option(const std::string& word);
        static const magic_arguments& declaration();
    };
}
