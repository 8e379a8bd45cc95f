#include "copy_pool.hpp"

#include <algorithm>
#include <cstring>

namespace xcuda
{
    namespace
    {
        inline void cpu_relax() noexcept
        {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#elif defined(__aarch64__)
            asm volatile("yield");
#endif
        }
    }

    copy_pool::copy_pool(std::size_t participants, std::chrono::microseconds spin) : m_spin(spin)
    {
        std::size_t threads = participants > 1 ? participants - 1 : 0;
        m_threads.reserve(threads);
        for (std::size_t i = 0; i < threads; ++i)
        {
            m_threads.emplace_back([this] { worker(); });
        }
    }

    copy_pool::~copy_pool()
    {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_stop.store(true, std::memory_order_release);
        }
        m_start.notify_all();
        for (std::thread& thread : m_threads)
        {
            thread.join();
        }
    }

    template <class Ready>
    bool copy_pool::spin_until(Ready ready) const noexcept
    {
        if (m_spin.count() <= 0)
        {
            return ready();
        }
        auto until = std::chrono::steady_clock::now() + m_spin;
        for (unsigned round = 1;; ++round)
        {
            if (ready())
            {
                return true;
            }
            cpu_relax();
            if (round % 64 == 0 && std::chrono::steady_clock::now() >= until)
            {
                return ready();
            }
        }
    }

    bool copy_pool::claim(std::uint32_t number, const job& work, std::uint32_t& piece) noexcept
    {
        std::uint64_t next = m_next.load(std::memory_order_acquire);
        while (true)
        {
            if (static_cast<std::uint32_t>(next >> 32) != number ||
                static_cast<std::uint32_t>(next) >= work.pieces)
            {
                return false;  // another job's counter, or every piece of this one taken
            }
            if (m_next.compare_exchange_weak(next, next + 1, std::memory_order_acq_rel, std::memory_order_acquire))
            {
                piece = static_cast<std::uint32_t>(next);
                return true;
            }
        }
    }

    void copy_pool::copy_piece(const job& work, std::uint32_t piece) noexcept
    {
        std::size_t offset = static_cast<std::size_t>(piece) * piece_bytes;
        std::size_t length = std::min(piece_bytes, work.bytes - offset);
        std::memcpy(work.destination + offset, work.source + offset, length);
    }

    void copy_pool::finish_piece(const job& work)
    {
        if (m_done.fetch_add(1, std::memory_order_acq_rel) + 1 == work.pieces)
        {
            std::lock_guard<std::mutex> lock(m_mutex);  // the caller checks m_done under it: no lost wake-up
            m_finished.notify_one();
        }
    }

    void copy_pool::worker()
    {
        std::uint32_t seen = 0;
        while (true)
        {
            // A new job, or the stop, seen while spinning needs no wake-up; otherwise sleep until one.
            bool posted = spin_until([&] {
                return m_stop.load(std::memory_order_acquire) || m_number.load(std::memory_order_acquire) != seen;
            });
            job work;
            std::uint32_t number = 0;
            {
                std::unique_lock<std::mutex> lock(m_mutex);
                if (!posted)
                {
                    ++m_sleepers;
                    m_start.wait(lock, [&] {
                        return m_stop.load(std::memory_order_relaxed) || m_number.load(std::memory_order_relaxed) != seen;
                    });
                    --m_sleepers;
                }
                if (m_stop.load(std::memory_order_relaxed))
                {
                    return;
                }
                seen = number = m_number.load(std::memory_order_relaxed);
                work = m_job;
            }
            std::uint32_t piece = 0;
            while (claim(number, work, piece))
            {
                copy_piece(work, piece);
                m_by_threads.fetch_add(1, std::memory_order_relaxed);
                finish_piece(work);
            }
        }
    }

    void copy_pool::copy(void* destination, const void* source, std::size_t bytes)
    {
        if (m_threads.empty() || bytes < min_parallel)
        {
            std::memcpy(destination, source, bytes);
            return;
        }
        job work;
        work.destination = static_cast<char*>(destination);
        work.source = static_cast<const char*>(source);
        work.bytes = bytes;
        work.pieces = static_cast<std::uint32_t>((bytes + piece_bytes - 1) / piece_bytes);
        std::uint32_t number = 0;
        bool wake = false;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            number = m_number.load(std::memory_order_relaxed) + 1;
            m_job = work;
            m_done.store(0, std::memory_order_relaxed);
            m_next.store(static_cast<std::uint64_t>(number) << 32, std::memory_order_release);
            m_number.store(number, std::memory_order_release);
            wake = m_sleepers > 0;  // a thread counted here waits on m_start; one not yet counted sees the number
        }
        if (wake)
        {
            m_start.notify_all();
        }
        std::uint32_t piece = 0;
        while (claim(number, work, piece))
        {
            copy_piece(work, piece);
            m_by_caller.fetch_add(1, std::memory_order_relaxed);
            finish_piece(work);
        }
        auto finished = [&] { return m_done.load(std::memory_order_acquire) == work.pieces; };
        if (!spin_until(finished))
        {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_finished.wait(lock, finished);
        }
    }
}
