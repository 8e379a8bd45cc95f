// The fake's modules and kernels: a loaded module finds its __constant__/__device__ variables in the image
// (a CUBIN's symbol table or the PTX) for cuModuleGetGlobal; functions keep the attributes
// cuFuncSetAttribute sets; a launch runs a known kernel's host implementation (saxpy, chain_step, fill,
// many) at once, or on a capturing stream is recorded as a graph node, its parameters given as pointers or,
// with XCUDA_FAKE_PARAM_INFO=1 (which also makes cuFuncGetParamInfo report the known kernels' layouts), as
// one buffer; a cooperative grid larger than can be resident is refused; the occupancy queries answer
// fixed numbers.

#include "fake_state.hpp"

using namespace xcuda_fake;

namespace
{
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
}

namespace xcuda_fake __attribute__((visibility("hidden")))
{
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

    std::vector<std::size_t> param_offsets(const function& f)
    {
        std::vector<std::size_t> offsets;
        std::size_t end = 0;
        for (std::size_t size : f.sizes)
        {
            end = (end + size - 1) / size * size;
            offsets.push_back(end);
            end += size;
        }
        return offsets;
    }

    bool launch_params(const function& f, void** params, void** extra, std::vector<std::vector<char>>& out)
    {
        if (params || !extra)
        {
            out = copy_params(f, params);
            return !(params && extra);  // both at once: the driver refuses
        }
        const char* buffer = nullptr;
        std::size_t bytes = 0;
        for (std::size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2)
        {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            {
                buffer = static_cast<const char*>(extra[i + 1]);
            }
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            {
                bytes = *static_cast<const std::size_t*>(extra[i + 1]);
            }
            else
            {
                return false;
            }
        }
        std::vector<std::size_t> offsets = param_offsets(f);
        std::size_t end = offsets.empty() ? 0 : offsets.back() + f.sizes.back();
        if (!buffer || bytes != end)
        {
            std::fprintf(stderr, "xcuda fake driver: cuLaunchKernel of %s with a parameter buffer of %zu bytes; its "
                                 "parameters are %zu bytes\n", f.name.c_str(), buffer ? bytes : 0, end);
            return false;
        }
        out.clear();
        for (std::size_t i = 0; i < offsets.size(); ++i)
        {
            out.emplace_back(buffer + offsets[i], buffer + offsets[i] + f.sizes[i]);
        }
        ++g_count.buffer_launches;
        return true;
    }
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
                                unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void** params,
                                void** extra)
{
    lock held(g_mutex);
    auto* f = reinterpret_cast<function*>(handle);
    std::vector<std::vector<char>> values;
    if (!shared_fits(*f, shared) || !launch_params(*f, params, extra, values))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned threads = gx * gy * gz * bx * by * bz;
    if (capturing(s))
    {
        record(s, new node{true, f, threads, std::move(values), nullptr, nullptr, 0});
        return CUDA_SUCCESS;
    }
    run_kernel(*f, threads, values);
    return CUDA_SUCCESS;
}
// The known kernels' parameter layout (param_offsets), only with XCUDA_FAKE_PARAM_INFO=1: the fake knows
// no other kernel's parameters, and tests give kernels of those names other signatures. Otherwise, or for
// another kernel, CUDA_ERROR_NOT_SUPPORTED: a driver that reports no layout (xcuda then checks nothing and
// passes pointers).
CUresult CUDAAPI cuFuncGetParamInfo(CUfunction handle, size_t index, size_t* offset, size_t* size)
{
    lock held(g_mutex);
    const char* enabled = std::getenv("XCUDA_FAKE_PARAM_INFO");
    auto* f = reinterpret_cast<function*>(handle);
    if (!enabled || std::string(enabled) != "1" || f->sizes.empty())
    {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (index >= f->sizes.size())
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *offset = param_offsets(*f)[index];
    *size = f->sizes[index];
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
