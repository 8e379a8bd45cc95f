// The fake's CUDA arrays, texture objects and surface objects (runtime/textures): arrays are host memory of
// their descriptor's size (cuArrayCreate, cuArray3DCreate, cuArrayDestroy, cuArray(3D)GetDescriptor), copies
// walk their rows (cuMemcpy2D, cuMemcpy3D, between host, device and array memory, each side checked against its
// extent), and texture and surface objects are numbered handles over a live array, with what they were made
// with kept for the tests (xcuda_fake_texture_info). The driver's refusals the runtime must never provoke are
// refused here too: an array of other than 1, 2 or 4 channels, a surface over an array without
// CUDA_ARRAY3D_SURFACE_LDST, a destroyed or unknown handle. Counters: cuda_arrays, textures, surfaces (live
// now) and texture_creations. The known kernel `read_handles` (fake_launches.cpp) reads handles back.

#include "fake_state.hpp"

#include <memory>

using namespace xcuda_fake;

namespace
{
    struct fake_array
    {
        CUDA_ARRAY3D_DESCRIPTOR descriptor{};
        std::vector<unsigned char> bytes;
        std::size_t row_bytes() const
        {
            unsigned size = descriptor.Format == CU_AD_FORMAT_HALF || descriptor.Format == CU_AD_FORMAT_UNSIGNED_INT16 ||
                                    descriptor.Format == CU_AD_FORMAT_SIGNED_INT16
                                ? 2
                            : descriptor.Format == CU_AD_FORMAT_UNSIGNED_INT8 || descriptor.Format == CU_AD_FORMAT_SIGNED_INT8
                                ? 1
                                : 4;
            return descriptor.Width * size * descriptor.NumChannels;
        }
        std::size_t rows() const { return descriptor.Height ? descriptor.Height : 1; }
        std::size_t slices() const { return descriptor.Depth ? descriptor.Depth : 1; }
    };
    struct fake_view
    {
        bool surface = false;
        fake_array* array = nullptr;
        CUDA_TEXTURE_DESC texture{};
    };
    std::map<fake_array*, std::unique_ptr<fake_array>> g_arrays;
    std::map<unsigned long long, fake_view> g_views;
    unsigned long long g_next_view = 0x1000;
    long g_texture_creations = 0;

    fake_array* live_array(CUarray handle)
    {
        auto found = g_arrays.find(reinterpret_cast<fake_array*>(handle));
        return found == g_arrays.end() ? nullptr : found->second.get();
    }

    struct side
    {
        unsigned char* base = nullptr;
        std::size_t pitch = 0, slice = 0;
    };

    // One side of a copy, or false when it names no live array or runs past its array's extent.
    bool side_of(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, std::size_t x, std::size_t y,
                 std::size_t z, std::size_t pitch, std::size_t height, const CUDA_MEMCPY3D& c, side& out)
    {
        if (type == CU_MEMORYTYPE_ARRAY)
        {
            fake_array* a = live_array(array);
            if (!a || x + c.WidthInBytes > a->row_bytes() || y + c.Height > a->rows() || z + c.Depth > a->slices())
            {
                return false;
            }
            out.pitch = a->row_bytes();
            out.slice = out.pitch * a->rows();
            out.base = a->bytes.data() + z * out.slice + y * out.pitch + x;
            return true;
        }
        auto* start = static_cast<unsigned char*>(type == CU_MEMORYTYPE_HOST ? const_cast<void*>(host)
                                                                              : reinterpret_cast<void*>(device));
        out.pitch = pitch;
        out.slice = pitch * (height ? height : c.Height);
        out.base = start + z * out.slice + y * pitch + x;
        if (type == CU_MEMORYTYPE_DEVICE)
        {
            std::size_t span = (c.Depth - 1) * out.slice + (c.Height - 1) * pitch + c.WidthInBytes;
            return device_span_ok(out.base, span, "cuMemcpy3D's device side");
        }
        return start != nullptr;
    }
}

#pragma GCC visibility push(hidden)  // the fake's own symbols stay inside it
namespace xcuda_fake
{
    bool view_live(unsigned long long handle, bool surface)
    {
        auto found = g_views.find(handle);
        return found != g_views.end() && found->second.surface == surface;
    }
}
#pragma GCC visibility pop

extern "C" long xcuda_fake_texture_counter(const char* name)
{
    lock held(g_mutex);
    std::string which = name;
    long surfaces = 0;
    for (const auto& [handle, view] : g_views)
    {
        surfaces += view.surface ? 1 : 0;
    }
    return which == "cuda_arrays" ? static_cast<long>(g_arrays.size())
         : which == "textures" ? static_cast<long>(g_views.size()) - surfaces
         : which == "surfaces" ? surfaces : which == "texture_creations" ? g_texture_creations : -1;
}

// What texture `handle` was made with: filter mode, flags, the three address modes and the first border value
// (as an int); 0 when it is live, -1 when it is not.
extern "C" int xcuda_fake_texture_info(unsigned long long handle, int* out)
{
    lock held(g_mutex);
    auto found = g_views.find(handle);
    if (found == g_views.end() || found->second.surface)
    {
        return -1;
    }
    const CUDA_TEXTURE_DESC& t = found->second.texture;
    int values[6] = {t.filterMode, static_cast<int>(t.flags), t.addressMode[0], t.addressMode[1], t.addressMode[2],
                     static_cast<int>(t.borderColor[0])};
    std::memcpy(out, values, sizeof values);
    return 0;
}

