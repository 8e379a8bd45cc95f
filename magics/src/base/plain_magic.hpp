#pragma once
// The line magics that take no options but -h (%cuda_info, %cuda_status, %cuda_recover): their
// parsers, made once per magic, so that -h shows the same usage as every other magic and anything else
// on the line is a one-line usage error. The descriptions of the two the core reports for are here;
// %cuda_recover's comes from its Python docstring. Not thread-safe: the magics run on the shell's thread.

#include <string>

#include "magic_arguments.hpp"

namespace xcuda
{
    class plain_magic
    {
    public:
        static const char* const info_description;    // %cuda_info
        static const char* const status_description;  // %cuda_status

        // The parser of `magic`, made with `description` at the first call; later calls return it.
        static const magic_arguments& arguments(const std::string& magic, const std::string& description);
    };
}
