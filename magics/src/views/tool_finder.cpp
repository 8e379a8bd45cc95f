#include "tool_finder.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.hpp"
#include "nvrtc_compiler.hpp"

namespace xcuda
{
    bool is_executable_file(const std::string& path)
    {
        struct stat st;
        return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
    }

    namespace
    {
        std::string env(const char* name)
        {
            const char* value = std::getenv(name);
            return value ? value : "";
        }

        // Subfolders of folder whose names start with prefix, newest version last (names sort by version
        // for the forms NVIDIA uses: nsight-compute-2025.1.0, 2025.3.1).
        std::vector<std::string> versioned(const std::string& folder, const std::string& prefix)
        {
            std::vector<std::string> found;
            if (DIR* dir = ::opendir(folder.c_str()))
            {
                while (dirent* entry = ::readdir(dir))
                {
                    std::string name = entry->d_name;
                    if (name != "." && name != ".." && name.compare(0, prefix.size(), prefix) == 0)
                    {
                        found.push_back(folder + "/" + name);
                    }
                }
                ::closedir(dir);
            }
            std::sort(found.begin(), found.end());
            std::reverse(found.begin(), found.end());
            return found;
        }

        std::vector<std::string> toolkit_roots()
        {
            std::vector<std::string> roots;
            auto add = [&](const std::string& root) {
                if (!root.empty() && std::find(roots.begin(), roots.end(), root) == roots.end())
                {
                    roots.push_back(root);
                }
            };
            add(env("CUDA_HOME"));
            add(env("CUDA_PATH"));
            for (const auto& include : nvrtc_compiler::toolkit_include_dirs())
            {
                if (include.size() < 8 || include.compare(include.size() - 8, 8, "/include") != 0)
                {
                    continue;  // include/cccl
                }
                std::string root = include.substr(0, include.size() - 8);
                // targets/x86_64-linux/include -> the toolkit root two levels up
                std::size_t targets = root.rfind("/targets/");
                add(targets == std::string::npos ? root : root.substr(0, targets));
            }
            add("/usr/local/cuda");
            return roots;
        }
    }

    std::string tool_finder::variable(const std::string& name)
    {
        if (name == "ncu")
        {
            return "XCUDA_NCU";
        }
        if (name == "compute-sanitizer")
        {
            return "XCUDA_COMPUTE_SANITIZER";
        }
        return "";
    }

    tool_finder::search tool_finder::find(const std::string& name)
    {
        search result;
        std::string direct = variable(name).empty() ? "" : env(variable(name).c_str());
        if (!direct.empty())
        {
            result.looked.push_back("$" + variable(name) + " = " + direct);
            if (is_executable_file(direct))
            {
                result.path = direct;
            }
            return result;
        }
        std::vector<std::string> candidates;
        auto add = [&](const std::string& path) {
            if (std::find(candidates.begin(), candidates.end(), path) == candidates.end())
            {
                candidates.push_back(path);
            }
        };
        for (const std::string& root : toolkit_roots())
        {
            add(root + "/bin/" + name);
            if (name == "ncu")
            {
                std::vector<std::string> folders = versioned(root, "nsight-compute");
                for (const std::string& folder : folders)
                {
                    add(folder + "/ncu");
                }
                if (folders.empty())
                {
                    add(root + "/nsight-compute-*/ncu (no such folder)");  // said where looked; never executable
                }
            }
            else if (name == "compute-sanitizer")
            {
                add(root + "/compute-sanitizer/compute-sanitizer");
            }
        }
        std::stringstream path(env("PATH"));
        std::string folder;
        while (std::getline(path, folder, ':'))
        {
            if (!folder.empty())
            {
                add(folder + "/" + name);
            }
        }
        if (name == "ncu")
        {
            std::vector<std::string> versions = versioned("/opt/nvidia/nsight-compute", "");
            for (const std::string& version : versions)
            {
                add(version + "/ncu");
            }
            if (versions.empty())
            {
                add("/opt/nvidia/nsight-compute/*/ncu (no such folder)");
            }
        }
        for (const std::string& candidate : candidates)
        {
            result.looked.push_back(candidate);
            if (is_executable_file(candidate))
            {
                result.path = candidate;
                return result;
            }
        }
        return result;
    }

    std::string tool_finder::require(const std::string& name, const std::string& purpose)
    {
        search found = find(name);
        if (!found.path.empty())
        {
            return found.path;
        }
        std::string looked;
        for (const std::string& place : found.looked)
        {
            looked += "\n  " + place;
        }
        std::string how = name == "ncu"
                              ? "Install Nsight Compute (the CUDA toolkit's nsight-compute package, or NVIDIA's "
                                "standalone installer)"
                              : name == "compute-sanitizer"
                                    ? "Install the CUDA toolkit's compute-sanitizer (the cuda-sanitizer package)"
                                    : "Install it from the CUDA toolkit";
        std::string variable_name = variable(name);
        throw tool_not_found_error(purpose + " needs " + name + ", which was not found. Looked in:" + looked + "\n" +
                                   how + ", set CUDA_HOME to a toolkit that has it" +
                                   (variable_name.empty() ? std::string() : ", or set " + variable_name + " to its path") +
                                   ".");
    }
}
