// libxcuda-sim.so: the PTX simulator behind the CUDA driver API, so that xcuda runs kernels on a
// machine without a GPU (XCUDA_DEVICE=simulator; docs/simulator.md).
//
// It implements the entry points of xcuda's driver table (magics/src/driver/cuda_driver.hpp) under the
// versioned names the headers map them to (cuMemAlloc -> cuMemAlloc_v2), as the test double
// tests/fake_driver does; everything above the table is xcuda's own code, unchanged.
// Device memory is host memory recorded in one sim_memory (sim_device_memory.cpp); cuModuleLoadData parses
// PTX (and refuses a CUBIN; a function whose body cannot be read is refused alone, at its launch);
// cuLaunchKernel runs the grid at once (sim_launches.cpp) and returns when it is done (streams are
// synchronous, except that a capturing one records graph nodes: sim_graphs.cpp; events are host clock
// readings). A launch that fails keeps its description, which cuGetErrorString returns for that error code,
// so xcuda's error names the thread, the block and the instruction.
//
// Threading: every entry point takes one process-wide lock (sim_driver_state.hpp says how a running grid
// shares it); launches run one at a time (a launch's own pool of threads is block_executor's).
// A kernel fault is not sticky (unlike a GPU's since CUDA 12): the launch that faulted returns it, and
// every later call works, since nothing was lost (device memory is host memory; docs/simulator.md).

#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "device_heap.hpp"
#include "ptx_parser.hpp"
#include "sim_driver_state.hpp"
#include "xcuda_sim_shared.hpp"

namespace xcuda_sim
{
    std::recursive_mutex g_mutex;
    std::condition_variable_any g_grid_ended;
    std::thread::id g_grid_owner;
    sim_memory g_memory;
    device_heap g_heap;  // device malloc/free's, for the process's one context (cuCtxSetLimit sizes it)
    std::size_t g_stack_limit = 1024, g_printf_fifo_limit = 1 << 20;  // nominal: kept and read back

    // The description of the last failure, returned by cuGetErrorString for its code.
    CUresult g_detail_code = CUDA_SUCCESS;
    std::string g_detail;

    CUresult failed(CUresult code, std::string detail)
    {
        g_detail_code = code;
        g_detail = std::move(detail);
        return code;
    }

    CUresult code_for(sim_error::kind kind)
    {
        switch (kind)
        {
        case sim_error::kind::invalid_ptx: return CUDA_ERROR_INVALID_SOURCE;
        case sim_error::kind::unsupported: return CUDA_ERROR_NOT_SUPPORTED;
        case sim_error::kind::illegal_address: return CUDA_ERROR_ILLEGAL_ADDRESS;
        case sim_error::kind::barrier_divergence: return CUDA_ERROR_LAUNCH_FAILED;
        case sim_error::kind::illegal_instruction: return CUDA_ERROR_ILLEGAL_INSTRUCTION;
        case sim_error::kind::launch_failed: return CUDA_ERROR_LAUNCH_FAILED;
        case sim_error::kind::shared_race: return CUDA_ERROR_LAUNCH_FAILED;
        case sim_error::kind::interrupted: return CUDA_ERROR_TIMEOUT;
        case sim_error::kind::assertion: return CUDA_ERROR_ASSERT;
        }
        return CUDA_ERROR_UNKNOWN;
    }

    // Device printf output of the launches since the last synchronising call, printed to stdout by the
    // next one, as the driver does (xcuda captures stdout around those calls).
    std::string g_printf;
    // A launch's warnings (launch_warnings) go out with the printf text, where xcuda shows it in the cell, each
    // once in the process: a kernel launched in a loop warns at its first launch.
    std::set<std::string> g_warned;
    void warn_once(const launch_warnings& warnings)
    {
        for (std::size_t i = 0; i < warnings.keys.size(); ++i)
        {
            if (g_warned.insert(warnings.keys[i]).second)
            {
                g_printf += "xcuda simulator warning: " + warnings.messages[i] + "\n";
            }
        }
    }
    CUresult print_pending()
    {
        if (!g_printf.empty())
        {
            std::fwrite(g_printf.data(), 1, g_printf.size(), stdout);
            std::fflush(stdout);
            g_printf.clear();
        }
        return CUDA_SUCCESS;
    }

