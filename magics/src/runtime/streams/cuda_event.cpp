#include "cuda_event.hpp"

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    cuda_event::cuda_event(cuda_session& session, bool timing)
        : m_session(session)
    {
        session.make_current();
        m_device = session.device_ordinal();
        m_generation = session.generation();
        check(cuda_driver::get().cuEventCreate(&m_handle, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
              "cuEventCreate");
    }

    cuda_event::~cuda_event()
    {
        if (m_handle && m_session.make_current_if_alive(m_device, m_generation))
        {
            cuda_driver::get().cuEventDestroy(m_handle);
        }
    }

    CUevent cuda_event::handle() const
    {
        m_session.check_alive(m_device, m_generation, "Event");
        return m_handle;
    }

    void cuda_event::record(CUstream stream)
    {
        CUevent event = handle();
        m_session.make_current(m_device);
        check(cuda_driver::get().cuEventRecord(event, stream), "cuEventRecord");
        m_recorded = true;
    }

    void cuda_event::synchronize()
    {
        CUevent event = handle();
        m_session.make_current(m_device);
        m_session.waits().wait_event(event);
    }

    bool cuda_event::query()
    {
        CUresult result = cuda_driver::get().cuEventQuery(handle());
        if (result == CUDA_ERROR_NOT_READY)
        {
            return false;
        }
        check(result, "cuEventQuery");
        return true;
    }

    float cuda_event::elapsed_ms(cuda_event& end)
    {
        if (!m_recorded || !end.m_recorded)
        {
            throw usage_error("both events must be recorded before elapsed_time");
        }
        end.synchronize();
        float milliseconds = 0;
        check(cuda_driver::get().cuEventElapsedTime(&milliseconds, handle(), end.handle()), "cuEventElapsedTime");
        return milliseconds;
    }
}
