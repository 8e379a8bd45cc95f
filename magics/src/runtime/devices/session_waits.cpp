#include "session_waits.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "cuda_driver.hpp"
#include "device_contexts.hpp"
#include "errors.hpp"
#include "launch_history.hpp"
#include "printf_capture.hpp"

namespace xcuda
{
    session_waits::session_waits(device_contexts& contexts, launch_history& history)
        : m_contexts(contexts)
        , m_history(history)
    {
    }

    void session_waits::poll(const std::function<CUresult()>& done, const char* call, int ordinal)
    {
        using clock = std::chrono::steady_clock;
        CUresult result = done();
        if (result == CUDA_SUCCESS)
        {
            return;
        }
        if (result != CUDA_ERROR_NOT_READY)
        {
            check(result, call);
        }
        // Spin for the first millisecond (kernels of tens of microseconds return as fast as with a
        // blocking wait), then sleep in growing steps up to 1 ms; ask about interrupts every 20 ms.
        const auto start = clock::now();
        auto next_check = start + std::chrono::milliseconds(20);
        for (;;)
        {
            result = done();
            if (result == CUDA_SUCCESS)
            {
                return;
            }
            if (result != CUDA_ERROR_NOT_READY)
            {
                check(result, call);
            }
            auto now = clock::now();
            auto waited = std::chrono::duration_cast<std::chrono::microseconds>(now - start);
            if (waited.count() > 1000)
            {
                std::this_thread::sleep_for(std::chrono::microseconds(std::min<long long>(waited.count() / 20, 1000)));
            }
            if (now >= next_check)
            {
                next_check = now + std::chrono::milliseconds(20);
                if (m_interrupt_check && m_interrupt_check())
                {
                    interrupted(ordinal);
                }
            }
        }
    }

    template <class Call>
    CUresult session_waits::flushing(Call call, const std::function<std::string(const std::string&)>* relocate)
    {
        if (!capturing_printf() && !(relocate && m_output_sink))
        {
            return call();
        }
        printf_capture capture;
        CUresult result = call();
        std::string text = capture.finish();
        if (!text.empty())
        {
            m_output_sink(relocate ? (*relocate)(text) : text);
        }
        return result;
    }

    CUevent session_waits::idle_event(int ordinal)
    {
        std::size_t index = static_cast<std::size_t>(ordinal);
        CUresult made = CUDA_SUCCESS;
        CUevent event = nullptr;
        {
            std::lock_guard<std::mutex> lock(m_idle_mutex);  // several threads' first waits
            if (m_idle_events.size() <= index)
            {
                m_idle_events.resize(index + 1, nullptr);
            }
            if (!m_idle_events[index])
            {
                made = cuda_driver::get().cuEventCreate(&m_idle_events[index], CU_EVENT_DISABLE_TIMING);
            }
            event = m_idle_events[index];
        }
        // Outside the mutex: a kernel fault reported here comes back through abandon().
        check(made, "cuEventCreate");
        return event;
    }

    void session_waits::wait(CUstream stream)
    {
        wait_flushing(stream, nullptr);
    }

    void session_waits::wait_relocated(CUstream stream, const std::function<std::string(const std::string&)>& relocate)
    {
        wait_flushing(stream, &relocate);
    }

    void session_waits::wait_flushing(CUstream stream, const std::function<std::string(const std::string&)>* relocate)
    {
        const cuda_driver& driver = cuda_driver::get();
        int ordinal = m_contexts.device_ordinal();
        poll([&] { return driver.cuStreamQuery(stream); }, "cuStreamQuery", ordinal);
        // Finished; the blocking call returns at once and is where the driver prints device printf output.
        check(flushing([&] { return driver.cuStreamSynchronize(stream); }, relocate), "cuStreamSynchronize");
        if (stream == nullptr)
        {
            m_history.mark_finished();
        }
    }

    bool session_waits::settle_stream(CUstream stream) noexcept
    {
        if (!m_contexts.lost_reason().empty() || !cuda_driver::available())
        {
            return false;
        }
        return cuda_driver::get().cuStreamSynchronize(stream) == CUDA_SUCCESS;
    }

