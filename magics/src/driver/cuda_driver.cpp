#include "cuda_driver.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#include "errors.hpp"

#define XCUDA_STRINGIFY_EXPANDED(x) XCUDA_STRINGIFY(x)
#define XCUDA_STRINGIFY(x) #x

namespace xcuda
{
    namespace
    {
        // The table in use: the one loaded at the first call, or the simulator's after use_simulator().
        // A replaced table is never freed (a caller may still hold a reference to it).
        std::atomic<cuda_driver*> g_current{nullptr};
        std::mutex g_switch;
        // The fallback's reason, written once under g_switch before g_fallback_notice is set (release).
        std::string g_fallback_reason;
        std::atomic<bool> g_fallback_notice{false};
        std::string g_fallback_failure;  // why the simulator could not be opened for the fallback (g_switch)
    }

    void cuda_driver::publish(cuda_driver* table) noexcept
    {
        // A table is complete (load() done) before it is published, and never changes after.
        s_working.store(table->m_unavailable.empty() && table->m_error_code == 0 ? table : nullptr,
                        std::memory_order_release);
        g_current.store(table, std::memory_order_release);
    }

    cuda_driver& cuda_driver::instance()
    {
        // Every call after the first (the launch path calls this several times per launch): one load.
        if (cuda_driver* loaded = g_current.load(std::memory_order_acquire))
        {
            return *loaded;
        }
        static cuda_driver driver;
        static std::once_flag once;
        std::call_once(once, [] {
            driver.load();
            publish(&driver);
        });
        return *g_current.load(std::memory_order_acquire);
    }

    std::string cuda_driver::use_simulator()
    {
        std::lock_guard<std::mutex> lock(g_switch);
        if (instance().m_simulated && instance().m_unavailable.empty())
        {
            return "";  // already
        }
        auto* simulator = new cuda_driver();
        simulator->m_force_simulator = true;
        simulator->m_chosen_by = "xcuda.use_simulator()";
        simulator->load();
        if (!simulator->m_unavailable.empty() || simulator->m_error_code != 0)
        {
            std::string why = simulator->m_unavailable.empty() ? simulator->m_error : simulator->m_unavailable;
            delete simulator;
            return why;
        }
        publish(simulator);
        return "";
    }

    std::string cuda_driver::use_gpu()
    {
        std::lock_guard<std::mutex> lock(g_switch);
        const cuda_driver& current = instance();
        if (!current.m_simulated)
        {
            if (current.m_error_code != 0)
            {
                return "cuInit failed with " + current.m_error;
            }
            return current.m_unavailable;  // "" when the driver works: already on it
        }
        auto* gpu = new cuda_driver();
        gpu->m_force_gpu = true;
        gpu->m_chosen_by = "xcuda.use_gpu()";
        gpu->load();
        if (!gpu->m_unavailable.empty() || gpu->m_error_code != 0)
        {
            std::string why = gpu->m_unavailable.empty() ? "cuInit failed with " + gpu->m_error : gpu->m_unavailable;
            delete gpu;
            return why;
        }
        publish(gpu);
        return "";
    }

    const cuda_driver& cuda_driver::fall_back(std::string& why)
    {
        std::lock_guard<std::mutex> lock(g_switch);
        const cuda_driver& current = instance();
        if (!current.m_may_fall_back || !g_fallback_failure.empty())
        {
            // Another thread switched while this one waited (its table is returned), or the simulator
            // could not be opened the first time (the driver's error stands, with why).
            why = g_fallback_failure;
            return current;
        }
        auto* simulator = new cuda_driver();
        simulator->m_force_simulator = true;
        simulator->m_chosen_by = "the fallback: " + current.m_fallback_reason + " and XCUDA_DEVICE is unset";
        simulator->load();
        if (!simulator->m_unavailable.empty() || simulator->m_error_code != 0)
        {
            g_fallback_failure = simulator->m_unavailable.empty() ? simulator->m_error : simulator->m_unavailable;
            delete simulator;
            why = g_fallback_failure;
            return current;
        }
        g_fallback_reason = current.m_fallback_reason;
        publish(simulator);
        g_fallback_notice.store(true, std::memory_order_release);
        return *simulator;
    }

    std::string cuda_driver::take_fallback_notice()
    {
        return g_fallback_notice.exchange(false, std::memory_order_acq_rel) ? g_fallback_reason : std::string();
    }

