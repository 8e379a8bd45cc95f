#include "nvrtc_library.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include <dlfcn.h>
#include <sys/stat.h>

#include "errors.hpp"

#define XCUDA_STRINGIFY_EXPANDED(x) XCUDA_STRINGIFY(x)
#define XCUDA_STRINGIFY(x) #x

#ifndef XCUDA_BUILD_CUDA_ROOT
#define XCUDA_BUILD_CUDA_ROOT ""
#endif

namespace xcuda
{
    namespace
    {
        // The NVRTC this build's headers describe. The API xcuda uses is the same in 12 and 13, but
        // the header's enum values and option names are 13's: only a 13 is taken.
        constexpr const char* soname = "libnvrtc.so.13";

        bool is_file(const std::string& path)
        {
            struct stat st;
            return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
        }

        std::string parent(const std::string& path)
        {
            auto pos = path.find_last_of('/');
            return pos == std::string::npos ? std::string(".") : path.substr(0, pos);
        }

        std::string env(const char* name)
        {
            const char* value = std::getenv(name);
            return value ? value : "";
        }

        // The folder of the binary this code is linked into: site-packages for a pip-installed module.
        // The folder that holds the package `xcuda` (site-packages, or the build's python/): this code is
        // in xcuda/_core*.so or in xcuda/xcuda-compile, one level below it. NVIDIA's wheels sit there.
        std::string site_packages()
        {
            Dl_info info;
            if (dladdr(reinterpret_cast<void*>(&site_packages), &info) && info.dli_fname)
            {
                return parent(parent(info.dli_fname));
            }
            return "";
        }
    }

    namespace
    {
        std::atomic<bool> g_loaded{false};
    }

    nvrtc_library& nvrtc_library::instance()
    {
        static nvrtc_library library;
        static std::once_flag once;
        std::call_once(once, [] { library.load(); });
        return library;
    }

    bool nvrtc_library::try_open(const std::string& file, const std::string& place, int flags)
    {
        if (file.find('/') != std::string::npos && !is_file(file))
        {
            m_tried.push_back(place + ": no " + file);
            return false;
        }
        void* handle = dlopen(file.c_str(), flags);
        if (!handle)
        {
            if (!(flags & RTLD_NOLOAD))
            {
                const char* why = dlerror();
                m_tried.push_back(place + ": " + (why ? why : file + " could not be opened"));
            }
            else
            {
                dlerror();
                m_tried.push_back(place + ": none loaded");
            }
            return false;
        }
        std::string missing;
#define XCUDA_NVRTC_LOAD(name)                                                                          \
    name = reinterpret_cast<decltype(name)>(dlsym(handle, XCUDA_STRINGIFY_EXPANDED(name)));             \
    if (!name)                                                                                          \
    {                                                                                                   \
        missing += std::string(missing.empty() ? "" : ", ") + XCUDA_STRINGIFY_EXPANDED(name);           \
    }
        XCUDA_NVRTC_FUNCTIONS(XCUDA_NVRTC_LOAD)
#undef XCUDA_NVRTC_LOAD
        Dl_info info;
        std::string opened = nvrtcVersion && dladdr(reinterpret_cast<void*>(nvrtcVersion), &info) && info.dli_fname
                                 ? info.dli_fname : file;
        if (!missing.empty())
        {
            m_tried.push_back(place + ": " + opened + " lacks " + missing);
#define XCUDA_NVRTC_CLEAR(name) name = nullptr;
            XCUDA_NVRTC_FUNCTIONS(XCUDA_NVRTC_CLEAR)
#undef XCUDA_NVRTC_CLEAR
            dlclose(handle);
            return false;
        }
        m_library = handle;
        m_path = opened;
        m_tried.push_back(place + ": " + opened);
        g_loaded = true;
        return true;
    }

