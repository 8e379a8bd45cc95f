#pragma once
// NVRTC's version for the compile cache's key, without loading NVRTC when it is not needed.
//
// Why: the key of every compile holds NVRTC's version, and asking the library means loading it: on a
// disk-cache hit (a notebook re-run after a restart) that load is most of the hit's cost (6-8 ms here,
// a 100 MB library with 200,000 relocations), for a compile that never happens.
//
// How: after NVRTC was loaded once, a small file in the compile cache's folder ("nvrtc-version")
// records its version together with nvrtc_library::search_fingerprint() (the variables and the files
// the search for the library looks at) and the identity of the file it opened. A later process whose
// fingerprint and file are the same would load the same library, so it takes the version from the
// file. Anything different (another CUDA_HOME, LD_LIBRARY_PATH, a toolkit installed or replaced, the
// loader's cache rebuilt) loads NVRTC as before and rewrites the file. An NVRTC already loaded in the
// process (xcuda's own, or another library's that the search would take) is always asked directly.
//
// The file follows the private-files rule (base/private_files) and is written atomically (temporary
// file, rename). Thread-safe: the result is computed once per process under a mutex.

#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace xcuda
{
    class nvrtc_version_memo
    {
    public:
        // folder: the compile cache's folder; "" keeps no memo (NVRTC is loaded for the version).
        explicit nvrtc_version_memo(std::string folder);

        // NVRTC's (major, minor); loads NVRTC only when nothing above tells it. Throws what loading
        // NVRTC throws (tool_not_found_error when there is none).
        std::pair<int, int> version();

        // The memo file's text for a version, fingerprint and opened file; and the version in a text
        // when it matches the fingerprint and the file's identity now.
        static std::string format(std::pair<int, int> version, const std::string& fingerprint, const std::string& path);
        static std::optional<std::pair<int, int>> parse(const std::string& text, const std::string& fingerprint);

    private:
        std::string m_path;
        std::mutex m_mutex;
        std::optional<std::pair<int, int>> m_version;
    };
}
