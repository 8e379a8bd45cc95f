#pragma once
// A CUDA array (cuArray3DCreate) in one device's context: the storage textures and surfaces read and write
// (docs/textures.md). Its shape is written as numpy writes it ((width,), (height, width), (depth, height,
// width); a layered array's first extent is its layer count), each element of `channels` values of one kind
// (float32, float16, 8/16/32-bit integers); a C-contiguous host or device array of that shape, with a last axis
// of `channels` when there are several, copies in and out whole.
//
// Ownership: the array owns its CUarray and destroys it in its destructor, or when the session closes first
// (release()); after that, handle() raises. Texture and surface objects over it hold it (std::shared_ptr).
// Threading: made and freed on any thread (the session's resource list has its own mutex); one array is used
// by one thread at a time (the binding holds the GIL for its methods). The copies wait for the device's earlier
// work interruptibly, as device_buffer's do.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "device_session.hpp"
#include "kernel_signature.hpp"

namespace xcuda
{
    class cuda_array final : public session_resource
    {
    public:
        struct description
        {
            std::vector<std::size_t> shape;  // numpy's order, without the channels
            scalar_kind kind = scalar_kind::f32;
            unsigned channels = 1;
            bool surface = false;  // CUDA_ARRAY3D_SURFACE_LDST: surface objects may be made over it
            bool layered = false;  // the first extent is a layer count (tex1DLayered, tex2DLayered)
            std::string dtype;     // the dtype as the caller named it, for messages ("" : the kind's name)

            // The dimensions a texture over it samples (the layer not counted).
            unsigned dimensions() const;
            std::size_t element_bytes() const;  // one element, all its channels
            std::size_t nbytes() const;
            // "(480, 640) float32" with ", 4 channels", ", surface", ", layered" when they apply.
            std::string text() const;
        };

        // Refuses (usage_error) what no CUDA array holds, saying what to do: a kind other than float32, float16
        // and 8/16/32-bit integers, 3 channels (or other than 1, 2, 4), no dimensions or more than 3, an extent 0.
        static void check(const description& d);
        // Makes the array on the session's current device; check()s d first; raises cuda_unavailable_error
        // when the driver has no CUDA arrays.
        static std::shared_ptr<cuda_array> make(device_session& session, const description& d);

        ~cuda_array() override;
        cuda_array(const cuda_array&) = delete;
        cuda_array& operator=(const cuda_array&) = delete;

        const description& desc() const noexcept { return m_description; }
        // The driver's handle; raises session_closed_error / session_lost_error once the array is gone.
        CUarray handle() const;

        // Whole copies from and to C-contiguous memory of exactly nbytes() (usage_error otherwise), after the
        // device's earlier work. No Python state: callers release the GIL.
        void copy_from_host(const void* source, std::size_t bytes);
        void copy_from_device(CUdeviceptr source, std::size_t bytes);
        void copy_to_host(void* destination, std::size_t bytes) const;

        // session_resource
        void release() noexcept override;
        void abandon() noexcept override;
        std::string describe() const override;
        const char* kind() const noexcept override { return "cuda array"; }
        std::size_t bytes() const noexcept override { return m_description.nbytes(); }
        int device() const noexcept override { return m_device; }

        device_session& session() const noexcept { return m_session; }

    private:
        cuda_array(device_session& session, const description& d);
        // One cuMemcpy3D between the array and host or device memory.
        void copy(bool to_array, CUmemorytype other, const void* host, CUdeviceptr device, std::size_t bytes) const;

        device_session& m_session;
        description m_description;
        CUarray m_array = nullptr;
        int m_device = 0;
        std::uint64_t m_generation = 0;
    };
}