    std::uint64_t g_launches = 0;
    std::uint64_t g_thread_instructions = 0;
    bool g_trace_armed = false;
    thread_trace g_trace;
}

using namespace xcuda_sim;

namespace
{
    const char k_device_name[] = "xcuda PTX simulator (sm_90 model)";
    char g_context_storage[1];
    CUcontext g_context = reinterpret_cast<CUcontext>(g_context_storage);
    thread_local CUcontext t_current = nullptr;

    std::vector<std::pair<std::uintptr_t, std::size_t>> g_host_ranges;  // pinned and registered host memory

    bool is_host(std::uintptr_t address)
    {
        for (const auto& [start, bytes] : g_host_ranges)
        {
            if (address >= start && address < start + bytes)
            {
                return true;
            }
        }
        return false;
    }

    // cuFuncSetAttribute's values by (function handle, attribute); a module's go when it is unloaded.
    std::map<std::pair<const void*, int>, int> g_function_attributes;
}

namespace xcuda_sim
{
    CUresult check_cluster(CUfunction handle, const unsigned* grid, const unsigned cluster[3], const std::string& call)
    {
        const auto* f = reinterpret_cast<const function*>(handle);
        const std::string& name = f->owner->program.functions[static_cast<std::size_t>(f->index)].name;
        const std::string shape = "(" + std::to_string(cluster[0]) + ", " + std::to_string(cluster[1]) + ", " +
                                  std::to_string(cluster[2]) + ")";
        for (unsigned axis = 0; axis < 3; ++axis)
        {
            if (cluster[axis] == 0 || (grid && grid[axis] % cluster[axis] != 0))
            {
                return failed(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                              call + " of " + name + ": " +
                                  (cluster[axis] == 0 ? "a cluster " + shape + " with 0 blocks on axis " + "xyz"[axis]
                                                      : "the grid's " + std::to_string(grid[axis]) + " blocks on axis " +
                                                            "xyz"[axis] + " are not a multiple of its cluster " + shape));
            }
        }
        // 8 blocks is the portable most; 16 with the non-portable attribute (cuFuncSetAttribute), as on an H100.
        std::lock_guard<std::recursive_mutex> held(g_mutex);
        auto set = g_function_attributes.find({handle, static_cast<int>(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)});
        const unsigned most = set != g_function_attributes.end() && set->second ? 16 : 8;
        const unsigned long long size = static_cast<unsigned long long>(cluster[0]) * cluster[1] * cluster[2];
        const std::uint32_t bound = f->owner->program.functions[static_cast<std::size_t>(f->index)].max_cluster_rank;
        if (bound && size > bound)
        {
            return failed(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                          call + " of " + name + ": a cluster " + shape + " of " + std::to_string(size) +
                              " blocks, over its __launch_bounds__'s most blocks per cluster (.maxclusterrank) of " +
                              std::to_string(bound));
        }
        if (size > most)
        {
            return failed(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                          call + " of " + name + ": a cluster " + shape + " of " + std::to_string(size) +
                              " blocks; the device takes at most 8 (16 once the kernel's non_portable_cluster_size_allowed "
                              "attribute is 1)");
        }
        return CUDA_SUCCESS;
    }
}

namespace
{
    // xcuda.trace (magics/python/xcuda/trace.py): one thread of the next launch is recorded.
    std::string g_trace_json;

    std::string json_string(const std::string& text)
    {
        std::string out = "\"";
        for (unsigned char c : text)
        {
            if (c == '"' || c == '\\')
            {
                out += '\\';
                out += static_cast<char>(c);
            }
            else if (c < 0x20)
            {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
                out += escaped;
            }
            else
            {
                out += static_cast<char>(c);
            }
        }
        return out + "\"";
    }
}

// ---- textures and surfaces: their entry points are xcuda_sim_textures.cpp's ----
CUresult xcuda_sim::failed_with(CUresult code, std::string detail)
{
    lock held(g_mutex);
    return failed(code, std::move(detail));
}
xcuda::sim::texture_registry& xcuda_sim::textures()
{
    static xcuda::sim::texture_registry registry;
    return registry;
}

