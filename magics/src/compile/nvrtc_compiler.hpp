#pragma once

#include <chrono>
// NVRTC, the CUDA run-time compiler: CUDA C++ source -> PTX, and CUBIN for an sm_XX target.
//
// Needs no driver and no GPU. NVRTC is loaded at run time by nvrtc_library (never linked): the first
// compile finds libnvrtc.so.13, or throws tool_not_found_error saying where it looked.
// compile() is thread-safe (each call owns its nvrtcProgram) and holds no Python state, so callers
// release the GIL around it.

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace xcuda
{
    class compile_error;
}

namespace xcuda
{
    struct compile_options
    {
        std::string arch;                           // "sm_90" (CUBIN + PTX) or "compute_75" (PTX only)
        std::string std;                            // "c++17", "c++20"; empty: NVRTC's default
        std::vector<std::string> defines;           // "N=4", "DEBUG"
        std::vector<std::string> include_dirs;
        bool lineinfo = false;
        bool fast_math = false;
        bool relocatable = false;
        std::vector<std::string> extra;             // passed to NVRTC as written
        std::vector<std::string> name_expressions;  // "&kernel", "saxpy<float>"

        // The NVRTC option list, in a fixed order (it is also part of the compile cache key).
        std::vector<std::string> to_nvrtc_options() const;
    };

    struct compile_result
    {
        std::string ptx;
        std::string cubin;                                 // empty for compute_XX targets
        std::string log;                                   // warnings, and ptxas -v info for sm_XX targets
        std::string arch;
        std::vector<std::string> options;                  // what NVRTC was given
        std::map<std::string, std::string> lowered_names;  // name expression -> mangled name
        double milliseconds = 0.0;                         // NVRTC wall time
    };

    class nvrtc_compiler
    {
    public:
        // Compiles; throws compile_error whose message is the log, the options and the numbered source
        // around the first error, or nvrtc_error when an NVRTC call fails for another reason. The
        // program is named diagnostics::program_name ("cell") in NVRTC's messages.
        static compile_result compile(const std::string& source, const compile_options& options,
                                      const std::map<std::string, std::string>& headers = {});

        static std::pair<int, int> version();

    private:
        static compile_result compile_setting_aside(const std::string& source, const compile_options& options,
                                                    const std::map<std::string, std::string>& headers,
                                                    std::chrono::steady_clock::time_point start,
                                                    const compile_error& refused);
        static compile_result compile_once(const std::string& source, const compile_options& options,
                                           const std::map<std::string, std::string>& headers,
                                           std::chrono::steady_clock::time_point start);
    public:
        static std::vector<int> supported_archs();  // {75, 80, ...}

        // The toolkit's include folders (cuda_runtime.h, CCCL's cuda/std, cub, thrust), found from
        // CUDA_HOME / CUDA_PATH, from where libnvrtc was loaded, or /usr/local/cuda; added to every compile so that
        // cells can include toolkit headers.
        static const std::vector<std::string>& toolkit_include_dirs();
    };
}
