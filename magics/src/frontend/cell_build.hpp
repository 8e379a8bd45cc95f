#pragma once
// The build of a %%cuda cell or an xcuda.compile() call, once its options are core values: the
// default target (the GPU's sm_XX, else compute_75), the headers it includes (the session's header
// cells, unless given), the compile through the registry (parse, key, caches, NVRTC: module_registry
// and compile/), then the load on the current GPU when it can run the target, so that a module the
// GPU rejects fails in the cell that compiled it.
//
// Threading: called on the thread that holds the session (the GIL in the module). The compile itself
// is thread-safe and may take seconds: it runs inside `unlocked`, which the module gives to release
// the GIL around it (tests give a plain call). The once-per-process disk-cache warning goes to `warn`.

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "compile_recipe.hpp"

namespace xcuda
{
    class cuda_module;
    class cuda_session;
    class module_registry;

    class cell_build
    {
    public:
        using unlocked_call = std::function<void(const std::function<void()>&)>;
        using warning_sink = std::function<void(const std::string&)>;

        // headers: null for the session's header cells the source includes.
        static std::shared_ptr<cuda_module> build(module_registry& registry, cuda_session& session,
                                                  const std::string& source, const std::string& name,
                                                  compile_options options,
                                                  const std::map<std::string, std::string>* headers,
                                                  const unlocked_call& unlocked, const warning_sink& warn);
    };
}
