#pragma once
// A CUDA event made in one device's context, for ordering and timing work on streams.
//
// Ownership: owns its CUevent and destroys it in the destructor, unless the context it was made in
// is gone (the session closed, or lost to a kernel fault): the handle died with it. Use after that
// raises session_closed_error or session_lost_error. synchronize() and elapsed_ms() wait
// interruptibly (cuda_session::wait_event) and hold no Python state: callers release the GIL.

#include <cstdint>

#include <cuda.h>

#include "cuda_session.hpp"

namespace xcuda
{
    class cuda_event
    {
    public:
        // On the session's current device; timing=false makes a lighter event for ordering only.
        cuda_event(cuda_session& session, bool timing);
        ~cuda_event();
        cuda_event(const cuda_event&) = delete;
        cuda_event& operator=(const cuda_event&) = delete;

        // The handle, after checking its context is alive.
        CUevent handle() const;
        // The handle as made, for display; never checks.
        CUevent raw() const noexcept { return m_handle; }
        int device() const noexcept { return m_device; }
        bool recorded() const noexcept { return m_recorded; }

        // Records it on `stream` (of this event's device; nullptr: the legacy default stream).
        void record(CUstream stream);
        void synchronize();
        // Whether the work recorded before it has finished.
        bool query();
        // Milliseconds from this event to `end` (both recorded); waits for `end` first.
        float elapsed_ms(cuda_event& end);

    private:
        cuda_session& m_session;
        CUevent m_handle = nullptr;
        int m_device = 0;
        std::uint64_t m_generation = 0;
        bool m_recorded = false;
    };
}
