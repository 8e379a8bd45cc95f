#pragma once
// A surface object (cuSurfObjectCreate) over one CUDA array made with surface=True: what a kernel's
// cudaSurfaceObject_t parameter is given, read and written with surf2Dread/surf2Dwrite (x in bytes).
//
// Ownership and threading: as texture_object (holds its array; destroyed in the destructor or when the
// session closes first).

#include <cstdint>
#include <memory>
#include <string>

#include "cuda_array.hpp"

namespace xcuda
{
    class surface_object final : public session_resource
    {
    public:
        // Raises usage_error for an array made without surface=True, cuda_unavailable_error when the driver has
        // no surface objects.
        static std::shared_ptr<surface_object> make(std::shared_ptr<cuda_array> array);

        ~surface_object() override;
        surface_object(const surface_object&) = delete;
        surface_object& operator=(const surface_object&) = delete;

        std::uint64_t handle() const;
        const std::shared_ptr<cuda_array>& array() const noexcept { return m_array; }
        std::string repr() const;

        void release() noexcept override;
        void abandon() noexcept override { m_handle = 0; }
        std::string describe() const override;
        const char* kind() const noexcept override { return "surface"; }
        int device() const noexcept override { return m_array->device(); }
        int release_rank() const noexcept override { return 0; }  // before its array

    private:
        explicit surface_object(std::shared_ptr<cuda_array> array);

        std::shared_ptr<cuda_array> m_array;
        CUsurfObject m_handle = 0;
        std::uint64_t m_generation = 0;
    };
}
