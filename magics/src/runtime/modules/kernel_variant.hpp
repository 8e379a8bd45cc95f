#pragma once
// What Kernel.variant compiles: the module's own recipe with the options asked for changed (arch,
// fast_math, std replaced when given; defines and raw NVRTC options added, a variant's macro replacing the
// module's of the same name however either was given), under the module's name
// marked " [variant]". The module's header cells stay its own, so the variant differs in the options
// only. Stateless; the compile itself is the caller's.

#include <optional>
#include <string>
#include <vector>

#include "cuda_module.hpp"
#include "nvrtc_compiler.hpp"

namespace xcuda
{
    class kernel_variant
    {
    public:
        static compile_options options(const cuda_module& module, const std::optional<std::string>& arch,
                                       std::optional<bool> fast_math, const std::optional<std::string>& std,
                                       const std::vector<std::string>& defines, const std::vector<std::string>& extra);
        static std::string name(const cuda_module& module);
    };
}
