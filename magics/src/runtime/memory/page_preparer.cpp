#include "page_preparer.hpp"

#include <algorithm>
#include <cstdint>

#include "copy_pool.hpp"
#include "host_pages.hpp"

namespace xcuda
{
    void page_preparer::ticket::wait() const noexcept
    {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_done.wait(lock, [this] { return m_remaining == 0; });
    }

    bool page_preparer::ticket::done() const noexcept
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_remaining == 0;
    }

    std::vector<bool> page_preparer::ticket::zero_pieces() const
    {
        wait();
        std::vector<bool> zero(m_pieces);
        for (std::size_t k = 0; k < m_pieces; ++k)
        {
            zero[k] = m_state[k].load(std::memory_order_acquire) == zero_piece;
        }
        return zero;
    }

    std::vector<bool> page_preparer::ticket::take(std::size_t& unread) const
    {
        m_stop.store(true, std::memory_order_relaxed);
        std::vector<bool> zero(m_pieces);
        unread = 0;
        for (std::size_t k = 0; k < m_pieces; ++k)
        {
            unsigned char state = m_state[k].load(std::memory_order_acquire);
            zero[k] = state == zero_piece;
            unread += state == unread_piece ? 1 : 0;
        }
        return zero;
    }

    void page_preparer::ticket::finish_part() noexcept
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (--m_remaining == 0)
        {
            m_done.notify_all();
        }
    }

    page_preparer::page_preparer(std::size_t threads, bool huge)
        : m_huge(huge)
    {
        std::size_t count = std::max<std::size_t>(1, threads);
        m_threads.reserve(count);
        for (std::size_t i = 0; i < count; ++i)
        {
            m_threads.emplace_back([this] { worker(); });
        }
    }

    page_preparer::~page_preparer()
    {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_stop = true;
        }
        m_queued.notify_all();
        for (std::thread& thread : m_threads)
        {
            thread.join();
        }
    }

    std::vector<page_preparer::part> page_preparer::cut(char* data, std::size_t bytes, std::uintptr_t base,
                                                         std::size_t boundary) const
    {
        // A part a thread where the range has min_part for each.
        std::size_t wanted = std::max<std::size_t>(1, std::min(m_threads.size(), bytes / min_part));
        std::vector<part> parts;
        char* at = data;
        for (std::size_t i = 1; i <= wanted && bytes > 0; ++i)
        {
            char* stop = data + bytes;
            if (i < wanted)
            {
                std::uintptr_t nominal = reinterpret_cast<std::uintptr_t>(data) + bytes / wanted * i;
                stop = reinterpret_cast<char*>(nominal - (nominal - base) % boundary);
            }
            if (stop > at)
            {
                part p;
                p.data = at;
                p.bytes = static_cast<std::size_t>(stop - at);
                parts.push_back(p);
                at = stop;
            }
        }
        return parts;
    }

    std::shared_ptr<const page_preparer::ticket> page_preparer::queue(std::shared_ptr<ticket> owner,
                                                                     std::vector<part> parts)
    {
        if (parts.empty())
        {
            return owner;
        }
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            owner->m_remaining = parts.size();
            for (part& p : parts)
            {
                p.owner = owner;
                m_parts.push_back(std::move(p));
            }
        }
        m_queued.notify_all();
        return owner;
    }

    std::shared_ptr<const page_preparer::ticket> page_preparer::start(void* data, std::size_t bytes)
    {
        // On 2 MiB boundaries: a thread faulting one huge page at a time never shares one with another.
        const std::uintptr_t boundary = std::uintptr_t(2) << 20;
        return queue(std::make_shared<ticket>(), cut(static_cast<char*>(data), bytes, 0, boundary));
    }

    std::shared_ptr<const page_preparer::ticket> page_preparer::start_scan(const void* data, std::size_t bytes,
                                                                          std::size_t piece)
    {
        auto owner = std::make_shared<ticket>();
        if (piece == 0)
        {
            return owner;
        }
        owner->m_pieces = (bytes + piece - 1) / piece;
        owner->m_state = std::make_unique<std::atomic<unsigned char>[]>(owner->m_pieces);
        for (std::size_t k = 0; k < owner->m_pieces; ++k)
        {
            owner->m_state[k].store(ticket::unread_piece, std::memory_order_relaxed);  // published by queue's lock
        }
        char* begin = const_cast<char*>(static_cast<const char*>(data));  // only read
        std::vector<part> parts = cut(begin, bytes, reinterpret_cast<std::uintptr_t>(begin), piece);
        for (part& p : parts)
        {
            p.piece = piece;
            p.first_piece = static_cast<std::size_t>(p.data - begin) / piece;
        }
        return queue(std::move(owner), std::move(parts));
    }

    std::size_t page_preparer::parts_done() const noexcept
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_done;
    }

    void page_preparer::worker()
    {
        while (true)
        {
            part work;
            {
                std::unique_lock<std::mutex> lock(m_mutex);
                m_queued.wait(lock, [this] { return m_stop || !m_parts.empty(); });
                if (m_parts.empty())
                {
                    return;  // stopping, and every part queued is done
                }
                work = std::move(m_parts.front());
                m_parts.pop_front();
            }
            if (work.piece == 0)
            {
                host_pages::populate_for_write(work.data, work.bytes, m_huge);
            }
            else
            {
                for (std::size_t offset = 0, k = work.first_piece; offset < work.bytes; offset += work.piece, ++k)
                {
                    if (work.owner->m_stop.load(std::memory_order_relaxed))
                    {
                        break;  // the copy in took what was known: it reads the rest itself
                    }
                    std::size_t length = std::min(work.piece, work.bytes - offset);
                    bool zero = copy_pool::all_zero(work.data + offset, length);
                    work.owner->m_state[k].store(zero ? ticket::zero_piece : ticket::data_piece,
                                                 std::memory_order_release);
                }
            }
            {
                std::lock_guard<std::mutex> lock(m_mutex);
                ++m_done;
            }
            work.owner->finish_part();
        }
    }
}
