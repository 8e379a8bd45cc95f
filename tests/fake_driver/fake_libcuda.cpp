// A stand-in for libcuda.so.1 on machines without a GPU: a test double of the driver API, so that the
// host-side logic of xcuda's transfers and CUDA graphs runs in CPU tests (tests/test_fake_driver.py,
// which points XCUDA_LIBCUDA at this library in a child process). Not a GPU emulator.
//
// What it models, and nothing more:
//   - one device (sm_90) with its primary context; device memory is host memory (so copies are memcpy);
//   - page-locked memory: cuMemAllocHost'd and cuMemHostRegister'ed ranges report
//     CU_MEMORYTYPE_HOST; registering a range that overlaps a registered one fails as the driver does;
//     unregistering checks that the pages are still mapped: memory freed while registered (the bug a
//     registration cache must never have) counts as a violation (xcuda_fake_counter("violations"));
//   - device memory: allocations are counted, and XCUDA_FAKE_DEVICE_MB caps them (out of memory beyond);
//   - the driver version: cuDriverGetVersion reports XCUDA_FAKE_DRIVER_VERSION (12040 for 12.4; unset: 13000);
//   - module variables: cuModuleGetGlobal finds a module's __constant__/__device__ variables in its image
//     (the CUBIN's symbol table, or the PTX) and gives each zeroed memory of its size;
//   - kernels: a few known names run a host implementation (saxpy, chain_step, fill, many); any other
//     launches and does nothing. Work runs at once: streams have no asynchrony to observe;
//   - stream capture: work on a capturing stream is recorded as graph nodes instead of run; replays run
//     the nodes in order; kernel nodes take new parameters; synchronizing a capturing stream or the
//     context fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, as on a GPU.
//   - waits: xcuda_fake_set_busy(1) makes stream and event queries answer CUDA_ERROR_NOT_READY (work
//     that never ends, for the interrupt tests of session_waits) until xcuda_fake_set_busy(0);
//     xcuda_fake_print_at_sync(text) has the next synchronising call write text to stdout, as the driver
//     prints device printf output there.
// Every entry point has the versioned name the headers map it to (cuMemAlloc -> cuMemAlloc_v2). Besides
// xcuda's table, the few calls tests/bench/launch_baseline.cpp adds, so that its transfers and graphs
// modes can be checked here too (LD_LIBRARY_PATH at a folder with libcuda.so.1 -> this library).

