#pragma once
// The teaching views of a compiled kernel: its own PTX and SASS, the source-to-PTX/SASS line view and
// side-by-side comparisons of two compiles, as HTML and text (code_view renders them).
//
// Views are built from the module's inspection compile (sm_XX, line information, ptxas report), so
// they work without a GPU; SASS also needs nvdisasm or cuobjdump from the toolkit. Stateless.
// Threading: any thread (the module locks its own compiles); the disassembly, the one long wait, runs
// inside `unlocked`, through which the binding releases the GIL.

#include <functional>
#include <map>
#include <string>

#include "code_listing.hpp"
#include "cuda_kernel.hpp"
#include "cuda_module.hpp"

namespace xcuda
{
    // A view with both renderings; a notebook shows the HTML, a terminal the text.
    struct text_view
    {
        std::string html;
        std::string text;
    };

    class kernel_views
    {
    public:
        // Runs work with the caller's locks released (the binding: without the GIL); default: as is.
        using unlocked = std::function<void(const std::function<void()>&)>;

        // The lines of a listing joined, each ending in a newline.
        static std::string join(const code_listing& listing);
        // The kernel's own .entry, or the module's whole PTX when it cannot be told apart.
        static std::string kernel_ptx(const cuda_kernel& kernel);
        // The whole module's PTX with line information (its inspection compile), each run of instructions
        // under a comment with its source line, numbered as the editor does: what %%cuda --ptx shows.
        static std::string module_ptx_by_line(cuda_module& module);
        // The whole module's SASS (its inspection CUBIN disassembled).
        static std::string module_sass(cuda_module& module, const unlocked& without_lock = {});
        // The kernel's own PTX or SASS lines; tool_error when the kernel is not in the module's listing.
        static code_listing kernel_listing(cuda_kernel& kernel, bool sass, const unlocked& without_lock = {});
        // source <-> PTX/SASS; with notes (a profile's per-line figures) shown on the source lines.
        static text_view lines(cuda_kernel& kernel, bool sass, const std::map<int, std::pair<std::string, double>>& notes,
                               const unlocked& without_lock = {});
        static text_view compare(cuda_kernel& left, cuda_kernel& right, bool sass, const unlocked& without_lock = {});
        // "sm_90, --use_fast_math, -DN=4": what a comparison's title says of each compile.
        static std::string describe(const cuda_module& module);
    };
}
