#pragma once
// Large copies between host memory (numpy arrays) and one device, by the way the session's
// transfer_settings choose (see runtime/transfer_settings for the ways and why there are several):
//
//   - page-locked memory (xcuda.empty_pinned, or registered by another library) is copied directly;
//   - registered: the copied range's whole pages are page-locked in place through this device's
//     host_registration_cache and the DMA reads or writes them directly; the partial pages at either
//     end go through the driver's own small copies;
//   - staged: through reused page-locked buffers (chunk_count x chunk_bytes), several threads filling
//     (or emptying) one buffer while the DMA engine drains (or fills) another;
//   - driver: the driver's own pageable copy.
// Small copies (below the threshold) never come here: device_buffer hands them to the driver.
//
// Ownership: one instance per device, owned by the session's host copies (host_copies::staging). The staging buffers
// are allocated in its context at the first staged copy (again when the settings change them) and freed,
// with every registration the cache holds, when the session closes (a session_resource). The copy
// threads start at the first staged copy and live until the object goes. Threading: one transfer at a
// time (a mutex); callers release the GIL around a transfer; leases of registered copies may end on any
// thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>

#include "copy_pool.hpp"
#include "device_contexts.hpp"
#include "host_registration_cache.hpp"
#include "page_preparer.hpp"
#include "transfer_settings.hpp"

namespace xcuda
{
    // What the copies of one call share: the registrations a queued copy still reads or writes, kept until
    // the caller has waited on its stream, and the call's use token for the registration cache (so that an
    // array's copy in and its copy back by one launch count as one use of it: `auto` registers an array
    // from its second use, never a new array that one call copies both ways).
    //
    // And what host_staging::prepare_destination started for the call's copy-back destinations: for one
    // never written, the pieces that lay in pages never touched (a copy in of the same array takes them as
    // zero without reading them, as they were before the pages were faulted in) and the page_preparer's
    // ticket for faulting its pages in, which the copy back waits for; for one written and copied in too,
    // the ticket of the scan for its zero pieces, whose answer so far its copy in takes (or waits for the
    // whole of, with the settings' scan_wait).
    struct pending_copies
    {
        struct prepared_destination
        {
            const char* data = nullptr;
            std::size_t bytes = 0;
            std::vector<bool> untouched;  // per copy_pool::piece_bytes from data; empty: not known
            std::shared_ptr<const page_preparer::ticket> ticket;  // null: not faulted in ahead
            std::shared_ptr<const page_preparer::ticket> scan;    // its zero pieces read ahead; null: none
        };

        std::vector<host_registration_cache::lease> leases;
        std::vector<prepared_destination> prepared;
        std::uint64_t use = 0;  // given at the call's first copy that asks the cache; 0: none yet

        bool empty() const noexcept { return leases.empty() && prepared.empty(); }
        // What prepare_destination recorded for exactly this range, or null.
        const prepared_destination* find(const void* data, std::size_t bytes) const noexcept
        {
            for (const prepared_destination& p : prepared)
            {
                if (p.data == data && p.bytes == bytes)
                {
                    return &p;
                }
            }
            return nullptr;
        }
        // The copies have completed: the registrations may go (the faulting in ahead is waited for, so that
        // no thread works on the call's memory after it returns); the next call is another use.
        void clear() noexcept
        {
            for (const prepared_destination& p : prepared)
            {
                for (const auto& work : {p.ticket, p.scan})
                {
                    if (work)
                    {
                        work->wait();
                    }
                }
            }
            prepared.clear();
            leases.clear();
            use = 0;
        }
    };

    class host_staging : public session_resource
    {
    public:
        // Made by the session for one device (buffers, events and registrations belong to its context); reads
        // `settings` (the session's, which xcuda.transfer_options changes) at each copy.
        host_staging(device_contexts& contexts, const transfer_settings& settings, int ordinal);

        // Whether a copy of this many bytes comes here: large, unless the settings leave every pageable
        // copy to the driver.
        bool handles(std::size_t bytes) const noexcept;
        // The settings' threshold (bytes).
        std::size_t threshold() const noexcept;

