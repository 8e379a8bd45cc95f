#include "host_staging.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <unistd.h>

#include "cuda_driver.hpp"
#include "errors.hpp"
#include "host_pages.hpp"
#include "pinned_memory.hpp"
#include "transfer_settings.hpp"

namespace xcuda
{
    namespace
    {
        std::size_t page_size() noexcept
        {
            long page = ::sysconf(_SC_PAGESIZE);
            return page > 0 ? static_cast<std::size_t>(page) : 4096;
        }
    }

    host_staging::host_staging(device_contexts& contexts, const transfer_settings& settings, int ordinal)
        : m_contexts(contexts)
        , m_settings(settings)
        , m_device(ordinal)
        , m_registrations(
              host_registration_cache::hooks{
                  // Called inside a transfer, with this device's context current (prepare()).
                  [](void* begin, std::size_t bytes) {
                      return cuda_driver::get().cuMemHostRegister(begin, bytes, 0) == CUDA_SUCCESS;
                  },
                  // Called when a lease ends or an entry goes, possibly on another thread: the context is made
                  // current here; a registration of a context that is gone went with it.
                  [this](void* begin, std::size_t) {
                      if (m_contexts.make_current_if_alive(m_device, m_generation))
                      {
                          cuda_driver::get().cuMemHostUnregister(begin);
                      }
                  }},
              host_registration_cache::limits{})
    {
    }

    host_staging::~host_staging()
    {
        stop_threads();
        m_registrations.forget();  // released at close with the context current; a destructor makes no driver call
    }

    bool host_staging::handles(std::size_t bytes) const noexcept
    {
        const transfer_settings& settings = m_settings;
        return bytes >= settings.threshold && settings.pageable != transfer_settings::pageable_mode::driver;
    }

    std::size_t host_staging::threshold() const noexcept
    {
        return m_settings.threshold;
    }

    host_staging::route_counts host_staging::routes() const
    {
        std::lock_guard<std::mutex> lock(m_counts_mutex);
        return m_counts;
    }

