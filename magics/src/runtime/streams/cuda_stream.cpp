#include "cuda_stream.hpp"

#include <cstdio>

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    cuda_stream::cuda_stream(cuda_session& session)
        : m_session(session)
    {
        session.make_current();
        m_device = session.device_ordinal();
        m_generation = session.generation();
        // CU_STREAM_DEFAULT: ordered with the legacy default stream, which xcuda's own copies use.
        check(cuda_driver::get().cuStreamCreate(&m_handle, CU_STREAM_DEFAULT), "cuStreamCreate");
    }

    cuda_stream::~cuda_stream()
    {
        if (m_handle && m_session.make_current_if_alive(m_device, m_generation))
        {
            cuda_driver::get().cuStreamDestroy(m_handle);
        }
    }

    CUstream cuda_stream::handle() const
    {
        m_session.check_alive(m_device, m_generation, "Stream");
        return m_handle;
    }

    void cuda_stream::synchronize()
    {
        CUstream stream = handle();
        m_session.make_current(m_device);
        m_session.waits().wait(stream);
    }

    bool cuda_stream::query()
    {
        CUresult result = cuda_driver::get().cuStreamQuery(handle());
        if (result == CUDA_ERROR_NOT_READY)
        {
            return false;
        }
        check(result, "cuStreamQuery");
        return true;
    }

    CUstream cuda_stream::handle_on(int current) const
    {
        if (m_device != current)
        {
            throw device_mismatch_error("the stream belongs to device " + std::to_string(m_device) +
                                        " but the current device is " + std::to_string(current) +
                                        "; use it inside `with xcuda.device(" + std::to_string(m_device) +
                                        "):`, or create a Stream on device " + std::to_string(current));
        }
        return handle();
    }

    std::string cuda_stream::describe() const
    {
        char text[32];
        std::snprintf(text, sizeof text, "0x%llx",
                      static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(m_handle)));
        return std::string("<xcuda.Stream handle=") + text + ">";
    }

    void cuda_stream::refuse_integer(const std::string& text)
    {
        throw argument_type_error("a stream must be None or 0 (the default stream), an xcuda.Stream, or a stream "
                                  "object of CuPy, PyTorch or cuda.core; got the integer " + text +
                                  ". In kernel[grid, block, stream, shared_mem] the third value is the stream: "
                                  "for dynamic shared memory write kernel[grid, block, None, " + text +
                                  "]. A raw handle from another library is passed as its stream object");
    }

    void cuda_stream::refuse_object(const std::string& type_text)
    {
        throw argument_type_error("a stream must be None or 0 (the default stream), an xcuda.Stream, or an object "
                                  "with __cuda_stream__ (cuda.core), .ptr (CuPy) or .cuda_stream (PyTorch); got " +
                                  type_text);
    }
}
