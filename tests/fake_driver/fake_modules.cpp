// The fake's modules and functions: a loaded module finds its __constant__/__device__ variables in the image
// (a CUBIN's symbol table or the PTX) for cuModuleGetGlobal; a function knows a known kernel's parameter
// sizes (fake_launches.cpp) and keeps the attributes cuFuncSetAttribute sets, within the driver's limits.

#include "fake_state.hpp"

using namespace xcuda_fake;

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
    // A kernel named "clustered" stands for one compiled with __cluster_dims__(2, 1, 1).
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *value = f->name == "clustered" ? 2 : 0; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *value = f->name == "clustered" ? 1 : 0; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *value = f->name == "clustered" ? 1 : 0; break;
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