    namespace
    {
        // Folders where a driver's libcuda.so.1 lives outside the loader's default path: containers
        // with the driver mounted (/usr/local/nvidia), WSL2, and CUDA's forward-compatibility package
        // of a toolkit. The toolkit's lib64/stubs/libcuda.so is never opened: it is not a driver.
        std::vector<std::string> driver_folders()
        {
            std::vector<std::string> folders{"/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"};
            for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
            {
                const char* root = std::getenv(variable);
                if (root && *root)
                {
                    folders.push_back(std::string(root) + "/compat");
                }
            }
            if (std::find(folders.begin(), folders.end(), "/usr/local/cuda/compat") == folders.end())
            {
                folders.emplace_back("/usr/local/cuda/compat");
            }
            return folders;
        }
    }

    void cuda_driver::load()
    {
        m_tried = true;
        // XCUDA_LIBCUDA lets a test (or a user with an unusual install) name the library to open.
        const char* override_path = std::getenv("XCUDA_LIBCUDA");
        std::vector<std::string> candidates;
        const std::string device = std::getenv("XCUDA_DEVICE") ? std::getenv("XCUDA_DEVICE") : "";
        const bool explicit_library = override_path && *override_path;
        if (explicit_library && !m_force_simulator)
        {
            candidates.emplace_back(override_path);
        }
        else if (m_force_simulator || (!m_force_gpu && device == "simulator"))
        {
            if (m_chosen_by.empty())
            {
                m_chosen_by = "XCUDA_DEVICE=simulator";
            }
            // The PTX simulator (docs/simulator.md), built beside the code of this process that holds
            // this function: the Python module, or xcuda-replay.
            Dl_info self;
            std::string folder = ".";
            if (dladdr(reinterpret_cast<void*>(&driver_folders), &self) && self.dli_fname)
            {
                folder = self.dli_fname;
                folder = folder.find('/') == std::string::npos ? "." : folder.substr(0, folder.rfind('/'));
            }
            candidates.push_back(folder + "/libxcuda-sim.so");
            m_simulated = true;
        }
        else
        {
            candidates.emplace_back("libcuda.so.1");  // the loader path: LD_LIBRARY_PATH, ldconfig
            for (const auto& folder : driver_folders())
            {
                if (::access((folder + "/libcuda.so.1").c_str(), R_OK) == 0)
                {
                    candidates.push_back(folder + "/libcuda.so.1");
                }
            }
        }
        std::string looked;
        for (const auto& candidate : candidates)
        {
            m_library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (m_library)
            {
                break;
            }
            const char* why = dlerror();
            looked += std::string(looked.empty() ? "" : "; ") + (why ? why : candidate);
        }
        if (!m_library && m_simulated)
        {
            m_unavailable = std::string(m_force_simulator ? "the PTX simulator" : "XCUDA_DEVICE=simulator, but the PTX simulator") +
                            " could not be opened (" + looked +
                            "); it is built beside the xcuda module (the xcuda_sim_driver target)";
            return;
        }
        if (!m_library)
        {
            std::string places;
            if ((!override_path || !*override_path) && !m_simulated)
            {
                for (const auto& folder : driver_folders())
                {
                    places += ", " + folder;
                }
            }
            m_unavailable = "no NVIDIA driver was found (" + looked + ")" +
                            (places.empty() ? "" : "; looked on the loader path" + places);
            may_fall_back("no NVIDIA driver was found", explicit_library, device);
            return;
        }
        Dl_info info;
        void* symbol = dlsym(m_library, "cuInit");
        std::string opened = symbol && dladdr(symbol, &info) && info.dli_fname ? info.dli_fname : candidates.front();
        const char* path = opened.c_str();

        std::string missing;
#define XCUDA_DRIVER_LOAD_REQUIRED(name)                                                                   \
    name = reinterpret_cast<decltype(name)>(dlsym(m_library, XCUDA_STRINGIFY_EXPANDED(name)));             \
    if (!name)                                                                                             \
    {                                                                                                      \
        missing += std::string(missing.empty() ? "" : ", ") + XCUDA_STRINGIFY_EXPANDED(name);              \
    }
#define XCUDA_DRIVER_LOAD_OPTIONAL(name) \
    name = reinterpret_cast<decltype(name)>(dlsym(m_library, XCUDA_STRINGIFY_EXPANDED(name)));
        XCUDA_DRIVER_REQUIRED(XCUDA_DRIVER_LOAD_REQUIRED)
        XCUDA_DRIVER_OPTIONAL(XCUDA_DRIVER_LOAD_OPTIONAL)
        XCUDA_DRIVER_TEXTURES(XCUDA_DRIVER_LOAD_OPTIONAL)
#undef XCUDA_DRIVER_LOAD_REQUIRED
#undef XCUDA_DRIVER_LOAD_OPTIONAL
        if (!missing.empty())
        {
            m_unavailable = std::string("the NVIDIA driver at ") + path +
                            " is too old for this build (missing " + missing +
                            "); install a driver that supports CUDA 13";
            return;
        }

        // This table's own names: cuda_error_name() asks instance(), which is still loading this table
        // (inside its call_once: asking it here waited for itself forever).
        auto name_of = [this](CUresult code) {
            const char* text = nullptr;
            return cuGetErrorName(code, &text) == CUDA_SUCCESS && text ? std::string(text) : "CUresult " + std::to_string(code);
        };
        auto description_of = [this](CUresult code) {
            const char* text = nullptr;
            return cuGetErrorString(code, &text) == CUDA_SUCCESS && text ? std::string(text) : std::string("unknown CUDA error");
        };
        if (m_simulated)
        {
            connect_launch_watch(m_library);
        }
        CUresult result = cuInit(0);
        switch (result)
        {
        case CUDA_SUCCESS:
            break;
        case CUDA_ERROR_STUB_LIBRARY:
            m_unavailable = std::string("no NVIDIA driver was found (") + path +
                            " is the CUDA toolkit's stub library, not a driver)";
            may_fall_back("no NVIDIA driver was found (only the CUDA toolkit's stub libcuda)", explicit_library, device);
            break;
        case CUDA_ERROR_NO_DEVICE:
            m_unavailable = "the NVIDIA driver found no CUDA device (CUDA_ERROR_NO_DEVICE)";
            may_fall_back("the NVIDIA driver found no CUDA device", explicit_library, device);
            break;
        case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
            m_unavailable = "the NVIDIA driver cannot be used: " + name_of(result) + ": " + description_of(result);
            break;
        default:
            m_error = name_of(result);
            m_error_code = result;
            break;
        }
    }