CUresult CUDAAPI cuArray3DCreate(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* descriptor)
{
    lock held(g_mutex);
    if (!handle || !descriptor || (descriptor->NumChannels != 1 && descriptor->NumChannels != 2 &&
                                   descriptor->NumChannels != 4) || descriptor->Width == 0)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    auto array = std::make_unique<fake_array>();
    array->descriptor = *descriptor;
    array->bytes.assign(array->row_bytes() * array->rows() * array->slices(), 0);
    fake_array* raw = array.get();
    g_arrays[raw] = std::move(array);
    *handle = reinterpret_cast<CUarray>(raw);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuArrayCreate(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR* descriptor)
{
    if (!descriptor)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = descriptor->Width;
    d.Height = descriptor->Height;
    d.Format = descriptor->Format;
    d.NumChannels = descriptor->NumChannels;
    return cuArray3DCreate(handle, &d);
}
CUresult CUDAAPI cuArrayDestroy(CUarray handle)
{
    lock held(g_mutex);
    return g_arrays.erase(reinterpret_cast<fake_array*>(handle)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR* descriptor, CUarray handle)
{
    lock held(g_mutex);
    fake_array* a = live_array(handle);
    if (!a || !descriptor)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *descriptor = a->descriptor;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR* descriptor, CUarray handle)
{
    CUDA_ARRAY3D_DESCRIPTOR d{};
    CUresult result = cuArray3DGetDescriptor(&d, handle);
    if (result == CUDA_SUCCESS && descriptor)
    {
        descriptor->Width = d.Width;
        descriptor->Height = d.Height;
        descriptor->Format = d.Format;
        descriptor->NumChannels = d.NumChannels;
    }
    return result;
}
CUresult CUDAAPI cuMemcpy3D(const CUDA_MEMCPY3D* c)
{
    lock held(g_mutex);
    side from, to;
    if (!c || !side_of(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY, c->srcZ,
                       c->srcPitch, c->srcHeight, *c, from) ||
        !side_of(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch,
                 c->dstHeight, *c, to))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (std::size_t z = 0; z < (c->Depth ? c->Depth : 1); ++z)
    {
        for (std::size_t y = 0; y < c->Height; ++y)
        {
            std::memmove(to.base + z * to.slice + y * to.pitch, from.base + z * from.slice + y * from.pitch, c->WidthInBytes);
        }
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D* c)
{
    if (!c)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUDA_MEMCPY3D d{};
    d.srcXInBytes = c->srcXInBytes;
    d.srcY = c->srcY;
    d.srcMemoryType = c->srcMemoryType;
    d.srcHost = c->srcHost;
    d.srcDevice = c->srcDevice;
    d.srcArray = c->srcArray;
    d.srcPitch = c->srcPitch;
    d.dstXInBytes = c->dstXInBytes;
    d.dstY = c->dstY;
    d.dstMemoryType = c->dstMemoryType;
    d.dstHost = c->dstHost;
    d.dstDevice = c->dstDevice;
    d.dstArray = c->dstArray;
    d.dstPitch = c->dstPitch;
    d.WidthInBytes = c->WidthInBytes;
    d.Height = c->Height;
    d.Depth = 1;
    return cuMemcpy3D(&d);
}
CUresult CUDAAPI cuTexObjectCreate(CUtexObject* handle, const CUDA_RESOURCE_DESC* resource, const CUDA_TEXTURE_DESC* texture,
                                   const CUDA_RESOURCE_VIEW_DESC*)
{
    lock held(g_mutex);
    if (!handle || !resource || !texture || resource->resType != CU_RESOURCE_TYPE_ARRAY)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fake_array* a = live_array(resource->res.array.hArray);
    if (!a)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *handle = g_next_view++;
    g_views[*handle] = fake_view{false, a, *texture};
    ++g_texture_creations;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuTexObjectDestroy(CUtexObject handle)
{
    lock held(g_mutex);
    if (!view_live(handle, false))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    g_views.erase(handle);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* resource, CUtexObject handle)
{
    lock held(g_mutex);
    if (!resource || !view_live(handle, false))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    std::memset(resource, 0, sizeof *resource);
    resource->resType = CU_RESOURCE_TYPE_ARRAY;
    resource->res.array.hArray = reinterpret_cast<CUarray>(g_views[handle].array);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject* handle, const CUDA_RESOURCE_DESC* resource)
{
    lock held(g_mutex);
    if (!handle || !resource || resource->resType != CU_RESOURCE_TYPE_ARRAY)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fake_array* a = live_array(resource->res.array.hArray);
    if (!a)
    {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!(a->descriptor.Flags & CUDA_ARRAY3D_SURFACE_LDST))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *handle = g_next_view++;
    g_views[*handle] = fake_view{true, a, {}};
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject handle)
{
    lock held(g_mutex);
    if (!view_live(handle, true))
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    g_views.erase(handle);
    return CUDA_SUCCESS;
}
