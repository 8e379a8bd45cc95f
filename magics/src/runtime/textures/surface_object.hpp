#pragma once
// A surface object (cuSurfObjectCreate) over one CUDA array made with surface=True: what a kernel's
// cudaSurfaceObject_t parameter is given, read and written with surf2Dread/surf2Dwrite (x in bytes).
//
// Ownership and threading: array_view's (holds its array; destroyed in the destructor or when the session
// closes first, before the array).

#include <memory>
#include <string>

#include "array_view.hpp"

namespace xcuda
{
    class surface_object final : public array_view
    {
    public:
        // Raises usage_error for an array made without surface=True, cuda_unavailable_error when the driver has
        // no surface objects.
        static std::shared_ptr<surface_object> make(std::shared_ptr<cuda_array> array);

        std::string repr() const;
        std::string describe() const override;
        const char* kind() const noexcept override { return "surface"; }

    private:
        explicit surface_object(std::shared_ptr<cuda_array> array);
    };
}
