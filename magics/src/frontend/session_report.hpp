#pragma once
// The session's reports: %cuda_info / xcuda.info() (the device, why it was chosen, its memory, the
// driver and NVRTC) and %cuda_status / xcuda.status() (resident modules, the device arrays the user
// named, the compile cache). A report is a few tables, rendered as HTML for notebooks and as aligned
// text elsewhere, both saying the same (views/table_view).
//
// Built from core state on the thread that holds the session (the GIL in the module); the values the
// core cannot see (the device choice as the binding reports it, the arrays of the user's namespace)
// are given as plain values. A report owns its tables and touches nothing after it is built.

#include <cstddef>
#include <string>
#include <vector>

#include "engine_placement.hpp"
#include "table_view.hpp"

namespace xcuda
{
    class cuda_session;
    class session_resources;
    class module_registry;
    class compiler;

    // Which device and why (xcuda.device_choice()), and for an ipyparallel engine its place on the host.
    struct device_placement
    {
        bool refused = false;        // the environment's value was refused: reason says why
        int ordinal = -1;
        std::string reason;
        bool in_engine = false;      // an ipyparallel engine: engine, host_slot, registry are set
        std::string engine;
        int host_slot = -1;          // -1: a variable chose, not the slot
        std::string registry;
        bool has_gpu_uuid = false;   // once xcuda has a context on the GPU
        std::string gpu_uuid;
        std::vector<std::string> shared_with;

        // The engine placement's report (xcuda.device_choice()) as the report's rows read it.
        static device_placement of(const engine_placement::report& choice);
    };

    // A device array bound to a name in the user's namespace, for the status report.
    struct named_array
    {
        std::string name;
        std::string shape;   // as Python writes the tuple: "(1024,)"
        std::string dtype;   // "float32"
        std::size_t bytes = 0;
        int device = -1;     // -1: the buffer was released
    };

    class session_report
    {
    public:
        std::vector<text_table> tables;

        std::string html() const;
        std::string text() const;

        // The current device (or why there is none), the placement, the driver and NVRTC. Loads NVRTC
        // (throws its error saying where it looked when there is none); never needs a GPU.
        static session_report info(cuda_session& session, const device_placement& placement);
        // The modules of the registry, the arrays given (names starting with '_' are IPython's output
        // history and are left out), the compile cache.
        // With the session's resources, a table of its CUDA arrays, textures and surfaces (docs/textures.md).
        static session_report status(const module_registry& registry, compiler& compiler,
                                     const std::vector<named_array>& arrays, const session_resources* resources = nullptr);

        // A path under home as ~/...: what the user needs, and no machine's folders in a shared notebook.
        static std::string home_relative(const std::string& path, const std::string& home);
        // A CUDA version number as the driver gives it (12090) in words ("12.9").
        static std::string version_text(int version);
    };
}
