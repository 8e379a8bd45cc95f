#pragma once
// The build of one cell up to its binary: reading its kernel signatures as the compiler will see them
// (the header cells, the -I folders, the -D macros), the name expressions that find its non-extern "C"
// kernels and the instances --instantiate asks for, the compile cache's key, and the compile through the
// caches (compiler). What the runtime then does with the binary (a module, installed as the cell's
// current one) is module_registry's.
//
// Threading: thread-safe (a mutex guards the parse cache); holds no Python state, so callers release
// the GIL around it.

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compile_recipe.hpp"
#include "compiler.hpp"
#include "errors.hpp"
#include "kernel_signature.hpp"

namespace xcuda
{
    // A cell ready to compile.
    // What the signature reader must be told of a recipe to see what NVRTC sees (headers, -I, -D/-U, the
    // target, the standard, the math options); nvrtc_version {0, 0} when unknown. The one place both the
    // cell's build and a module's variables (cuda_module::variables) make it.
    parse_context parse_context_of(const compile_recipe& recipe, std::pair<int, int> nvrtc_version);

    struct cell_plan
    {
        compile_recipe recipe;                     // its options with every name expression its kernels need
        std::vector<kernel_signature> signatures;  // its kernels, and the instances asked for
        std::optional<signature_error> unreadable; // a declaration the reader could not read
        std::string cache_key;                     // the compile cache's key of the recipe
        std::string module_name;                   // the --name, else its kernels' names joined by '+'
    };

    class cell_builder
    {
    public:
        explicit cell_builder(class compiler& compiler);
        cell_builder(const cell_builder&) = delete;
        cell_builder& operator=(const cell_builder&) = delete;

        // Reads the cell's signatures (the last few parses are remembered: an unchanged large cell skips
        // the reader) and completes its recipe. Throws usage_error for an --instantiate that names no
        // template kernel. A declaration the reader cannot read is kept in `unreadable`, reported only if
        // NVRTC accepts the source (when the source is wrong, NVRTC's message is the better one).
        cell_plan prepare(const std::string& name, compile_recipe recipe);
        // Compiles through the caches, with a layout_probe appended when a kernel takes a struct, whose
        // values check (and complete) the plan's signatures; throws compile_error, nvrtc_error, or the
        // plan's signature_error after a compile that succeeded.
        compiler::output compile(cell_plan& plan);

    private:
        struct parse_result
        {
            std::string key;
            std::vector<kernel_signature> signatures;
            std::optional<signature_error> unreadable;
        };

        class compiler& m_compiler;
        std::mutex m_mutex;
        std::deque<parse_result> m_parses;
    };
}
