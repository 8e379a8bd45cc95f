#pragma once
// The session as device memory needs it: its device contexts (the base: devices, contexts, generations,
// the resource registry, the launch history), the waits for the GPU that an interrupt can end, with device
// printf capture (session_waits), and how host memory is copied to and from each device (host_copies).
// Device buffers, page-locked memory and the launch temporaries are made in one and keep a reference to
// it. cuda_session derives from it and adds what keeps device memory itself (the launch temporaries, in
// session_transfers), fault reports and close(), so that no part of the session includes its owner.
//
// Out of memory: an allocation that fails for lack of device memory asks release_kept_memory() to free
// what the session keeps for reuse on that device (the launch temporaries, which session_transfers sets
// here as the kept-memory hook) and tries once more.
//
// Threading: as device_contexts; waits() and copies() are used from several threads at once (each
// says how). set_kept_memory_hook is for one thread while no other allocates (the session's making and
// closing).

#include <cstddef>
#include <functional>
#include <utility>

#include "device_contexts.hpp"
#include "host_copies.hpp"
#include "session_waits.hpp"

namespace xcuda
{
    class device_session : public device_contexts
    {
    public:
        // The waits for the GPU that an interrupt can end, with device printf capture (session_waits).
        session_waits& waits() noexcept { return m_waits; }
        const session_waits& waits() const noexcept { return m_waits; }
        // Each device's staging of pageable copies, their settings, and the page-locked memory of copies
        // staged between devices (host_copies).
        host_copies& copies() noexcept { return m_copies; }
        const host_copies& copies() const noexcept { return m_copies; }

        // Frees the device memory kept for reuse on device `ordinal` (all devices with -1); returns the
        // bytes freed (0 without a hook). Never throws.
        std::size_t release_kept_memory(int ordinal) noexcept { return m_kept_memory ? m_kept_memory(ordinal) : 0; }
        // Who keeps device memory for reuse says here how to free it (null: nobody).
        void set_kept_memory_hook(std::function<std::size_t(int)> release)
        {
            m_kept_memory = std::move(release);
        }

    protected:
        ~device_session() = default;

    private:
        // Made only as a cuda_session's base, so that every device_session is one (cuda_session::of).
        friend class cuda_session;
        device_session() = default;

        session_waits m_waits{*this, history()};
        host_copies m_copies{*this};
        std::function<std::size_t(int)> m_kept_memory;
    };
}
