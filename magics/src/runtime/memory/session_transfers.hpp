#pragma once
// How the session moves host memory: the settings of pageable copies, each device's page-locked staging
// of pageable copies and the page-locked memory of copies staged between devices (the session's
// host_copies, which this reaches), and the device buffers of finished launches kept for the next launch
// (temporary_cache, which this owns). One per cuda_session, which owns it and closes it before the
// contexts go.
//
// Why apart from host_copies: the kept buffers are device buffers, which are made in the session's
// device_session and copy through its host_copies; the owner of the buffers sits above both.
//
// Threading: as host_copies and temporary_cache; change() from the thread that called
// xcuda.transfer_options, as before this class was split out of cuda_session.

#include <cstddef>

#include "host_copies.hpp"
#include "temporary_cache.hpp"
#include "transfer_settings.hpp"

namespace xcuda
{
    class device_session;
    class host_staging;

    class session_transfers
    {
    public:
        // Sets itself as the session's kept-memory hook (the temporaries), which it removes when it goes.
        explicit session_transfers(device_session& session);
        ~session_transfers();

        // The page-locked staging of pageable copies to and from device `ordinal` (host_copies::staging).
        host_staging& staging(int ordinal) { return m_copies.staging(ordinal); }
        // How large copies of pageable host memory are made (host_copies::settings).
        transfer_settings& settings() noexcept { return m_copies.settings(); }
        const transfer_settings& settings() const noexcept { return m_copies.settings(); }
        // Makes `changed` the settings (xcuda.transfer_options): a new pageable way starts from nothing
        // registered on any device, so what it measures is its own; a smaller temporary cache starts empty.
        void change(const transfer_settings& changed);
        // Unregisters every host buffer registered in place on the current device (when active).
        void release_host_registrations() { m_copies.release_host_registrations(); }
        // The device buffers of finished launches' numpy arguments, kept for the next launch.
        temporary_cache& temporaries() noexcept { return m_temporaries; }
        // Page-locked memory for copies staged between devices (host_copies::memory).
        using memory_lease = host_copies::memory_lease;
        memory_lease memory(std::size_t bytes) { return m_copies.memory(bytes); }

        // The session closes: unless the GPU was lost (`lost`: no driver call may be made), the kept buffers
        // are freed while their contexts still exist; then the host copies close (host_copies::close).
        void close(bool lost) noexcept;

        session_transfers(const session_transfers&) = delete;
        session_transfers& operator=(const session_transfers&) = delete;

    private:
        device_session& m_session;
        host_copies& m_copies;
        temporary_cache m_temporaries;
    };
}
