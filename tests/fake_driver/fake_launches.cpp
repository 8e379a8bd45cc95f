// The fake's kernels and launches: a launch runs a known kernel's host implementation (saxpy, chain_step,
// fill, many) at once, or on a capturing stream is recorded as a graph node (fake_graphs.cpp), its
// parameters given as pointers or, with XCUDA_FAKE_PARAM_INFO=1 (which also makes cuFuncGetParamInfo report
// the known kernels' layouts), as one buffer; a launch asking for more dynamic shared memory than its
// function allows fails; a cooperative grid larger than can be resident is refused; the occupancy queries
// answer fixed numbers.

#include "fake_state.hpp"

#include <fstream>

namespace
{
    // XCUDA_FAKE_LAUNCH_LOG=FILE: a line per launch appended to FILE, so that a test can see what a child
    // process (xcuda-replay) launched and with which attributes; the counters live in one process only.
    void log_launch(const std::string& line)
    {
        const char* path = std::getenv("XCUDA_FAKE_LAUNCH_LOG");
        if (path && *path)
        {
            std::ofstream(path, std::ios::app) << line << "\n";
        }
    }
}

using namespace xcuda_fake;

namespace
{
    template <class T>
    T arg(const std::vector<std::vector<char>>& params, std::size_t i)
    {
        T value;
        std::memcpy(&value, params[i].data(), sizeof value);
        return value;
    }
}

