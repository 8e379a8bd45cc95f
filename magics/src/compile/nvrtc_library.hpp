#pragma once
// NVRTC's C API, loaded at run time, the way the driver layer loads libcuda.
//
// Nothing links libnvrtc: the module and the test binary load on a machine without a toolkit (and
// CMake's CUDA::nvrtc, which drags in the toolkit's stub libcuda.so, is not used). The first compile,
// version or arch query opens libnvrtc.so.13 from the first of these places that has it:
//
//   1. XCUDA_NVRTC, a file path (a test, or an unusual install)
//   2. an NVRTC that this process already loaded (CuPy, cuda.bindings, PyTorch): one copy per process
//   3. $CUDA_HOME, then $CUDA_PATH: lib64/, lib/, targets/x86_64-linux/lib/
//   4. NVIDIA's NVRTC wheel (nvidia-cuda-nvrtc) in the site-packages folder that holds this module:
//      nvidia/cu13/lib/ (CUDA 13 wheels), nvidia/cuda_nvrtc/lib/ (as CuPy and cuda-python prefer wheels)
//   5. the loader path (LD_LIBRARY_PATH, ldconfig's cache)
//   6. the toolkit this module was built against, then /usr/local/cuda
//
// When none has it, every use throws tool_not_found_error listing each place tried and why it
// failed, and what to install. The places are tried once per process.
//
// Thread safety: get() is safe from any thread (a function-local static); the table is immutable once
// loaded. NVRTC's own calls are thread-safe per program.

#include <string>
#include <vector>

#include <nvrtc.h>

namespace xcuda
{
#define XCUDA_NVRTC_FUNCTIONS(X)   \
    X(nvrtcGetErrorString)         \
    X(nvrtcVersion)                \
    X(nvrtcGetNumSupportedArchs)   \
    X(nvrtcGetSupportedArchs)      \
    X(nvrtcCreateProgram)          \
    X(nvrtcDestroyProgram)         \
    X(nvrtcCompileProgram)         \
    X(nvrtcGetPTXSize)             \
    X(nvrtcGetPTX)                 \
    X(nvrtcGetCUBINSize)           \
    X(nvrtcGetCUBIN)               \
    X(nvrtcGetProgramLogSize)      \
    X(nvrtcGetProgramLog)          \
    X(nvrtcAddNameExpression)      \
    X(nvrtcGetLoweredName)

    class nvrtc_library
    {
    public:
#define XCUDA_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
        XCUDA_NVRTC_FUNCTIONS(XCUDA_NVRTC_MEMBER)
#undef XCUDA_NVRTC_MEMBER

        // The loaded library; throws tool_not_found_error saying where it looked.
        static const nvrtc_library& get();

        // True when get() would succeed; never throws.
        static bool available() noexcept;

        // The file that was opened ("" when none was).
        static std::string path();

        // Each place tried, in order, with what came of it ("<place>: <result>").
        static std::vector<std::string> search_log();

        // Whether an NVRTC is loaded in this process already (by xcuda, or by another library whose copy
        // the search would take); loads nothing.
        static bool loaded() noexcept;
        // What decides which file the search above opens, without opening anything: the variables it
        // reads and the identity (device, inode, size, modification time) of every file it would look at,
        // the loader's cache included. Equal fingerprints open the same file: nvrtc_version_memo uses it
        // to know NVRTC's version on a compile-cache hit without loading the 100 MB library.
        static std::string search_fingerprint();
        // "dev:inode:size:mtime" of the file at path (links followed), "-" when there is none.
        static std::string file_identity(const std::string& path);

        nvrtc_library(const nvrtc_library&) = delete;
        nvrtc_library& operator=(const nvrtc_library&) = delete;

    private:
        nvrtc_library() = default;
        static nvrtc_library& instance();
        void load();
        bool try_open(const std::string& file, const std::string& place, int flags);

        void* m_library = nullptr;
        std::string m_path;
        std::vector<std::string> m_tried;
    };
}
