#pragma once
// The Python text of the launch magics' lines (%cuda_timeit, %cuda_bench, %cuda_profile,
// %cuda_sanitize) read without Python: the call kernel[grid, block](args) split into its callee and
// its arguments, and %cuda_bench's three expressions found among the line's words. Whether a piece of
// text is a Python expression is the caller's to say (a callback: the binding asks Python's compile()).
// Stateless.

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "errors.hpp"
#include "magic_arguments.hpp"

namespace xcuda
{
    class launch_magic_line
    {
    public:
        struct span
        {
            std::size_t begin;
            std::size_t end;
        };
        // Whether text is one Python expression.
        using is_expression = std::function<bool(const std::string&)>;

        // A launch of a line: the callee (kernel[grid, block]) and its arguments written as a tuple
        // ("(a, x, n,)", "()"), to evaluate in the user's namespace.
        struct launch_text
        {
            std::string callee;
            std::string arguments;
        };

        // Splits text at the separators (whitespace, or ',') that stand outside brackets and string literals.
        static std::vector<span> split_top_level(const std::string& text, bool commas);
        // Splits "callee(args)" at the call that ends the expression; false when text does not end in one.
        static bool split_call(const std::string& expression, std::string& callee, std::string& arguments);
        // kernel[grid, block](args...); usage_error (declared's form) when text is not a call.
        static launch_text launch(const magic_arguments& declared, const std::string& text);
        // The usage_error of a callee that evaluated to something other than a Launcher.
        static usage_error not_a_launcher(const magic_arguments& declared, const std::string& callee);
        // kernel, sizes and make_args: split at top-level commas when there are any, else at the one split
        // of the space-separated words where each part is an expression; usage_error otherwise.
        static std::array<std::string, 3> three_expressions(const magic_arguments& declared, const std::string& text,
                                                            const is_expression& compiles);
    };
}
