#include "cuda_cell.hpp"

#include <algorithm>

#include "cuda_module.hpp"
#include "diagnostics.hpp"
#include "diagnostics_view.hpp"
#include "text.hpp"

namespace xcuda
{
    cell_lines cuda_cell::lines_of(int execution_count, std::set<std::string> header_cells)
    {
        return cell_lines::cell(execution_count, std::move(header_cells));
    }

    void cuda_cell::check_source(const std::string& cell)
    {
        if (text::blank(cell))
        {
            throw usage_error("%%cuda: the cell is empty: write CUDA C++ below the %%cuda line, for example\n"
                              "%%cuda\nextern \"C\" __global__ void scale(float* x, float a, size_t n)\n"
                              "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }");
        }
    }

    bool cuda_cell::reserved_name(const std::string& name)
    {
        if (name.size() > 4 && name.compare(0, 2, "__") == 0 && name.compare(name.size() - 2, 2, "__") == 0)
        {
            return true;
        }
        static const char* known[] = {"get_ipython", "exit", "quit", "In", "Out", "_", "__", "___", "_i", "_ii",
                                      "_iii", "_ih", "_oh", "_dh", "display"};
        return std::any_of(std::begin(known), std::end(known), [&](const char* reserved) { return name == reserved; });
    }

    std::string cuda_cell::reserved_name_problem(const std::string& name)
    {
        return "%%cuda --name " + name + ": the name is IPython's own (binding a module there breaks later cells); "
               "choose another name (see %%cuda -h)";
    }

    std::string cuda_cell::unbound_warning(const char* what, const std::string& name)
    {
        return std::string("%%cuda: ") + what + " '" + name + "' is not bound to the name " + name +
               ", which IPython needs; choose another with %%cuda --name NAME (then NAME." + name + " or NAME['" + name +
               "'])";
    }

    std::string cuda_cell::replaces_warning(const char* what, const std::string& name, const std::string& type)
    {
        return std::string("%%cuda: ") + what + " '" + name + "' replaces the variable " + name + " (" + type +
               "); to keep it, bind the cell's kernels under another name with %%cuda --name NAME";
    }

    std::string cuda_cell::sass_unavailable_warning(const std::string& why)
    {
        return "%%cuda --sass: the cell compiled and its kernels are bound, but its SASS cannot be shown: " +
               why.substr(0, why.find('\n'));
    }

    cuda_cell::failure cuda_cell::failed(const compile_error& error, const cell_lines& lines)
    {
        // Shown once: the messages (where, what, the line with a caret, a hint), then a one-line
        // CompileError without IPython's frames.
        failure f;
        f.shown = lines.shown(error.parsed());
        f.summary = diagnostics_view::summary(f.shown, lines.label());
        return f;
    }

    cuda_cell::outcome cuda_cell::built(const cuda_module& module, const std::string& cell, const std::string& driver_note,
                                        const cell_lines& lines)
    {
        outcome o;
        static bool driver_note_shown = false;
        if (!driver_note_shown && !driver_note.empty())
        {
            // Said once, at the first cell, before any launch fails on it.
            driver_note_shown = true;
            o.warnings.push_back("%%cuda: " + driver_note);
        }
        if (module.signatures().empty())
        {
            // Device functions and types alone compile, but leave nothing to launch or include.
            o.warnings.push_back("%%cuda: the cell defines no __global__ function, so there is nothing to launch. For "
                                 "__device__ functions, types and constants that other cells use, make it a header "
                                 "cell: %%cuda_header NAME, then #include \"NAME\" in the %%cuda cells.");
        }
        const std::string& log = module.compiled().log;
        if (log.find("warning") != std::string::npos)
        {
            // The warnings located in the cell are shown as the errors are (HTML, text, and the messages as
            // data for the JupyterLab extension to mark), the cell still succeeding; the others as the log.
            o.shown = lines.shown(diagnostics::parse(cell, log));
            o.show_diagnostics = std::any_of(o.shown.begin(), o.shown.end(), [](const diagnostic& d) {
                return d.line > 0 && d.severity == "warning";
            });
            if (!o.show_diagnostics)
            {
                o.log = "NVRTC warnings:\n" + log + "\n";
            }
        }
        return o;
    }
}
