// libxcuda-sim.so's CUDA arrays, texture objects and surface objects (docs/textures.md): cuArrayCreate,
// cuArray3DCreate, cuArrayDestroy, cuArrayGetDescriptor, cuArray3DGetDescriptor, cuMemcpy2D, cuMemcpy3D,
// cuTexObjectCreate/Destroy/GetResourceDesc and cuSurfObjectCreate/Destroy, over the simulator's
// texture_registry, which the interpreter's texture family reads at every launch.
//
// An array is host memory in rows (texture_registry.hpp); a copy to or from one walks its rows. Textures and
// surfaces are made from CUDA arrays only: a linear or pitched resource (tex1Dfetch over a plain allocation)
// is refused with CUDA_ERROR_NOT_SUPPORTED saying so. What a GPU's driver refuses is refused here too, with
// the reason (cuGetErrorString): linear filtering of integers read as integers, 3 channels, a surface over an
// array made without CUDA_ARRAY3D_SURFACE_LDST.
//
// Threading: the registry has its own lock; copies touch only the arrays and memory they are given.

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "xcuda_sim_shared.hpp"

using namespace xcuda::sim;
using xcuda_sim::failed_with;

namespace
{
    bool format_of(CUarray_format format, texel_format& out)
    {
        switch (format)
        {
        case CU_AD_FORMAT_UNSIGNED_INT8: out = texel_format::u8; return true;
        case CU_AD_FORMAT_UNSIGNED_INT16: out = texel_format::u16; return true;
        case CU_AD_FORMAT_UNSIGNED_INT32: out = texel_format::u32; return true;
        case CU_AD_FORMAT_SIGNED_INT8: out = texel_format::s8; return true;
        case CU_AD_FORMAT_SIGNED_INT16: out = texel_format::s16; return true;
        case CU_AD_FORMAT_SIGNED_INT32: out = texel_format::s32; return true;
        case CU_AD_FORMAT_HALF: out = texel_format::f16; return true;
        case CU_AD_FORMAT_FLOAT: out = texel_format::f32; return true;
        default: return false;
        }
    }

    CUarray_format cuda_format_of(texel_format format)
    {
        switch (format)
        {
        case texel_format::u8: return CU_AD_FORMAT_UNSIGNED_INT8;
        case texel_format::u16: return CU_AD_FORMAT_UNSIGNED_INT16;
        case texel_format::u32: return CU_AD_FORMAT_UNSIGNED_INT32;
        case texel_format::s8: return CU_AD_FORMAT_SIGNED_INT8;
        case texel_format::s16: return CU_AD_FORMAT_SIGNED_INT16;
        case texel_format::s32: return CU_AD_FORMAT_SIGNED_INT32;
        case texel_format::f16: return CU_AD_FORMAT_HALF;
        default: return CU_AD_FORMAT_FLOAT;
        }
    }

    CUresult make_array(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR& d, const char* call)
    {
        auto array = std::make_unique<sim_array>();
        if (!handle || !format_of(d.Format, array->format))
        {
            return failed_with(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": an array format the driver does not have");
        }
        if (d.NumChannels != 1 && d.NumChannels != 2 && d.NumChannels != 4)
        {
            return failed_with(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": " + std::to_string(d.NumChannels) +
                                                             " channels; a CUDA array has 1, 2 or 4");
        }
        if (d.Width == 0 || (d.Depth != 0 && d.Height == 0 && !(d.Flags & CUDA_ARRAY3D_LAYERED)) ||
            (d.Flags & ~unsigned(CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST)) != 0)
        {
            return failed_with(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": extents or flags the simulator does not make "
                                                                             "(width 0, a depth without a height, or a "
                                                                             "flag other than layered and surface)");
        }
        array->width = d.Width;
        array->height = d.Height;
        array->depth = d.Depth;
        array->channels = d.NumChannels;
        array->layered = (d.Flags & CUDA_ARRAY3D_LAYERED) != 0;
        array->surface = (d.Flags & CUDA_ARRAY3D_SURFACE_LDST) != 0;
        std::size_t bytes = array->row_bytes() * array->rows() * array->slices();
        if (bytes / array->row_bytes() / array->rows() != array->slices() || bytes > (std::size_t(1) << 36))
        {
            return failed_with(CUDA_ERROR_OUT_OF_MEMORY, std::string(call) + ": an array of more than 64 GiB");
        }
        array->bytes.assign(bytes, 0);
        *handle = reinterpret_cast<CUarray>(xcuda_sim::textures().add_array(std::move(array)));
        return CUDA_SUCCESS;
    }