    void host_staging::prepare()
    {
        const transfer_settings& settings = m_settings;
        if (!settings.problem.empty())
        {
            throw usage_error(settings.problem);
        }
        m_contexts.make_current(m_device);
        std::uint64_t generation = m_contexts.generation(m_device);
        if (generation != m_generation)
        {
            // A new context: what was registered, and the events, went with the old one.
            m_registrations.forget();
            m_done = nullptr;
            m_generation = generation;
            m_registered = false;
        }
        if (!m_registered)
        {
            m_contexts.resources().add(this);
            m_registered = true;
        }
        if (!m_done)
        {
            check(cuda_driver::get().cuEventCreate(&m_done, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        }
        host_registration_cache::limits limits;
        limits.max_bytes = settings.registration_limit;
        limits.max_entries = settings.registration_entries;
        limits.page = page_size();
        m_registrations.set_limits(limits);
    }

    host_staging::route host_staging::choose(const void* host, std::size_t bytes,
                                             const std::shared_ptr<host_memory_owner>& owner,
                                             pending_copies* pending, host_registration_cache::lease& lease)
    {
        using mode = transfer_settings::pageable_mode;
        using policy = host_registration_cache::policy;
        // Memory already page-locked (xcuda.empty_pinned, another library's) goes to the DMA as it is:
        // registering it again fails (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, which compute-sanitizer
        // reports as the user's error). Memory partly inside one of our registrations is not page-locked as
        // a whole, and goes the ways below.
        if (m_settings.pageable != mode::driver && !m_registrations.overlaps(host, bytes) &&
            pinned_memory::is_page_locked(m_contexts, host) &&
            pinned_memory::is_page_locked(m_contexts, static_cast<const char*>(host) + bytes - 1))
        {
            return route::page_locked;
        }
        switch (m_settings.pageable)
        {
        case mode::driver: return route::driver;
        case mode::automatic:
        {
            std::uint64_t use = 0;
            if (pending)
            {
                if (pending->use == 0)
                {
                    pending->use = m_registrations.begin_use();
                }
                use = pending->use;
            }
            lease = m_registrations.acquire(host, bytes, owner, policy::second_use, use);
            break;
        }
        case mode::registered: lease = m_registrations.acquire(host, bytes, owner, policy::cached); break;
        case mode::per_copy: lease = m_registrations.acquire(host, bytes, owner, policy::per_copy); break;
        case mode::staged:
            if (m_registrations.contains(host, bytes))
            {
                lease = m_registrations.acquire(host, bytes, owner, policy::cached);  // still registered: use it
            }
            break;
        }
        if (lease)
        {
            return route::registered;
        }
        return route::staged;
    }

    void host_staging::wait_for(CUstream stream)
    {
        const cuda_driver& driver = cuda_driver::get();
        check(driver.cuEventRecord(m_done, stream), "cuEventRecord");
        check(driver.cuEventSynchronize(m_done), "cuEventSynchronize");
    }

    void host_staging::to_device(CUdeviceptr destination, const void* source, std::size_t bytes, CUstream stream,
                                 std::shared_ptr<host_memory_owner> owner, pending_copies* pending)
    {
        std::lock_guard<std::mutex> lock(m_transfer);
        prepare();
        const cuda_driver& driver = cuda_driver::get();
        host_registration_cache::lease lease;
        route chosen = choose(source, bytes, owner, pending, lease);
        {
            std::lock_guard<std::mutex> counted(m_counts_mutex);
            ++(chosen == route::staged ? m_counts.staged : chosen == route::registered ? m_counts.registered
                : chosen == route::page_locked ? m_counts.page_locked : m_counts.driver);
        }
        const char* from = static_cast<const char*>(source);
        switch (chosen)
        {
        case route::driver:
            // Pageable: returns once the driver has taken the data (its own staging).
            check(driver.cuMemcpyHtoDAsync(destination, source, bytes, stream), "cuMemcpyHtoDAsync");
            return;
        case route::page_locked:
            check(driver.cuMemcpyHtoDAsync(destination, source, bytes, stream), "cuMemcpyHtoDAsync");
            if (!pending)
            {
                wait_for(stream);
            }
            return;
        case route::registered:
        {
            // The partial pages at either end are the driver's small pageable copies; the whole pages
            // between them go by DMA from the registered range.
            std::size_t head = static_cast<std::size_t>(lease.begin() - from);
            std::size_t middle = lease.bytes();
            std::size_t tail = bytes - head - middle;
            if (head)
            {
                check(driver.cuMemcpyHtoDAsync(destination, from, head, stream), "cuMemcpyHtoDAsync");
            }
            check(driver.cuMemcpyHtoDAsync(destination + head, lease.begin(), middle, stream), "cuMemcpyHtoDAsync");
            if (tail)
            {
                check(driver.cuMemcpyHtoDAsync(destination + head + middle, lease.begin() + middle, tail, stream),
                      "cuMemcpyHtoDAsync");
            }
            if (pending)
            {
                pending->leases.push_back(std::move(lease));
            }
            else
            {
                wait_for(stream);  // the DMA has read the source; the lease ends on return
            }
            return;
        }
        case route::staged:
        {
            // Pieces known zero are set on the device, not read: those in pages never touched, and for a
            // destination of the call's copy back what prepare_destination found (the pages never touched
            // before its pages were faulted in, or the zero pieces its scan ahead has read).
            std::vector<bool> known_zero;
            const pending_copies::prepared_destination* known = pending ? pending->find(source, bytes) : nullptr;
            if (known && known->scan && m_settings.scan_wait)
            {
                known_zero = known->scan->zero_pieces();  // waits for the whole scan
            }
            else if (known && known->scan)
            {
                // What the scan found so far; it stops, and the copy threads read the pieces it had not.
                std::size_t unread = 0;
                known_zero = known->scan->take(unread);
                std::lock_guard<std::mutex> counted(m_counts_mutex);
                m_counts.scan_unread_pieces += unread;
            }
            else if (known)
            {
                known_zero = known->untouched;
            }
            else if (m_settings.skip_untouched && copy_pool::never_written(source, bytes))
            {
                known_zero = host_pages::untouched_pieces(source, bytes, copy_pool::piece_bytes);
            }
            staged_to_device(destination, from, bytes, stream, known_zero);
            return;
        }
        }
    }

    void host_staging::to_host(void* destination, CUdeviceptr source, std::size_t bytes, CUstream stream,
                               std::shared_ptr<host_memory_owner> owner, pending_copies* pending)
    {
        std::lock_guard<std::mutex> lock(m_transfer);
        prepare();
        const cuda_driver& driver = cuda_driver::get();
        host_registration_cache::lease lease;
        route chosen = choose(destination, bytes, owner, pending, lease);
        {
            std::lock_guard<std::mutex> counted(m_counts_mutex);
            ++(chosen == route::staged ? m_counts.staged : chosen == route::registered ? m_counts.registered
                : chosen == route::page_locked ? m_counts.page_locked : m_counts.driver);
        }
        char* to = static_cast<char*>(destination);
        switch (chosen)
        {
        case route::driver:
            // Pageable: returns once the copy has completed.
            check(driver.cuMemcpyDtoHAsync(destination, source, bytes, stream), "cuMemcpyDtoHAsync");
            return;
        case route::page_locked:
            check(driver.cuMemcpyDtoHAsync(destination, source, bytes, stream), "cuMemcpyDtoHAsync");
            if (!pending)
            {
                wait_for(stream);
            }
            return;
        case route::registered:
        {
            std::size_t head = static_cast<std::size_t>(lease.begin() - to);
            std::size_t middle = lease.bytes();
            std::size_t tail = bytes - head - middle;
            // The DMA into the registered pages first; the partial pages after it (pageable copies
            // return once complete, so after these the middle is done too).
            check(driver.cuMemcpyDtoHAsync(lease.begin(), source + head, middle, stream), "cuMemcpyDtoHAsync");
            if (head)
            {
                check(driver.cuMemcpyDtoHAsync(to, source, head, stream), "cuMemcpyDtoHAsync");
            }
            if (tail)
            {
                check(driver.cuMemcpyDtoHAsync(lease.begin() + middle, source + head + middle, tail, stream),
                      "cuMemcpyDtoHAsync");
            }
            if (pending)
            {
                pending->leases.push_back(std::move(lease));
            }
            else
            {
                wait_for(stream);
            }
            return;
        }
        case route::staged:
            if (const pending_copies::prepared_destination* prepared = pending ? pending->find(destination, bytes) : nullptr)
            {
                if (prepared->ticket)
                {
                    prepared->ticket->wait();  // its pages faulted in (started before the copies in)
                }
            }
            staged_to_host(to, source, bytes, stream);
            return;
        }
    }

    void host_staging::prepare_destination(void* destination, std::size_t bytes, bool copied_in,
                                           pending_copies& pending)
    {
        using mode = transfer_settings::pageable_mode;
        std::lock_guard<std::mutex> lock(m_transfer);
        const transfer_settings& settings = m_settings;
        // Only where the copy back would be staged: registering faults the pages in itself, and page-locked
        // memory is never new (never_written below).
        if (!handles(bytes) || !settings.problem.empty() ||
            (settings.pageable != mode::automatic && settings.pageable != mode::staged) ||
            pending.find(destination, bytes) || m_registrations.overlaps(destination, bytes))
        {
            return;
        }
        bool fresh = copy_pool::never_written(destination, bytes);
        bool fault_in = fresh && settings.prepare != transfer_settings::prepare_mode::off;
        bool scan = !fresh && copied_in && settings.scan_ahead;
        if (!fresh && !scan)
        {
            return;
        }
        if (fault_in || scan)
        {
            bool huge = settings.prepare == transfer_settings::prepare_mode::huge;
            if (!m_preparer || m_preparer->huge() != huge)
            {
                m_preparer.reset();  // its destructor finishes the parts queued
                // Threads of its own (a quarter of the cores, at most 4) beside the copy threads (three quarters):
                // the copies in run meanwhile.
                unsigned cores = std::max(1u, std::thread::hardware_concurrency());
                m_preparer = std::make_unique<page_preparer>(std::clamp(cores / 4u, 1u, 4u), huge);
            }
        }
        pending_copies::prepared_destination prepared;
        prepared.data = static_cast<const char*>(destination);
        prepared.bytes = bytes;
        if (fresh && copied_in && settings.skip_untouched)
        {
            prepared.untouched = host_pages::untouched_pieces(destination, bytes, copy_pool::piece_bytes);
        }
        if (fault_in)
        {
            prepared.ticket = m_preparer->start(destination, bytes);
        }
        if (scan)
        {
            prepared.scan = m_preparer->start_scan(destination, bytes, copy_pool::piece_bytes);
        }
        {
            std::lock_guard<std::mutex> counted(m_counts_mutex);
            m_counts.prepared += fault_in ? 1 : 0;
            m_counts.scanned += scan ? 1 : 0;
        }
        pending.prepared.push_back(std::move(prepared));
    }

    void host_staging::ensure_threads()
    {
        unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        const transfer_settings& settings = m_settings;
        std::size_t wanted = std::max<std::size_t>(1, settings.threads_for(cores));
        std::chrono::microseconds spin = settings.staging_spin();
        if (!m_copies || m_copies->participants() != wanted || m_copies->spin() != spin)
        {
            m_copies.reset();
            m_copies = std::make_unique<copy_pool>(wanted, spin);
        }
    }

    void host_staging::stop_threads() noexcept
    {
        m_copies.reset();
    }

    void host_staging::ensure_buffers()
    {
        const transfer_settings& settings = m_settings;
        if (!m_buffers.empty() && m_buffer_generation == m_generation && m_buffer_bytes == settings.chunk_bytes &&
            m_buffers.size() == settings.chunk_count)
        {
            return;
        }
        const cuda_driver& driver = cuda_driver::get();
        if (m_buffer_generation == m_generation)
        {
            for (CUevent event : m_events)
            {
                driver.cuEventSynchronize(event);
                driver.cuEventDestroy(event);
            }
            for (void* buffer : m_buffers)
            {
                driver.cuMemFreeHost(buffer);
            }
        }
        m_buffers.clear();
        m_events.clear();
        try
        {
            for (std::size_t i = 0; i < settings.chunk_count; ++i)
            {
                void* buffer = nullptr;
                check(driver.cuMemAllocHost(&buffer, settings.chunk_bytes), "cuMemAllocHost");
                m_buffers.push_back(buffer);
                CUevent event = nullptr;
                check(driver.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
                m_events.push_back(event);
            }
        }
        catch (...)
        {
            for (CUevent event : m_events)
            {
                driver.cuEventDestroy(event);
            }
            for (void* buffer : m_buffers)
            {
                driver.cuMemFreeHost(buffer);
            }
            m_buffers.clear();
            m_events.clear();
            throw;
        }
        m_buffer_bytes = settings.chunk_bytes;
        m_buffer_generation = m_generation;
    }

    void host_staging::staged_to_device(CUdeviceptr destination, const char* from, std::size_t bytes, CUstream stream,
                                        const std::vector<bool>& known_zero)
    {
        ensure_buffers();
        ensure_threads();
        const cuda_driver& driver = cuda_driver::get();
        std::size_t chunk = m_buffer_bytes;
        std::size_t count = m_buffers.size();
        const std::size_t piece = copy_pool::piece_bytes;
        const copy_pool::stores stores =
            m_settings.stream_to_device ? copy_pool::stores::streaming : copy_pool::stores::cached;
        // The pieces known zero, chunk by chunk (a chunk is a whole number of pieces: staging_chunk_mb).
        bool known = !known_zero.empty() && chunk % piece == 0 && known_zero.size() == (bytes + piece - 1) / piece;
        std::vector<bool> chunk_zero;
        for (std::size_t offset = 0, k = 0; offset < bytes; offset += chunk, ++k)
        {
            std::size_t b = k % count;
            std::size_t length = std::min(chunk, bytes - offset);
            std::size_t zero_pieces = 0;
            if (known)
            {
                auto first = known_zero.begin() + static_cast<std::ptrdiff_t>(offset / piece);
                chunk_zero.assign(first, first + static_cast<std::ptrdiff_t>((length + piece - 1) / piece));
                zero_pieces = static_cast<std::size_t>(std::count(chunk_zero.begin(), chunk_zero.end(), true));
                std::lock_guard<std::mutex> counted(m_counts_mutex);
                m_counts.known_zero_pieces += zero_pieces;
            }
            if (known && zero_pieces == chunk_zero.size())
            {
                // All of it known zero: set without a read, and no buffer to wait for.
                check(driver.cuMemsetD8Async(destination + offset, 0, length, stream), "cuMemsetD8Async");
                std::lock_guard<std::mutex> counted(m_counts_mutex);
                ++m_counts.zero_chunks;
                continue;
            }
            // The buffer's previous DMA must be done before it is refilled.
            check(driver.cuEventSynchronize(m_events[b]), "cuEventSynchronize");
            if (m_copies->copy_unless_zero(m_buffers[b], from + offset, length, known ? &chunk_zero : nullptr,
                                          stores))
            {
                // Every byte zero (an output made by np.zeros_like, copied in as the kernel may read it):
                // set on the device, nothing over the bus; the buffer was not written.
                check(driver.cuMemsetD8Async(destination + offset, 0, length, stream), "cuMemsetD8Async");
                std::lock_guard<std::mutex> counted(m_counts_mutex);
                ++m_counts.zero_chunks;
                continue;
            }
            check(driver.cuMemcpyHtoDAsync(destination + offset, m_buffers[b], length, stream), "cuMemcpyHtoDAsync");
            check(driver.cuEventRecord(m_events[b], stream), "cuEventRecord");
        }
    }

    void host_staging::staged_to_host(char* to, CUdeviceptr source, std::size_t bytes, CUstream stream)
    {
        ensure_buffers();
        ensure_threads();
        const cuda_driver& driver = cuda_driver::get();
        std::size_t chunk = m_buffer_bytes;
        std::size_t count = m_buffers.size();
        std::size_t chunks = (bytes + chunk - 1) / chunk;
        // A destination never written takes its first-touch faults in these copies (copy_pool.hpp says how).
        bool fresh = copy_pool::never_written(to, bytes);
        if (fresh)
        {
            copy_pool::allow_huge_pages(to, bytes);
        }
        copy_pool::order claims = fresh ? copy_pool::order::across_pages : copy_pool::order::by_address;
        const copy_pool::stores stores =
            m_settings.stream_to_host ? copy_pool::stores::streaming : copy_pool::stores::cached;
        auto issue = [&](std::size_t k) {
            std::size_t b = k % count;
            std::size_t offset = k * chunk;
            std::size_t length = std::min(chunk, bytes - offset);
            check(driver.cuMemcpyDtoHAsync(m_buffers[b], source + offset, length, stream), "cuMemcpyDtoHAsync");
            check(driver.cuEventRecord(m_events[b], stream), "cuEventRecord");
        };
        // Keep every buffer's DMA in flight while the threads empty the one that finished first.
        for (std::size_t k = 0; k < std::min(chunks, count); ++k)
        {
            issue(k);
        }
        for (std::size_t k = 0; k < chunks; ++k)
        {
            std::size_t b = k % count;
            std::size_t offset = k * chunk;
            std::size_t length = std::min(chunk, bytes - offset);
            check(driver.cuEventSynchronize(m_events[b]), "cuEventSynchronize");
            m_copies->copy(to + offset, m_buffers[b], length, claims, stores);
            if (k + count < chunks)
            {
                issue(k + count);
            }
        }
    }

    void host_staging::release() noexcept
    {
        m_registered = false;
        if (!cuda_driver::available())
        {
            m_registrations.forget();
            return;
        }
        const cuda_driver& driver = cuda_driver::get();
        // Registrations belong to the device's context, whatever the generation of our own buffers (none
        // when every large copy went by registration): unregister them before the context goes.
        if (m_contexts.make_current_if_alive(m_device, m_contexts.generation(m_device)))
        {
            m_registrations.release_all();
        }
        bool alive = m_contexts.alive(m_device, m_generation);
        if (alive)
        {
            for (CUevent event : m_events)
            {
                driver.cuEventSynchronize(event);
                driver.cuEventDestroy(event);
            }
            for (void* buffer : m_buffers)
            {
                driver.cuMemFreeHost(buffer);
            }
            if (m_done)
            {
                driver.cuEventDestroy(m_done);
            }
        }
        m_registrations.forget();
        m_events.clear();
        m_buffers.clear();
        m_done = nullptr;
    }

    void host_staging::abandon() noexcept
    {
        m_registered = false;
        m_registrations.forget();
        m_events.clear();
        m_buffers.clear();
        m_done = nullptr;
    }
}
