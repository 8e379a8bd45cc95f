#pragma once
// One message of a compiler's log, located in the source the user wrote. Plain data: the compile
// layer fills it (diagnostics::parse), compile_error carries it, the views and Python show it.

#include <string>

namespace xcuda
{
    struct diagnostic
    {
        std::string file;      // "" for the cell, else the header cell (or -I header) the message is in
        int line = 0;          // 1-based line in that file (0: not located, e.g. an option error)
        int column = 0;        // 1-based column of NVRTC's caret (0: none)
        std::string severity;  // "error", "warning", "remark"
        std::string message;
        std::string source_line;
        std::string hint;      // what to do, for the known traps ("" otherwise)
    };
}
