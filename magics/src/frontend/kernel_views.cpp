#include "kernel_views.hpp"

#include "code_view.hpp"
#include "disassembler.hpp"
#include "errors.hpp"

namespace xcuda
{
    std::string kernel_views::join(const code_listing& listing)
    {
        std::string text;
        for (const auto& line : listing)
        {
            text += line.text + "\n";
        }
        return text;
    }

    std::string kernel_views::kernel_ptx(const cuda_kernel& kernel)
    {
        const std::string& ptx = kernel.module()->compiled().ptx;
        code_listing own = code_listing::from_ptx(ptx).only(kernel.symbol());
        return own.empty() ? ptx : join(own);
    }

    std::string kernel_views::module_ptx_by_line(cuda_module& module)
    {
        return code_view::annotated_ptx(module.inspection()->ptx, module.source(), module.lines());
    }

    std::string kernel_views::module_sass(cuda_module& module, const unlocked& without_lock)
    {
        std::shared_ptr<const compile_result> compiled = module.inspection();
        std::string cubin = compiled->cubin;
        std::string sass;
        auto work = [&] { sass = disassembler::disassemble(cubin, true); };
        if (without_lock)
        {
            without_lock(work);
        }
        else
        {
            work();
        }
        return sass;
    }

    namespace
    {
        // The header cell of the module's recipe that defines the kernel, or "" for the cell's own (or an
        // -I file's) kernel: its instructions carry the line information of that file, not the cell's.
        std::string defining_header(const cuda_kernel& kernel)
        {
            const std::string& file = kernel.signature().file;
            return !file.empty() && kernel.module()->headers().count(file) != 0 ? file : std::string();
        }
    }

    code_listing kernel_views::kernel_listing(cuda_kernel& kernel, bool sass, const unlocked& without_lock)
    {
        cuda_module& module = *kernel.module();
        std::string header = defining_header(kernel);
        std::string file = header.empty() ? std::string("cell") : header;
        code_listing all = sass ? code_listing::from_sass(module_sass(module, without_lock), file)
                                : code_listing::from_ptx(module.inspection()->ptx, file);
        code_listing own = all.only(kernel.symbol());
        if (own.empty())
        {
            throw tool_error("kernel '" + kernel.signature().name + "' (" + kernel.symbol() +
                             ") was not found in the module's " + (sass ? "SASS" : "PTX"));
        }
        return own;
    }

    text_view kernel_views::lines(cuda_kernel& kernel, bool sass, const std::map<int, std::pair<std::string, double>>& notes,
                                  const unlocked& without_lock)
    {
        code_listing own = kernel_listing(kernel, sass, without_lock);
        std::string header = defining_header(kernel);
        cell_lines where = kernel.module()->lines();
        const std::string& source = header.empty() ? kernel.module()->source() : kernel.module()->headers().at(header);
        std::string title = kernel.signature().name + ": " + (sass ? "SASS" : "PTX") + " by source line (" +
                            kernel.module()->inspection()->arch + (header.empty() ? "" : ", header cell " + header) + ")";
        if (!notes.empty())
        {
            title += ", with the profile's figures per line";
        }
        if (!header.empty())
        {
            // A kernel of a header cell: that cell's lines, numbered as its editor counts them.
            where = cell_lines::header_cell(header, where.locate(header, 1).line == 2);
        }
        return {code_view::side_by_side_html(source, own, title, notes, where),
                code_view::grouped_text(source, own, notes, where)};
    }

    text_view kernel_views::compare(cuda_kernel& left, cuda_kernel& right, bool sass, const unlocked& without_lock)
    {
        code_listing a = kernel_listing(left, sass, without_lock);
        code_listing b = kernel_listing(right, sass, without_lock);
        std::string left_title = left.signature().name + " [" + describe(*left.module()) + "]";
        std::string right_title = right.signature().name + " [" + describe(*right.module()) + "]";
        return {code_view::compare_html(left_title, a, right_title, b), code_view::compare_text(left_title, a, right_title, b)};
    }

    std::string kernel_views::describe(const cuda_module& module)
    {
        std::string text = module.compiled().arch;
        if (module.options().fast_math)
        {
            text += ", --use_fast_math";
        }
        for (const auto& option : module.options().extra)
        {
            text += ", " + option;
        }
        for (const auto& define : module.options().defines)
        {
            text += ", -D" + define;
        }
        return text;
    }
}