// Arms the trace of thread (tx,ty,tz) of block (bx,by,bz) for the next cuLaunchKernel, keeping at most
// `limit` instructions. Returns 0.
extern "C" int xcuda_sim_trace_arm(unsigned tx, unsigned ty, unsigned tz, unsigned bx, unsigned by, unsigned bz,
                                   unsigned long long limit)
{
    lock held(g_mutex);
    g_trace = thread_trace{};
    g_trace.thread[0] = tx;
    g_trace.thread[1] = ty;
    g_trace.thread[2] = tz;
    g_trace.block[0] = bx;
    g_trace.block[1] = by;
    g_trace.block[2] = bz;
    g_trace.limit = static_cast<std::size_t>(limit);
    g_trace_armed = true;
    return 0;
}

// The trace of the launch that ran armed, as JSON ({"reached", "truncated", "steps": [{"function", "pc",
// "ptx", "line", "file", "executed", "writes"}]}), and disarms. Valid until the next call.
extern "C" const char* xcuda_sim_trace_take()
{
    lock held(g_mutex);
    g_trace_armed = false;
    std::string out = std::string("{\"reached\": ") + (g_trace.reached ? "true" : "false") +
                      ", \"truncated\": " + (g_trace.truncated ? "true" : "false") + ", \"steps\": [";
    for (std::size_t i = 0; i < g_trace.steps.size(); ++i)
    {
        const trace_step& s = g_trace.steps[i];
        out += (i ? ", " : "") + std::string("{\"function\": ") + json_string(s.function) +
               ", \"pc\": " + std::to_string(s.pc) + ", \"ptx\": " + json_string(s.text) +
               ", \"line\": " + std::to_string(s.line) + ", \"file\": " + json_string(s.file) +
               ", \"executed\": " + (s.executed ? "true" : "false") + ", \"writes\": [";
        for (std::size_t k = 0; k < s.writes.size(); ++k)
        {
            out += (k ? ", " : "") + json_string(s.writes[k]);
        }
        out += "]}";
    }
    g_trace_json = out + "]}";
    g_trace = thread_trace{};
    return g_trace_json.c_str();
}

