#pragma once
// Where the toolkit's programs are: ncu (Nsight Compute) and compute-sanitizer for %cuda_profile and
// %cuda_sanitize, searched the way the SASS views search for nvdisasm, plus the folders these two
// live in when they are not in bin/ (Nsight Compute's nsight-compute-<version>/ folder, the
// sanitizer's compute-sanitizer/ folder, /opt/nvidia/nsight-compute/<version>/).
//
// Order: $XCUDA_NCU / $XCUDA_COMPUTE_SANITIZER (a path to the program: set, it is the only place
// looked), then for each toolkit root ($CUDA_HOME, $CUDA_PATH, the toolkit NVRTC's headers came from,
// /usr/local/cuda) its bin/ and the program's own folder, then PATH, then /opt/nvidia. The first
// executable file wins.
//
// Pure POSIX over the file system; no state; safe from any thread.

#include <string>
#include <vector>

namespace xcuda
{
    // A regular file this process may execute.
    bool is_executable_file(const std::string& path);

    class tool_finder
    {
    public:
        struct search
        {
            std::string path;                 // the program found, or ""
            std::vector<std::string> looked;  // each place tried, in order
        };

        // name: "ncu" or "compute-sanitizer" (other names: bin/ folders and PATH only).
        static search find(const std::string& name);

        // The program's path; throws tool_not_found_error naming it, what needs it (purpose), every
        // place looked and how to get it.
        static std::string require(const std::string& name, const std::string& purpose);

        // The environment variable that names the program directly ("XCUDA_NCU"), "" for other names.
        static std::string variable(const std::string& name);
    };
}