    // One side of a copy: its first byte and the distance between its rows and between its slices, and, for an
    // array, whether the copy's extent stays inside it.
    struct copy_side
    {
        std::uint8_t* base = nullptr;
        std::size_t pitch = 0;
        std::size_t slice = 0;
    };

    CUresult side_of(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, std::size_t x, std::size_t y,
                     std::size_t z, std::size_t pitch, std::size_t height, const CUDA_MEMCPY3D& c, copy_side& out,
                     std::shared_ptr<sim_array>& keep)
    {
        if (type == CU_MEMORYTYPE_ARRAY)
        {
            keep = xcuda_sim::textures().array(array);
            if (!keep)
            {
                return failed_with(CUDA_ERROR_INVALID_HANDLE, "cuMemcpy3D: an array handle that is no live CUDA array");
            }
            const sim_array& a = *keep;
            if (x + c.WidthInBytes > a.row_bytes() || y + c.Height > a.rows() || z + c.Depth > a.slices())
            {
                return failed_with(CUDA_ERROR_INVALID_VALUE, "cuMemcpy3D: a copy of " + std::to_string(c.WidthInBytes) +
                                                                 " bytes x " + std::to_string(c.Height) + " rows x " +
                                                                 std::to_string(c.Depth) + " slices runs past the array (" +
                                                                 std::to_string(a.row_bytes()) + " bytes x " +
                                                                 std::to_string(a.rows()) + " x " +
                                                                 std::to_string(a.slices()) + ")");
            }
            out.pitch = a.row_bytes();
            out.slice = a.row_bytes() * a.rows();
            out.base = keep->bytes.data() + z * out.slice + y * out.pitch + x;
            return CUDA_SUCCESS;
        }
        std::uint8_t* start = type == CU_MEMORYTYPE_HOST ? static_cast<std::uint8_t*>(const_cast<void*>(host))
                                                         : reinterpret_cast<std::uint8_t*>(device);
        if (!start || (pitch < c.WidthInBytes && c.Height > 1))
        {
            return failed_with(CUDA_ERROR_INVALID_VALUE, "cuMemcpy3D: a null pointer or a pitch below the copy's width");
        }
        out.pitch = pitch;
        out.slice = pitch * (height ? height : c.Height);
        out.base = start + z * out.slice + y * pitch + x;
        return CUDA_SUCCESS;
    }
}