#include <cuda.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace
{
    std::recursive_mutex g_mutex;
    using lock = std::lock_guard<std::recursive_mutex>;

    struct counters
    {
        long registered = 0;       // ranges registered now
        long registrations = 0;    // cuMemHostRegister successes
        long violations = 0;       // memory unmapped while registered; device memory touched outside an allocation
        long launches = 0;         // kernels run (eagerly or in replays)
        long graph_launches = 0;
        long node_updates = 0;
        long staged_copies = 0;    // copies whose host side was cuMemAllocHost'd memory
        long registered_copies = 0;  // copies whose host side was a registered range
        long pageable_copies = 0;  // copies whose host side was neither
        long allocations = 0;      // cuMemAlloc successes
        long device_bytes = 0;     // device memory allocated now
        long attribute_sets = 0;   // cuFuncSetAttribute successes
        long cooperative_launches = 0;  // cuLaunchCooperativeKernel successes
    } g_count;

    // The device's opt-in maximum of shared memory per block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    // and what cuOccupancyMaxActiveBlocksPerMultiprocessor answers: with 4 SMs a cooperative grid holds 32 blocks.
    constexpr int k_shared_optin = 232448;
    constexpr int k_blocks_per_sm = 8;
    constexpr int k_multiprocessors = 4;

    // XCUDA_FAKE_DEVICE_MB: the device memory cuMemAlloc may hand out in all (unset: as much as the host
    // gives), so that running out of device memory can be tested.
    long device_limit()
    {
        const char* text = std::getenv("XCUDA_FAKE_DEVICE_MB");
        return text && *text ? std::atol(text) << 20 : -1;
    }

    enum class kind
    {
        device,
        pinned,
        registered
    };
    struct range
    {
        std::size_t bytes = 0;
        kind what = kind::device;
    };
    std::map<std::uintptr_t, range> g_ranges;  // by start

    const range* find_range(const void* pointer, std::uintptr_t* start = nullptr)
    {
        auto address = reinterpret_cast<std::uintptr_t>(pointer);
        auto it = g_ranges.upper_bound(address);
        if (it == g_ranges.begin())
        {
            return nullptr;
        }
        --it;
        if (address < it->first + it->second.bytes)
        {
            if (start)
            {
                *start = it->first;
            }
            return &it->second;
        }
        return nullptr;
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

    // Device memory touched by a copy, memset or known kernel must lie inside one cuMemAlloc'd range, as a
    // GPU requires (a copy past an allocation is CUDA_ERROR_INVALID_VALUE there). Here device memory is
    // host memory, so an overrun would corrupt the heap and abort far from its cause: it is refused
    // instead, counted as a violation and named on stderr.
    bool device_span_ok(const void* pointer, std::size_t bytes, const char* what)
    {
        std::uintptr_t start = 0;
        const range* r = find_range(pointer, &start);
        auto begin = reinterpret_cast<std::uintptr_t>(pointer);
        if (r && r->what == kind::device && begin + bytes <= start + r->bytes)
        {
            return true;
        }
        ++g_count.violations;
        if (r && r->what == kind::device)
        {
            std::fprintf(stderr, "xcuda fake driver: %s: %zu bytes at offset %zu of a %zu-byte allocation run past its end\n",
                         what, bytes, static_cast<std::size_t>(begin - start), r->bytes);
        }
        else
        {
            std::fprintf(stderr, "xcuda fake driver: %s: %zu bytes at %p, which is not device memory\n", what, bytes,
                         pointer);
        }
        return false;
    }

    // ---- kernels ----
    struct function
    {
        std::string name;
        std::vector<std::size_t> sizes;  // parameter sizes, for the known kernels
        std::map<int, int> attributes;   // what cuFuncSetAttribute set
    };

    std::vector<std::size_t> known_sizes(const std::string& name)
    {
        if (name == "saxpy")
        {
            return {4, 8, 8, 8, 8};  // float a, const float* x, const float* y, float* out, size_t n
        }
        if (name == "chain_step")
        {
            return {8, 4, 4};  // float* x, float a, unsigned n: x[i] = x[i] * a + 1
        }
        if (name == "fill")
        {
            return {8, 4, 4};  // float* x, float value, unsigned n
        }
        if (name == "many")
        {
            // tests/bench's 16 float scalars and 16 pointers: p15[0] = the scalars + p0[0] .. p14[0]
            std::vector<std::size_t> sizes(16, 4);
            sizes.resize(32, 8);
            return sizes;
        }
        return {};
    }

    template <class T>
    T arg(const std::vector<std::vector<char>>& params, std::size_t i)
    {
        T value;
        std::memcpy(&value, params[i].data(), sizeof value);
        return value;
    }

    void run_kernel(const function& f, unsigned threads, const std::vector<std::vector<char>>& params)
    {
        ++g_count.launches;
        if (f.name == "saxpy")
        {
            float a = arg<float>(params, 0);
            auto* x = arg<const float*>(params, 1);
            auto* y = arg<const float*>(params, 2);
            auto* out = arg<float*>(params, 3);
            auto n = arg<std::size_t>(params, 4);
            std::size_t touched = std::min<std::size_t>(n, threads) * sizeof(float);
            if (!device_span_ok(x, touched, "saxpy's x") || !device_span_ok(y, touched, "saxpy's y") ||
                !device_span_ok(out, touched, "saxpy's out"))
            {
                return;
            }
            for (std::size_t i = 0; i < n && i < threads; ++i)
            {
                out[i] = a * x[i] + y[i];
            }
        }
        else if (f.name == "many")
        {
            float sum = 0;
            for (std::size_t k = 0; k < 16; ++k)
            {
                sum += arg<float>(params, k);
            }
            for (std::size_t k = 16; k < 31; ++k)
            {
                sum += arg<const float*>(params, k)[0];
            }
            if (threads > 0)
            {
                arg<float*>(params, 31)[0] = sum;
            }
        }
        else if (f.name == "chain_step" || f.name == "fill")
        {
            auto* x = arg<float*>(params, 0);
            float a = arg<float>(params, 1);
            auto n = arg<unsigned>(params, 2);
            if (!device_span_ok(x, std::min(n, threads) * sizeof(float), f.name.c_str()))
            {
                return;
            }
            for (unsigned i = 0; i < n && i < threads; ++i)
            {
                x[i] = f.name == "fill" ? a : x[i] * a + 1.0f;
            }
        }
    }

    std::vector<std::vector<char>> copy_params(const function& f, void** params)
    {
        std::vector<std::vector<char>> copied;
        for (std::size_t i = 0; params && i < f.sizes.size(); ++i)
        {
            const char* value = static_cast<const char*>(params[i]);
            copied.emplace_back(value, value + f.sizes[i]);
        }
        return copied;
    }

    // ---- streams and graphs ----
    struct node
    {
        bool is_kernel = true;
        function* f = nullptr;
        unsigned threads = 0;
        std::vector<std::vector<char>> params;
        void* destination = nullptr;
        const void* source = nullptr;
        std::size_t bytes = 0;
    };
    struct graph
    {
        std::vector<node*> nodes;
        ~graph()
        {
            for (node* n : nodes)
            {
                delete n;
            }
        }
    };
    struct graph_exec
    {
        std::vector<node*> originals;
        std::vector<node> nodes;
    };
    struct stream
    {
        bool capturing = false;
        bool invalidated = false;
        graph* captured = nullptr;
    };
    std::vector<stream*> g_streams;

    stream* as_stream(CUstream handle)
    {
        // The legacy and per-thread default streams (0, 1, 2) never capture here.
        auto value = reinterpret_cast<std::uintptr_t>(handle);
        return value <= 2 ? nullptr : reinterpret_cast<stream*>(handle);
    }

    bool capturing(CUstream handle)
    {
        stream* s = as_stream(handle);
        return s && s->capturing;
    }

    void record(CUstream handle, node* n)
    {
        stream* s = as_stream(handle);
        s->captured->nodes.push_back(n);
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

    void run(const node& n)
    {
        if (n.is_kernel)
        {
            run_kernel(*n.f, n.threads, n.params);
        }
        else
        {
            std::memmove(n.destination, n.source, n.bytes);
        }
    }

    CUresult refuse_while_any_capture()
    {
        bool refused = false;
        for (stream* s : g_streams)
        {
            if (s->capturing)
            {
                s->invalidated = true;
                refused = true;
            }
        }
        return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
    }

    thread_local CUcontext t_current = nullptr;
    char g_context_storage[1];
    CUcontext g_context = reinterpret_cast<CUcontext>(g_context_storage);
}

namespace
{
    bool g_busy = false;       // queries answer CUDA_ERROR_NOT_READY (g_mutex)
    std::string g_sync_print;  // written to stdout by the next synchronising call (g_mutex)

    // At a synchronising call, with g_mutex held: what xcuda_fake_print_at_sync asked for, once.
    void print_at_sync()
    {
        if (!g_sync_print.empty())
        {
            std::fputs(g_sync_print.c_str(), stdout);
            std::fflush(stdout);
            g_sync_print.clear();
        }
    }
}

extern "C" void xcuda_fake_set_busy(int busy)
{
    lock held(g_mutex);
    g_busy = busy != 0;
}

extern "C" void xcuda_fake_print_at_sync(const char* text)
{
    lock held(g_mutex);
    g_sync_print = text;
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
         : which == "cooperative_launches" ? g_count.cooperative_launches : -1;
}

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
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
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr to, CUcontext, CUdeviceptr from, CUcontext, size_t bytes, CUstream s)
{
    lock held(g_mutex);
    return copy(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes, s);
}
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
CUresult CUDAAPI cuCtxSynchronize()
{
    lock held(g_mutex);
    CUresult refused = refuse_while_any_capture();
    if (refused == CUDA_SUCCESS)
    {
        print_at_sync();
    }
    return refused;
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
namespace
{
    // A loaded module: its __constant__/__device__ variables, found by name in the image (a CUBIN's ELF
    // symbol table, or a PTX text's .const/.global declarations) and given zeroed host memory of their size
    // at the first cuModuleGetGlobal (initializers are not read).
    struct fake_module
    {
        std::map<std::string, std::size_t> sizes;
        std::map<std::string, void*> storage;
    };

    template <class T>
    T read_at(const unsigned char* image, std::size_t offset)
    {
        T value;
        std::memcpy(&value, image + offset, sizeof value);
        return value;
    }

    void read_elf_symbols(const unsigned char* image, fake_module& m)
    {
        auto shoff = read_at<std::uint64_t>(image, 0x28);
        auto shentsize = read_at<std::uint16_t>(image, 0x3a);
        auto shnum = read_at<std::uint16_t>(image, 0x3c);
        for (unsigned i = 0; i < shnum; ++i)
        {
            std::size_t header = shoff + i * shentsize;
            if (read_at<std::uint32_t>(image, header + 4) != 2)  // SHT_SYMTAB
                continue;
            auto offset = read_at<std::uint64_t>(image, header + 0x18);
            auto size = read_at<std::uint64_t>(image, header + 0x20);
            auto link = read_at<std::uint32_t>(image, header + 0x28);
            auto strings = read_at<std::uint64_t>(image, shoff + link * shentsize + 0x18);
            for (std::uint64_t at = offset; at + 24 <= offset + size; at += 24)
            {
                unsigned char type = read_at<unsigned char>(image, at + 4) & 0xf;
                if (type != 1)  // STT_OBJECT
                    continue;
                const char* name = reinterpret_cast<const char*>(image + strings + read_at<std::uint32_t>(image, at));
                m.sizes[name] = read_at<std::uint64_t>(image, at + 16);
            }
        }
    }

    // `.visible .const .align 4 .b8 c_Kernel[68];`, `.global .f32 x;`, `.global .align 4 .u32 t[4] = {...};`
    void read_ptx_variables(const std::string& text, fake_module& m)
    {
        std::size_t line_start = 0;
        while (line_start < text.size())
        {
            std::size_t end = text.find('\n', line_start);
            std::string line = text.substr(line_start, end == std::string::npos ? std::string::npos : end - line_start);
            line_start = end == std::string::npos ? text.size() : end + 1;
            if (line.find(".const ") == std::string::npos && line.find(".global ") == std::string::npos)
                continue;
            std::size_t width = 0;
            for (const char* type : {".b8 ", ".u8 ", ".s8 ", ".b16 ", ".u16 ", ".s16 ", ".f16 ", ".b32 ", ".u32 ", ".s32 ",
                                     ".f32 ", ".b64 ", ".u64 ", ".s64 ", ".f64 "})
            {
                std::size_t at = line.find(type);
                if (at == std::string::npos)
                    continue;
                std::string t = type;
                width = std::stoul(t.substr(2, t.size() - 3)) / 8;
                std::size_t name_start = at + t.size();
                std::size_t name_end = line.find_first_of("[;= ", name_start);
                std::string name = line.substr(name_start, name_end - name_start);
                std::size_t count = 1;
                while (name_end != std::string::npos && name_end < line.size() && line[name_end] == '[')
                {
                    std::size_t close = line.find(']', name_end);
                    count *= std::stoul(line.substr(name_end + 1, close - name_end - 1));
                    name_end = close + 1;
                }
                m.sizes[name] = width * count;
                break;
            }
        }
    }
}
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int, CUjit_option*, void**)
{
    lock held(g_mutex);
    auto* loaded = new fake_module;
    const auto* bytes = static_cast<const unsigned char*>(image);
    if (bytes && std::memcmp(bytes, "\x7f" "ELF", 4) == 0)
    {
        read_elf_symbols(bytes, *loaded);
    }
    else if (bytes)
    {
        read_ptx_variables(static_cast<const char*>(image), *loaded);
    }
    *module = reinterpret_cast<CUmodule>(loaded);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* pointer, size_t* bytes, CUmodule handle, const char* name)
{
    lock held(g_mutex);
    auto* m = reinterpret_cast<fake_module*>(handle);
    auto size = m->sizes.find(name);
    if (size == m->sizes.end())
    {
        return CUDA_ERROR_NOT_FOUND;
    }
    void*& storage = m->storage[name];
    if (!storage)
    {
        storage = std::aligned_alloc(256, (size->second + 255) / 256 * 256);
        std::memset(storage, 0, size->second);
        g_ranges[reinterpret_cast<std::uintptr_t>(storage)] = range{size->second, kind::device};
    }
    if (pointer)
        *pointer = reinterpret_cast<CUdeviceptr>(storage);
    if (bytes)
        *bytes = size->second;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image)
{
    return cuModuleLoadDataEx(module, image, 0, nullptr, nullptr);
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
CUresult CUDAAPI cuModuleUnload(CUmodule handle)
{
    lock held(g_mutex);
    auto* m = reinterpret_cast<fake_module*>(handle);
    for (auto& [name, storage] : m->storage)
    {
        g_ranges.erase(reinterpret_cast<std::uintptr_t>(storage));
        std::free(storage);
    }
    delete m;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* f, CUmodule, const char* name)
{
    lock held(g_mutex);
    *f = reinterpret_cast<CUfunction>(new function{name, known_sizes(name)});
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction handle)
{
    lock held(g_mutex);
    auto* f = reinterpret_cast<function*>(handle);
    auto set = f->attributes.find(attribute);
    if (set != f->attributes.end())
    {
        *value = set->second;
        return CUDA_SUCCESS;
    }
    switch (attribute)
    {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 16; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = 49152; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}
// As the driver: the dynamic shared memory limit up to the opt-in maximum (no static shared memory here),
// a carveout of -1..100, the cluster dimensions up to 8; anything else read-only.
CUresult CUDAAPI cuFuncSetAttribute(CUfunction handle, CUfunction_attribute attribute, int value)
{
    lock held(g_mutex);
    auto* f = reinterpret_cast<function*>(handle);
    switch (attribute)
    {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 || value > k_shared_optin)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (value < 0 || value > 8)
            return CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    f->attributes[attribute] = value;
    ++g_count.attribute_sets;
    return CUDA_SUCCESS;
}
namespace
{
    // A launch asking for more dynamic shared memory than the function's limit fails, as on a GPU.
    bool shared_fits(const function& f, unsigned shared)
    {
        auto set = f.attributes.find(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
        int limit = set != f.attributes.end() ? set->second : 49152;
        return shared <= static_cast<unsigned>(limit);
    }
}
CUresult CUDAAPI cuLaunchKernel(CUfunction handle, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void** params, void**)
{
    lock held(g_mutex);
    auto* f = reinterpret_cast<function*>(handle);
    if (!shared_fits(*f, shared))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned threads = gx * gy * gz * bx * by * bz;
    if (capturing(s))
    {
        record(s, new node{true, f, threads, copy_params(*f, params), nullptr, nullptr, 0});
        return CUDA_SUCCESS;
    }
    run_kernel(*f, threads, copy_params(*f, params));
    return CUDA_SUCCESS;
}
// A grid of more blocks than can be resident at once (k_blocks_per_sm x k_multiprocessors) is refused.
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction handle, unsigned int gx, unsigned int gy, unsigned int gz,
                                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                           CUstream s, void** params)
{
    lock held(g_mutex);
    auto* f = reinterpret_cast<function*>(handle);
    if (!shared_fits(*f, shared))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (static_cast<unsigned long long>(gx) * gy * gz > static_cast<unsigned long long>(k_blocks_per_sm) * k_multiprocessors)
    {
        return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    if (capturing(s))
    {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    ++g_count.cooperative_launches;
    run_kernel(*f, gx * gy * gz * bx * by * bz, copy_params(*f, params));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamCreate(CUstream* handle, unsigned int)
{
    lock held(g_mutex);
    auto* s = new stream;
    g_streams.push_back(s);
    *handle = reinterpret_cast<CUstream>(s);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream handle)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    for (auto it = g_streams.begin(); it != g_streams.end(); ++it)
    {
        if (*it == s)
        {
            g_streams.erase(it);
            break;
        }
    }
    delete s;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream handle)
{
    lock held(g_mutex);
    if (capturing(handle))
    {
        as_stream(handle)->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    print_at_sync();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamQuery(CUstream handle)
{
    lock held(g_mutex);
    if (capturing(handle))
    {
        as_stream(handle)->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return g_busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int)
{
    *event = reinterpret_cast<CUevent>(new char[1]);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent event)
{
    delete[] reinterpret_cast<char*>(event);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventSynchronize(CUevent)
{
    lock held(g_mutex);
    print_at_sync();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventQuery(CUevent)
{
    lock held(g_mutex);
    return g_busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent, CUevent)
{
    *ms = 0.01f;
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
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int, size_t)
{
    *blocks = k_blocks_per_sm;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* grid, int* block, CUfunction, CUoccupancyB2DSize, size_t, int)
{
    *grid = 32;
    *block = 256;
    return CUDA_SUCCESS;
}

// ---- stream capture and graphs ----
CUresult CUDAAPI cuStreamBeginCapture(CUstream handle, CUstreamCaptureMode)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    if (!s)
    {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
    }
    s->capturing = true;
    s->invalidated = false;
    s->captured = new graph;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamIsCapturing(CUstream handle, CUstreamCaptureStatus* status)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    *status = !s || !s->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->invalidated    ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream handle, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* g,
                                        const CUgraphNode** dependencies, const CUgraphEdgeData** edges,
                                        size_t* count)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    cuStreamIsCapturing(handle, status);
    if (id)
    {
        *id = 1;
    }
    if (g)
    {
        *g = s && s->captured ? reinterpret_cast<CUgraph>(s->captured) : nullptr;
    }
    if (edges)
    {
        *edges = nullptr;
    }
    bool any = s && s->captured && !s->captured->nodes.empty();
    if (dependencies)
    {
        *dependencies = any ? reinterpret_cast<const CUgraphNode*>(&s->captured->nodes.back()) : nullptr;
    }
    if (count)
    {
        *count = any ? 1 : 0;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamEndCapture(CUstream handle, CUgraph* result)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    if (!s || !s->capturing)
    {
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    s->capturing = false;
    if (s->invalidated)
    {
        delete s->captured;
        s->captured = nullptr;
        *result = nullptr;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *result = reinterpret_cast<CUgraph>(s->captured);
    s->captured = nullptr;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* exec, CUgraph handle, unsigned long long)
{
    lock held(g_mutex);
    auto* g = reinterpret_cast<graph*>(handle);
    auto* e = new graph_exec;
    for (node* n : g->nodes)
    {
        e->originals.push_back(n);
        e->nodes.push_back(*n);
    }
    *exec = reinterpret_cast<CUgraphExec>(e);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec handle, CUstream s)
{
    lock held(g_mutex);
    if (capturing(s))
    {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    ++g_count.graph_launches;
    for (const node& n : reinterpret_cast<graph_exec*>(handle)->nodes)
    {
        run(n);
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec handle, CUgraphNode target,
                                                const CUDA_KERNEL_NODE_PARAMS* params)
{
    lock held(g_mutex);
    auto* e = reinterpret_cast<graph_exec*>(handle);
    for (std::size_t i = 0; i < e->originals.size(); ++i)
    {
        if (reinterpret_cast<CUgraphNode>(e->originals[i]) == target)
        {
            node& n = e->nodes[i];
            if (!n.is_kernel || reinterpret_cast<function*>(params->func)->name != n.f->name)
            {
                return CUDA_ERROR_INVALID_VALUE;
            }
            n.f = reinterpret_cast<function*>(params->func);
            n.threads = params->gridDimX * params->gridDimY * params->gridDimZ * params->blockDimX *
                        params->blockDimY * params->blockDimZ;
            n.params = copy_params(*n.f, params->kernelParams);
            ++g_count.node_updates;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec handle)
{
    lock held(g_mutex);
    delete reinterpret_cast<graph_exec*>(handle);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphDestroy(CUgraph handle)
{
    lock held(g_mutex);
    delete reinterpret_cast<graph*>(handle);
    return CUDA_SUCCESS;
}
