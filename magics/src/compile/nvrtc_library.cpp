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
        // The NVRTCs taken, newest first. The API xcuda uses is the same in 12 and 13 (the result
        // codes it tests and the options it passes are 12's too); what differs, the architectures
        // each accepts and its PTX ISA (8.x, 9.x), is asked of the library.
        constexpr const char* sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12"};

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

        std::string version_text(std::pair<int, int> version)
        {
            return std::to_string(version.first) + "." + std::to_string(version.second);
        }

        // cuDriverGetVersion's 12040 as "12.4".
        std::string cuda_text(int driver)
        {
            return std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
        }

        std::atomic<bool> g_loaded{false};
        std::atomic<int> g_prefer{-1};  // prefer_at_most, as 12040; -1: not given
        std::atomic<nvrtc_library::driver_version_source> g_source{nullptr};

        // The driver's version the choice is made for; 0: none (or not known).
        int driver_for_choice()
        {
            int prefer = g_prefer;
            if (prefer >= 0)
            {
                return prefer;
            }
            nvrtc_library::driver_version_source source = g_source;
            return source ? source() : 0;
        }

        const char* const lib_dirs[] = {"/lib64/", "/lib/", "/targets/x86_64-linux/lib/", "/targets/sbsa-linux/lib/"};
        const char* const wheel_dirs[] = {"/nvidia/cu13/lib/", "/nvidia/cuda_nvrtc/lib/"};

        const char* const install_12 = "run `pip install nvidia-cuda-nvrtc-cu12` in this Python (NVRTC 12, for 12.x drivers)";
    }

    void nvrtc_library::set_driver_version_source(driver_version_source source)
    {
        g_source = source;
    }

    void nvrtc_library::prefer_at_most(int major, int minor)
    {
        g_prefer = major * 1000 + minor * 10;
    }

    nvrtc_library& nvrtc_library::instance()
    {
        static nvrtc_library library;
        static std::once_flag once;
        std::call_once(once, [] { library.load(); });
        return library;
    }

    // Finding and opening NVRTC, in three parts: the load of one file (dlopen, the check that it is NVRTC 12
    // or 13, and its symbol table: open_candidate, take), the search of places 3-6 of the header's list
    // (candidate_search), and the choice among what the search found (choose). load() runs them in order,
    // after places 1 and 2, which are taken as they are.
    namespace
    {
        constexpr int open_flags = RTLD_NOW | RTLD_LOCAL;

        // The file the loader opened for handle (links resolved), or `fallback` when it cannot say.
        std::string opened_file(void* handle, const std::string& fallback)
        {
            Dl_info info;
            void* symbol = dlsym(handle, "nvrtcVersion");
            return symbol && dladdr(symbol, &info) && info.dli_fname ? info.dli_fname : fallback;
        }

        // The functions of XCUDA_NVRTC_FUNCTIONS that handle lacks, ", "-separated; "" when it has them all.
        std::string missing_functions(void* handle)
        {
            std::string missing;
#define XCUDA_NVRTC_CHECK(name)                                                                         \
    if (!dlsym(handle, XCUDA_STRINGIFY_EXPANDED(name)))                                                 \
    {                                                                                                   \
        missing += std::string(missing.empty() ? "" : ", ") + XCUDA_STRINGIFY_EXPANDED(name);           \
    }
            XCUDA_NVRTC_FUNCTIONS(XCUDA_NVRTC_CHECK)
#undef XCUDA_NVRTC_CHECK
            return missing;
        }

        // Opens file (a path, or a soname for the loader) if it is NVRTC 12 or 13, and reads its version; the
        // handle, or nullptr. What came of it is added to `tried` ("<place>: <result>").
        void* open_candidate(const std::string& file, const std::string& place, std::vector<std::string>& tried,
                             std::pair<int, int>& version)
        {
            if (file.find('/') != std::string::npos && !is_file(file))
            {
                tried.push_back(place + ": no " + file);
                return nullptr;
            }
            void* handle = dlopen(file.c_str(), open_flags);
            if (!handle)
            {
                const char* why = dlerror();
                tried.push_back(place + ": " + (why ? why : file + " could not be opened"));
                return nullptr;
            }
            std::string missing = missing_functions(handle);
            std::string opened = opened_file(handle, file);
            if (!missing.empty())
            {
                tried.push_back(place + ": " + opened + " is not NVRTC 12 or 13 (it lacks " + missing + ")");
                dlclose(handle);
                return nullptr;
            }
            int major = 0;
            int minor = 0;
            auto nvrtc_version = reinterpret_cast<decltype(&::nvrtcVersion)>(dlsym(handle, "nvrtcVersion"));
            if (nvrtc_version(&major, &minor) != NVRTC_SUCCESS || major < 12 || major > 13)
            {
                tried.push_back(place + ": " + opened + " is NVRTC " + version_text({major, minor}) +
                                "; xcuda uses NVRTC 12 or 13");
                dlclose(handle);
                return nullptr;
            }
            version = {major, minor};
            tried.push_back(place + ": " + opened + " (NVRTC " + version_text(version) + ")");
            return handle;
        }

        // One NVRTC the search found, open.
        struct candidate
        {
            void* handle;
            std::string path;
            std::pair<int, int> version;
        };

        // Places 3-6 of the header's list, each looked at in order, every NVRTC 12 or 13 found there opened
        // (once: a file found again by another way is one candidate). What each place gave goes to `tried`.
        class candidate_search
        {
        public:
            explicit candidate_search(std::vector<std::string>& tried)
                : m_tried(tried)
            {
            }

            // The NVRTCs found, in the order of the places; the caller closes those it does not take.
            std::vector<candidate> run()
            {
                for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
                {
                    std::string root = env(variable);
                    if (!root.empty())
                    {
                        toolkit(std::string("$") + variable, root);
                    }
                }
                // A wheel installed with this module (pip install xcuda nvidia-cuda-nvrtc) before the system's.
                wheels(site_packages());
                for (const char* soname : sonames)
                {
                    consider(soname, "the loader path (LD_LIBRARY_PATH, ldconfig)");
                }
                std::string built = XCUDA_BUILD_CUDA_ROOT;
                if (!built.empty() && built != "/usr/local/cuda")
                {
                    toolkit("the build's toolkit", built);
                }
                toolkit("the default toolkit", "/usr/local/cuda");
                return std::move(m_found);
            }

        private:
            void consider(const std::string& file, const std::string& place)
            {
                std::pair<int, int> version;
                void* handle = open_candidate(file, place, m_tried, version);
                if (!handle)
                {
                    return;
                }
                std::string opened = opened_file(handle, file);
                for (const auto& other : m_found)
                {
                    if (other.handle == handle)  // the same file by another way: one reference is enough
                    {
                        dlclose(handle);
                        return;
                    }
                }
                m_found.push_back({handle, opened, version});
            }

            // A toolkit's lib64/, lib/ or targets/*/lib/: the first of them that holds each soname.
            void toolkit(const std::string& place, const std::string& root)
            {
                for (const char* soname : sonames)
                {
                    bool any = false;
                    for (const char* lib : lib_dirs)
                    {
                        if (is_file(root + lib + soname))
                        {
                            consider(root + lib + soname, place);
                            any = true;
                            break;
                        }
                    }
                    if (!any)
                    {
                        m_tried.push_back(place + ": no " + soname + " in " + root + "/lib64, lib or targets/*/lib");
                    }
                }
            }

            // NVIDIA's NVRTC wheels in the site-packages folder that holds this module ("" : none).
            void wheels(const std::string& site)
            {
                if (site.empty())
                {
                    return;
                }
                for (const char* wheel : wheel_dirs)
                {
                    for (const char* soname : sonames)
                    {
                        if (is_file(site + wheel + soname))
                        {
                            consider(site + wheel + soname, "NVIDIA's nvrtc wheel");
                        }
                    }
                }
                m_tried.push_back(std::string("NVIDIA's nvrtc wheel: looked in ") + site +
                                  "/nvidia/cu13/lib and nvidia/cuda_nvrtc/lib");
            }

            std::vector<std::string>& m_tried;
            std::vector<candidate> m_found;
        };

        // Which candidate is taken, and why (the reason after "NVRTC 12.9: ").
        struct nvrtc_choice
        {
            const candidate* chosen = nullptr;
            std::string why;
        };

        // The newest of found; of equal versions the first.
        const candidate* newest(const std::vector<candidate>& found)
        {
            const candidate* chosen = nullptr;
            for (const auto& c : found)
            {
                chosen = !chosen || c.version > chosen->version ? &c : chosen;
            }
            return chosen;
        }

        // The choice among the NVRTCs found (at least one) for a driver of CUDA `driver` (12040; 0: none):
        // the newest that fits the driver; then the oldest of the driver's major (newer than the driver: its
        // CUBINs load by minor version compatibility); then the newest. Without a driver, the newest. Of
        // equal versions, the first found.
        nvrtc_choice choose(const std::vector<candidate>& found, int driver)
        {
            nvrtc_choice choice;
            if (driver <= 0)
            {
                choice.chosen = newest(found);
                choice.why = found.size() > 1 ? "the newest found (no driver to match)"
                                              : "the only one found (no driver to match)";
                return choice;
            }
            const std::pair<int, int> limit{driver / 1000, driver % 1000 / 10};
            const candidate*& chosen = choice.chosen;
            for (const auto& c : found)
            {
                if (c.version <= limit && (!chosen || c.version > chosen->version))
                {
                    chosen = &c;
                }
            }
            choice.why = "the driver supports CUDA " + cuda_text(driver);
            if (!chosen)
            {
                for (const auto& c : found)
                {
                    if (c.version.first == limit.first && (!chosen || chosen->version > c.version))
                    {
                        chosen = &c;
                    }
                }
                if (chosen)
                {
                    choice.why += " (modules load as CUBINs, by minor version compatibility)";
                }
            }
            if (!chosen)
            {
                chosen = newest(found);
                choice.why += ", and no NVRTC " + std::to_string(limit.first) + " was found";
            }
            for (const auto& c : found)
            {
                if (c.version > chosen->version)
                {
                    choice.why += "; NVRTC " + version_text(c.version) + " (" + c.path + ") needs a newer driver";
                    break;
                }
            }
            return choice;
        }
    }

    void nvrtc_library::take(void* handle, const std::string& opened, std::pair<int, int> version)
    {
#define XCUDA_NVRTC_LOAD(name) name = reinterpret_cast<decltype(name)>(dlsym(handle, XCUDA_STRINGIFY_EXPANDED(name)));
        XCUDA_NVRTC_FUNCTIONS(XCUDA_NVRTC_LOAD)
#undef XCUDA_NVRTC_LOAD
        m_library = handle;
        m_path = opened;
        m_version = version;
        g_loaded = true;
    }

    void nvrtc_library::load()
    {
        const int driver = driver_for_choice();
        std::string override_path = env("XCUDA_NVRTC");
        if (!override_path.empty())
        {
            take_named(override_path);
        }
        else if (!take_already_loaded())
        {
            std::vector<candidate> found = candidate_search(m_tried).run();
            if (found.empty())
            {
                return;
            }
            nvrtc_choice choice = choose(found, driver);
            for (const auto& c : found)
            {
                if (&c != choice.chosen)
                {
                    dlclose(c.handle);
                }
            }
            take(choice.chosen->handle, choice.chosen->path, choice.chosen->version);
            m_reason = "NVRTC " + version_text(choice.chosen->version) + ": " + choice.why;
            m_tried.push_back("chosen: " + choice.chosen->path + " (" + m_reason + ")");
        }
        note_driver(driver);
    }

    void nvrtc_library::take_named(const std::string& file)
    {
        // Named explicitly: that file or nothing, so that a test (or a user) sees it fail.
        std::pair<int, int> version;
        if (void* handle = open_candidate(file, "XCUDA_NVRTC", m_tried, version))
        {
            take(handle, opened_file(handle, file), version);
            m_reason = "NVRTC " + version_text(version) + ": XCUDA_NVRTC names it";
        }
        else
        {
            std::string why = m_tried.back().substr(std::string("XCUDA_NVRTC: ").size());
            m_override_problem = "XCUDA_NVRTC=" + file + ": " + why +
                                 ". Name a libnvrtc.so.13 or libnvrtc.so.12 (NVRTC 12.0 or newer), or unset XCUDA_NVRTC to search.";
        }
    }

    bool nvrtc_library::take_already_loaded()
    {
        for (const char* soname : sonames)
        {
            void* handle = dlopen(soname, open_flags | RTLD_NOLOAD);
            if (!handle)
            {
                dlerror();
                m_tried.push_back(std::string("already loaded in this process: no ") + soname);
                continue;
            }
            std::pair<int, int> version;
            dlclose(handle);  // the reference RTLD_NOLOAD took; open_candidate takes its own
            if (void* taken = open_candidate(soname, "already loaded in this process", m_tried, version))
            {
                take(taken, opened_file(taken, soname), version);
                m_reason = "NVRTC " + version_text(version) + ": already loaded in this process (one copy per process)";
                return true;
            }
        }
        return false;
    }

    void nvrtc_library::note_driver(int driver)
    {
        if (driver > 0 && m_library && m_version.first > driver / 1000)
        {
            m_driver_note = "The NVIDIA driver supports CUDA " + cuda_text(driver) + ", older than NVRTC " +
                            version_text(m_version) + " (" + m_path + "): its modules will not load. To fix, " +
                            install_12 + " or name a libnvrtc.so.12 with XCUDA_NVRTC, or update the driver to one for CUDA " +
                            std::to_string(m_version.first) + ".";
        }
    }

    const nvrtc_library& nvrtc_library::get()
    {
        const nvrtc_library& library = instance();
        if (!library.m_library)
        {
            if (!library.m_override_problem.empty())
            {
                throw tool_not_found_error(library.m_override_problem);
            }
            std::string message = "NVRTC (libnvrtc.so.13 or libnvrtc.so.12) was not found. Looked in:";
            for (const auto& line : library.m_tried)
            {
                message += "\n  - " + line;
            }
            message += "\nInstall the CUDA 13 (or 12) toolkit and set CUDA_HOME to it, or `pip install nvidia-cuda-nvrtc` "
                       "(13) or `pip install nvidia-cuda-nvrtc-cu12` (12, for 12.x drivers) into this Python, or name "
                       "the file with XCUDA_NVRTC.";
            throw tool_not_found_error(message);
        }
        return library;
    }

    std::pair<int, int> nvrtc_library::loaded_version()
    {
        return instance().m_version;
    }

    std::string nvrtc_library::reason()
    {
        const nvrtc_library& library = instance();
        return library.m_library ? library.m_reason : library.m_override_problem;
    }

    std::string nvrtc_library::driver_note()
    {
        return instance().m_driver_note;
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
        for (const char* soname : sonames)
        {
            void* handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
            if (handle)
            {
                dlclose(handle);  // only a reference taken by RTLD_NOLOAD
                return true;
            }
            dlerror();
        }
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
        std::string print = "nvrtc search 2\ndriver=" + std::to_string(driver_for_choice()) + "\n";
        auto add = [&print](const std::string& what, const std::string& path) {
            print += what + " " + path + " " + file_identity(path) + "\n";
        };
        std::string override_path = env("XCUDA_NVRTC");
        print += "XCUDA_NVRTC=" + override_path + "\n";
        if (!override_path.empty())
        {
            add("file", override_path);
            return print;
        }
        auto toolkit = [&](const std::string& root) {
            for (const char* name : sonames)
            {
                for (const char* lib : lib_dirs)
                {
                    add("file", root + lib + name);
                }
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
        for (const char* wheel : wheel_dirs)
        {
            for (const char* name : sonames)
            {
                add("file", site + wheel + name);
            }
        }
        // The loader path: LD_LIBRARY_PATH's folders, then ldconfig's cache (rewritten when it changes).
        std::string library_path = env("LD_LIBRARY_PATH");
        print += "LD_LIBRARY_PATH=" + library_path + "\n";
        std::size_t begin = library_path.empty() ? 1 : 0;  // unset or empty: the loader skips it
        while (begin <= library_path.size())
        {
            std::size_t end = library_path.find(':', begin);
            std::string folder = library_path.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
            for (const char* name : sonames)
            {
                add("file", (folder.empty() ? std::string(".") : folder) + "/" + name);
            }
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
