// The fake's device and what belongs to no other part: cuInit, the one device (sm_90, 4 SMs) and
// its attributes, its primary context and the current context, peer access (none), the driver version
// (XCUDA_FAKE_DRIVER_VERSION), error names, NVRTC's private-table query, and xcuda_fake_counter, which
// the tests read the counters through.

#include "fake_state.hpp"

using namespace xcuda_fake;

namespace
{
    thread_local CUcontext t_current = nullptr;
    char g_context_storage[1];
    CUcontext g_context = reinterpret_cast<CUcontext>(g_context_storage);
}

extern "C" long xcuda_fake_counter(const char* name)
{
    lock held(g_mutex);
    std::string which = name;
    return which == "registered" ? g_count.registered : which == "registrations" ? g_count.registrations
         : which == "violations" ? g_count.violations : which == "launches" ? g_count.launches
         : which == "graph_launches" ? g_count.graph_launches : which == "node_updates" ? g_count.node_updates
         : which == "staged_copies" ? g_count.staged_copies : which == "registered_copies" ? g_count.registered_copies
         : which == "pageable_copies" ? g_count.pageable_copies : which == "allocations" ? g_count.allocations
         : which == "device_bytes" ? g_count.device_bytes : which == "attribute_sets" ? g_count.attribute_sets
         : which == "cooperative_launches" ? g_count.cooperative_launches
         : which == "buffer_launches" ? g_count.buffer_launches : -1;
}

// XCUDA_FAKE_CUINIT: the CUresult cuInit returns (unset: success), for the driver layer's choice between
// a driver's failure that falls back to the PTX simulator (100, no device) and one that stays an error.
CUresult CUDAAPI cuInit(unsigned int)
{
    const char* result = std::getenv("XCUDA_FAKE_CUINIT");
    return result && *result ? static_cast<CUresult>(std::atoi(result)) : CUDA_SUCCESS;
}
// NVRTC asks a libcuda.so.1 it finds in the process for its private tables; there are none here (without
// this symbol NVRTC crashes in a program that links the fake, such as tests/bench/launch_baseline.cpp).
CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid*)
{
    *table = nullptr;
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuDriverGetVersion(int* version)
{
    // XCUDA_FAKE_DRIVER_VERSION: the CUDA version this driver says it supports, as cuDriverGetVersion
    // writes it (12040 for 12.4); 13000 when unset.
    const char* text = std::getenv("XCUDA_FAKE_DRIVER_VERSION");
    *version = text && *text ? std::atoi(text) : 13000;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name)
{
    switch (error)
    {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: *name = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; break;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: *name = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
    default: *name = "CUDA_ERROR_UNKNOWN"; break;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char** text)
{
    *text = "an error reported by the fake driver";
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* count)
{
    *count = 1;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal)
{
    if (ordinal != 0)
    {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *device = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice)
{
    std::strncpy(name, "xcuda fake driver", static_cast<std::size_t>(length));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice)
{
    switch (attribute)
    {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = k_multiprocessors; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = k_shared_optin; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 233472; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 6144; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice)
{
    *bytes = std::size_t(16) << 30;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice)
{
    std::memset(uuid->bytes, 0x5a, sizeof uuid->bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice)
{
    *context = g_context;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceCanAccessPeer(int* can, CUdevice, CUdevice)
{
    *can = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext, unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context)
{
    t_current = context;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context)
{
    *context = t_current;
    return CUDA_SUCCESS;
}
