#pragma once
// Everything a compile of one cell needs, as one value: the source, the options (arch, -D, -I, the
// standard, raw NVRTC options, the name expressions that find its kernels) and the header cells it
// includes (by name, with their text as the cell compiled with them).
//
// A module keeps the recipe of its first compile, and every later compile of the same cell starts from
// it with only the options changed (with_options): the inspection compile (sm_XX, line information),
// another device's arch, the CUBIN fallback, a replay's binary, a variant (-D), the recipe %cuda_recover
// rebuilds a module from. So each of them sees the same header cells as the first, even after a header
// cell was changed (the module is then marked stale, and stays what it was). As CuPy's RawModule keeps
// its whole compile recipe in one object.
//
// What it does not hold: files reached through -I folders (NVRTC reads them at each compile).

#include <map>
#include <string>

#include "nvrtc_compiler.hpp"

namespace xcuda
{
    struct compile_recipe
    {
        std::string source;
        compile_options options;
        std::map<std::string, std::string> headers;  // header cell name -> text

        // The same cell with other options.
        compile_recipe with_options(compile_options changed) const
        {
            compile_recipe copy{source, std::move(changed), headers};
            return copy;
        }
    };
}
