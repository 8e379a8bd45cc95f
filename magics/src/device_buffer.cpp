#include "device_buffer.hpp"

#include <cstring>
#include <stdexcept>

#include "cuda_driver.hpp"
#include "errors.hpp"
#include "host_staging.hpp"

namespace xcuda
{
    std::shared_ptr<device_buffer> device_buffer::allocate(std::size_t nbytes)
    {
        return std::shared_ptr<device_buffer>(new device_buffer(nbytes));
    }

    device_buffer::device_buffer(std::size_t nbytes)
        : m_size(nbytes)
    {
        cuda_session& session = cuda_session::instance();
        session.make_current();
        m_device = session.device_ordinal();
        m_generation = session.generation();
        if (nbytes != 0)
        {
            const cuda_driver& driver = cuda_driver::get();
            CUresult result = driver.cuMemAlloc(&m_pointer, nbytes);
            if (result == CUDA_ERROR_OUT_OF_MEMORY)
            {
                std::size_t free_bytes = 0;
                std::size_t total_bytes = 0;
                driver.cuMemGetInfo(&free_bytes, &total_bytes);
                throw out_of_memory_error("cuMemAlloc", result, nbytes, free_bytes, total_bytes);
            }
            check(result, "cuMemAlloc");
        }
        session.register_resource(this);
    }

    device_buffer::~device_buffer()
    {
        cuda_session& session = cuda_session::instance();
        session.unregister_resource(this);
        if (m_valid && m_pointer && session.active() && session.generation() == m_generation)
        {
            // cuMemFree needs the owning context current; an error here cannot be reported from a
            // destructor, and the memory goes with the context anyway.
            const cuda_driver& driver = cuda_driver::get();
            CUcontext current = nullptr;
            driver.cuCtxGetCurrent(&current);
            if (current != session.context())
            {
                driver.cuCtxSetCurrent(session.context());
            }
            driver.cuMemFree(m_pointer);
        }
    }

    void device_buffer::release() noexcept
    {
        if (m_valid && m_pointer)
        {
            cuda_driver::get().cuMemFree(m_pointer);
        }
        m_valid = false;
        m_pointer = 0;
    }

    CUdeviceptr device_buffer::pointer() const
    {
        if (!m_valid || cuda_session::instance().generation() != m_generation)
        {
            throw std::runtime_error("device buffer" + (m_label.empty() ? std::string() : " '" + m_label + "'") +
                                     " of " + std::to_string(m_size) +
                                     " bytes is gone: the CUDA session that held it was closed or reset; "
                                     "create it again (for example with xcuda.to_device)");
        }
        return m_pointer;
    }

    void device_buffer::copy_from_host(const void* source, std::size_t nbytes, std::size_t offset)
    {
        if (nbytes + offset > m_size)
        {
            throw std::invalid_argument("copy of " + std::to_string(nbytes) + " bytes does not fit in a buffer of " +
                                        std::to_string(m_size) + " bytes");
        }
        if (nbytes == 0)
        {
            return;
        }
        CUdeviceptr destination = pointer() + offset;
        cuda_session& session = cuda_session::instance();
        session.make_current();
        host_staging& staging = host_staging::instance();
        if (staging.worth_it(source, nbytes))
        {
            staging.to_device(destination, source, nbytes, session.stream());
            return;
        }
        check(cuda_driver::get().cuMemcpyHtoD(destination, source, nbytes), "cuMemcpyHtoD");
    }

    void device_buffer::copy_to_host(void* destination, std::size_t nbytes, std::size_t offset) const
    {
        if (nbytes + offset > m_size)
        {
            throw std::invalid_argument("copy of " + std::to_string(nbytes) + " bytes is larger than the buffer's " +
                                        std::to_string(m_size) + " bytes");
        }
        if (nbytes == 0)
        {
            return;
        }
        CUdeviceptr source = pointer() + offset;
        cuda_session& session = cuda_session::instance();
        session.make_current();
        host_staging& staging = host_staging::instance();
        if (staging.worth_it(destination, nbytes))
        {
            staging.to_host(destination, source, nbytes, session.stream());
            return;
        }
        check(cuda_driver::get().cuMemcpyDtoH(destination, source, nbytes), "cuMemcpyDtoH");
    }

    void device_buffer::fill_zero(CUstream stream)
    {
        if (m_size == 0)
        {
            return;
        }
        CUdeviceptr destination = pointer();
        cuda_session::instance().make_current();
        check(cuda_driver::get().cuMemsetD8Async(destination, 0, m_size, stream), "cuMemsetD8Async");
    }

    std::string device_buffer::describe() const
    {
        return (m_label.empty() ? std::string("buffer") : m_label) + " (" + std::to_string(m_size) + " bytes)";
    }
}
