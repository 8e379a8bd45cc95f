#include "kernel_variant.hpp"

namespace xcuda
{
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
        o.defines.insert(o.defines.end(), defines.begin(), defines.end());
        o.extra.insert(o.extra.end(), extra.begin(), extra.end());
        return o;
    }

    std::string kernel_variant::name(const cuda_module& module)
    {
        return module.name() + " [variant]";
    }
}
