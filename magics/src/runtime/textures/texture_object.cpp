#include "texture_object.hpp"

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

    texture_object::texture_object(std::shared_ptr<cuda_array> viewed, const texture_settings& settings)
        : array_view(std::move(viewed), "texture object", cuda_driver::get().cuTexObjectDestroy)
        , m_settings(settings)
    {
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuTexObjectCreate || !driver.cuTexObjectDestroy)
        {
            throw cuda_unavailable_error("this NVIDIA driver has no cuTexObjectCreate or cuTexObjectDestroy, which "
                                         "texture objects need");
        }
        CUDA_RESOURCE_DESC source = resource();
        CUDA_TEXTURE_DESC texture = m_settings.descriptor(array()->desc().kind);
        CUtexObject handle = 0;
        check(driver.cuTexObjectCreate(&handle, &source, &texture, nullptr), "cuTexObjectCreate");
        created(handle);
    }

    std::string texture_object::repr() const
    {
        return "xcuda.Texture(" + array()->desc().text() + ", " + m_settings.text(array()->desc().dimensions()) + ")";
    }

    std::string texture_object::describe() const
    {
        return "texture over the CUDA array " + array()->desc().text() + " (" +
               m_settings.text(array()->desc().dimensions()) + ") on device " + std::to_string(device());
    }
}
