#pragma once
// The per-process CUDA session: the devices, their primary contexts and the default stream, created
// lazily at the first GPU operation and kept until close() (kernel shutdown). Made of parts, each in the
// room of its job, none of which includes its owner:
//   - device_contexts (the base of device_session): devices, primary contexts, generations, properties,
//     which device the session is on (device_choice), peer access, the lost state, the registry of what
//     lives in the contexts (session_resources) and the last launches (launch_history);
//   - device_session (the base): the waits for the GPU that an interrupt can end, with device printf
//     capture (session_waits), and each device's staging of host copies (host_copies): what device
//     buffers, page-locked memory and the launch temporaries are made with;
//   - session_transfers (transfers()): the host copies' settings and staging as one, and the device
//     buffers of finished launches kept for the next launch (temporary_cache);
//   - capture_registry (captures()): which of the session's streams capture into a CUDA graph;
//   - here: fault reports and close(), which free or abandon all of it in order.
//
// Ownership: the session owns its context references. Device buffers and modules register themselves
// as session_resources (with their device) so that close() frees them before the contexts are
// released; each records the generation of its device's context, and a resource from an earlier
// generation is never used again.
//
// Faults: with CUDA 13 (driver 580, seen on H200s) a kernel fault poisons the whole process: after an
// illegal address, a trap or an assert, every driver call on every device fails with the same error,
// also after cuDevicePrimaryCtxReset and in a newly created context, and destroying a context whose
// kernel never ends blocks forever. So the session cannot repair itself in place: fault() reports
// what happened and what was lost, and later GPU operations say so; the kernel process is replaced
// (keeping the user's namespace) by the Python layer, see magics/python/xcuda_recovery.py.
//
// One object per process: the notebook's core state makes it (frontend/notebook_session, with the compiler
// and the module registry) and hands it to what needs it; buffers, modules, streams and staging are given the
// session they belong to and keep a reference. It installs itself as the driver's fault hook for its lifetime.
//
// Waits: session_waits (waits()), which owns the interrupt check, the printf output sink and each
// device's idle event; the session destroys those events before it releases a context, and forgets
// them after a fault.
//
// Threading: what a launch uses may be called from several threads at once: ensure(), make_current(),
// properties(), generation(), record_launch(), waits(), staging() and temporaries() (contexts are made
// under a mutex, the launch history has its own, the device ordinal is atomic; device_contexts says
// more). make_current() makes the context current on the calling thread, as the driver requires per
// thread. The current device is the session's, not a thread's: set_device (and `with xcuda.device(n)`)
// while other threads launch changes where their next launches go. set_device, close(), set_host_slot and
// the hooks' setters (the waits' too) are for one thread while no other uses the session. The context
// hook runs outside the mutex.

#include <cuda.h>

#include "capture_registry.hpp"
#include "device_session.hpp"
#include "session_transfers.hpp"

namespace xcuda
{
    class cuda_session : public device_session
    {
    public:
        // Reads the environment's device choice (a bad value is reported at the first GPU operation);
        // touches no driver.
        cuda_session();
        // Closes the session (close()) and removes the fault hook.
        ~cuda_session();

        // The session that a device_session is part of: what a device buffer, page-locked memory or the
        // launch temporaries were made in (device_buffer::session()) is always a cuda_session's base.
        static cuda_session& of(device_session& session) noexcept { return static_cast<cuda_session&>(session); }
        static const cuda_session& of(const device_session& session) noexcept
        {
            return static_cast<const cuda_session&>(session);
        }

        // Called by the error helper when a call returns a sticky kernel fault (an illegal address, a
        // trap, an assert...): the CUDA driver refuses every later call of this process, on every
        // device. Marks the session lost, abandons every resource and throws kernel_fault naming the
        // kernels launched since the last completed wait and the buffers that were lost.
        [[noreturn]] void fault(CUresult result, const char* call);

        // Free every resource, release the primary contexts. Safe to call twice; ensure() afterwards
        // starts a new session.
        void close() noexcept;

        // How host memory moves (pageable copies' settings and staging, kept launch buffers, staged copies
        // between devices: session_transfers). What lives in device contexts (resources()) and the waits for
        // the GPU (waits()) are the bases' (device_contexts, device_session).
        session_transfers& transfers() noexcept { return m_transfers; }
        const session_transfers& transfers() const noexcept { return m_transfers; }
        // Which of the session's streams capture into a CUDA graph, and which thread opened each capture.
        capture_registry& captures() noexcept { return m_captures; }
        const capture_registry& captures() const noexcept { return m_captures; }

        cuda_session(const cuda_session&) = delete;
        cuda_session& operator=(const cuda_session&) = delete;

    private:
        session_transfers m_transfers{*this};
        capture_registry m_captures;
    };
}
