// The fake's memory: device memory is host memory (cuMemAlloc, capped by XCUDA_FAKE_DEVICE_MB), page-locked
// memory (cuMemAllocHost) and registered ranges (cuMemHostRegister: overlaps refused, memory unmapped while
// registered counted as a violation), the copies (memmove; on a capturing stream recorded as graph nodes
// instead, and counted by the kind of their host side), the memsets, and the pointer attributes.

#include "fake_state.hpp"

using namespace xcuda_fake;

namespace
{
    // XCUDA_FAKE_DEVICE_MB: the device memory cuMemAlloc may hand out in all (unset: as much as the host
    // gives), so that running out of device memory can be tested.
    long device_limit()
    {
        const char* text = std::getenv("XCUDA_FAKE_DEVICE_MB");
        return text && *text ? std::atol(text) << 20 : -1;
    }

    bool mapped(const void* begin, std::size_t bytes)
    {
        long page = ::sysconf(_SC_PAGESIZE);
        auto first = reinterpret_cast<std::uintptr_t>(begin) / page * page;
        auto last = reinterpret_cast<std::uintptr_t>(begin) + bytes;
        // msync fails with ENOMEM on pages that are not mapped.
        return ::msync(reinterpret_cast<void*>(first), last - first, MS_ASYNC) == 0;
    }

    void count_host_side(const void* host)
    {
        const range* r = find_range(host);
        if (r && r->what == kind::pinned)
        {
            ++g_count.staged_copies;
        }
        else if (r && r->what == kind::registered)
        {
            ++g_count.registered_copies;
        }
        else
        {
            ++g_count.pageable_copies;
        }
    }

    CUresult copy(void* destination, const void* source, std::size_t bytes, CUstream handle)
    {
        if (capturing(handle))
        {
            record(handle, new node{false, nullptr, 0, {}, destination, source, bytes});
            return CUDA_SUCCESS;
        }
        std::memmove(destination, source, bytes);
        return CUDA_SUCCESS;
    }
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr to, CUcontext, CUdeviceptr from, CUcontext, size_t bytes, CUstream s)
{
    lock held(g_mutex);
    return copy(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes, s);
}
CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total)
{
    *free_bytes = std::size_t(8) << 30;
    *total = std::size_t(16) << 30;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, size_t bytes)
{
    lock held(g_mutex);
    long limit = device_limit();
    if (limit >= 0 && g_count.device_bytes + static_cast<long>(bytes) > limit)
    {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!memory)
    {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_ranges[reinterpret_cast<std::uintptr_t>(memory)] = range{bytes, kind::device};
    *pointer = reinterpret_cast<CUdeviceptr>(memory);
    ++g_count.allocations;
    g_count.device_bytes += static_cast<long>(bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr pointer)
{
    lock held(g_mutex);
    auto found = g_ranges.find(static_cast<std::uintptr_t>(pointer));
    if (found != g_ranges.end() && found->second.what == kind::device)
    {
        g_count.device_bytes -= static_cast<long>(found->second.bytes);
    }
    g_ranges.erase(static_cast<std::uintptr_t>(pointer));
    std::free(reinterpret_cast<void*>(pointer));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocHost(void** pointer, size_t bytes)
{
    lock held(g_mutex);
    void* memory = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!memory)
    {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_ranges[reinterpret_cast<std::uintptr_t>(memory)] = range{bytes, kind::pinned};
    *pointer = memory;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeHost(void* pointer)
{
    lock held(g_mutex);
    g_ranges.erase(reinterpret_cast<std::uintptr_t>(pointer));
    std::free(pointer);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostRegister(void* pointer, size_t bytes, unsigned int)
{
    lock held(g_mutex);
    auto start = reinterpret_cast<std::uintptr_t>(pointer);
    auto it = g_ranges.lower_bound(start);
    if (it != g_ranges.end() && it->first < start + bytes)
    {
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (it != g_ranges.begin() && std::prev(it)->first + std::prev(it)->second.bytes > start)
    {
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (bytes == 0 || !mapped(pointer, bytes))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    g_ranges[start] = range{bytes, kind::registered};
    ++g_count.registered;
    ++g_count.registrations;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostUnregister(void* pointer)
{
    lock held(g_mutex);
    auto it = g_ranges.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (it == g_ranges.end() || it->second.what != kind::registered)
    {
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    if (!mapped(pointer, it->second.bytes))
    {
        ++g_count.violations;  // freed (unmapped) while registered
    }
    g_ranges.erase(it);
    --g_count.registered;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr to, const void* from, size_t bytes)
{
    lock held(g_mutex);
    count_host_side(from);
    if (!device_span_ok(reinterpret_cast<void*>(to), bytes, "cuMemcpyHtoD"))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::memmove(reinterpret_cast<void*>(to), from, bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* to, CUdeviceptr from, size_t bytes)
{
    lock held(g_mutex);
    count_host_side(to);
    if (!device_span_ok(reinterpret_cast<const void*>(from), bytes, "cuMemcpyDtoH"))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::memmove(to, reinterpret_cast<const void*>(from), bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr to, const void* from, size_t bytes, CUstream s)
{
    lock held(g_mutex);
    count_host_side(from);
    if (!device_span_ok(reinterpret_cast<void*>(to), bytes, "cuMemcpyHtoDAsync"))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return copy(reinterpret_cast<void*>(to), from, bytes, s);
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* to, CUdeviceptr from, size_t bytes, CUstream s)
{
    lock held(g_mutex);
    count_host_side(to);
    if (!device_span_ok(reinterpret_cast<const void*>(from), bytes, "cuMemcpyDtoHAsync"))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return copy(to, reinterpret_cast<const void*>(from), bytes, s);
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream s)
{
    lock held(g_mutex);
    if (!device_span_ok(reinterpret_cast<void*>(to), bytes, "cuMemcpyDtoDAsync's destination") ||
        !device_span_ok(reinterpret_cast<const void*>(from), bytes, "cuMemcpyDtoDAsync's source"))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return copy(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes, s);
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr to, unsigned char value, size_t bytes, CUstream s)
{
    lock held(g_mutex);
    if (capturing(s))
    {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // not modelled: xcuda captures no memsets
    }
    if (!device_span_ok(reinterpret_cast<void*>(to), bytes, "cuMemsetD8Async"))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::memset(reinterpret_cast<void*>(to), value, bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr to, unsigned char value, size_t bytes)
{
    lock held(g_mutex);
    if (!device_span_ok(reinterpret_cast<void*>(to), bytes, "cuMemsetD8"))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::memset(reinterpret_cast<void*>(to), value, bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr pointer)
{
    lock held(g_mutex);
    if (attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const range* r = find_range(reinterpret_cast<const void*>(pointer));
    if (!r)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *static_cast<unsigned int*>(data) = r->what == kind::device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    return CUDA_SUCCESS;
}
// The plural form answers for memory it does not know too (type 0), as the real driver does.
CUresult CUDAAPI cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes, void** data,
                                        CUdeviceptr pointer)
{
    lock held(g_mutex);
    const range* r = find_range(reinterpret_cast<const void*>(pointer));
    for (unsigned int i = 0; i < count; ++i)
    {
        if (attributes[i] != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        {
            return CUDA_ERROR_INVALID_VALUE;
        }
        *static_cast<unsigned int*>(data[i]) = !r ? 0u : r->what == kind::device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    }
    return CUDA_SUCCESS;
}