    void cuda_driver::may_fall_back(const std::string& reason, bool explicit_library, const std::string& device)
    {
        m_fallback_reason = reason;
        m_may_fall_back = !explicit_library && device.empty() && !m_force_gpu;
        if (!device.empty() && !m_force_gpu)
        {
            m_unavailable += "; XCUDA_DEVICE=" + device + " asks for a GPU, so xcuda does not fall back to the PTX simulator";
        }
    }

    const cuda_driver& cuda_driver::get_checked()
    {
        const cuda_driver* table = &instance();
        if (table->m_unavailable.empty() && table->m_error_code == 0)
        {
            return *table;  // (a working table get() had not seen published yet)
        }
        std::string no_simulator;
        if (!table->m_unavailable.empty() && table->m_may_fall_back)
        {
            table = &fall_back(no_simulator);
        }
        const cuda_driver& driver = *table;
        if (!driver.m_unavailable.empty())
        {
            throw cuda_unavailable_error(driver.m_unavailable +
                                         (no_simulator.empty() ? ""
                                                               : "; the PTX simulator, xcuda's fallback without a driver, "
                                                                 "could not be opened either: " + no_simulator));
        }
        if (driver.m_error_code != 0)
        {
            CUresult result = static_cast<CUresult>(driver.m_error_code);
            throw cuda_error("cuInit", driver.m_error_code, cuda_error_name(result),
                             cuda_error_description(result) +
                                 "\nTo run kernels without this driver, call xcuda.use_simulator() (or set "
                                 "XCUDA_DEVICE=simulator before xcuda starts): the PTX simulator, on the CPU "
                                 "(docs/simulator.md).");
        }
        return driver;
    }

    bool cuda_driver::available() noexcept
    {
        const cuda_driver& driver = instance();
        return driver.m_unavailable.empty() && driver.m_error_code == 0;
    }

    std::string cuda_driver::unavailable_reason()
    {
        return instance().m_unavailable;
    }

