#include "kernel_variant.hpp"

#include <algorithm>
#include <set>

namespace xcuda
{
    namespace
    {
        // The macro a definition names: "N=4" -> "N", "DEBUG" -> "DEBUG".
        std::string macro_name(const std::string& definition)
        {
            return definition.substr(0, definition.find('='));
        }

        // When options[i] defines or undefines a macro (-DN=4, -D N=4, --define-macro=N=4, --define-macro N=4,
        // and -U/--undefine-macro alike): its name, and in `width` how many options it takes (1 or 2); else "".
        std::string macro_option(const std::vector<std::string>& options, std::size_t i, std::size_t& width)
        {
            const std::string& o = options[i];
            width = 1;
            for (const std::string flag : {"--define-macro", "--undefine-macro", "-D", "-U"})
            {
                if (o == flag)
                {
                    width = 2;
                    return i + 1 < options.size() ? macro_name(options[i + 1]) : std::string();
                }
                if (flag.size() > 2 && o.rfind(flag + "=", 0) == 0)
                {
                    return macro_name(o.substr(flag.size() + 1));
                }
                if (flag.size() == 2 && o.rfind(flag, 0) == 0)
                {
                    return macro_name(o.substr(2));
                }
            }
            return {};
        }
    }

    compile_options kernel_variant::options(const cuda_module& module, const std::optional<std::string>& arch,
                                            std::optional<bool> fast_math, const std::optional<std::string>& std,
                                            const std::vector<std::string>& defines,
                                            const std::vector<std::string>& extra)
    {
        compile_options o = module.options();
        if (arch)
        {
            o.arch = *arch;
        }
        if (fast_math)
        {
            o.fast_math = *fast_math;
        }
        if (std)
        {
            o.std = *std;
        }
        // A variant's own macro wins over the module's, however either was given (defines=, -D in options,
        // %%cuda -D, a raw -D after --): the module's definitions and undefinitions of that name are left
        // out, since NVRTC takes the last of several and puts the raw options after the defines.
        std::set<std::string> own;
        for (const std::string& define : defines)
        {
            own.insert(macro_name(define));
        }
        for (std::size_t i = 0, width = 1; i < extra.size(); i += width)
        {
            std::string name = macro_option(extra, i, width);
            if (!name.empty())
            {
                own.insert(name);
            }
        }
        std::vector<std::string> kept_defines;
        for (const std::string& define : o.defines)
        {
            if (own.count(macro_name(define)) == 0)
            {
                kept_defines.push_back(define);
            }
        }
        std::vector<std::string> kept_extra;
        for (std::size_t i = 0, width = 1; i < o.extra.size(); i += width)
        {
            std::string name = macro_option(o.extra, i, width);
            if (name.empty() || own.count(name) == 0)
            {
                kept_extra.insert(kept_extra.end(), o.extra.begin() + static_cast<std::ptrdiff_t>(i),
                                  o.extra.begin() + static_cast<std::ptrdiff_t>(std::min(i + width, o.extra.size())));
            }
        }
        o.defines = std::move(kept_defines);
        o.extra = std::move(kept_extra);
        o.defines.insert(o.defines.end(), defines.begin(), defines.end());
        o.extra.insert(o.extra.end(), extra.begin(), extra.end());
        return o;
    }

    std::string kernel_variant::name(const cuda_module& module)
    {
        return module.name() + " [variant]";
    }
}
