#pragma once
// How the session waits for the GPU: on a stream, an event, a device's legacy stream or the whole device,
// polling so that an interrupt (set_interrupt_check, Ctrl-C in a notebook) ends the wait within about
// 20 ms with interrupted_error, and with the device printf output of the synchronising call captured
// for the output sink (set_output_sink) while a loaded module uses printf (note_printf_module). After an
// interrupted wait it says whether the work waited for still runs (interrupted_work_running). One per
// session, owned by its device_session (cuda_session::waits()): the waits ask the session's
// device_contexts for contexts (make_current) and whether the GPU was lost, mark the session's launch
// history finished, and the session destroys each device's idle event (release) before the context goes,
// or forgets them all (abandon) after a kernel fault.
//
// Threading: the waits may be called from several threads at once (each makes its device's context
// current on its own thread); the per-device idle events are made under their own mutex. The setters
// (set_interrupt_check, set_output_sink) are for one thread while no other waits, as before this class
// was split out of cuda_session; note_printf_module is called as modules load and unload, on any thread
// (an atomic count).

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <cuda.h>

namespace xcuda
{
    class device_contexts;
    class launch_history;

    class session_waits
    {
    public:
        session_waits(device_contexts& contexts, launch_history& history);

        // Waits for the work queued on stream (of the current device), on an event, or on the whole
        // device. Polls so that an interrupt (see set_interrupt_check) ends the wait within about 20 ms
        // with interrupted_error; a kernel fault raises kernel_fault. Device printf output produced
        // meanwhile goes to the output sink (set_output_sink) when one is set.
        void wait(CUstream stream);
        // The same wait for a launch's own output on the simulator: captured whenever a sink is set (the
        // simulator's launch warnings come out with device printf output, printf module or not), each
        // text passed through `relocate` (the launch's module's cell lines) before the sink.
        void wait_relocated(CUstream stream, const std::function<std::string(const std::string&)>& relocate);
        bool has_output_sink() const noexcept { return m_output_sink != nullptr; }
        // For destructors on an error path: waits for the work queued on stream without polling for an
        // interrupt and without raising (a fault shows at the next checked call). False when there is
        // no driver, the session was lost, or the wait failed.
        bool settle_stream(CUstream stream) noexcept;
        void wait_event(CUevent event);
        void synchronize(int ordinal);
        // Orders the session's default stream before `consumer` (DLPack's and the CUDA Array
        // Interface's stream contract) without blocking the host.
        void order_before(CUstream consumer);
        // Before a blocking copy: waits (interruptibly) until earlier work on the legacy stream of
        // device `ordinal` is done, so the copy itself never blocks on a kernel.
        void wait_idle(int ordinal);
        // After a wait was interrupted: whether the work it waited for still runs on that device now
        // (the process must then be replaced to stop it). False once it has ended.
        bool interrupted_work_running();

        // Called about every 20 ms while a wait blocks; returns true to abandon it (an interrupt).
        void set_interrupt_check(std::function<bool()> check) { m_interrupt_check = std::move(check); }
        // Receives device printf output, captured from file descriptor 1 around waits while a loaded
        // module uses printf. Without a sink the output goes to the process' stdout as usual.
        void set_output_sink(std::function<void(const std::string&)> sink) { m_output_sink = std::move(sink); }
        void note_printf_module(int delta) noexcept { m_printf_modules.fetch_add(delta, std::memory_order_relaxed); }
        bool capturing_printf() const noexcept
        {
            return m_printf_modules.load(std::memory_order_relaxed) > 0 && m_output_sink != nullptr;
        }

        // The session closes device `ordinal`, its context current: its idle event is destroyed.
        void release(int ordinal) noexcept;
        // After a kernel fault: every idle event is forgotten without a driver call.
        void abandon() noexcept;

        session_waits(const session_waits&) = delete;
        session_waits& operator=(const session_waits&) = delete;

    private:
        // The poll loop behind every wait; `done` returns CUDA_SUCCESS, CUDA_ERROR_NOT_READY or an error.
        void poll(const std::function<CUresult()>& done, const char* call, int ordinal);
        [[noreturn]] void interrupted(int ordinal);
        // Runs a synchronising call with device printf output captured, when a printf module is loaded.
        void wait_flushing(CUstream stream, const std::function<std::string(const std::string&)>* relocate);
        template <class Call>
        CUresult flushing(Call call, const std::function<std::string(const std::string&)>* relocate = nullptr);
        // Device `ordinal`'s event recorded on its legacy stream by wait_idle (made at first use; its
        // context current).
        CUevent idle_event(int ordinal);

        device_contexts& m_contexts;
        launch_history& m_history;
        int m_interrupted_device = -1;
        std::function<bool()> m_interrupt_check;
        std::function<void(const std::string&)> m_output_sink;
        std::atomic<int> m_printf_modules{0};  // modules load and unload on any thread
        std::mutex m_idle_mutex;
        std::vector<CUevent> m_idle_events;  // by ordinal (m_idle_mutex)
    };
}