    void session_waits::wait_event(CUevent event)
    {
        const cuda_driver& driver = cuda_driver::get();
        poll([&] { return driver.cuEventQuery(event); }, "cuEventQuery", m_contexts.device_ordinal());
        check(flushing([&] { return driver.cuEventSynchronize(event); }), "cuEventSynchronize");
    }

    void session_waits::wait_idle(int ordinal)
    {
        m_contexts.make_current(ordinal);  // creates the device's context if needed
        const cuda_driver& driver = cuda_driver::get();
        CUevent event = idle_event(ordinal);
        // Recorded on the legacy stream, the event completes after earlier work on every blocking stream.
        check(driver.cuEventRecord(event, nullptr), "cuEventRecord");
        poll([&] { return driver.cuEventQuery(event); }, "cuEventQuery", ordinal);
        check(flushing([&] { return driver.cuEventSynchronize(event); }), "cuEventSynchronize");
        m_history.mark_finished();
    }

    void session_waits::order_before(CUstream consumer)
    {
        m_contexts.make_current();
        const cuda_driver& driver = cuda_driver::get();
        CUevent event = nullptr;
        check(driver.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        CUresult recorded = driver.cuEventRecord(event, m_contexts.stream());
        CUresult waited = recorded == CUDA_SUCCESS ? driver.cuStreamWaitEvent(consumer, event, 0) : recorded;
        driver.cuEventDestroy(event);
        check(waited, "cuStreamWaitEvent");
    }

    void session_waits::synchronize(int ordinal)
    {
        wait_idle(ordinal);
        // Also waits for non-blocking streams (other libraries' work); returns at once otherwise.
        check(flushing([] { return cuda_driver::get().cuCtxSynchronize(); }), "cuCtxSynchronize");
    }

    bool session_waits::interrupted_work_running()
    {
        if (m_interrupted_device < 0 || !m_contexts.lost_reason().empty() || !m_contexts.context(m_interrupted_device))
        {
            m_interrupted_device = -1;
            return false;
        }
        const cuda_driver& driver = cuda_driver::get();
        m_contexts.make_current(m_interrupted_device);
        CUevent event = idle_event(m_interrupted_device);
        check(driver.cuEventRecord(event, nullptr), "cuEventRecord");
        CUresult result = driver.cuEventQuery(event);
        if (result == CUDA_ERROR_NOT_READY)
        {
            return true;
        }
        check(result, "cuEventQuery");
        m_interrupted_device = -1;  // it ended after all: nothing to stop
        return false;
    }

    void session_waits::interrupted(int ordinal)
    {
        m_interrupted_device = ordinal;
        std::string running;
        for (const launch_record& r : m_history.unfinished_on(ordinal))
        {
            running += "\n  " + r.describe();
        }
        throw interrupted_error(
            "interrupted while waiting for device " + std::to_string(ordinal) +
            (running.empty() ? std::string(".") : "; launched there since the last wait:" + running) +
            "\nThe GPU may still be running that work: CUDA cannot stop a running kernel inside a process "
            "(destroying its context blocks until the kernel ends). If it is still running when this cell "
            "ends, xcuda replaces the kernel process, which frees the GPU, carrying your variables over "
            "(%cuda_recover does the same on demand; XCUDA_AUTO_RECOVER=0 leaves it to you).");
    }

    void session_waits::release(int ordinal) noexcept
    {
        CUevent event = nullptr;
        {
            std::lock_guard<std::mutex> lock(m_idle_mutex);
            std::size_t index = static_cast<std::size_t>(ordinal);
            if (ordinal < 0 || index >= m_idle_events.size())
            {
                return;
            }
            std::swap(event, m_idle_events[index]);
        }
        if (event && cuda_driver::available())
        {
            cuda_driver::get().cuEventDestroy(event);
        }
    }

    void session_waits::abandon() noexcept
    {
        std::lock_guard<std::mutex> lock(m_idle_mutex);
        std::fill(m_idle_events.begin(), m_idle_events.end(), nullptr);  // the driver refuses every call now
    }
}