        // Host to device on stream; the data is ordered before later work on stream. owner keeps the
        // source's memory allocated (null: it cannot be kept, so it is not registered beyond this copy).
        // Without `pending` it returns once source may be reused; with it, a copy that still reads
        // source leaves its registration in *pending, to be dropped after the caller waited on stream.
        void to_device(CUdeviceptr destination, const void* source, std::size_t bytes, CUstream stream,
                       std::shared_ptr<host_memory_owner> owner = nullptr, pending_copies* pending = nullptr);
        // Device to host after the work queued on stream. Without `pending` it returns once destination
        // holds the data; with it, a registered or page-locked copy may only be queued (wait on stream).
        void to_host(void* destination, CUdeviceptr source, std::size_t bytes, CUstream stream,
                     std::shared_ptr<host_memory_owner> owner = nullptr, pending_copies* pending = nullptr);

        // Before a launch's copies in, for the destination of one of its copies back (`copied_in`: the
        // launch copies it in too), when the copy would be staged: for memory that looks never written
        // (copy_pool::never_written), records in *pending which pieces lie in pages never touched (when
        // copied in and the settings' skip_untouched) and starts faulting its pages in on the page_preparer's
        // threads (the settings' prepare mode); for other memory copied in too, starts the scan of its zero
        // pieces there (the settings' scan_ahead). Does nothing for a small copy.
        void prepare_destination(void* destination, std::size_t bytes, bool copied_in, pending_copies& pending);

        // The registrations kept for this device.
        host_registration_cache& registrations() noexcept { return m_registrations; }
        // Copies made by each route since the start ("staged", "registered", "page-locked", "driver").
        struct route_counts
        {
            std::size_t staged = 0;
            std::size_t registered = 0;
            std::size_t page_locked = 0;
            std::size_t driver = 0;
            std::size_t zero_chunks = 0;  // staging chunks to the device found all zero: set there, not copied
            std::size_t known_zero_pieces = 0;  // pieces to the device known zero before the copy: not read
            std::size_t prepared = 0;           // copy-back destinations faulted in ahead (page_preparer)
            std::size_t scanned = 0;            // copy-back destinations copied in too, read ahead for zeros
            std::size_t scan_unread_pieces = 0; // pieces such a scan had not read when the copy in took it
        };
        route_counts routes() const;

        void release() noexcept override;
        void abandon() noexcept override;
        std::string describe() const override { return "page-locked staging buffers and registered host memory"; }
        const char* kind() const noexcept override { return "staging"; }
        int device() const noexcept override { return m_device; }

        ~host_staging() override;
        host_staging(const host_staging&) = delete;
        host_staging& operator=(const host_staging&) = delete;

    private:
        enum class route
        {
            staged,
            registered,
            page_locked,
            driver
        };
        // Which route a copy of [host, host + bytes) takes, with its lease for the registered one.
        // pending: the call's copies (its use token), or null for a copy that is a use of its own.
        route choose(const void* host, std::size_t bytes, const std::shared_ptr<host_memory_owner>& owner,
                     pending_copies* pending, host_registration_cache::lease& lease);
        // The context current, the resource registered with the session, the cache's limits set.
        void prepare();
        void ensure_buffers();
        void ensure_threads();
        void stop_threads() noexcept;
        // Waits until the work queued on stream so far is done (an event: exact, no polling).
        void wait_for(CUstream stream);
        // known_zero: per copy_pool::piece_bytes of source, the pieces known to be zero (may be empty).
        void staged_to_device(CUdeviceptr destination, const char* source, std::size_t bytes, CUstream stream,
                              const std::vector<bool>& known_zero);
        void staged_to_host(char* destination, CUdeviceptr source, std::size_t bytes, CUstream stream);

        device_contexts& m_contexts;
        const transfer_settings& m_settings;
        int m_device = 0;
        std::mutex m_transfer;
        host_registration_cache m_registrations;
        bool m_registered = false;  // with the session, as a resource
        std::uint64_t m_generation = 0;
        mutable std::mutex m_counts_mutex;
        route_counts m_counts;

        std::vector<void*> m_buffers;
        std::vector<CUevent> m_events;
        std::size_t m_buffer_bytes = 0;
        std::uint64_t m_buffer_generation = 0;
        CUevent m_done = nullptr;  // wait_for's event

        // The copy threads and the caller fill and empty the staging buffers (started at the first staged copy).
        std::unique_ptr<copy_pool> m_copies;
        // The threads that fault copy-back destinations in ahead (started at the first such destination).
        std::unique_ptr<page_preparer> m_preparer;
    };
}
