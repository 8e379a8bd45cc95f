#include "pinned_memory.hpp"

#include "errors.hpp"

#include <cstdlib>
#include <new>

#include "cuda_driver.hpp"

namespace xcuda
{
    std::shared_ptr<pinned_memory> pinned_memory::allocate(device_contexts& contexts, std::size_t bytes)
    {
        contexts.make_current();
        std::shared_ptr<pinned_memory> memory(new pinned_memory(contexts));
        std::size_t page = 4096;
        std::size_t rounded = (bytes + page - 1) / page * page;
        if (rounded == 0)
        {
            return memory;
        }
        if (::posix_memalign(&memory->m_data, page, rounded) != 0)
        {
            memory->m_data = nullptr;
            throw host_out_of_memory_error("could not allocate " + std::to_string(rounded) +
                                           " bytes of host memory to page-lock");
        }
        memory->m_size = bytes;
        check(cuda_driver::get().cuMemHostRegister(memory->m_data, rounded, CU_MEMHOSTREGISTER_PORTABLE),
              "cuMemHostRegister");
        memory->m_registered = true;
        memory->m_device = contexts.device_ordinal();
        memory->m_generation = contexts.generation();
        contexts.resources().add(memory.get());
        return memory;
    }

    pinned_memory::~pinned_memory()
    {
        if (m_registered)
        {
            m_contexts.resources().remove(this);
            if (m_contexts.make_current_if_alive(m_device, m_generation))
            {
                cuda_driver::get().cuMemHostUnregister(m_data);
            }
        }
        std::free(m_data);
    }

    void pinned_memory::release() noexcept
    {
        // Called by the session's close() with this device's context current.
        if (m_registered)
        {
            cuda_driver::get().cuMemHostUnregister(m_data);
            m_registered = false;
        }
    }

    std::string pinned_memory::describe() const
    {
        return "page-locked host memory (" + std::to_string(m_size) + " bytes, registered in device " +
               std::to_string(m_device) + "'s context)";
    }

    bool pinned_memory::is_page_locked(const device_contexts& contexts, const void* pointer) noexcept
    {
        if (!contexts.active())
        {
            return false;
        }
        // cuPointerGetAttributes, not cuPointerGetAttribute: for memory the driver does not know (any
        // pageable numpy array) the singular call fails with CUDA_ERROR_INVALID_VALUE, which
        // compute-sanitizer reports as an error of the user's program; the plural one succeeds and
        // leaves the type 0.
        unsigned int type = 0;
        CUpointer_attribute attribute = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
        void* values[] = {&type};
        CUresult result = cuda_driver::get().cuPointerGetAttributes(1, &attribute, values,
                                                                    reinterpret_cast<CUdeviceptr>(pointer));
        return result == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST;
    }
}
