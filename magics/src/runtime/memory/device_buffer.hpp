#pragma once
// One allocation of device memory in one device's context (the current device when allocated).
//
// Ownership: the buffer owns its CUdeviceptr and frees it in its destructor, or earlier when the
// session closes (release()); after that, pointer() raises instead of handing out a dangling address.
// Shared by the Python DeviceArray objects that view it (std::shared_ptr). Threading: allocation and
// release may happen on several threads at once (launches copy numpy arguments without the GIL: the
// session's resource list has its own mutex); one buffer is used by one thread at a time (a call's
// temporary is its own; the binding holds the GIL for a DeviceArray's methods). A buffer keeps a reference
// to the device_session it was made in (a cuda_session is one): its contexts, waits and host copies.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <cuda.h>

#include "device_session.hpp"
#include "host_staging.hpp"

namespace xcuda
{
    class device_buffer final : public session_resource
    {
    public:
        // Allocates nbytes on the session's current device (0 is allowed and allocates nothing); raises
        // out_of_memory_error naming the requested and free bytes when the device cannot give them (after
        // freeing the launch temporaries the session keeps, device_session::release_kept_memory, and trying
        // again).
        static std::shared_ptr<device_buffer> allocate(device_session& session, std::size_t nbytes);

        // A view of nbytes of parent from byte `offset` (offset + nbytes <= parent's size): its own address,
        // size and copies, the parent's memory, kept alive by the view. Not a session resource of its own (the
        // parent is); frees nothing.
        static std::shared_ptr<device_buffer> view_of(std::shared_ptr<device_buffer> parent, std::size_t offset,
                                                      std::size_t nbytes);
        // The buffer a view looks into (null for an allocation), and the view's offset in it.
        const std::shared_ptr<device_buffer>& parent() const noexcept { return m_parent; }
        std::size_t offset() const noexcept { return m_offset; }

        ~device_buffer() override;
        device_buffer(const device_buffer&) = delete;
        device_buffer& operator=(const device_buffer&) = delete;

        // The device address; raises session_closed_error if the session that owned it was closed,
        // session_lost_error after a kernel fault.
        CUdeviceptr pointer() const
        {
            if (!m_parent && m_valid && m_session.alive(m_device, m_generation))
            {
                return m_pointer;  // the launch path: inline, a few loads
            }
            return checked_pointer();
        }
        // How many buffers of any session have been released or abandoned in this process, a counter that only
        // grows (acquire): an address pointer_in() gave is still that live buffer's while the counter reads as
        // it did before the address was read (release() and abandon() zero the address first, then count), so
        // a caller may keep addresses and check one counter instead of each buffer. Freeing a buffer when its
        // last owner goes is not counted: a caller keeping addresses keeps, or watches, the owners.
        static std::uint64_t releases() noexcept { return s_releases.load(std::memory_order_acquire); }
        // The launch fast path's pointer(): the address when this is an allocation (not a view) of `session`
        // made in context `generation`, a generation the caller knows alive (its launch runs there); 0
        // otherwise (the caller then asks pointer(), which says what is wrong). A session numbers its contexts
        // with one counter, so the generation names the device too; release() and abandon() zero the address,
        // so a released buffer answers 0 without m_valid. A few loads, no call.
        CUdeviceptr pointer_in(const device_session& session, std::uint64_t generation) const noexcept
        {
            return &m_session == &session && m_generation == generation && !m_parent ? m_pointer : 0;
        }
        std::size_t size() const noexcept { return m_size; }
        int device() const noexcept override { return m_device; }
        bool valid() const noexcept { return m_parent ? m_parent->valid() : m_valid; }

        // Synchronous copies from and to pageable or page-locked host memory (nbytes <= size()), made on
        // the buffer's own device after earlier work there (waited for interruptibly); large ones go
        // through the device's host_staging, which may register the host memory in place when `owner`
        // keeps it allocated (see host_registration_cache). No Python state: callers release the GIL.
        void copy_from_host(const void* source, std::size_t nbytes, std::size_t offset = 0,
                            std::shared_ptr<host_memory_owner> owner = nullptr);
        void copy_to_host(void* destination, std::size_t nbytes, std::size_t offset = 0,
                          std::shared_ptr<host_memory_owner> owner = nullptr) const;
        void fill_zero(CUstream stream);

        // Copies ordered on stream (the launch path): host -> device returns once source may be reused,
        // unless a registered copy left its lease in *pending; device -> host returns once destination
        // holds the data for the staged path, and is only queued for the others (wait on stream before
        // reading, then drop *pending). Large transfers go through the device's host_staging. No Python
        // state: callers release the GIL.
        void copy_from_host_on(CUstream stream, const void* source, std::size_t nbytes,
                               std::shared_ptr<host_memory_owner> owner = nullptr, pending_copies* pending = nullptr);
        void copy_to_host_on(CUstream stream, void* destination, std::size_t nbytes,
                             std::shared_ptr<host_memory_owner> owner = nullptr, pending_copies* pending = nullptr);
        // Before the copies in of a launch that copies into destination after it: lets the device's
        // host_staging fault a new destination's pages in meanwhile (host_staging::prepare_destination).
        void prepare_copy_to_host(void* destination, std::size_t nbytes, bool copied_in, pending_copies& pending);

        // Copies bytes from source into destination, on any devices, after earlier work on both.
        // method: "" (choose), "device" (same device), "peer" (cuMemcpyPeer: NVLink or PCIe peer
        // path), "staged" (through page-locked host memory). With wait (or across devices) it returns
        // once the copy has finished; returns the method used.
        static std::string copy(device_buffer& destination, const device_buffer& source, std::size_t bytes,
                                const std::string& method = "", bool wait = true);

        void release() noexcept override;
        void abandon() noexcept override;
        std::string describe() const override;
        // "buffer", or "cached" while the session's temporary_cache keeps it for a later launch.
        const char* kind() const noexcept override { return m_cached ? "cached" : "buffer"; }
        void set_cached(bool cached) noexcept { m_cached = cached; }
        std::uint64_t generation() const noexcept { return m_generation; }
        std::size_t bytes() const noexcept override { return m_size; }

        // A label for %cuda_status and loss reports ("x", "temporary for argument 'out'").
        void set_label(std::string label) { m_label = std::move(label); }
        const std::string& label() const noexcept { return m_label; }

        // The session it was made in (cuda_session::of gives the whole session).
        device_session& session() const noexcept { return m_session; }

    private:
        // pointer() for a view, or one whose session went: the parent's address, or the error.
        CUdeviceptr checked_pointer() const;
        device_buffer(device_session& session, std::size_t nbytes);
        device_buffer(std::shared_ptr<device_buffer> parent, std::size_t offset, std::size_t nbytes);

        static std::atomic<std::uint64_t> s_releases;

        device_session& m_session;
        CUdeviceptr m_pointer = 0;
        std::size_t m_size = 0;
        int m_device = 0;
        std::uint64_t m_generation = 0;
        bool m_valid = true;
        bool m_cached = false;
        std::string m_label;
        std::shared_ptr<device_buffer> m_parent;  // a view's
        std::size_t m_offset = 0;
    };
}