CUresult CUDAAPI cuArray3DCreate(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* descriptor)
{
    return descriptor ? make_array(handle, *descriptor, "cuArray3DCreate") : CUDA_ERROR_INVALID_VALUE;
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
    return make_array(handle, d, "cuArrayCreate");
}
CUresult CUDAAPI cuArrayDestroy(CUarray handle)
{
    return xcuda_sim::textures().remove_array(handle)
               ? CUDA_SUCCESS
               : failed_with(CUDA_ERROR_INVALID_HANDLE, "cuArrayDestroy: a handle that is no live CUDA array");
}
CUresult CUDAAPI cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR* descriptor, CUarray handle)
{
    std::shared_ptr<sim_array> a = xcuda_sim::textures().array(handle);
    if (!a || !descriptor)
    {
        return failed_with(CUDA_ERROR_INVALID_HANDLE, "cuArray3DGetDescriptor: a handle that is no live CUDA array");
    }
    descriptor->Width = a->width;
    descriptor->Height = a->height;
    descriptor->Depth = a->depth;
    descriptor->Format = cuda_format_of(a->format);
    descriptor->NumChannels = a->channels;
    descriptor->Flags = (a->layered ? CUDA_ARRAY3D_LAYERED : 0u) | (a->surface ? CUDA_ARRAY3D_SURFACE_LDST : 0u);
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
    if (!c)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    copy_side from, to;
    std::shared_ptr<sim_array> keep_from, keep_to;
    CUresult result = side_of(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY, c->srcZ,
                              c->srcPitch, c->srcHeight, *c, from, keep_from);
    if (result == CUDA_SUCCESS)
    {
        result = side_of(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY, c->dstZ,
                         c->dstPitch, c->dstHeight, *c, to, keep_to);
    }
    if (result != CUDA_SUCCESS)
    {
        return result;
    }
    std::size_t depth = c->Depth ? c->Depth : 1;
    for (std::size_t z = 0; z < depth; ++z)
    {
        for (std::size_t y = 0; y < c->Height; ++y)
        {
            std::memmove(to.base + z * to.slice + y * to.pitch, from.base + z * from.slice + y * from.pitch, c->WidthInBytes);
            device_copied(to.base + z * to.slice + y * to.pitch, from.base + z * from.slice + y * from.pitch, c->WidthInBytes);
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
                                   const CUDA_RESOURCE_VIEW_DESC* view_desc)
{
    if (!handle || !resource || !texture)
    {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (resource->resType != CU_RESOURCE_TYPE_ARRAY || view_desc)
    {
        return failed_with(CUDA_ERROR_NOT_SUPPORTED, "cuTexObjectCreate: the PTX simulator makes textures over CUDA arrays "
                                                     "only (not over linear or pitched memory, mipmaps or resource views)");
    }
    texture_view view;
    view.array = xcuda_sim::textures().array(resource->res.array.hArray);
    if (!view.array)
    {
        return failed_with(CUDA_ERROR_INVALID_HANDLE, "cuTexObjectCreate: an array handle that is no live CUDA array");
    }
    sampler_state& s = view.sampler;
    s.linear = texture->filterMode == CU_TR_FILTER_MODE_LINEAR;
    s.normalized_coordinates = (texture->flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
    s.read_as_integer = (texture->flags & CU_TRSF_READ_AS_INTEGER) != 0;
    for (int d = 0; d < 3; ++d)
    {
        s.address[d] = static_cast<address_mode>(std::min<int>(texture->addressMode[d], 3));
    }
    for (int c = 0; c < 4; ++c)
    {
        s.border[c] = texture->borderColor[c];
    }
    bool integers = texel_format_is_integer(view.array->format) &&
                    (s.read_as_integer || texel_format_bytes(view.array->format) == 4);
    if (s.linear && integers)
    {
        return failed_with(CUDA_ERROR_INVALID_VALUE, "cuTexObjectCreate: linear filtering of a texture that returns "
                                                     "integers (read them as normalised floats, or filter by points)");
    }
    *handle = xcuda_sim::textures().add_view(std::move(view));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuTexObjectDestroy(CUtexObject handle)
{
    texture_view view;
    if (!xcuda_sim::textures().view(handle, view) || view.surface)
    {
        return failed_with(CUDA_ERROR_INVALID_VALUE, "cuTexObjectDestroy: a handle that is no live texture object");
    }
    xcuda_sim::textures().remove_view(handle);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* resource, CUtexObject handle)
{
    texture_view view;
    if (!resource || !xcuda_sim::textures().view(handle, view) || view.surface)
    {
        return failed_with(CUDA_ERROR_INVALID_VALUE, "cuTexObjectGetResourceDesc: a handle that is no live texture object");
    }
    std::memset(resource, 0, sizeof *resource);
    resource->resType = CU_RESOURCE_TYPE_ARRAY;
    resource->res.array.hArray = reinterpret_cast<CUarray>(view.array.get());
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject* handle, const CUDA_RESOURCE_DESC* resource)
{
    if (!handle || !resource || resource->resType != CU_RESOURCE_TYPE_ARRAY)
    {
        return failed_with(CUDA_ERROR_INVALID_VALUE, "cuSurfObjectCreate: a surface is made over a CUDA array");
    }
    texture_view view;
    view.surface = true;
    view.array = xcuda_sim::textures().array(resource->res.array.hArray);
    if (!view.array)
    {
        return failed_with(CUDA_ERROR_INVALID_HANDLE, "cuSurfObjectCreate: an array handle that is no live CUDA array");
    }
    if (!view.array->surface)
    {
        return failed_with(CUDA_ERROR_INVALID_VALUE, "cuSurfObjectCreate: the array was made without "
                                                     "CUDA_ARRAY3D_SURFACE_LDST (surface=True)");
    }
    *handle = xcuda_sim::textures().add_view(std::move(view));
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject handle)
{
    texture_view view;
    if (!xcuda_sim::textures().view(handle, view) || !view.surface)
    {
        return failed_with(CUDA_ERROR_INVALID_VALUE, "cuSurfObjectDestroy: a handle that is no live surface object");
    }
    xcuda_sim::textures().remove_view(handle);
    return CUDA_SUCCESS;
}
