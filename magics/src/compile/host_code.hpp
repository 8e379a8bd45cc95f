// Host functions beside the kernels, as a .cu file holds them (an error-check helper, a validation routine,
// a random-number filler), and host variables (llm.c's `cublasHandle_t cublas_handle;`): nvcc compiles them
// for the host, NVRTC refuses each ("host functions/variables are not allowed in JIT mode"). A cell takes
// what nvcc takes from the same file, so the compiler sets them aside and compiles the rest: set_aside
// blanks each one named by NVRTC's refusal, from the end of the declaration before it to its closing brace
// (or semicolon), keeping every newline and every preprocessor line, so lines and columns of everything
// else are unchanged.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace xcuda
{
    struct set_aside_code
    {
        std::string source;                               // the cell with those functions blanked
        std::vector<std::pair<std::string, int>> functions;  // (name, 1-based line) of each one set aside
    };

    class host_code
    {
    public:
        // positions: (line, column), 1-based, of each refused function's name in `source` (NVRTC's caret).
        // A position that is not at an identifier, or whose function cannot be delimited (unbalanced
        // parentheses or braces), is skipped: NVRTC's refusal then stands.
        // main() stays (a cell holding one is a whole program, refused as such) unless main_too: a header's
        // main is set aside like any host function.
        static set_aside_code set_aside(const std::string& source, const std::vector<std::pair<int, int>>& positions,
                                        bool main_too = false);

        // Which characters are code: not in a comment, a string or character literal, or a preprocessor line.
        static std::vector<bool> code_mask(const std::string& source);
    };
}
