#include "header_cell.hpp"

#include "errors.hpp"
#include "cuda_module.hpp"
#include "module_registry.hpp"

namespace xcuda
{
    const magic_arguments& header_cell::arguments()
    {
        static const magic_arguments declared = [] {
            magic_arguments a("%%cuda_header", "NAME",
                              "Keep the cell as a header named NAME for later %%cuda cells' #include \"NAME\".\n"
                              "The compile cache key includes header texts; changing a header marks the modules\n"
                              "built with the old text stale (%cuda_status shows them; launching one warns)\n"
                              "until their cells run again.");
            a.trailing_as(magic_arguments::trailing::words);
            return a;
        }();
        return declared;
    }

    std::string header_cell::run(module_registry& registry, const std::string& line, const std::string& cell)
    {
        const magic_arguments& declared = arguments();
        magic_arguments::parsed p = declared.parse(line);
        if (p.help)
        {
            return declared.usage();
        }
        if (p.words.size() != 1 || p.words[0].empty())
        {
            throw usage_error(declared.problem("takes one header name, e.g. %%cuda_header vec.cuh; later %%cuda cells "
                                               "use it with #include \"vec.cuh\""));
        }
        const std::string& name = p.words[0];
        std::string stale;
        for (const auto& module : registry.set_header(name, cell, true))
        {
            stale += (stale.empty() ? "" : ", ") + module->name();
        }
        std::string message = "header " + name + " kept for #include \"" + name + "\"";
        if (!stale.empty())
        {
            message += "; stale until their cells run again: " + stale;
        }
        return message;
    }
}
