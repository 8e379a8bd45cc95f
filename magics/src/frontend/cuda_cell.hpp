#pragma once
// What a %%cuda cell does around its build, decided without Python: the checks before it (an empty
// cell, a --name that IPython needs), the cell's name in messages, what a failed compile shows (its
// messages with the editor's line numbers, the %%cuda line being line 1, and the one-line summary
// the CompileError carries), and what a built module makes the cell say: a note about NVRTC and the
// driver (once per process), that there is nothing to launch, NVRTC's warnings located in the cell
// (shown as the errors are) or the rest of its log (for stderr). xcuda/magics.py (through py_magics.cpp)
// displays, warns, binds the kernels in the user's namespace and prints; it decides none of this.
//
// Stateless but for the once-per-process driver note; called on the thread that holds the session
// (the GIL in the module).

#include <set>
#include <string>
#include <vector>

#include "cell_lines.hpp"
#include "cuda_cell_arguments.hpp"
#include "diagnostic.hpp"
#include "errors.hpp"

namespace xcuda
{
    class cuda_module;

    class cuda_cell
    {
    public:
        // Where the cell's source sits in the editor, as every message and view counts its lines: In[N]
        // (execution_count; 0 when not known), the %%cuda line above it, the session's header cells.
        static cell_lines lines_of(int execution_count, std::set<std::string> header_cells);

        // Throws usage_error for a blank cell, with an example of what to write.
        static void check_source(const std::string& cell);
        // Whether a name is the shell's own (IPython's get_ipython, exit, In, Out, _, _i, ... and any
        // dunder): binding a module or kernel there breaks every later cell. The binding also asks the
        // shell's user_ns_hidden.
        static bool reserved_name(const std::string& name);
        // The usage_error message for a --name that is reserved.
        static std::string reserved_name_problem(const std::string& name);
        // The warning for a kernel or module (what) that is not bound because its name is reserved, and
        // for one that replaces a variable of another type (type: its Python type name).
        static std::string unbound_warning(const char* what, const std::string& name);
        static std::string replaces_warning(const char* what, const std::string& name, const std::string& type);

        // --sass without a disassembler (why: ToolNotFoundError's message): the cell still succeeds.
        static std::string sass_unavailable_warning(const std::string& why);

        // A compile that failed: what to show and what the CompileError says.
        struct failure
        {
            std::vector<diagnostic> shown;  // with the editor's line numbers
            std::string summary;            // the exception's one-line message
        };
        static failure failed(const compile_error& error, const cell_lines& lines);

        // A module that was built: what the cell says, in this order (the binding binds the kernels
        // after the warnings and shows the diagnostics or the log after its resources line).
        struct outcome
        {
            std::vector<std::string> warnings;  // UserWarnings
            bool show_diagnostics = false;      // NVRTC warnings located in the cell: display `shown`
            std::vector<diagnostic> shown;
            std::string log;                    // else, for stderr ("" when there is nothing to say)
        };
        // driver_note: nvrtc_library::driver_note() (said once per process while it is not "").
        static outcome built(const cuda_module& module, const std::string& cell, const std::string& driver_note,
                             const cell_lines& lines);
    };
}
