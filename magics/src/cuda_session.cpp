#include "cuda_session.hpp"

#include <cctype>
#include <cstdlib>
#include <vector>

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    cuda_session& cuda_session::instance()
    {
        static cuda_session session;
        return session;
    }

    cuda_session::cuda_session()
    {
        if (const char* env = std::getenv("XCUDA_DEVICE"); env && *env)
        {
            char* end = nullptr;
            long value = std::strtol(env, &end, 10);
            // A bad value is reported at the first GPU operation (ensure), not at import.
            m_ordinal = (end && *end == '\0' && value >= 0) ? static_cast<int>(value) : -1;
        }
    }

    int cuda_session::device_count()
    {
        const cuda_driver& driver = cuda_driver::get();
        int count = 0;
        check(driver.cuDeviceGetCount(&count), "cuDeviceGetCount");
        return count;
    }

    void cuda_session::ensure()
    {
        if (m_context)
        {
            return;
        }
        const cuda_driver& driver = cuda_driver::get();
        int count = device_count();
        if (count == 0)
        {
            throw cuda_unavailable_error("the NVIDIA driver found no CUDA device");
        }
        if (m_ordinal < 0 || m_ordinal >= count)
        {
            const char* env = std::getenv("XCUDA_DEVICE");
            throw cuda_unavailable_error("device " + (m_ordinal < 0 ? std::string("'") + (env ? env : "") + "'"
                                                                     : std::to_string(m_ordinal)) +
                                         " does not exist: this machine has " + std::to_string(count) +
                                         " CUDA device(s), numbered 0 to " + std::to_string(count - 1) +
                                         " (set XCUDA_DEVICE or call xcuda.set_device(n))");
        }
        check(driver.cuDeviceGet(&m_device, m_ordinal), "cuDeviceGet");
        CUcontext context = nullptr;
        check(driver.cuDevicePrimaryCtxRetain(&context, m_device), "cuDevicePrimaryCtxRetain");
        CUresult made_current = driver.cuCtxSetCurrent(context);
        if (made_current != CUDA_SUCCESS)
        {
            driver.cuDevicePrimaryCtxRelease(m_device);
            check(made_current, "cuCtxSetCurrent");
        }
        m_context = context;
        read_properties();
    }

    bool cuda_session::try_ensure() noexcept
    {
        try
        {
            ensure();
            return true;
        }
        catch (const std::exception&)
        {
            return false;
        }
    }

    void cuda_session::make_current()
    {
        ensure();
        const cuda_driver& driver = cuda_driver::get();
        CUcontext current = nullptr;
        // Other libraries may have made another context current on this thread since our last call.
        if (driver.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != m_context)
        {
            check(driver.cuCtxSetCurrent(m_context), "cuCtxSetCurrent");
        }
    }

    void cuda_session::set_device(int ordinal)
    {
        if (ordinal < 0)
        {
            throw std::invalid_argument("device ordinal must be >= 0, got " + std::to_string(ordinal));
        }
        if (m_context && ordinal != m_ordinal)
        {
            if (resource_count() != 0)
            {
                throw std::runtime_error("cannot switch to device " + std::to_string(ordinal) +
                                         " while buffers or modules live on device " +
                                         std::to_string(m_ordinal) +
                                         "; call xcuda.set_device before the first GPU operation, or "
                                         "delete them first");
            }
            close();
        }
        m_ordinal = ordinal;
        if (cuda_driver::available())
        {
            int count = device_count();
            if (ordinal >= count)
            {
                m_ordinal = 0;
                throw std::invalid_argument("device " + std::to_string(ordinal) + " does not exist: this machine has " +
                                            std::to_string(count) + " CUDA device(s)");
            }
        }
    }

    void cuda_session::read_properties()
    {
        const cuda_driver& driver = cuda_driver::get();
        device_properties& p = m_properties;
        p = device_properties{};
        p.ordinal = m_ordinal;
        char name[256] = {0};
        check(driver.cuDeviceGetName(name, sizeof name - 1, m_device), "cuDeviceGetName");
        p.name = name;
        auto attribute = [&](CUdevice_attribute which) {
            int value = 0;
            check(driver.cuDeviceGetAttribute(&value, which, m_device), "cuDeviceGetAttribute");
            return value;
        };
        p.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        p.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        p.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        p.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
        p.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        p.max_block = {attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                       attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
        p.max_grid = {attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                      attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
        p.max_shared_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
        p.max_shared_per_block_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        p.max_registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
        p.max_threads_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
        p.max_blocks_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
        p.max_registers_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
        p.max_shared_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
        p.reserved_shared_per_block = attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
        p.memory_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
        p.memory_bus_width = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
        check(driver.cuDeviceTotalMem(&p.total_memory, m_device), "cuDeviceTotalMem");
    }

    const device_properties& cuda_session::properties()
    {
        ensure();
        return m_properties;
    }

    int cuda_session::driver_version()
    {
        int version = 0;
        check(cuda_driver::get().cuDriverGetVersion(&version), "cuDriverGetVersion");
        return version;
    }

    std::string cuda_session::default_arch() noexcept
    {
        if (try_ensure())
        {
            return m_properties.arch();
        }
        return "compute_75";
    }

    void cuda_session::close() noexcept
    {
        if (!m_context)
        {
            return;
        }
        std::vector<session_resource*> resources;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            resources.assign(m_resources.begin(), m_resources.end());
            m_resources.clear();
        }
        const cuda_driver& driver = cuda_driver::get();
        driver.cuCtxSetCurrent(m_context);
        driver.cuCtxSynchronize();
        for (session_resource* resource : resources)
        {
            resource->release();
        }
        driver.cuCtxSetCurrent(nullptr);
        driver.cuDevicePrimaryCtxRelease(m_device);
        m_context = nullptr;
        ++m_generation;
    }

    void cuda_session::register_resource(session_resource* resource)
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_resources.insert(resource);
    }

    void cuda_session::unregister_resource(session_resource* resource) noexcept
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_resources.erase(resource);
    }

    std::size_t cuda_session::resource_count() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_resources.size();
    }
}

namespace xcuda
{
    std::pair<std::size_t, std::size_t> cuda_session::resource_totals(const std::string& kind) const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::pair<std::size_t, std::size_t> totals{0, 0};
        for (const session_resource* resource : m_resources)
        {
            if (kind == resource->kind())
            {
                ++totals.first;
                totals.second += resource->bytes();
            }
        }
        return totals;
    }
}

namespace xcuda
{
    bool cuda_session::can_run(const std::string& arch) const noexcept
    {
        if (!m_context)
        {
            return false;
        }
        bool cubin = arch.rfind("sm_", 0) == 0;
        std::size_t digits = cubin ? 3 : (arch.rfind("compute_", 0) == 0 ? 8 : std::string::npos);
        if (digits == std::string::npos || arch.size() < digits + 2)
        {
            return false;
        }
        int number = std::atoi(arch.c_str() + digits);
        int major = number / 10;
        int minor = number % 10;
        bool exact_only = !std::isdigit(static_cast<unsigned char>(arch.back()));  // sm_90a, sm_100f
        int device = m_properties.cc_major * 10 + m_properties.cc_minor;
        if (cubin)
        {
            return exact_only ? number == device
                              : major == m_properties.cc_major && minor <= m_properties.cc_minor;
        }
        return number <= device;
    }
}
