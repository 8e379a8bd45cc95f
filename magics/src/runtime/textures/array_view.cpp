#include "array_view.hpp"

#include <cstring>

#include "errors.hpp"

namespace xcuda
{
    array_view::array_view(std::shared_ptr<cuda_array> array, const char* what, destroy_call destroy)
        : m_array(std::move(array))
        , m_what(what)
        , m_destroy(destroy)
    {
    }

    array_view::~array_view()
    {
        if (!m_created)
        {
            return;  // never made: not a resource
        }
        device_session& session = m_array->session();
        session.resources().remove(this);
        if (m_handle && session.make_current_if_alive(m_array->device(), m_generation))
        {
            m_destroy(m_handle);
        }
    }

    CUDA_RESOURCE_DESC array_view::resource()
    {
        device_session& session = m_array->session();
        session.make_current(m_array->device());
        CUDA_RESOURCE_DESC resource;
        std::memset(&resource, 0, sizeof resource);
        resource.resType = CU_RESOURCE_TYPE_ARRAY;
        resource.res.array.hArray = m_array->handle();
        return resource;
    }

    void array_view::created(std::uint64_t handle)
    {
        m_handle = handle;
        m_generation = m_array->session().generation(m_array->device());
        m_array->session().resources().add(this);
        m_created = true;
    }

    std::uint64_t array_view::handle() const
    {
        m_array->session().check_alive(m_array->device(), m_generation, m_what);
        if (!m_handle)
        {
            throw session_closed_error(std::string("the ") + m_what + " over " + m_array->desc().text() +
                                       " is gone: the CUDA session that held it was closed; make it again");
        }
        return m_handle;
    }

    void array_view::release() noexcept
    {
        if (m_handle)
        {
            m_destroy(m_handle);
        }
        m_handle = 0;
    }
}
