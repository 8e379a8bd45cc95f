#pragma once
// Device memory of launch temporaries, kept for the next launch.
//
// Why: a launch given a numpy array copies it into a temporary device buffer and frees that buffer
// when the launch has finished. cuMemAlloc and cuMemFree of large buffers cost a fraction of a
// millisecond each (cuMemFree also waits for the device), about as much as the copies of the tutorial's
// SAXPY that are not at the bus limit. A loop that launches with the same numpy arrays asks for the same
// sizes every time, so the buffers of one launch are kept and handed to the next, as CuPy's and
// PyTorch's memory pools do.
//
// Rules that keep this safe:
//   - only a buffer whose every use has completed comes back (give_back is called after the launch's
//     stream was waited on, never from an error path, which drops its buffers as before);
//   - a buffer is reused only for a request of exactly its size (no slack beyond what the user's array
//     had, so compute-sanitizer's memcheck sees the same bounds), on its own device and context
//     generation;
//   - at most `limit` bytes (transfer_settings::temporary_cache_limit, XCUDA_TEMPORARY_CACHE_MB; 0 keeps
//     nothing) and `max_entries` buffers are kept, the least recently given back going first;
//   - an allocation that fails for lack of memory frees what is kept and tries again
//     (device_buffer::allocate), and release_all() (xcuda.release_cached_temporaries) frees it on demand;
//   - kept buffers are session resources of kind "cached": the session frees them at close() and
//     abandons them after a kernel fault, and neither %cuda_status' buffers nor a fault's list of lost
//     arrays counts them.
//
// A kept buffer's contents are whatever the last launch left there: an xcuda.Out temporary, never
// copied in, starts with them, as a new allocation starts with whatever the device held.
//
// Ownership: one per session (session_transfers::temporaries). Threading: take and give_back come from several
// threads at once (launches copy numpy arguments without the GIL); a mutex keeps the list consistent.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace xcuda
{
    class device_buffer;
    class device_session;

    class temporary_cache
    {
    public:
        struct statistics
        {
            std::size_t entries = 0;      // buffers kept now
            std::size_t bytes = 0;        // their bytes
            std::uint64_t hits = 0;       // requests answered with a kept buffer
            std::uint64_t misses = 0;     // requests that allocated
            std::uint64_t evictions = 0;  // kept buffers freed to stay in the limits, or for memory
        };

        static constexpr std::size_t max_entries = 16;

        explicit temporary_cache(device_session& session);
        ~temporary_cache();
        temporary_cache(const temporary_cache&) = delete;
        temporary_cache& operator=(const temporary_cache&) = delete;

        // A buffer of exactly nbytes on the session's current device: a kept one, or a new allocation.
        std::shared_ptr<device_buffer> take(std::size_t nbytes);
        // Keeps buffer for a later take() when nothing else holds it and it fits the limits; otherwise
        // lets it go (freed). Only for buffers whose every use has completed.
        void give_back(std::shared_ptr<device_buffer> buffer) noexcept;
        // Frees every kept buffer of device `ordinal` (all devices with -1); returns the bytes freed.
        std::size_t release_all(int ordinal = -1) noexcept;
        // Forgets every kept buffer (at session close, after the session released or abandoned them).
        void clear() noexcept;

        statistics stats() const;

    private:
        device_session& m_session;
        mutable std::mutex m_mutex;
        std::vector<std::shared_ptr<device_buffer>> m_kept;  // oldest first
        std::size_t m_bytes = 0;
        std::uint64_t m_hits = 0;
        std::uint64_t m_misses = 0;
        std::uint64_t m_evictions = 0;
    };
}
