#pragma once
// The simulated device's CUDA arrays, texture objects and surface objects (docs/textures.md), as the
// driver shim makes them (cuArrayCreate, cuTexObjectCreate, cuSurfObjectCreate) and as the interpreter's
// texture family reads them (warp_texture_operations.cpp, through texture_sampler).
//
// A CUDA array is host memory of its own, laid out row after row (x fastest, then y, then z or the layer),
// with no padding: the GPU's layout of an array is opaque, and nothing but copies, textures and surfaces
// ever sees it. A texture object is a view of one array with its sampling state; a surface object is a view
// of one array. Handles are numbers from 1 (0 is never one), never reused in a process, so a stale handle is
// refused instead of reading another object.
//
// Threading: every member takes the registry's mutex, so the shim's calls from several threads and the
// lookups of a launch's pool threads may run at once. A lookup hands out a copy of the view with a shared
// reference to the array's storage: a texture destroyed while a launch reads it stays readable to that launch.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xcuda::sim
{
    // A channel's format, as CUarray_format names it (CU_AD_FORMAT_UNSIGNED_INT8 ...), without the CUDA header.
    enum class texel_format : std::uint8_t
    {
        u8, u16, u32, s8, s16, s32, f16, f32
    };
    unsigned texel_format_bytes(texel_format format);
    bool texel_format_is_integer(texel_format format);
    bool texel_format_is_signed(texel_format format);

    // One CUDA array: its extents as CUDA_ARRAY3D_DESCRIPTOR gives them (height 0: 1D; depth 0: 2D; a
    // layered array's depth is its layer count) and its storage.
    struct sim_array
    {
        std::size_t width = 0;
        std::size_t height = 0;
        std::size_t depth = 0;
        unsigned channels = 1;
        texel_format format = texel_format::f32;
        bool layered = false;
        bool surface = false;  // CUDA_ARRAY3D_SURFACE_LDST: surface objects may be made over it
        std::vector<std::uint8_t> bytes;

        std::size_t texel_bytes() const { return texel_format_bytes(format) * channels; }
        std::size_t row_bytes() const { return width * texel_bytes(); }
        std::size_t rows() const { return height == 0 ? 1 : height; }
        std::size_t slices() const { return depth == 0 ? 1 : depth; }
    };

    enum class address_mode : std::uint8_t
    {
        wrap, clamp, mirror, border
    };

    // How a texture reads its array (CUDA_TEXTURE_DESC as far as the simulator models it).
    struct sampler_state
    {
        bool linear = false;                 // linear filtering; else point
        address_mode address[3] = {address_mode::clamp, address_mode::clamp, address_mode::clamp};
        bool normalized_coordinates = false;
        bool read_as_integer = false;        // CU_TRSF_READ_AS_INTEGER: 8/16-bit integers are not promoted to [0, 1]
        float border[4] = {0, 0, 0, 0};
    };

    struct texture_view
    {
        std::shared_ptr<sim_array> array;  // a surface's stores write it
        sampler_state sampler;
        bool surface = false;  // a surface object (sampler unused)
    };

    class texture_registry
    {
    public:
        // Keeps the array; its handle is its address (what CUarray is).
        sim_array* add_array(std::unique_ptr<sim_array> array);
        // The array behind a handle, shared; null when the handle is none of this registry's.
        std::shared_ptr<sim_array> array(const void* handle) const;
        // Forgets it (textures and surfaces over it keep its storage until they go); false when unknown.
        bool remove_array(const void* handle);

        // A texture or surface object over `array`; returns its handle (never 0).
        std::uint64_t add_view(texture_view view);
        // Copies the view out; false when the handle is unknown (never made, or destroyed).
        bool view(std::uint64_t handle, texture_view& out) const;
        bool remove_view(std::uint64_t handle);

        // Live objects, for tests: arrays and views.
        std::size_t arrays() const;
        std::size_t views() const;

    private:
        mutable std::mutex m_mutex;
        std::map<const void*, std::shared_ptr<sim_array>> m_arrays;
        std::map<std::uint64_t, texture_view> m_views;
        std::uint64_t m_next = 1;
    };
}
