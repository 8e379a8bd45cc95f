#include "surface_object.hpp"

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

    surface_object::surface_object(std::shared_ptr<cuda_array> viewed)
        : array_view(std::move(viewed), "surface object", cuda_driver::get().cuSurfObjectDestroy)
    {
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuSurfObjectCreate || !driver.cuSurfObjectDestroy)
        {
            throw cuda_unavailable_error("this NVIDIA driver has no cuSurfObjectCreate or cuSurfObjectDestroy, which "
                                         "surface objects need");
        }
        CUDA_RESOURCE_DESC source = resource();
        CUsurfObject handle = 0;
        check(driver.cuSurfObjectCreate(&handle, &source), "cuSurfObjectCreate");
        created(handle);
    }

    std::string surface_object::repr() const
    {
        return "xcuda.Surface(" + array()->desc().text() + ")";
    }

    std::string surface_object::describe() const
    {
        return "surface over the CUDA array " + array()->desc().text() + " on device " + std::to_string(device());
    }
}