// For tests/bench: the thread-instructions run since the library was loaded, and the launches.
extern "C" unsigned long long xcuda_sim_counter(const char* name)
{
    lock held(g_mutex);
    std::string which = name;
    return which == "thread_instructions" ? g_thread_instructions
           : which == "launches"          ? g_launches
           : which == "step_limit"        ? step_limit()  // what a launch would be stopped after now (0: none)
                                          : 0;
}

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuGetExportTable(const void** table, const CUuuid*)
{
    *table = nullptr;
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuDriverGetVersion(int* version)
{
    *version = 13000;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name)
{
    switch (error)
    {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDA_ERROR_INVALID_SOURCE: *name = "CUDA_ERROR_INVALID_SOURCE"; break;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case CUDA_ERROR_ILLEGAL_INSTRUCTION: *name = "CUDA_ERROR_ILLEGAL_INSTRUCTION"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_ASSERT: *name = "CUDA_ERROR_ASSERT"; break;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: *name = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; break;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: *name = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; break;
    case CUDA_ERROR_TIMEOUT: *name = "CUDA_ERROR_TIMEOUT"; break;
    case CUDA_ERROR_ILLEGAL_STATE: *name = "CUDA_ERROR_ILLEGAL_STATE"; break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
    default: *name = "CUDA_ERROR_UNKNOWN"; break;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult error, const char** text)
{
    lock held(g_mutex);
    if (error == g_detail_code && !g_detail.empty())
    {
        *text = g_detail.c_str();
        return CUDA_SUCCESS;
    }
    switch (error)
    {
    case CUDA_ERROR_ILLEGAL_ADDRESS: *text = "the simulated kernel accessed memory outside every allocation"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *text = "the PTX simulator does not implement this"; break;
    default: *text = "an error reported by the PTX simulator"; break;
    }
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
        return failed(CUDA_ERROR_INVALID_DEVICE, "the PTX simulator has one device, 0");
    }
    *device = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice)
{
    std::strncpy(name, k_device_name, static_cast<std::size_t>(length));
    if (length > 0)
    {
        name[length - 1] = '\0';
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice)
{
    std::memset(uuid->bytes, 0, sizeof uuid->bytes);
    std::memcpy(uuid->bytes, "xcuda-simulator", 15);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice)
{
    switch (attribute)
    {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *value = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 233472; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    default: *value = 0; break;  // speeds (clocks, bus width) and features the simulator does not model
    }
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
CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext, unsigned int) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr to, CUcontext, CUdeviceptr from, CUcontext, size_t bytes, CUstream)
{
    lock held(g_mutex);
    std::memmove(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes);
    return CUDA_SUCCESS;
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
// CU_LIMIT_MALLOC_HEAP_SIZE sizes the device heap of malloc/free (8 MiB by default, as a GPU's); it cannot
// change while a block malloc gave is alive. The stack and printf FIFO sizes are kept and read back only.
CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
    lock held(g_mutex);
    switch (limit)
    {
    case CU_LIMIT_MALLOC_HEAP_SIZE:
        if (!g_heap.set_bytes(value))
        {
            return failed(CUDA_ERROR_INVALID_VALUE, "the device heap (CU_LIMIT_MALLOC_HEAP_SIZE) cannot be resized while "
                                                    "blocks that device malloc gave are not freed");
        }
        return CUDA_SUCCESS;
    case CU_LIMIT_STACK_SIZE: g_stack_limit = value; return CUDA_SUCCESS;
    case CU_LIMIT_PRINTF_FIFO_SIZE: g_printf_fifo_limit = value; return CUDA_SUCCESS;
    default: return CUDA_ERROR_UNSUPPORTED_LIMIT;
    }
}
CUresult CUDAAPI cuCtxGetLimit(size_t* value, CUlimit limit)
{
    lock held(g_mutex);
    switch (limit)
    {
    case CU_LIMIT_MALLOC_HEAP_SIZE: *value = g_heap.bytes(); return CUDA_SUCCESS;
    case CU_LIMIT_STACK_SIZE: *value = g_stack_limit; return CUDA_SUCCESS;
    case CU_LIMIT_PRINTF_FIFO_SIZE: *value = g_printf_fifo_limit; return CUDA_SUCCESS;
    default: return CUDA_ERROR_UNSUPPORTED_LIMIT;
    }
}
CUresult CUDAAPI cuMemAllocHost(void** pointer, size_t bytes)
{
    lock held(g_mutex);
    void* memory = std::aligned_alloc(4096, (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096);
    if (!memory)
    {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_memory.add(reinterpret_cast<std::uintptr_t>(memory), bytes, "pinned host memory");
    g_host_ranges.emplace_back(reinterpret_cast<std::uintptr_t>(memory), bytes);
    *pointer = memory;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFreeHost(void* pointer)
{
    lock held(g_mutex);
    g_memory.remove(reinterpret_cast<std::uintptr_t>(pointer));
    for (auto it = g_host_ranges.begin(); it != g_host_ranges.end(); ++it)
    {
        if (it->first == reinterpret_cast<std::uintptr_t>(pointer))
        {
            g_host_ranges.erase(it);
            break;
        }
    }
    std::free(pointer);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostRegister(void* pointer, size_t bytes, unsigned int)
{
    lock held(g_mutex);
    auto start = reinterpret_cast<std::uintptr_t>(pointer);
    for (const auto& [s, n] : g_host_ranges)
    {
        if (start < s + n && s < start + bytes)
        {
            return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
        }
    }
    g_host_ranges.emplace_back(start, bytes);
    g_memory.add(start, bytes, "registered host memory");
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostUnregister(void* pointer)
{
    lock held(g_mutex);
    auto start = reinterpret_cast<std::uintptr_t>(pointer);
    for (auto it = g_host_ranges.begin(); it != g_host_ranges.end(); ++it)
    {
        if (it->first == start)
        {
            g_host_ranges.erase(it);
            g_memory.remove(start);
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr to, const void* from, size_t bytes)
{
    std::memmove(reinterpret_cast<void*>(to), from, bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void* to, CUdeviceptr from, size_t bytes)
{
    std::memmove(to, reinterpret_cast<const void*>(from), bytes);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr to, unsigned char value, size_t bytes)
{
    std::memset(reinterpret_cast<void*>(to), value, bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* handle, const void* image, unsigned int, CUjit_option*, void**)
{
    lock held(g_mutex);
    const char* text = static_cast<const char*>(image);
    if (!text)
    {
        return failed(CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData without an image");
    }
    if (std::memcmp(text, "\x7f" "ELF", 4) == 0)
    {
        return failed(CUDA_ERROR_INVALID_IMAGE, "the PTX simulator was given a CUBIN (SASS); it runs PTX only: "
                                                "load the module's PTX (compile for compute_XX, or pass the PTX text)");
    }
    if (static_cast<unsigned char>(text[0]) == 0x50 && static_cast<unsigned char>(text[1]) == 0xed)
    {
        return failed(CUDA_ERROR_INVALID_IMAGE, "the PTX simulator was given a fatbinary; it runs PTX only");
    }
    auto loaded = std::make_unique<module>();
    try
    {
        loaded->program = ptx_parser::parse(text);
    }
    catch (const sim_error& e)
    {
        return failed(code_for(e.what_kind()), e.what());
    }
    for (ptx_symbol& symbol : loaded->program.symbols)
    {
        if ((symbol.space == state_space::global || symbol.space == state_space::constant) && symbol.function < 0)
        {
            std::size_t bytes = std::max<std::size_t>(symbol.size, 1);
            std::size_t align = std::max<std::size_t>(symbol.align, 16);
            std::unique_ptr<std::uint8_t, free_deleter> storage(
                static_cast<std::uint8_t*>(std::aligned_alloc(align, (bytes + align - 1) / align * align)));
            if (!storage)
            {
                return failed(CUDA_ERROR_OUT_OF_MEMORY, "no host memory for the module's variable " + symbol.name);
            }
            std::memset(storage.get(), 0, bytes);
            if (!symbol.initial.empty())  // no initializer: data() may be null, and memcpy(null) is UB
            {
                std::memcpy(storage.get(), symbol.initial.data(), std::min(symbol.initial.size(), bytes));
            }
            symbol.offset = reinterpret_cast<std::uintptr_t>(storage.get());
            g_memory.add(symbol.offset, symbol.size,
                         std::string(symbol.space == state_space::global ? "__device__" : "__constant__") + " variable " + symbol.name);
            loaded->variables.push_back(std::move(storage));
        }
    }
    *handle = reinterpret_cast<CUmodule>(loaded.release());
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadData(CUmodule* handle, const void* image)
{
    return cuModuleLoadDataEx(handle, image, 0, nullptr, nullptr);
}
CUresult CUDAAPI cuModuleUnload(CUmodule handle)
{
    lock held(g_mutex);
    auto* m = reinterpret_cast<module*>(handle);
    for (const auto& f : m->functions)
    {
        for (auto it = g_function_attributes.begin(); it != g_function_attributes.end();)
        {
            it = it->first.first == f.get() ? g_function_attributes.erase(it) : std::next(it);
        }
    }
    for (const auto& storage : m->variables)
    {
        g_memory.remove(reinterpret_cast<std::uintptr_t>(storage.get()));
    }
    delete m;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* handle, CUmodule owner, const char* name)
{
    lock held(g_mutex);
    auto* m = reinterpret_cast<module*>(owner);
    int index = m->program.find_function(name);
    if (index < 0 || !m->program.functions[static_cast<std::size_t>(index)].entry)
    {
        return failed(CUDA_ERROR_NOT_FOUND, std::string("the module has no kernel (.entry) named ") + name);
    }
    for (const auto& f : m->functions)
    {
        if (f->index == index)
        {
            *handle = reinterpret_cast<CUfunction>(f.get());
            return CUDA_SUCCESS;
        }
    }
    m->functions.push_back(std::make_unique<function>(function{m, index}));
    *handle = reinterpret_cast<CUfunction>(m->functions.back().get());
    return CUDA_SUCCESS;
}
// A module's .global or .const variable by name: its address (host memory registered in g_memory) and size.
CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* pointer, size_t* bytes, CUmodule owner, const char* name)
{
    lock held(g_mutex);
    auto* m = reinterpret_cast<module*>(owner);
    for (const ptx_symbol& symbol : m->program.symbols)
    {
        if ((symbol.space == state_space::global || symbol.space == state_space::constant) && symbol.function < 0 &&
            symbol.name == name)
        {
            if (pointer)
                *pointer = static_cast<CUdeviceptr>(symbol.offset);
            if (bytes)
                *bytes = symbol.size;
            return CUDA_SUCCESS;
        }
    }
    return failed(CUDA_ERROR_NOT_FOUND, std::string("the module has no .global or .const variable named ") + name);
}
// Accepted and remembered for cuFuncGetAttribute; the simulator's limits do not depend on them (every
// launch may use up to the opt-in maximum of dynamic shared memory already).
CUresult CUDAAPI cuFuncSetAttribute(CUfunction handle, CUfunction_attribute attribute, int value)
{
    lock held(g_mutex);
    switch (attribute)
    {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    {
        auto* f = reinterpret_cast<function*>(handle);
        if (value < 0 || value > 232448 - static_cast<int>(f->owner->program.static_shared_bytes))
            return failed(CUDA_ERROR_INVALID_VALUE, "max_dynamic_shared_size_bytes beyond the opt-in maximum");
        g_function_attributes[{handle, static_cast<int>(attribute)}] = value;
        return CUDA_SUCCESS;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        g_function_attributes[{handle, static_cast<int>(attribute)}] = value;
        return CUDA_SUCCESS;
    default:
        return failed(CUDA_ERROR_INVALID_VALUE, "a read-only function attribute");
    }
}
CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction handle)
{
    auto* f = reinterpret_cast<function*>(handle);
    const ptx_function& entry = f->owner->program.functions[static_cast<std::size_t>(f->index)];
    switch (attribute)
    {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = entry.max_threads ? static_cast<int>(std::min(entry.max_threads, 1024u)) : 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = static_cast<int>(entry.register_count); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = static_cast<int>(f->owner->program.static_shared_bytes); break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = static_cast<int>(entry.local_bytes); break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    {
        // The opt-in maximum until cuFuncSetAttribute says otherwise (launches are not limited by it here).
        lock held(g_mutex);
        auto set = g_function_attributes.find({handle, static_cast<int>(attribute)});
        *value = set != g_function_attributes.end() ? set->second
                                                    : 232448 - static_cast<int>(f->owner->program.static_shared_bytes);
        break;
    }
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        // __cluster_dims__ (.reqnctapercluster), as the driver reports it.
        *value = static_cast<int>(entry.cluster_dims[attribute - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH]);
        break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    default:
    {
        lock held(g_mutex);
        auto set = g_function_attributes.find({handle, static_cast<int>(attribute)});
        *value = set != g_function_attributes.end() ? set->second
                 : attribute == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT ? -1 : 0;
        break;
    }
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetParamInfo(CUfunction handle, size_t index, size_t* offset, size_t* size)
{
    auto* f = reinterpret_cast<function*>(handle);
    const ptx_function& entry = f->owner->program.functions[static_cast<std::size_t>(f->index)];
    if (index >= entry.params.size())
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const ptx_symbol& p = f->owner->program.symbols[static_cast<std::size_t>(entry.params[index])];
    *offset = p.offset;
    *size = p.size;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
// An event is the host's steady clock when it was recorded: simulated time is the simulator's wall time.
CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int)
{
    *event = reinterpret_cast<CUevent>(new double(0.0));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent event)
{
    delete reinterpret_cast<double*>(event);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent event, CUstream)
{
    *reinterpret_cast<double*>(event) =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventSynchronize(CUevent)
{
    lock held(g_mutex);
    print_pending();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventQuery(CUevent)
{
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end)
{
    *ms = static_cast<float>(*reinterpret_cast<double*>(end) - *reinterpret_cast<double*>(start));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes, void** data, CUdeviceptr pointer)
{
    lock held(g_mutex);
    auto address = static_cast<std::uintptr_t>(pointer);
    const sim_memory::allocation* found = g_memory.containing(address);
    for (unsigned int i = 0; i < count; ++i)
    {
        if (attributes[i] != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        {
            return CUDA_ERROR_INVALID_VALUE;
        }
        unsigned int type = is_host(address) ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        *static_cast<unsigned int*>(data[i]) = found ? type : 0u;  // 0: memory the simulator does not know
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int block, size_t)
{
    *blocks = block > 0 ? std::max(1, std::min(32, 2048 / block)) : 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* grid, int* block, CUfunction, CUoccupancyB2DSize, size_t, int)
{
    *grid = 1;
    *block = 256;
    return CUDA_SUCCESS;
}
// The launch of cuLaunchKernel (the same path, so it is interrupted, traced and checked the same way) with
// cuLaunchKernelEx's attributes: a priority and programmatic stream serialization change nothing here (a launch
// runs to its end when issued, in issue order); a cluster runs its blocks together (block_clusters.cpp); a
// cooperative launch runs as cuLaunchCooperativeKernel runs it (every block at once).
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction handle, void** params, void** extra)
{
    if (!config)
    {
        return failed(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernelEx without a launch configuration");
    }
    unsigned cluster[3] = {1, 1, 1};
    bool clustered = false, cooperative = false;
    for (unsigned i = 0; i < config->numAttrs; ++i)
    {
        const CUlaunchAttribute& a = config->attrs[i];
        switch (a.id)
        {
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        {
            const auto& c = a.value.clusterDim;
            if (!c.x || !c.y || !c.z || config->gridDimX % c.x || config->gridDimY % c.y || config->gridDimZ % c.z)
            {
                return failed(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernelEx: the grid is not a multiple of the cluster");
            }
            cluster[0] = c.x;
            cluster[1] = c.y;
            cluster[2] = c.z;
            clustered = true;
            break;
        }
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            cooperative = cooperative || a.value.cooperative;
            break;
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
            break;
        default:
            return failed(CUDA_ERROR_NOT_SUPPORTED, "cuLaunchKernelEx: launch attribute " + std::to_string(a.id) +
                                                        " is not simulated");
        }
    }
    if (cooperative && !clustered)
    {
        return cuLaunchCooperativeKernel(handle, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                                         config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                                         params);
    }
    lock held(g_mutex);
    const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    return launch_or_capture(handle, grid, block, config->sharedMemBytes, config->hStream, params, extra, cooperative,
                             clustered ? cluster : nullptr);
}
// How many clusters of the configuration's shape the simulated device holds at once: its one multiprocessor's
// blocks (2048 threads, 32 blocks, 228 KiB of shared memory, as cuOccupancyMaxActiveBlocksPerMultiprocessor and an
// H100's SM) over the cluster's blocks, and at least 1 for any cluster it can launch: the simulator runs a cluster's
// blocks together whatever their size. The cluster is the configuration's attribute, else the kernel's
// __cluster_dims__; neither is CUDA_ERROR_INVALID_CLUSTER_SIZE, as the driver says.
CUresult CUDAAPI cuOccupancyMaxActiveClusters(int* clusters, CUfunction handle, const CUlaunchConfig* config)
{
    if (!clusters || !handle || !config)
    {
        return failed(CUDA_ERROR_INVALID_VALUE, "cuOccupancyMaxActiveClusters without a result, a function or a configuration");
    }
    const auto* f = reinterpret_cast<const function*>(handle);
    const ptx_function& entry = f->owner->program.functions[static_cast<std::size_t>(f->index)];
    const unsigned* cluster = entry.cluster_dims[0] ? entry.cluster_dims : nullptr;
    unsigned given[3] = {1, 1, 1};
    for (unsigned i = 0; i < config->numAttrs; ++i)
    {
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        {
            const auto& c = config->attrs[i].value.clusterDim;
            given[0] = c.x;
            given[1] = c.y;
            given[2] = c.z;
            cluster = given;
        }
    }
    if (!cluster)
    {
        return failed(CUDA_ERROR_INVALID_CLUSTER_SIZE, "cuOccupancyMaxActiveClusters of " + entry.name +
                                                           " without a cluster: give one, or compile the kernel with "
                                                           "__cluster_dims__");
    }
    if (CUresult checked = check_cluster(handle, nullptr, cluster, "cuOccupancyMaxActiveClusters"); checked != CUDA_SUCCESS)
    {
        return checked;
    }
    const unsigned long long threads = static_cast<unsigned long long>(config->blockDimX) * config->blockDimY * config->blockDimZ;
    const unsigned long long shared = f->owner->program.static_shared_bytes + config->sharedMemBytes;
    if (threads == 0 || threads > 1024 || shared > 232448)
    {
        *clusters = 0;  // such a block cannot launch
        return CUDA_SUCCESS;
    }
    unsigned long long blocks = std::min<unsigned long long>(32, 2048 / threads);
    blocks = shared ? std::min<unsigned long long>(blocks, 233472 / shared) : blocks;
    *clusters = static_cast<int>(std::max<unsigned long long>(1, blocks / (cluster[0] * cluster[1] * cluster[2])));
    return CUDA_SUCCESS;
}