#pragma GCC visibility push(hidden)  // the fake's own symbols stay inside it
namespace xcuda_fake
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
        if (name == "read_handles")
        {
            return {8, 8, 8};  // cudaTextureObject_t t, cudaSurfaceObject_t s, unsigned long long* out
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
        else if (f.name == "read_handles")
        {
            // out[0..3] = the texture's handle, the surface's, and whether each is live (fake_textures.cpp)
            auto t = arg<unsigned long long>(params, 0);
            auto s = arg<unsigned long long>(params, 1);
            auto* out = arg<unsigned long long*>(params, 2);
            if (device_span_ok(out, 4 * sizeof *out, "read_handles' out"))
            {
                out[0] = t;
                out[1] = s;
                out[2] = view_live(t, false) ? 1 : 0;
                out[3] = view_live(s, true) ? 1 : 0;
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
#pragma GCC visibility pop

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
    log_launch("cuLaunchKernel " + f->name);
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
// cuLaunchKernelEx: the launch of cuLaunchKernel, its attributes counted (ex_launches, last_*); a cluster
// that does not divide the grid, or one given to a kernel with its own (the "clustered" kernel), fails as
// on a GPU. Captured as cuLaunchKernel is.
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction handle, void** params, void** extra)
{
    lock held(g_mutex);
    auto* f = reinterpret_cast<function*>(handle);
    counters seen = g_count;
    seen.last_cluster_x = seen.last_cluster_y = seen.last_cluster_z = 0;
    seen.last_has_priority = seen.last_priority = 0;
    seen.last_programmatic = seen.last_cooperative = 0;
    for (unsigned i = 0; i < config->numAttrs; ++i)
    {
        const CUlaunchAttribute& a = config->attrs[i];
        if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        {
            const auto& c = a.value.clusterDim;
            if (f->name == "clustered" || !c.x || !c.y || !c.z || config->gridDimX % c.x || config->gridDimY % c.y ||
                config->gridDimZ % c.z)
            {
                return CUDA_ERROR_INVALID_VALUE;
            }
            seen.last_cluster_x = c.x;
            seen.last_cluster_y = c.y;
            seen.last_cluster_z = c.z;
        }
        else if (a.id == CU_LAUNCH_ATTRIBUTE_PRIORITY)
        {
            seen.last_has_priority = 1;
            seen.last_priority = a.value.priority;
        }
        else if (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
        {
            seen.last_programmatic = a.value.programmaticStreamSerializationAllowed;
        }
        else if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
        {
            seen.last_cooperative = a.value.cooperative;
        }
        else
        {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    std::vector<std::vector<char>> values;
    if (!shared_fits(*f, config->sharedMemBytes) || !launch_params(*f, params, extra, values))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    ++seen.ex_launches;
    g_count = seen;
    log_launch("cuLaunchKernelEx " + f->name + " cluster=" + std::to_string(seen.last_cluster_x) + "," +
               std::to_string(seen.last_cluster_y) + "," + std::to_string(seen.last_cluster_z) +
               " priority=" + (seen.last_has_priority ? std::to_string(static_cast<int>(seen.last_priority)) : "none") +
               " programmatic=" + std::to_string(seen.last_programmatic) +
               " cooperative=" + std::to_string(seen.last_cooperative));
    unsigned threads = config->gridDimX * config->gridDimY * config->gridDimZ * config->blockDimX * config->blockDimY *
                       config->blockDimZ;
    if (capturing(config->hStream))
    {
        record(config->hStream, new node{true, f, threads, std::move(values), nullptr, nullptr, 0});
        return CUDA_SUCCESS;
    }
    run_kernel(*f, threads, values);
    return CUDA_SUCCESS;
}
// Clusters per device: the resident blocks (k_blocks_per_sm x k_multiprocessors) over the cluster's blocks.
CUresult CUDAAPI cuOccupancyMaxActiveClusters(int* clusters, CUfunction handle, const CUlaunchConfig* config)
{
    lock held(g_mutex);
    auto* f = reinterpret_cast<function*>(handle);
    unsigned size = f->name == "clustered" ? 2 : 0;
    for (unsigned i = 0; i < config->numAttrs; ++i)
    {
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        {
            const auto& c = config->attrs[i].value.clusterDim;
            size = c.x * c.y * c.z;
        }
    }
    if (!size)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *clusters = static_cast<int>(k_blocks_per_sm * k_multiprocessors / size);
    return CUDA_SUCCESS;
}
namespace
{
    // What both encodings write alike: [0] the address, [1] the data type, [2] the rank, [3..7] globalDim,
    // [8..11] globalStrides, [13] the element strides 4 bits each, [14] interleave | swizzle << 8 |
    // l2Promotion << 16 | oobFill << 24.
    void write_tensor_map(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                          const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* element_strides,
                          CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                          CUtensorMapFloatOOBfill oob)
    {
        std::memset(map, 0, sizeof *map);
        map->opaque[0] = reinterpret_cast<std::uintptr_t>(address);
        map->opaque[1] = static_cast<cuuint64_t>(type);
        map->opaque[2] = rank;
        for (cuuint32_t i = 0; i < rank; ++i)
        {
            map->opaque[3 + i] = dims[i];
            if (i + 1 < rank)
            {
                map->opaque[8 + i] = strides[i];
            }
            map->opaque[13] |= static_cast<cuuint64_t>(element_strides[i]) << (4 * i);
        }
        map->opaque[14] = interleave | swizzle << 8 | l2 << 16 | static_cast<cuuint64_t>(oob) << 24;
    }
}
// cuTensorMapEncodeTiled: the fake's own layout, so a test can see what reached the driver (in its order,
// innermost dimension first): write_tensor_map's, [12] the boxDim packed 12 bits each, [15] a marker.
CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                        const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                        const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                        CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    lock held(g_mutex);
    if (!map || rank == 0 || rank > 5 || reinterpret_cast<std::uintptr_t>(address) % 16 ||
        reinterpret_cast<std::uintptr_t>(map) % 64)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    write_tensor_map(map, type, rank, address, dims, strides, element_strides, interleave, swizzle, l2, oob);
    for (cuuint32_t i = 0; i < rank; ++i)
    {
        map->opaque[12] |= static_cast<cuuint64_t>(box[i]) << (12 * i);
    }
    map->opaque[15] = 0x7e45;
    return CUDA_SUCCESS;
}
// cuTensorMapEncodeIm2col: write_tensor_map's, [12] the lower corners (16 bits each, innermost first),
// [13] also channelsPerPixel << 20 | pixelsPerColumn << 32, [15] the marker 0x7e46 | the upper corners << 16.
CUresult CUDAAPI cuTensorMapEncodeIm2col(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                         const cuuint64_t* dims, const cuuint64_t* strides, const int* lower,
                                         const int* upper, cuuint32_t channels, cuuint32_t pixels,
                                         const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                         CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    lock held(g_mutex);
    if (!map || rank < 3 || rank > 5 || reinterpret_cast<std::uintptr_t>(address) % 16 ||
        reinterpret_cast<std::uintptr_t>(map) % 64 || channels == 0 || channels > 256 || pixels == 0 || pixels > 1024)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    write_tensor_map(map, type, rank, address, dims, strides, element_strides, interleave, swizzle, l2, oob);
    map->opaque[15] = 0x7e46;
    for (cuuint32_t i = 0; i + 2 < rank; ++i)
    {
        map->opaque[12] |= static_cast<cuuint64_t>(static_cast<std::uint16_t>(lower[i])) << (16 * i);
        map->opaque[15] |= static_cast<cuuint64_t>(static_cast<std::uint16_t>(upper[i])) << (16 + 16 * i);
    }
    map->opaque[13] |= static_cast<cuuint64_t>(channels) << 20 | static_cast<cuuint64_t>(pixels) << 32;
    return CUDA_SUCCESS;
}