    namespace
    {
        // Names for the results that matter before the driver is loaded (or when it is not).
        const char* fallback_error_name(CUresult result)
        {
            switch (result)
            {
            case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
            case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
            case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
            case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
            case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
            case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
            default: return "CUDA_ERROR";
            }
        }
    }

    std::string cuda_error_name(CUresult result)
    {
        const cuda_driver& driver = cuda_driver::instance();
        const char* name = nullptr;
        if (driver.cuGetErrorName && driver.cuGetErrorName(result, &name) == CUDA_SUCCESS && name)
        {
            return name;
        }
        return fallback_error_name(result);
    }

    std::string cuda_error_description(CUresult result)
    {
        const cuda_driver& driver = cuda_driver::instance();
        const char* text = nullptr;
        if (driver.cuGetErrorString && driver.cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
        {
            return text;
        }
        return "unknown CUDA error";
    }

    bool is_kernel_fault(CUresult result) noexcept
    {
        switch (result)
        {
        case CUDA_ERROR_ILLEGAL_ADDRESS:
        case CUDA_ERROR_LAUNCH_TIMEOUT:
        case CUDA_ERROR_ASSERT:
        case CUDA_ERROR_HARDWARE_STACK_ERROR:
        case CUDA_ERROR_ILLEGAL_INSTRUCTION:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_INVALID_PC:
        case CUDA_ERROR_LAUNCH_FAILED:
        case CUDA_ERROR_ECC_UNCORRECTABLE:
            return true;
        default:
            return false;
        }
    }

    namespace
    {
        cuda_driver::fault_hook& fault_hook_slot()
        {
            static cuda_driver::fault_hook hook;
            return hook;
        }
    }

    void cuda_driver::set_fault_hook(fault_hook hook)
    {
        fault_hook_slot() = std::move(hook);
    }

    const cuda_driver::fault_hook& cuda_driver::current_fault_hook()
    {
        return fault_hook_slot();
    }

    namespace
    {
        cuda_driver::launch_watch& launch_watch_slot()
        {
            static cuda_driver::launch_watch watch;
            return watch;
        }

        // The simulator's watch (libxcuda-sim.so, sim_launches.cpp), called on the launching thread; a
        // throw must not cross the simulator's frames, and the watch set here handles its own errors.
        int simulated_launch_watch(void*, const char* kernel, unsigned long long done, unsigned long long blocks,
                                   double seconds, int finished)
        {
            const cuda_driver::launch_watch& watch = launch_watch_slot();
            try
            {
                return watch && watch({kernel, done, blocks, seconds, finished != 0}) ? 1 : 0;
            }
            catch (...)
            {
                return 0;
            }
        }
    }

    void cuda_driver::connect_launch_watch(void* library)
    {
        using set_watch = void (*)(int (*)(void*, const char*, unsigned long long, unsigned long long, double, int), void*);
        if (auto set = reinterpret_cast<set_watch>(dlsym(library, "xcuda_sim_set_watch")))
        {
            set(&simulated_launch_watch, nullptr);
        }
    }

    void cuda_driver::set_launch_watch(launch_watch watch)
    {
        launch_watch_slot() = std::move(watch);
    }

    void throw_cuda_error(CUresult result, const char* call)
    {
        if (result == CUDA_ERROR_TIMEOUT && cuda_driver::available() && cuda_driver::get().simulated())
        {
            // The simulator's launch stopped by its watch (an interrupt): KeyboardInterrupt, saying how far it got.
            throw interrupted_error(cuda_error_description(result));
        }
        if (is_kernel_fault(result) && cuda_driver::available() && cuda_driver::get().simulated())
        {
            // On the PTX simulator a fault loses nothing (device memory is host memory, the launch ran
            // synchronously): a plain cuda_error, not the hook's kernel_fault that declares the session lost.
            throw cuda_error(call, static_cast<int>(result), cuda_error_name(result),
                             cuda_error_description(result) +
                                 "\nOn the PTX simulator a fault is not sticky: device memory, modules and the session "
                                 "are intact, and the next launch runs.");
        }
        if (is_kernel_fault(result) && fault_hook_slot())
        {
            fault_hook_slot()(result, call);
        }
        throw cuda_error(call, static_cast<int>(result), cuda_error_name(result), cuda_error_description(result));
    }
}
