#include "cuda_stream.hpp"

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
        m_session.wait(stream);
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
}
