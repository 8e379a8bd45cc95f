#include "surface_object.hpp"

#include <cstring>

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    std::shared_ptr<surface_object> surface_object::make(std::shared_ptr<cuda_array> array)
    {
        if (!array->desc().surface)
        {
            throw usage_error("a surface needs a CUDA array made for surfaces: xcuda.cuda_array(shape, dtype, "
                              "surface=True); the array " + array->desc().text() + " was made without it");
        }
        return std::shared_ptr<surface_object>(new surface_object(std::move(array)));
    }

    surface_object::surface_object(std::shared_ptr<cuda_array> array)
        : m_array(std::move(array))
    {
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuSurfObjectCreate || !driver.cuSurfObjectDestroy)
        {
            throw cuda_unavailable_error("this NVIDIA driver has no cuSurfObjectCreate or cuSurfObjectDestroy, which "
                                         "surface objects need");
        }
        device_session& session = m_array->session();
        session.make_current(m_array->device());
        m_generation = session.generation(m_array->device());
        CUDA_RESOURCE_DESC resource;
        std::memset(&resource, 0, sizeof resource);
        resource.resType = CU_RESOURCE_TYPE_ARRAY;
        resource.res.array.hArray = m_array->handle();
        check(driver.cuSurfObjectCreate(&m_handle, &resource), "cuSurfObjectCreate");
        session.resources().add(this);
    }

    surface_object::~surface_object()
    {
        device_session& session = m_array->session();
        session.resources().remove(this);
        if (m_handle && session.make_current_if_alive(m_array->device(), m_generation))
        {
            cuda_driver::get().cuSurfObjectDestroy(m_handle);
        }
    }

    std::uint64_t surface_object::handle() const
    {
        m_array->session().check_alive(m_array->device(), m_generation, "surface object");
        if (!m_handle)
        {
            throw session_closed_error("the surface object over " + m_array->desc().text() +
                                       " is gone: the CUDA session that held it was closed; make it again");
        }
        return m_handle;
    }

    std::string surface_object::repr() const
    {
        return "xcuda.Surface(" + m_array->desc().text() + ")";
    }

    void surface_object::release() noexcept
    {
        if (m_handle)
        {
            cuda_driver::get().cuSurfObjectDestroy(m_handle);
        }
        m_handle = 0;
    }

    std::string surface_object::describe() const
    {
        return "surface over the CUDA array " + m_array->desc().text() + " on device " + std::to_string(m_array->device());
    }
}
