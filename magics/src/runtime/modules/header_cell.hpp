#pragma once
// A %%cuda_header NAME cell: the cell's text kept in the module registry for later cells'
// #include "NAME"; the modules compiled with an older text of it become stale (module_registry).
// xcuda/magics.py only prints what run() returns; py_magics.cpp turns usage_error into IPython's UsageError.
// Same threading rule as module_registry: the thread that holds the session (the GIL in the module).

#include <string>

#include "magic_arguments.hpp"

namespace xcuda
{
    class module_registry;

    class header_cell
    {
    public:
        // The option line's parser: -h and one word, the header's name.
        static const magic_arguments& arguments();

        // Keeps the header; returns the line the cell prints (the usage on -h). Throws usage_error
        // for a line without exactly one name.
        static std::string run(module_registry& registry, const std::string& line, const std::string& cell);
    };
}
