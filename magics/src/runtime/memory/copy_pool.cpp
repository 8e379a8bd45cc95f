#include "copy_pool.hpp"

#include <algorithm>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

#if defined(__SSE2__) && (defined(__x86_64__) || defined(_M_X64))
#include <emmintrin.h>
#endif

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

    copy_pool::layout copy_pool::cut(const void* destination, std::size_t bytes, order claims) noexcept
    {
        layout pieces;
        pieces.claims = claims;
        pieces.destination = reinterpret_cast<std::uintptr_t>(destination);
        pieces.bytes = bytes;
        if (bytes == 0)
        {
            return pieces;
        }
        std::uintptr_t base = pieces.destination & ~static_cast<std::uintptr_t>(page_bytes - 1);
        pieces.first = (pieces.destination - base) / piece_bytes;
        pieces.last = (pieces.destination + bytes - 1 - base) / piece_bytes;
        pieces.pages = static_cast<std::uint32_t>(pieces.last / pieces_per_page + 1);
        if (claims == order::by_address)
        {
            // Pieces counted from the copy's start, one slot each.
            pieces.pieces = pieces.slots = static_cast<std::uint32_t>((bytes + piece_bytes - 1) / piece_bytes);
            return pieces;
        }
        pieces.pieces = static_cast<std::uint32_t>(pieces.last - pieces.first + 1);
        pieces.slots = static_cast<std::uint32_t>(pieces.pages * pieces_per_page);
        return pieces;
    }

    bool copy_pool::slot_range(const layout& cut, std::uint32_t slot, std::size_t& offset, std::size_t& length) noexcept
    {
        if (slot >= cut.slots)
        {
            return false;
        }
        if (cut.claims == order::by_address)
        {
            offset = static_cast<std::size_t>(slot) * piece_bytes;
            length = std::min(piece_bytes, cut.bytes - offset);
            return true;
        }
        std::size_t piece = static_cast<std::size_t>(slot % cut.pages) * pieces_per_page + slot / cut.pages;
        if (piece < cut.first || piece > cut.last)
        {
            return false;  // before the copy's start in its first page, or after its end in the last
        }
        std::size_t lead = cut.destination % page_bytes;  // the first page's bytes before the copy
        std::size_t begin = std::max(piece * piece_bytes, lead) - lead;
        std::size_t end = std::min((piece + 1) * piece_bytes - lead, cut.bytes);
        offset = begin;
        length = end - begin;
        return true;
    }

    bool copy_pool::claim(std::uint32_t number, const job& work, std::uint32_t& slot) noexcept
    {
        std::uint64_t next = m_next.load(std::memory_order_acquire);
        while (true)
        {
            if (static_cast<std::uint32_t>(next >> 32) != number ||
                static_cast<std::uint32_t>(next) >= work.parts.slots)
            {
                return false;  // another job's counter, or every slot of this one taken
            }
            if (m_next.compare_exchange_weak(next, next + 1, std::memory_order_acq_rel, std::memory_order_acquire))
            {
                slot = static_cast<std::uint32_t>(next);
                return true;
            }
        }
    }

    bool copy_pool::copy_slot(const job& work, std::uint32_t slot) noexcept
    {
        std::size_t offset = 0;
        std::size_t length = 0;
        if (!slot_range(work.parts, slot, offset, length))
        {
            return false;
        }
        if (work.skip_zero && ((work.known_zero && (*work.known_zero)[slot]) || all_zero(work.source + offset, length)))
        {
            m_zero_slot[slot].store(true, std::memory_order_relaxed);  // published by finish_piece's release
            m_zero_pieces.fetch_add(1, std::memory_order_relaxed);
            return true;
        }
        copy_bytes(work.destination + offset, work.source + offset, length, work.how);
        return true;
    }

    void copy_pool::copy_bytes(void* destination, const void* source, std::size_t bytes, stores how) noexcept
    {
#if defined(__SSE2__) && (defined(__x86_64__) || defined(_M_X64))
        constexpr std::size_t line = 64;
        if (how == stores::streaming && bytes >= 4 * line)
        {
            char* to = static_cast<char*>(destination);
            const char* from = static_cast<const char*>(source);
            // The bytes before the destination's first whole line with ordinary stores, then whole lines
            // streamed (16-byte aligned stores, loads from wherever the source lies), then the tail.
            std::size_t head = (line - reinterpret_cast<std::uintptr_t>(to) % line) % line;
            std::memcpy(to, from, head);
            std::size_t body = (bytes - head) / line * line;
            for (std::size_t at = head; at < head + body; at += line)
            {
                __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at));
                __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at + 16));
                __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at + 32));
                __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at + 48));
                _mm_stream_si128(reinterpret_cast<__m128i*>(to + at), a);
                _mm_stream_si128(reinterpret_cast<__m128i*>(to + at + 16), b);
                _mm_stream_si128(reinterpret_cast<__m128i*>(to + at + 32), c);
                _mm_stream_si128(reinterpret_cast<__m128i*>(to + at + 48), d);
            }
            std::memcpy(to + head + body, from + head + body, bytes - head - body);
            _mm_sfence();  // the streamed lines are visible before the piece is counted done
            return;
        }