    void nvrtc_library::load()
    {
        constexpr int flags = RTLD_NOW | RTLD_LOCAL;
        const std::string name = soname;

        std::string override_path = env("XCUDA_NVRTC");
        if (!override_path.empty())
        {
            // Named explicitly: that file or nothing, so that a test (or a user) sees it fail.
            try_open(override_path, "XCUDA_NVRTC", flags);
            return;
        }
        if (try_open(name, "already loaded in this process", flags | RTLD_NOLOAD))
        {
            return;
        }
        std::vector<std::pair<std::string, std::string>> toolkits;  // (place, root)
        for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
        {
            std::string root = env(variable);
            if (!root.empty())
            {
                toolkits.emplace_back(std::string("$") + variable, root);
            }
        }
        auto try_toolkit = [&](const std::string& place, const std::string& root) {
            for (const char* lib : {"/lib64/", "/lib/", "/targets/x86_64-linux/lib/", "/targets/sbsa-linux/lib/"})
            {
                if (is_file(root + lib + name))
                {
                    return try_open(root + lib + name, place, flags);
                }
            }
            m_tried.push_back(place + ": no " + name + " in " + root + "/lib64, lib or targets/*/lib");
            return false;
        };
        for (const auto& [place, root] : toolkits)
        {
            if (try_toolkit(place, root))
            {
                return;
            }
        }
        // A wheel installed with this module (pip install xcuda nvidia-cuda-nvrtc) before the system's.
        std::string site = site_packages();
        if (!site.empty())
        {
            for (const char* wheel : {"/nvidia/cu13/lib/", "/nvidia/cuda_nvrtc/lib/"})
            {
                if (try_open(site + wheel + name, "NVIDIA's nvrtc wheel", flags))
                {
                    return;
                }
            }
        }
        if (try_open(name, "the loader path (LD_LIBRARY_PATH, ldconfig)", flags))
        {
            return;
        }
        std::string built = XCUDA_BUILD_CUDA_ROOT;
        if (!built.empty() && built != "/usr/local/cuda" && try_toolkit("the build's toolkit", built))
        {
            return;
        }
        if (try_toolkit("the default toolkit", "/usr/local/cuda"))
        {
            return;
        }
    }

    const nvrtc_library& nvrtc_library::get()
    {
        const nvrtc_library& library = instance();
        if (!library.m_library)
        {
            std::string message = std::string("NVRTC (") + soname + ") was not found. Looked in:";
            for (const auto& line : library.m_tried)
            {
                message += "\n  - " + line;
            }
            message += "\nInstall the CUDA 13 toolkit and set CUDA_HOME to it, or `pip install nvidia-cuda-nvrtc` "
                       "into this Python, or name the file with XCUDA_NVRTC.";
            throw tool_not_found_error(message);
        }
        return library;
    }

    bool nvrtc_library::available() noexcept
    {
        return instance().m_library != nullptr;
    }

    std::string nvrtc_library::path()
    {
        return instance().m_path;
    }

    std::vector<std::string> nvrtc_library::search_log()
    {
        return instance().m_tried;
    }

    bool nvrtc_library::loaded() noexcept
    {
        if (g_loaded)
        {
            return true;
        }
        void* handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        if (handle)
        {
            dlclose(handle);  // only a reference taken by RTLD_NOLOAD
            return true;
        }
        dlerror();
        return false;
    }

    std::string nvrtc_library::file_identity(const std::string& path)
    {
        struct stat st;
        if (path.empty() || ::stat(path.c_str(), &st) != 0)
        {
            return "-";
        }
        return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
               std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    }

    std::string nvrtc_library::search_fingerprint()
    {
        // The same places load() looks at, in its order: each as its text and the identity of its file.
        std::string print = "nvrtc search 1\n";
        auto add = [&print](const std::string& what, const std::string& path) {
            print += what + " " + path + " " + file_identity(path) + "\n";
        };
        const std::string name = soname;
        std::string override_path = env("XCUDA_NVRTC");
        print += "XCUDA_NVRTC=" + override_path + "\n";
        if (!override_path.empty())
        {
            add("file", override_path);
            return print;
        }
        auto toolkit = [&](const std::string& root) {
            for (const char* lib : {"/lib64/", "/lib/", "/targets/x86_64-linux/lib/", "/targets/sbsa-linux/lib/"})
            {
                add("file", root + lib + name);
            }
        };
        for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
        {
            print += std::string(variable) + "=" + env(variable) + "\n";
            if (!env(variable).empty())
            {
                toolkit(env(variable));
            }
        }
        std::string site = site_packages();
        print += "module=" + site + "\n";
        for (const char* wheel : {"/nvidia/cu13/lib/", "/nvidia/cuda_nvrtc/lib/"})
        {
            add("file", site + wheel + name);
        }
        // The loader path: LD_LIBRARY_PATH's folders, then ldconfig's cache (rewritten when it changes).
        std::string library_path = env("LD_LIBRARY_PATH");
        print += "LD_LIBRARY_PATH=" + library_path + "\n";
        std::size_t begin = library_path.empty() ? 1 : 0;  // unset or empty: the loader skips it
        while (begin <= library_path.size())
        {
            std::size_t end = library_path.find(':', begin);
            std::string folder = library_path.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
            add("file", (folder.empty() ? std::string(".") : folder) + "/" + name);
            if (end == std::string::npos)
            {
                break;
            }
            begin = end + 1;
        }
        add("cache", "/etc/ld.so.cache");
        toolkit(XCUDA_BUILD_CUDA_ROOT);
        toolkit("/usr/local/cuda");
        return print;
    }
}
