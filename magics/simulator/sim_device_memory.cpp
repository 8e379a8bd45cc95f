// libxcuda-sim.so's device memory: host memory (aligned_alloc) recorded in g_memory, on a device whose size
// comes from what the host can hold, so that a program that fills the device gets CUDA_ERROR_OUT_OF_MEMORY
// from cuMemAlloc, never the host's OOM killer (which would end the kernel process and every variable).
//
// The size, fixed at the first question: XCUDA_SIM_MEMORY when set (bytes, or with K, M, G: "512M"), else
// half of the host's memory (the smaller of its physical memory and the cgroup's limit: a container's), so
// that the device's data and a host copy of it both fit, and at most what the host had available
// (MemAvailable) less 1 GiB when the device was first asked about. An allocation is refused past that size,
// and past what the host has available now less the same margin; cuMemGetInfo answers the smaller of the two.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "sim_driver_state.hpp"

using namespace xcuda_sim;

namespace
{
    constexpr std::size_t k_margin = std::size_t(1) << 30;
    constexpr std::size_t k_floor = std::size_t(64) << 20;
    std::size_t g_device_bytes = 0;  // given out by cuMemAlloc and not freed

    std::string gib(std::size_t bytes)
    {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
        return text;
    }

    // A /proc/meminfo field in bytes ("MemAvailable:  123 kB"), or none.
    std::optional<std::size_t> meminfo(const char* field)
    {
        std::ifstream in("/proc/meminfo");
        std::string name;
        std::size_t kib = 0;
        std::string unit;
        while (in >> name >> kib >> unit)
        {
            if (name == field)
            {
                return kib * 1024;
            }
        }
        return std::nullopt;
    }

    // The host's memory: physical, or the cgroup's limit where smaller (v2 memory.max, v1 limit_in_bytes).
    std::size_t host_memory()
    {
        std::size_t physical = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
        {
            std::ifstream in(path);
            unsigned long long limit = 0;
            if (in >> limit && limit > 0 && limit < physical)
            {
                physical = static_cast<std::size_t>(limit);
            }
        }
        return physical;
    }

    // XCUDA_SIM_MEMORY as bytes; throws a message for a value that is not a size.
    std::optional<std::size_t> configured_size()
    {
        const char* text = std::getenv("XCUDA_SIM_MEMORY");
        if (!text || !*text)
        {
            return std::nullopt;
        }
        char* end = nullptr;
        unsigned long long value = std::strtoull(text, &end, 10);
        unsigned shift = 0;
        if (end && *end)
        {
            const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(*end)));
            shift = suffix == 'K' ? 10 : suffix == 'M' ? 20 : suffix == 'G' ? 30 : 64;
            ++end;
        }
        if (end == text || shift == 64 || (end && *end) || value == 0 || value > (~0ull >> shift))
        {
            throw std::string("XCUDA_SIM_MEMORY='") + text +
                "' is not a size: write the simulated device's memory in bytes, or with K, M or G (512M, 4G)";
        }
        return static_cast<std::size_t>(value << shift);
    }

    struct device_size
    {
        std::size_t bytes = 0;
        std::string why;    // how it was chosen, for the out-of-memory message
        std::string error;  // XCUDA_SIM_MEMORY unreadable
    };

    const device_size& size()
    {
        static const device_size chosen = [] {
            device_size d;
            try
            {
                if (std::optional<std::size_t> set = configured_size())
                {
                    d.bytes = *set;
                    d.why = "XCUDA_SIM_MEMORY";
                    return d;
                }
            }
            catch (const std::string& error)
            {
                d.error = error;
                return d;
            }
            std::size_t host = host_memory();
            d.bytes = host / 2;
            d.why = "half of this host's " + gib(host) + ", so that the device's data and a host copy of it both fit";
            std::optional<std::size_t> available = meminfo("MemAvailable:");
            if (available && *available - std::min(*available, k_margin) < d.bytes)
            {
                d.bytes = *available - std::min(*available, k_margin);
                d.why = "what the host had available when the simulator started (" + gib(*available) + ") less 1 GiB";
            }
            d.bytes = std::max(d.bytes, k_floor);
            return d;
        }();
        return chosen;
    }

    // What the host has available now less the margin, or unlimited where /proc/meminfo says nothing.
    std::size_t host_available_now()
    {
        std::optional<std::size_t> available = meminfo("MemAvailable:");
        return available ? *available - std::min(*available, k_margin) : ~std::size_t(0);
    }
}

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice)
{
    lock held(g_mutex);
    if (!size().error.empty())
    {
        return failed(CUDA_ERROR_INVALID_VALUE, size().error);
    }
    *bytes = size().bytes;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total)
{
    lock held(g_mutex);
    if (!size().error.empty())
    {
        return failed(CUDA_ERROR_INVALID_VALUE, size().error);
    }
    *total = size().bytes;
    std::size_t left = g_device_bytes < *total ? *total - g_device_bytes : 0;
    *free_bytes = std::min(left, host_available_now());
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, size_t bytes)
{
    lock held(g_mutex);
    const device_size& device = size();
    if (!device.error.empty())
    {
        return failed(CUDA_ERROR_INVALID_VALUE, device.error);
    }
    const std::size_t left = g_device_bytes < device.bytes ? device.bytes - g_device_bytes : 0;
    const std::string asked = "cuMemAlloc of " + std::to_string(bytes) + " bytes (" + gib(bytes) + ")";
    if (bytes > left)
    {
        return failed(CUDA_ERROR_OUT_OF_MEMORY,
                      asked + ": the simulated device has " + gib(device.bytes) + " (" + device.why + "), and " +
                          gib(left) + " of it is free; free device arrays, or set XCUDA_SIM_MEMORY before the first "
                          "GPU use to size the device (the host must hold it: the simulator's device memory is host memory)");
    }
    if (std::size_t now = host_available_now(); bytes > now)
    {
        return failed(CUDA_ERROR_OUT_OF_MEMORY, asked + ": the host has only " + gib(now) +
                                                    " available now (less a 1 GiB margin), and the simulator's device "
                                                    "memory is host memory; free memory on the host or on the device");
    }
    void* memory = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
    if (!memory)
    {
        return failed(CUDA_ERROR_OUT_OF_MEMORY, asked + ": the host refused the memory for the simulated device");
    }
    g_memory.add(reinterpret_cast<std::uintptr_t>(memory), bytes, "device allocation");
    if (watch_writes())
    {
        g_written.track(reinterpret_cast<std::uintptr_t>(memory), bytes);  // the global initcheck: nothing written yet
    }
    g_device_bytes += bytes;
    *pointer = reinterpret_cast<CUdeviceptr>(memory);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr pointer)
{
    lock held(g_mutex);
    const sim_memory::allocation* found = g_memory.containing(static_cast<std::uintptr_t>(pointer));
    std::size_t bytes = found && found->start == static_cast<std::uintptr_t>(pointer) ? found->bytes : 0;
    if (!g_memory.remove(static_cast<std::uintptr_t>(pointer)))
    {
        return failed(CUDA_ERROR_INVALID_VALUE, "cuMemFree of an address that is not a device allocation");
    }
    g_written.forget(static_cast<std::uintptr_t>(pointer));
    std::free(reinterpret_cast<void*>(pointer));
    g_device_bytes -= std::min(bytes, g_device_bytes);
    return CUDA_SUCCESS;
}
