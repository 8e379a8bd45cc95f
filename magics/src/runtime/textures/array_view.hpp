#pragma once
// What a texture object and a surface object share: a driver object (a 64-bit handle) over one CUDA array,
// made in the array's context, holding the array (std::shared_ptr), destroyed in the destructor or when the
// session closes first (release(); before the array: release_rank 0), after which handle() raises.
// texture_object and surface_object derive from it and make the driver object (created()).
//
// Threading: as cuda_array (made and freed on any thread; one object used by one thread at a time).

#include <cstdint>
#include <memory>
#include <string>

#include <cuda.h>

#include "cuda_array.hpp"

namespace xcuda
{
    class array_view : public session_resource
    {
    public:
        // The 64-bit handle a kernel is given; raises session_closed_error / session_lost_error once it is gone.
        std::uint64_t handle() const;
        const std::shared_ptr<cuda_array>& array() const noexcept { return m_array; }

        void release() noexcept override;
        void abandon() noexcept override { m_handle = 0; }
        int device() const noexcept override { return m_array->device(); }
        int release_rank() const noexcept override { return 0; }  // before its array

        array_view(const array_view&) = delete;
        array_view& operator=(const array_view&) = delete;

    protected:
        using destroy_call = CUresult(CUDAAPI*)(unsigned long long);
        // `what`: "texture object" or "surface object", for messages; `destroy`: the driver's call that destroys
        // one (null: the driver has none, and the caller refuses before created()).
        array_view(std::shared_ptr<cuda_array> array, const char* what, destroy_call destroy);
        ~array_view() override;
        // The array as the driver's resource, its context made current (for cuTexObjectCreate, cuSurfObjectCreate).
        CUDA_RESOURCE_DESC resource();
        // The driver made `handle`: kept, and the object joins the session's resources.
        void created(std::uint64_t handle);

    private:
        std::shared_ptr<cuda_array> m_array;
        const char* m_what;
        destroy_call m_destroy;
        std::uint64_t m_handle = 0;
        std::uint64_t m_generation = 0;
        bool m_created = false;  // created() ran: a session resource
    };
}
