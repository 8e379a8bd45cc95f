#include "cell_build.hpp"

#include "compiler.hpp"
#include "cuda_module.hpp"
#include "cuda_session.hpp"
#include "module_registry.hpp"

namespace xcuda
{
    std::shared_ptr<cuda_module> cell_build::build(module_registry& registry, cuda_session& session,
                                                   const std::string& source, const std::string& name,
                                                   compile_options options,
                                                   const std::map<std::string, std::string>* headers,
                                                   const unlocked_call& unlocked, const warning_sink& warn)
    {
        if (options.arch.empty())
        {
            // The default needs the session (the GPU's sm_XX); picked before the unlocked part.
            options.arch = session.default_arch();
        }
        // The disk cache's folder failed the private-files rule: said once per process.
        static bool warned = false;
        const std::string& problem = registry.compiler().disk().trust_problem();
        if (!warned && !problem.empty())
        {
            warned = true;
            warn("xcuda: " + problem);
        }
        build_result built;
        unlocked([&] {
            compile_recipe recipe{source, std::move(options), headers ? *headers : registry.headers_for(source)};
            built = registry.build(name, std::move(recipe));
        });
        if (session.active() && session.can_run(built.module->compiled().arch))
        {
            // A module compiled for another GPU (--arch sm_80 on an sm_90, to inspect it) stays unloaded
            // until a launch.
            built.module->ensure_loaded();
        }
        return built.module;
    }
}
