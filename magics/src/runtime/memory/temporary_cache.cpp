#include "temporary_cache.hpp"

#include <algorithm>
#include <utility>

#include "device_buffer.hpp"
#include "device_session.hpp"

namespace xcuda
{
    temporary_cache::temporary_cache(device_session& session)
        : m_session(session)
    {
    }

    temporary_cache::~temporary_cache()
    {
        clear();
    }

    std::shared_ptr<device_buffer> temporary_cache::take(std::size_t nbytes)
    {
        m_session.make_current();
        int ordinal = m_session.device_ordinal();
        std::uint64_t generation = m_session.generation();
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            // The most recently given back first: a loop's buffers come back in the order it asks again.
            for (auto it = m_kept.rbegin(); it != m_kept.rend(); ++it)
            {
                device_buffer& kept = **it;
                if (kept.size() == nbytes && kept.device() == ordinal && kept.generation() == generation &&
                    kept.valid())
                {
                    std::shared_ptr<device_buffer> buffer = std::move(*it);
                    m_kept.erase(std::next(it).base());
                    m_bytes -= nbytes;
                    ++m_hits;
                    buffer->set_cached(false);
                    return buffer;
                }
            }
            ++m_misses;
        }
        return device_buffer::allocate(m_session, nbytes);
    }

    void temporary_cache::give_back(std::shared_ptr<device_buffer> buffer) noexcept
    {
        std::size_t limit = m_session.copies().settings().temporary_cache_limit;
        if (!buffer || buffer.use_count() != 1 || !buffer->valid() || buffer->size() == 0 ||
            buffer->size() > limit || !m_session.alive(buffer->device(), buffer->generation()))
        {
            return;  // freed (or kept alive by its other holders) as before
        }
        std::vector<std::shared_ptr<device_buffer>> dropped;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            std::size_t incoming = buffer->size();
            while (!m_kept.empty() && (m_bytes + incoming > limit || m_kept.size() >= max_entries))
            {
                m_bytes -= m_kept.front()->size();
                dropped.push_back(std::move(m_kept.front()));
                m_kept.erase(m_kept.begin());
                ++m_evictions;
            }
            buffer->set_cached(true);
            buffer->set_label("kept for the next launch's numpy argument");
            m_bytes += incoming;
            m_kept.push_back(std::move(buffer));
        }
        // `dropped` frees its buffers here, outside the lock.
    }

    std::size_t temporary_cache::release_all(int ordinal) noexcept
    {
        std::vector<std::shared_ptr<device_buffer>> dropped;
        std::size_t freed = 0;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            auto keep = std::stable_partition(m_kept.begin(), m_kept.end(), [ordinal](const auto& buffer) {
                return ordinal >= 0 && buffer->device() != ordinal;
            });
            for (auto it = keep; it != m_kept.end(); ++it)
            {
                freed += (*it)->size();
                dropped.push_back(std::move(*it));
            }
            m_kept.erase(keep, m_kept.end());
            m_bytes -= freed;
            m_evictions += dropped.size();
        }
        return freed;
    }

    void temporary_cache::clear() noexcept
    {
        std::vector<std::shared_ptr<device_buffer>> dropped;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            dropped.swap(m_kept);
            m_bytes = 0;
        }
    }

    temporary_cache::statistics temporary_cache::stats() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        statistics s;
        s.entries = m_kept.size();
        s.bytes = m_bytes;
        s.hits = m_hits;
        s.misses = m_misses;
        s.evictions = m_evictions;
        return s;
    }
}
