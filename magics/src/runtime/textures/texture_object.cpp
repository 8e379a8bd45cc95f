#include "texture_object.hpp"

#include <cstring>

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    std::shared_ptr<texture_object> texture_object::make(std::shared_ptr<cuda_array> array, const texture_settings& settings)
    {
        settings.check(array->desc().kind, array->desc().dimensions());
        return std::shared_ptr<texture_object>(new texture_object(std::move(array), settings));
    }

    std::shared_ptr<texture_object> texture_object::filled(device_session& session, const cuda_array::description& d,
                                                           const void* host, CUdeviceptr device, std::size_t bytes,
                                                           const texture_settings& settings)
    {
        cuda_array::check(d);
        settings.check(d.kind, d.dimensions());
        std::shared_ptr<cuda_array> array = cuda_array::make(session, d);
        if (host)
        {
            array->copy_from_host(host, bytes);
        }
        else
        {
            array->copy_from_device(device, bytes);
        }
        return make(std::move(array), settings);
    }

    texture_object::texture_object(std::shared_ptr<cuda_array> array, const texture_settings& settings)
        : m_array(std::move(array))
        , m_settings(settings)
    {
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuTexObjectCreate || !driver.cuTexObjectDestroy)
        {
            throw cuda_unavailable_error("this NVIDIA driver has no cuTexObjectCreate or cuTexObjectDestroy, which "
                                         "texture objects need");
        }
        device_session& session = m_array->session();
        session.make_current(m_array->device());
        m_generation = session.generation(m_array->device());
        CUDA_RESOURCE_DESC resource;
        std::memset(&resource, 0, sizeof resource);
        resource.resType = CU_RESOURCE_TYPE_ARRAY;
        resource.res.array.hArray = m_array->handle();
        CUDA_TEXTURE_DESC texture = m_settings.descriptor(m_array->desc().kind);
        check(driver.cuTexObjectCreate(&m_handle, &resource, &texture, nullptr), "cuTexObjectCreate");
        session.resources().add(this);
    }

    texture_object::~texture_object()
    {
        device_session& session = m_array->session();
        session.resources().remove(this);
        if (m_handle && session.make_current_if_alive(m_array->device(), m_generation))
        {
            cuda_driver::get().cuTexObjectDestroy(m_handle);
        }
    }

    std::uint64_t texture_object::handle() const
    {
        m_array->session().check_alive(m_array->device(), m_generation, "texture object");
        if (!m_handle)
        {
            throw session_closed_error("the texture object over " + m_array->desc().text() +
                                       " is gone: the CUDA session that held it was closed; make it again");
        }
        return m_handle;
    }

    std::string texture_object::repr() const
    {
        return "xcuda.Texture(" + m_array->desc().text() + ", " + m_settings.text(m_array->desc().dimensions()) + ")";
    }

    void texture_object::release() noexcept
    {
        if (m_handle)
        {
            cuda_driver::get().cuTexObjectDestroy(m_handle);
        }
        m_handle = 0;
    }

    std::string texture_object::describe() const
    {
        return "texture over the CUDA array " + m_array->desc().text() + " (" +
               m_settings.text(m_array->desc().dimensions()) + ") on device " + std::to_string(m_array->device());
    }
}
