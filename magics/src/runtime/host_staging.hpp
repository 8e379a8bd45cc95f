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
// Ownership: one instance per device, owned by the session's transfers (session_transfers::staging). The staging buffers
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
#include "cuda_session.hpp"
#include "host_registration_cache.hpp"

namespace xcuda
{
    // What the copies of one call share: the registrations a queued copy still reads or writes, kept until
    // the caller has waited on its stream, and the call's use token for the registration cache (so that an
    // array's copy in and its copy back by one launch count as one use of it: `auto` registers an array
    // from its second use, never a new array that one call copies both ways).
    struct pending_copies
    {
        std::vector<host_registration_cache::lease> leases;
        std::uint64_t use = 0;  // given at the call's first copy that asks the cache; 0: none yet

        bool empty() const noexcept { return leases.empty(); }
        // The copies have completed: the registrations may go; the next call is another use.
        void clear() noexcept
        {
            leases.clear();
            use = 0;
        }
    };

    class host_staging : public session_resource
    {
    public:
        // Made by the session for one device (buffers, events and registrations belong to its context).
        host_staging(cuda_session& session, int ordinal);

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
        void staged_to_device(CUdeviceptr destination, const char* source, std::size_t bytes, CUstream stream);
        void staged_to_host(char* destination, CUdeviceptr source, std::size_t bytes, CUstream stream);

        cuda_session& m_session;
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
    };
}
