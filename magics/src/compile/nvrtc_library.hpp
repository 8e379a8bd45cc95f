#pragma once
// NVRTC's C API, loaded at run time, the way the driver layer loads libcuda.
//
// Nothing links libnvrtc: the module and the test binary load on a machine without a toolkit (and
// CMake's CUDA::nvrtc, which drags in the toolkit's stub libcuda.so, is not used). The first compile,
// version or arch query looks for libnvrtc.so.13 and libnvrtc.so.12 (NVRTC 12.0-12.9) in these places:
//
//   1. XCUDA_NVRTC, a file path (a test, or an unusual install)
//   2. an NVRTC that this process already loaded (CuPy, cuda.bindings, PyTorch): one copy per process
//   3. $CUDA_HOME, then $CUDA_PATH: lib64/, lib/, targets/x86_64-linux/lib/
//   4. NVIDIA's NVRTC wheel in the site-packages folder that holds this module: nvidia/cu13/lib/
//      (nvidia-cuda-nvrtc, CUDA 13), nvidia/cuda_nvrtc/lib/ (nvidia-cuda-nvrtc-cu12, as CuPy and
//      cuda-python prefer wheels)
//   5. the loader path (LD_LIBRARY_PATH, ldconfig's cache)
//   6. the toolkit this module was built against, then /usr/local/cuda
//
// XCUDA_NVRTC and an NVRTC already loaded are taken as they are. Otherwise every place is looked at
// and the choice depends on the driver (the layer above says which: set_driver_version_source or
// prefer_at_most, before the first use; this layer does not load the driver): the newest NVRTC
// whose output the driver loads (a version <= the driver's CUDA version; a 12.x driver loads what
// NVRTC 12.y > 12.x makes as a CUBIN, minor version compatibility, so a 12 is taken next), and
// without a driver the newest found. Equal versions: the first place wins. reason() says why;
// driver_note() says, in one line, when no NVRTC that fits the driver was found.
//
// When none is found, every use throws tool_not_found_error listing each place tried and why it
// failed, and what to install. The places are tried once per process.
//
// Thread safety: get() is safe from any thread (a function-local static); the table is immutable once
// loaded. NVRTC's own calls are thread-safe per program.

#include <string>
#include <utility>
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

        // The driver's CUDA version (cuDriverGetVersion's 12040 for 12.4; 0: no driver) for the choice
        // above, asked for at the first load (and by search_fingerprint). Set before the first use.
        using driver_version_source = int (*)();
        static void set_driver_version_source(driver_version_source source);
        // The choice as for a driver of CUDA major.minor (a test, or a caller that knows the driver);
        // overrides the source. Without effect once loaded.
        static void prefer_at_most(int major, int minor);

        // The loaded NVRTC's version ((0, 0) when none was loaded); loads it when not yet loaded.
        static std::pair<int, int> loaded_version();
        // Why this NVRTC: "NVRTC 12.9: the driver supports CUDA 12.4" ("" when none was found).
        static std::string reason();
        // One line when the driver is older than the NVRTC chosen (its modules will not load), with
        // what to install; "" otherwise.
        static std::string driver_note();

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
        // The search of the list above, the choice and the load (nvrtc_library.cpp says which part is where).
        void load();
        // Place 1: the file XCUDA_NVRTC names, or m_override_problem saying why it is not usable.
        void take_named(const std::string& file);
        // Place 2: an NVRTC this process already loaded; false when there is none.
        bool take_already_loaded();
        // The symbol table of an opened NVRTC, which becomes the one loaded.
        void take(void* handle, const std::string& opened, std::pair<int, int> version);
        // m_driver_note, for a driver of CUDA `driver` (12040; 0: none).
        void note_driver(int driver);

        void* m_library = nullptr;
        std::string m_path;
        std::pair<int, int> m_version{0, 0};
        std::string m_reason;
        std::string m_driver_note;
        std::string m_override_problem;  // XCUDA_NVRTC named something unusable: the one line saying so
        std::vector<std::string> m_tried;
    };
}