#endif
        (void)how;
        std::memcpy(destination, source, bytes);
    }

    bool copy_pool::all_zero(const void* data, std::size_t bytes) noexcept
    {
        const unsigned char* at = static_cast<const unsigned char*>(data);
        for (; bytes >= 64; bytes -= 64, at += 64)
        {
            std::uint64_t words[8];
            std::memcpy(words, at, sizeof words);
            if ((words[0] | words[1] | words[2] | words[3] | words[4] | words[5] | words[6] | words[7]) != 0)
            {
                return false;
            }
        }
        for (; bytes > 0; --bytes, ++at)
        {
            if (*at != 0)
            {
                return false;
            }
        }
        return true;
    }

    void copy_pool::finish_piece(const job& work)
    {
        if (m_done.fetch_add(1, std::memory_order_acq_rel) + 1 == work.parts.pieces)
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
            std::uint32_t slot = 0;
            while (claim(number, work, slot))
            {
                if (copy_slot(work, slot))
                {
                    m_by_threads.fetch_add(1, std::memory_order_relaxed);
                    finish_piece(work);
                }
            }
        }
    }

    void copy_pool::copy(void* destination, const void* source, std::size_t bytes, order claims, stores how)
    {
        if (m_threads.empty() || bytes < min_parallel)
        {
            copy_bytes(destination, source, bytes, how);
            return;
        }
        job work;
        work.destination = static_cast<char*>(destination);
        work.source = static_cast<const char*>(source);
        work.parts = cut(destination, bytes, claims);
        work.how = how;
        run(work);
    }

    bool copy_pool::copy_unless_zero(void* destination, const void* source, std::size_t bytes,
                                     const std::vector<bool>* known_zero, stores how)
    {
        const std::size_t pieces = (bytes + piece_bytes - 1) / piece_bytes;
        if (known_zero && known_zero->size() != pieces)
        {
            known_zero = nullptr;  // not this copy's pieces: read them
        }
        if (m_threads.empty() || bytes < min_parallel)
        {
            bool zero = true;
            for (std::size_t k = 0; k < pieces && zero; ++k)
            {
                std::size_t offset = k * piece_bytes;
                zero = (known_zero && (*known_zero)[k]) ||
                       all_zero(static_cast<const char*>(source) + offset, std::min(piece_bytes, bytes - offset));
            }
            if (zero)
            {
                return true;
            }
            for (std::size_t k = 0; k < pieces; ++k)
            {
                std::size_t offset = k * piece_bytes;
                std::size_t length = std::min(piece_bytes, bytes - offset);
                if (known_zero && (*known_zero)[k])
                {
                    std::memset(static_cast<char*>(destination) + offset, 0, length);  // not read
                }
                else
                {
                    copy_bytes(static_cast<char*>(destination) + offset, static_cast<const char*>(source) + offset,
                               length, how);
                }
            }
            return false;
        }
        job work;
        work.destination = static_cast<char*>(destination);
        work.source = static_cast<const char*>(source);
        work.parts = cut(destination, bytes, order::by_address);
        work.skip_zero = true;
        work.known_zero = known_zero;
        work.how = how;
        if (m_zero_slot.size() < work.parts.slots)
        {
            m_zero_slot = std::vector<std::atomic<bool>>(work.parts.slots);  // no thread works on a job now
        }
        for (std::uint32_t slot = 0; slot < work.parts.slots; ++slot)
        {
            m_zero_slot[slot].store(false, std::memory_order_relaxed);
        }
        m_zero_pieces.store(0, std::memory_order_relaxed);
        run(work);  // posting the job under the mutex publishes the flags' reset to the threads
        if (m_zero_pieces.load(std::memory_order_relaxed) == work.parts.pieces)
        {
            return true;
        }
        // Some data: the pieces found zero are written as zeros, so destination holds the whole source.
        for (std::uint32_t slot = 0; slot < work.parts.slots; ++slot)
        {
            std::size_t offset = 0;
            std::size_t length = 0;
            if (m_zero_slot[slot].load(std::memory_order_relaxed) && slot_range(work.parts, slot, offset, length))
            {
                std::memset(work.destination + offset, 0, length);
            }
        }
        return false;
    }

    void copy_pool::run(const job& work)
    {
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
        std::uint32_t slot = 0;
        while (claim(number, work, slot))
        {
            if (copy_slot(work, slot))
            {
                m_by_caller.fetch_add(1, std::memory_order_relaxed);
                finish_piece(work);
            }
        }
        auto finished = [&] { return m_done.load(std::memory_order_acquire) == work.parts.pieces; };
        if (!spin_until(finished))
        {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_finished.wait(lock, finished);
        }
    }

    bool copy_pool::never_written(const void* destination, std::size_t bytes) noexcept
    {
#if defined(__linux__)
        long size = ::sysconf(_SC_PAGESIZE);
        const std::uintptr_t page = size > 0 ? static_cast<std::uintptr_t>(size) : 4096;
        std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(destination) + page - 1) & ~(page - 1);
        std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(destination) + bytes) & ~(page - 1);
        if (end <= begin)
        {
            return false;
        }
        std::uintptr_t pages = (end - begin) / page;
        for (std::uintptr_t sample = 0; sample < 5; ++sample)
        {
            unsigned char resident = 0;
            void* at = reinterpret_cast<void*>(begin + (pages - 1) * sample / 4 * page);
            if (::mincore(at, page, &resident) != 0 || (resident & 1))
            {
                return false;  // written, or memory mincore cannot tell about: as written
            }
        }
        return true;
#else
        (void)destination;
        (void)bytes;
        return false;
#endif
    }

    void copy_pool::allow_huge_pages(void* destination, std::size_t bytes) noexcept
    {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(destination) + page_bytes - 1) & ~(page_bytes - 1);
        std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(destination) + bytes) & ~(page_bytes - 1);
        if (end > begin)
        {
            ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // an error changes nothing
        }
#else
        (void)destination;
        (void)bytes;
#endif
    }
}
