#include "device_contexts.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <vector>

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    device_contexts::device_contexts()
    {
        m_environment = device_environment::from_process();
        choose_device(-1);
    }

    void device_contexts::choose_device(int device_count)
    {
        try
        {
            m_choice = device_choice::choose(m_environment, m_slot, device_count);
            m_current = m_choice.ordinal();
            m_choice_error = nullptr;
        }
        catch (const usage_error&)
        {
            // Reported at the first GPU operation (ensure_device), not at import.
            m_choice_error = std::current_exception();
            m_current = -1;
        }
    }

    std::string device_contexts::choice_problem() const
    {
        if (!m_choice_error)
        {
            return "";
        }
        try
        {
            std::rethrow_exception(m_choice_error);
        }
        catch (const std::exception& e)
        {
            return e.what();
        }
    }

    void device_contexts::set_host_slot(host_slot slot)
    {
        m_slot = std::move(slot);
        if (!m_choice_error && m_choice.open_to_host_slot())
        {
            choose_device(m_discovered ? static_cast<int>(m_devices.size()) : -1);
        }
    }

    void device_contexts::settle_device_choice() noexcept
    {
        if (m_discovered || m_choice_error || !m_choice.depends_on_count() || !cuda_driver::available())
        {
            return;
        }
        try
        {
            discover();
        }
        catch (const std::exception&)
        {
            // No device: the choice stays as it is, and the first GPU operation says why.
        }
    }

    std::string device_contexts::gpu_uuid(int ordinal)
    {
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuDeviceGetUuid)
        {
            return "";
        }
        CUuuid uuid{};
        check(driver.cuDeviceGetUuid(&uuid, state(ordinal).device), "cuDeviceGetUuid");
        // nvidia-smi's form: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
        std::string text = "GPU-";
        char hex[3];
        for (int i = 0; i < 16; ++i)
        {
            std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
            text += hex;
            if (i == 3 || i == 5 || i == 7 || i == 9)
            {
                text += '-';
            }
        }
        return text;
    }

    int device_contexts::device_count()
    {
        const cuda_driver& driver = cuda_driver::get();
        int count = 0;
        check(driver.cuDeviceGetCount(&count), "cuDeviceGetCount");
        return count;
    }

    void device_contexts::discover()
    {
        if (m_discovered)
        {
            return;
        }
        std::lock_guard<std::recursive_mutex> lock(m_context_mutex);
        if (m_discovered)
        {
            return;
        }
        const cuda_driver& driver = cuda_driver::get();
        int count = device_count();
        if (count == 0)
        {
            throw cuda_unavailable_error("the NVIDIA driver found no CUDA device");
        }
        std::vector<device_state> devices(static_cast<std::size_t>(count));
        for (int i = 0; i < count; ++i)
        {
            check(driver.cuDeviceGet(&devices[static_cast<std::size_t>(i)].device, i), "cuDeviceGet");
        }
        m_devices = std::move(devices);
        m_discovered = true;
        if (driver.simulated() && m_choice.source() != device_source::call)
        {
            // The simulator (XCUDA_DEVICE, use_simulator() or get()'s fallback): its one device, and who chose it.
            m_choice = device_choice::on_simulator(driver.chosen_by());
            m_choice_error = nullptr;
            m_current = 0;
        }
        else if (!driver.simulated() && m_choice.source() == device_source::simulator)
        {
            choose_device(count);  // back on a driver (use_gpu): the environment chooses again
        }
        else if (!m_choice_error && m_choice.depends_on_count())
        {
            choose_device(count);  // a local rank or host slot, now modulo the device count
        }
    }

    device_contexts::device_state& device_contexts::state(int ordinal)
    {
        discover();
        int count = static_cast<int>(m_devices.size());
        if (ordinal < 0 || ordinal >= count)
        {
            bool from_env = ordinal == m_current && m_choice.source() == device_source::variable;
            throw cuda_unavailable_error("device " + std::to_string(ordinal) + " does not exist: this machine has " +
                                         std::to_string(count) + " CUDA device(s), numbered 0 to " +
                                         std::to_string(count - 1) +
                                         (from_env ? " (XCUDA_DEVICE=" + m_environment.requested +
                                                         " chose it: set it to one of them, or unset it)"
                                                   : " (set XCUDA_DEVICE or call xcuda.set_device(n))"));
        }
        return m_devices[static_cast<std::size_t>(ordinal)];
    }

    device_contexts::device_state& device_contexts::ensure_device(int ordinal)
    {
        device_state* made = nullptr;
        {
            std::lock_guard<std::recursive_mutex> lock(m_context_mutex);
            if (ordinal < 0 && m_choice_error)
            {
                std::rethrow_exception(m_choice_error);  // a malformed XCUDA_DEVICE or local rank, on any machine
            }
            if (ordinal == m_current && !m_discovered)
            {
                // The first GPU operation: a local rank or slot becomes final (modulo the count) here.
                discover();
                ordinal = m_current;
            }
            if (!m_lost.empty())
            {
                throw session_lost_error(m_lost);
            }
            device_state& d = state(ordinal);
            if (d.context)
            {
                return d;
            }
            const cuda_driver& driver = cuda_driver::get();
            CUcontext context = nullptr;
            check(driver.cuDevicePrimaryCtxRetain(&context, d.device), "cuDevicePrimaryCtxRetain");
            CUresult made_current = driver.cuCtxSetCurrent(context);
            if (made_current != CUDA_SUCCESS)
            {
                driver.cuDevicePrimaryCtxRelease(d.device);
                check(made_current, "cuCtxSetCurrent");
            }
            if (!d.have_properties)
            {
                try
                {
                    read_properties(ordinal, d);
                }
                catch (...)
                {
                    driver.cuDevicePrimaryCtxRelease(d.device);
                    throw;
                }
            }
            d.generation = m_next_generation++;
            d.context = context;
            made = &d;
            if (ordinal >= 0 && ordinal < live_devices)
            {
                m_live[ordinal].store(&d, std::memory_order_release);  // last: whoever sees it sees the rest
            }
        }
        // Outside the mutex: the hook may take the GIL, which another thread may hold while it waits here.
        if (m_context_hook)
        {
            m_context_hook(ordinal);
        }
        return *made;
    }

    void device_contexts::ensure()
    {
        ensure_device(m_current);
    }

    bool device_contexts::try_ensure() noexcept
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

    void device_contexts::check_alive(int ordinal, std::uint64_t generation, const char* what) const
    {
        if (alive(ordinal, generation))
        {
            return;
        }
        if (!m_lost.empty())
        {
            throw session_lost_error(std::string("this ") + what + " of device " + std::to_string(ordinal) +
                                     " was lost: " + m_lost);
        }
        throw session_closed_error(std::string("this ") + what +
                                   " belonged to a CUDA session that was closed; create a new one");
    }

    std::pair<std::size_t, std::size_t> device_contexts::memory_info(int ordinal)
    {
        make_current(ordinal);
        std::size_t free_bytes = 0;
        std::size_t total_bytes = 0;
        check(cuda_driver::get().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
        return {free_bytes, total_bytes};
    }

    void device_contexts::make_current_slow(int ordinal, device_state* known)
    {
        CUcontext context = known ? known->context : ensure_device(ordinal).context;
        const cuda_driver& driver = cuda_driver::get();
        CUcontext current = nullptr;
        // Other libraries (and other devices of this session) may have made another context current.
        if (driver.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != context)
        {
            check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent");
        }
    }

    bool device_contexts::active() const noexcept
    {
        return context() != nullptr;
    }

    bool device_contexts::make_current_if_alive(int ordinal, std::uint64_t generation) noexcept
    {
        if (!alive(ordinal, generation))
        {
            return false;
        }
        const cuda_driver& driver = cuda_driver::get();
        CUcontext owner = context(ordinal);
        CUcontext current = nullptr;
        if (driver.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != owner)
        {
            return driver.cuCtxSetCurrent(owner) == CUDA_SUCCESS;
        }
        return true;
    }

    CUcontext device_contexts::context() const noexcept
    {
        return context(m_current);
    }

    CUdevice device_contexts::device() const noexcept
    {
        return m_current >= 0 && static_cast<std::size_t>(m_current) < m_devices.size()
                   ? m_devices[static_cast<std::size_t>(m_current)].device
                   : 0;
    }

    void device_contexts::validate_ordinal(int ordinal)
    {
        if (ordinal < 0)
        {
            throw usage_error("device ordinal must be >= 0, got " + std::to_string(ordinal));
        }
        if (m_discovered || cuda_driver::available())
        {
            int count = m_discovered ? static_cast<int>(m_devices.size()) : device_count();
            if (ordinal >= count)
            {
                throw usage_error("device " + std::to_string(ordinal) + " does not exist: this machine has " +
                                            std::to_string(count) + " CUDA device(s), numbered 0 to " +
                                            std::to_string(count - 1));
            }
        }
    }

    void device_contexts::set_device(int ordinal)
    {
        validate_ordinal(ordinal);
        m_current = ordinal;
        m_choice = device_choice::by_call(ordinal);
        m_choice_error = nullptr;
    }

    void device_contexts::read_properties(int ordinal, device_state& d)
    {
        const cuda_driver& driver = cuda_driver::get();
        device_properties& p = d.properties;
        p = device_properties{};
        p.ordinal = ordinal;
        char name[256] = {0};
        check(driver.cuDeviceGetName(name, sizeof name - 1, d.device), "cuDeviceGetName");
        p.name = name;
        auto attribute = [&](CUdevice_attribute which) {
            int value = 0;
            check(driver.cuDeviceGetAttribute(&value, which, d.device), "cuDeviceGetAttribute");
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
        check(driver.cuDeviceTotalMem(&p.total_memory, d.device), "cuDeviceTotalMem");
        d.have_properties = true;
    }

    const device_properties& device_contexts::properties()
    {
        device_state* known = live(m_current);
        return known ? known->properties : ensure_device(m_current).properties;
    }

    bool device_contexts::forget_devices_if_unused()
    {
        std::lock_guard<std::recursive_mutex> lock(m_context_mutex);
        for (const device_state& d : m_devices)
        {
            if (d.context)
            {
                return false;
            }
        }
        forget_live();
        m_devices.clear();
        m_discovered = false;
        return true;
    }

    void device_contexts::forget_live() noexcept
    {
        for (auto& entry : m_live)
        {
            entry.store(nullptr, std::memory_order_release);
        }
    }

    const device_properties& device_contexts::properties(int ordinal)
    {
        device_state& d = state(ordinal);
        if (!d.have_properties)
        {
            read_properties(ordinal, d);
        }
        return d.properties;
    }

    int device_contexts::driver_version()
    {
        int version = 0;
        check(cuda_driver::get().cuDriverGetVersion(&version), "cuDriverGetVersion");
        return version;
    }

    std::string device_contexts::default_arch() noexcept
    {
        // Compiling does not fall back to the PTX simulator (cuda_driver::get): where no driver is found, a
        // cell compiles for compute_75 and the first launch, allocation or info() falls back, and says so.
        if (!m_discovered && !cuda_driver::available())
        {
            return "compute_75";
        }
        if (try_ensure())
        {
            return properties().arch();
        }
        return "compute_75";
    }

    bool device_contexts::can_access_peer(int a, int b)
    {
        if (a == b)
        {
            return true;
        }
        CUdevice da = state(a).device;
        CUdevice db = state(b).device;
        int can = 0;
        check(cuda_driver::get().cuDeviceCanAccessPeer(&can, da, db), "cuDeviceCanAccessPeer");
        return can != 0;
    }

    void device_contexts::enable_peer_access(int a, int b)
    {
        if (a == b || (peer_enabled(a, b) && peer_enabled(b, a)))
        {
            return;
        }
        if (a >= 64 || b >= 64)
        {
            throw usage_error("peer access is tracked for the first 64 devices only");
        }
        if (!can_access_peer(a, b) || !can_access_peer(b, a))
        {
            throw usage_error("devices " + std::to_string(a) + " and " + std::to_string(b) +
                                        " cannot access each other's memory (the driver reports no peer path "
                                        "between them); copy between them with xcuda.copy(dst, src) instead");
        }
        open_peer_path(a, b);
        m_peers[a] |= std::uint64_t{1} << b;
        m_peers[b] |= std::uint64_t{1} << a;
    }

    void device_contexts::open_peer_path(int a, int b)
    {
        if (a == b || a >= 64 || b >= 64 || (((m_peer_paths[a] >> b) & 1u) && ((m_peer_paths[b] >> a) & 1u)))
        {
            return;
        }
        const cuda_driver& driver = cuda_driver::get();
        for (auto [accessor, owner] : {std::pair<int, int>{a, b}, std::pair<int, int>{b, a}})
        {
            CUcontext peer = ensure_device(owner).context;
            make_current(accessor);
            CUresult result = driver.cuCtxEnablePeerAccess(peer, 0);
            if (result != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
            {
                check(result, "cuCtxEnablePeerAccess");
            }
            m_peer_paths[accessor] |= std::uint64_t{1} << owner;
        }
        make_current();
    }

    void device_contexts::release_contexts(const std::function<void(int)>& before_release) noexcept
    {
        const cuda_driver* driver = cuda_driver::available() ? &cuda_driver::get() : nullptr;
        for (std::size_t ordinal = 0; ordinal < m_devices.size(); ++ordinal)
        {
            device_state& d = m_devices[ordinal];
            if (!d.context || !driver)
            {
                continue;
            }
            driver->cuCtxSetCurrent(d.context);
            driver->cuCtxSynchronize();
            before_release(static_cast<int>(ordinal));
            driver->cuCtxSetCurrent(nullptr);
            driver->cuDevicePrimaryCtxRelease(d.device);
            d.context = nullptr;
            d.generation = 0;
        }
        std::fill(std::begin(m_peers), std::end(m_peers), 0);
        std::fill(std::begin(m_peer_paths), std::end(m_peer_paths), 0);
    }

    void device_contexts::abandon_contexts(std::string reason) noexcept
    {
        forget_live();
        for (device_state& d : m_devices)
        {
            d.context = nullptr;  // never released: the driver refuses; the process' exit frees it
        }
        std::fill(std::begin(m_peers), std::end(m_peers), 0);
        std::fill(std::begin(m_peer_paths), std::end(m_peer_paths), 0);
        m_lost = std::move(reason);
    }
}

namespace xcuda
{
    bool device_contexts::can_run(const std::string& arch) const noexcept
    {
        return can_run(arch, m_current);
    }

    bool device_contexts::can_run(const std::string& arch, int ordinal) const noexcept
    {
        if (!context(ordinal))
        {
            return false;
        }
        const device_properties& p = m_devices[static_cast<std::size_t>(ordinal)].properties;
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
        int device = p.cc_major * 10 + p.cc_minor;
        if (cubin)
        {
            return exact_only ? number == device : major == p.cc_major && minor <= p.cc_minor;
        }
        return number <= device;
    }
}

// Launch records.
namespace xcuda
{
    void device_contexts::record_launch(const std::string& kernel, const unsigned grid[3], const unsigned block[3],
                                        unsigned shared_mem, CUstream stream) noexcept
    {
        m_history.record(kernel, grid, block, shared_mem, stream, m_current);
    }
}
