#pragma once
// How host memory is copied to and from the session's devices: the settings of pageable copies
// (transfer_settings, from the environment and xcuda.transfer_options), each device's page-locked
// staging of pageable copies (host_staging, made at first use), and the page-locked memory of copies
// staged between devices. One per session, owned by its device_session (device buffers make their copies
// through it); session_transfers adds the launch temporaries on top and closes it before the contexts go.
//
// Threading: staging() and memory() lock their own mutexes (several threads' first copies, one staged
// copy between devices at a time); the settings are read at each copy and changed by change() from the
// thread that called xcuda.transfer_options, as before this class was split out of cuda_session.

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "transfer_settings.hpp"

namespace xcuda
{
    class device_contexts;
    class host_staging;
    class pinned_memory;

    class host_copies
    {
    public:
        explicit host_copies(device_contexts& contexts);
        ~host_copies();

        // The page-locked staging of pageable copies to and from device `ordinal` (made at first use).
        host_staging& staging(int ordinal);
        // How large copies of pageable host memory are made (read from the environment at construction;
        // xcuda.transfer_options changes them). Every device's host_staging reads them at each copy.
        transfer_settings& settings() noexcept { return m_settings; }
        const transfer_settings& settings() const noexcept { return m_settings; }
        // Makes `changed` the settings: a new pageable way starts from nothing registered on any device, so
        // what it measures is its own.
        void change(const transfer_settings& changed);
        // Unregisters every host buffer registered in place on the current device (when active).
        void release_host_registrations();
        // Page-locked memory of at least `bytes` for copies staged between devices (kept, grown), for the
        // holder of the lease alone: copies staged between devices are made one at a time.
        struct memory_lease
        {
            std::unique_lock<std::mutex> lock;
            pinned_memory* memory = nullptr;
        };
        memory_lease memory(std::size_t bytes);

        // The session closes: the page-locked memory goes while its context still exists; unless the GPU
        // was lost (`lost`: no driver call may be made), every device's staging releases its
        // registrations, which are not registered resources of their own.
        void close(bool lost) noexcept;

        host_copies(const host_copies&) = delete;
        host_copies& operator=(const host_copies&) = delete;

    private:
        device_contexts& m_contexts;
        transfer_settings m_settings = transfer_settings::from_environment();
        std::vector<std::unique_ptr<host_staging>> m_staging;  // by ordinal (m_staging_mutex)
        std::mutex m_staging_mutex;
        std::mutex m_memory_mutex;
        std::shared_ptr<pinned_memory> m_memory;
    };
}
