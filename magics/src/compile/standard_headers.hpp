#pragma once
// Stand-ins for the C and C++ standard headers that NVRTC lacks (<cstdint>, <cmath>, <cfloat>,
// <limits>, <algorithm>, ... and <cuda.h>'s device-side types), so that kernels written for nvcc
// compile in a cell with no flags. Most map a standard header to CCCL's <cuda/std/...> (found on the
// toolkit include path nvrtc_compiler adds) with std:: naming cuda::std; the rest (float.h's macros,
// M_PI, <algorithm>'s min/max, cuda.h's CUtensorMap) are written out; host-only library headers
// (<iostream>, <vector>, ...) are stand-ins that stop with an #error saying why. The texts live in
// standard_headers/ and are compiled into the library (CMakeLists.txt generates the table).
//
// A stand-in never hides a real header: it is given to NVRTC only when no header cell and no
// include folder of the compile (-I, --include-path) has a header of that name. The table is
// immutable; all functions are thread-safe.

#include <map>
#include <string>
#include <vector>

#include "include_folders.hpp"

namespace xcuda
{
    struct standard_header
    {
        const char* name;  // as included: "cstdint", "math.h"
        const char* text;
    };

    class standard_headers
    {
    public:
        static const std::vector<standard_header>& all();

        // The stand-ins one compile gets: all() less those a header cell or one of the compile's include
        // folders has (include_dirs and -I/--include-path in the raw options: include_folders). It takes the
        // folders, not nvrtc_compiler's compile_options, so that nvrtc_compiler, which asks it, is not
        // included back.
        static std::map<std::string, std::string> for_compile(const std::vector<std::string>& folders,
                                                              const std::map<std::string, std::string>& header_cells);

        // A digest of every stand-in's name and text: part of every compile cache key, since a changed
        // stand-in changes the binary of a cell that includes it.
        static const std::string& digest();
        static std::string digest_of(const std::vector<standard_header>& headers);
    };
}
