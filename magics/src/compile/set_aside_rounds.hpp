// The state of setting host code aside over the compiles of one cell (nvrtc_compiler::compile): the cell's
// text and its user headers' (user_headers) as they stand after each round, the warnings said so far and the
// names set aside. One per compile, on its thread.
#pragma once

#include <string>
#include <vector>

#include "diagnostic.hpp"
#include "user_headers.hpp"

namespace xcuda
{
    struct set_aside_rounds
    {
        static constexpr int max_rounds = 16;

        std::string cell;
        user_headers headers;
        std::string warnings;
        std::vector<std::string> names;

        // Sets aside what the log's refusals ("host functions/variables are not allowed in JIT mode") name, in
        // the cell and in the user's headers; false when nothing new was set aside.
        bool set_aside(const std::vector<diagnostic>& log);

        // The errors of `log` that name code set aside in an earlier round ("identifier "fopen_check" is
        // undefined"): a kernel's use, unless the error itself lies in code set aside later.
        std::vector<diagnostic> mentioning_set_aside(const std::vector<diagnostic>& log) const;

        // Whether each of these errors now lies in code set aside (blank at its line and column).
        bool all_blanked(const std::vector<diagnostic>& errors) const;

    private:
        const std::string* text_of(const std::string& file) const;
    };
}
