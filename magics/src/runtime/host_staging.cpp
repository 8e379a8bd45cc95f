#include "host_staging.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cuda_driver.hpp"
#include "pinned_memory.hpp"

namespace xcuda
{
    host_staging::host_staging(cuda_session& session, int ordinal)
        : m_session(session)
        , m_device(ordinal)
    {
        const char* setting = std::getenv("XCUDA_STAGING");
        m_enabled = !(setting && std::string(setting) == "0");
        unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        std::size_t threads = std::min<std::size_t>(4, std::max<std::size_t>(1, cores / 2));
        m_slices.resize(threads);
        // Slice 0 is the caller's; the others get a thread each.
        for (std::size_t i = 1; i < threads; ++i)
        {
            m_workers.emplace_back([this, i] { worker_loop(i); });
        }
    }

    host_staging::~host_staging()
    {
        {
            std::lock_guard<std::mutex> lock(m_pool);
            m_stop = true;
        }
        m_start.notify_all();
        for (auto& worker : m_workers)
        {
            worker.join();
        }
    }

    bool host_staging::worth_it(const void* host, std::size_t bytes) const noexcept
    {
        return m_enabled && bytes >= m_threshold && !pinned_memory::is_page_locked(m_session, host);
    }

    void host_staging::worker_loop(std::size_t index)
    {
        std::uint64_t seen = 0;
        while (true)
        {
            slice work;
            {
                std::unique_lock<std::mutex> lock(m_pool);
                m_start.wait(lock, [&] { return m_stop || m_job != seen; });
                if (m_stop)
                {
                    return;
                }
                seen = m_job;
                work = m_slices[index];
            }
            if (work.bytes)
            {
                std::memcpy(work.destination, work.source, work.bytes);
            }
            {
                std::lock_guard<std::mutex> lock(m_pool);
                --m_pending;
            }
            m_done.notify_one();
        }
    }

    void host_staging::parallel_copy(void* destination, const void* source, std::size_t bytes)
    {
        std::size_t parts = m_slices.size();
        if (parts == 1 || bytes < (1u << 20))
        {
            std::memcpy(destination, source, bytes);
            return;
        }
        // Slices of whole cache lines, the last one taking the remainder.
        std::size_t each = (bytes / parts + 63) / 64 * 64;
        {
            std::lock_guard<std::mutex> lock(m_pool);
            for (std::size_t i = 0; i < parts; ++i)
            {
                std::size_t offset = std::min(bytes, i * each);
                std::size_t length = i + 1 == parts ? bytes - offset : std::min(each, bytes - offset);
                m_slices[i] = slice{static_cast<char*>(destination) + offset,
                                    static_cast<const char*>(source) + offset, length};
            }
            m_pending = parts - 1;
            ++m_job;
        }
        m_start.notify_all();
        if (m_slices[0].bytes)
        {
            std::memcpy(m_slices[0].destination, m_slices[0].source, m_slices[0].bytes);
        }
        std::unique_lock<std::mutex> lock(m_pool);
        m_done.wait(lock, [&] { return m_pending == 0; });
    }

    void host_staging::ensure_buffers()
    {
        cuda_session& session = m_session;
        session.make_current(m_device);
        if (!m_buffers.empty() && m_generation == session.generation(m_device))
        {
            return;
        }
        m_buffers.clear();
        m_events.clear();
        const cuda_driver& driver = cuda_driver::get();
        try
        {
            for (std::size_t i = 0; i < chunk_count; ++i)
            {
                void* buffer = nullptr;
                check(driver.cuMemAllocHost(&buffer, chunk_bytes), "cuMemAllocHost");
                m_buffers.push_back(buffer);
                CUevent event = nullptr;
                check(driver.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
                m_events.push_back(event);
            }
        }
        catch (...)
        {
            release();
            throw;
        }
        m_generation = session.generation(m_device);
        session.register_resource(this);
    }

    void host_staging::to_device(CUdeviceptr destination, const void* source, std::size_t bytes, CUstream stream)
    {
        std::lock_guard<std::mutex> lock(m_transfer);
        ensure_buffers();
        const cuda_driver& driver = cuda_driver::get();
        const char* from = static_cast<const char*>(source);
        for (std::size_t offset = 0, k = 0; offset < bytes; offset += chunk_bytes, ++k)
        {
            std::size_t b = k % chunk_count;
            std::size_t length = std::min(chunk_bytes, bytes - offset);
            // The buffer's previous DMA must be done before it is refilled.
            check(driver.cuEventSynchronize(m_events[b]), "cuEventSynchronize");
            parallel_copy(m_buffers[b], from + offset, length);
            check(driver.cuMemcpyHtoDAsync(destination + offset, m_buffers[b], length, stream), "cuMemcpyHtoDAsync");
            check(driver.cuEventRecord(m_events[b], stream), "cuEventRecord");
        }
    }

    void host_staging::to_host(void* destination, CUdeviceptr source, std::size_t bytes, CUstream stream)
    {
        std::lock_guard<std::mutex> lock(m_transfer);
        ensure_buffers();
        const cuda_driver& driver = cuda_driver::get();
        char* to = static_cast<char*>(destination);
        std::size_t chunks = (bytes + chunk_bytes - 1) / chunk_bytes;
        auto issue = [&](std::size_t k) {
            std::size_t b = k % chunk_count;
            std::size_t offset = k * chunk_bytes;
            std::size_t length = std::min(chunk_bytes, bytes - offset);
            check(driver.cuMemcpyDtoHAsync(m_buffers[b], source + offset, length, stream), "cuMemcpyDtoHAsync");
            check(driver.cuEventRecord(m_events[b], stream), "cuEventRecord");
        };
        // Keep every buffer's DMA in flight while the threads empty the one that finished first.
        for (std::size_t k = 0; k < std::min(chunks, chunk_count); ++k)
        {
            issue(k);
        }
        for (std::size_t k = 0; k < chunks; ++k)
        {
            std::size_t b = k % chunk_count;
            std::size_t offset = k * chunk_bytes;
            std::size_t length = std::min(chunk_bytes, bytes - offset);
            check(driver.cuEventSynchronize(m_events[b]), "cuEventSynchronize");
            parallel_copy(to + offset, m_buffers[b], length);
            if (k + chunk_count < chunks)
            {
                issue(k + chunk_count);
            }
        }
    }

    void host_staging::release() noexcept
    {
        if (!cuda_driver::available())
        {
            return;
        }
        const cuda_driver& driver = cuda_driver::get();
        bool alive = m_session.alive(m_device, m_generation);
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
        }
        m_events.clear();
        m_buffers.clear();
    }
}
