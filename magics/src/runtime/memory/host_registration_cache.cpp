#include "host_registration_cache.hpp"

#include <algorithm>
#include <utility>

namespace xcuda
{
    namespace
    {
        // Ranges remembered by the policies (first copies, unused registrations, refusals): a few suffice,
        // and a short memory lets a range earn a second chance later.
        constexpr std::size_t ring_size = 16;
    }

    host_registration_cache::lease::lease(lease&& other) noexcept
        : m_cache(std::exchange(other.m_cache, nullptr))
        , m_begin(other.m_begin)
        , m_inner(other.m_inner)
        , m_bytes(other.m_bytes)
    {
    }

    host_registration_cache::lease& host_registration_cache::lease::operator=(lease&& other) noexcept
    {
        if (this != &other)
        {
            reset();
            m_cache = std::exchange(other.m_cache, nullptr);
            m_begin = other.m_begin;
            m_inner = other.m_inner;
            m_bytes = other.m_bytes;
        }
        return *this;
    }

    host_registration_cache::lease::~lease()
    {
        reset();
    }

    void host_registration_cache::lease::reset() noexcept
    {
        if (m_cache)
        {
            m_cache->end_lease(m_begin);
            m_cache = nullptr;
        }
    }

    host_registration_cache::host_registration_cache(hooks calls, limits bounds)
        : m_hooks(std::move(calls))
        , m_limits(bounds)
    {
    }

    host_registration_cache::~host_registration_cache()
    {
        forget();
    }

    void host_registration_cache::inner_pages(const void* address, std::size_t bytes, std::size_t page, char*& first,
                                              char*& last) noexcept
    {
        auto start = reinterpret_cast<std::uintptr_t>(address);
        std::uintptr_t begin = (start + page - 1) / page * page;
        std::uintptr_t end = (start + bytes) / page * page;
        if (end < begin)
        {
            end = begin;
        }
        first = reinterpret_cast<char*>(begin);
        last = reinterpret_cast<char*>(end);
    }

    std::map<char*, host_registration_cache::entry>::iterator host_registration_cache::find_containing(char* first,
                                                                                                      char* last)
    {
        auto it = m_entries.upper_bound(first);
        if (it == m_entries.begin())
        {
            return m_entries.end();
        }
        --it;
        return it->first <= first && last <= it->second.end ? it : m_entries.end();
    }

    bool host_registration_cache::contains(const void* address, std::size_t bytes) const
    {
        char* first = nullptr;
        char* last = nullptr;
        inner_pages(address, bytes, m_limits.page, first, last);
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_entries.upper_bound(first);
        if (it == m_entries.begin())
        {
            return false;
        }
        --it;
        return first < last && it->first <= first && last <= it->second.end;
    }

    bool host_registration_cache::overlaps(const void* address, std::size_t bytes) const
    {
        const char* first = static_cast<const char*>(address);
        const char* last = first + bytes;
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_entries.upper_bound(const_cast<char*>(first));
        if (it != m_entries.begin() && std::prev(it)->second.end > first)
        {
            return true;
        }
        return it != m_entries.end() && it->first < last;
    }

    void host_registration_cache::unregister(std::map<char*, entry>::iterator it,
                                             std::vector<std::shared_ptr<host_memory_owner>>& dropped)
    {
        std::size_t bytes = static_cast<std::size_t>(it->second.end - it->first);
        m_hooks.unregister_range(it->first, bytes);
        ++m_stats.unregistrations;
        m_bytes -= bytes;
        // The memory may be freed once the owner goes: only after the unregistration above.
        dropped.push_back(std::move(it->second.owner));
        m_entries.erase(it);
    }

    void host_registration_cache::sweep_locked(std::vector<std::shared_ptr<host_memory_owner>>& dropped)
    {
        for (auto it = m_entries.begin(); it != m_entries.end();)
        {
            auto next = std::next(it);
            entry& e = it->second;
            if (e.in_use == 0 && e.owner && e.owner->abandoned())
            {
                if (e.uses < 2 && !e.transient)
                {
                    remember(m_unused, range{it->first, e.end, e.owner->identity()});
                }
                ++m_stats.abandoned;
                unregister(it, dropped);
            }
            it = next;
        }
    }

    void host_registration_cache::sweep()
    {
        std::vector<std::shared_ptr<host_memory_owner>> dropped;
        std::lock_guard<std::mutex> lock(m_mutex);
        sweep_locked(dropped);
    }

    bool host_registration_cache::make_room(std::size_t bytes, std::size_t entries,
                                            std::vector<std::shared_ptr<host_memory_owner>>& dropped)
    {
        if (bytes > m_limits.max_bytes || entries > m_limits.max_entries)
        {
            return false;
        }
        while (m_bytes + bytes > m_limits.max_bytes || m_entries.size() + entries > m_limits.max_entries)
        {
            auto oldest = m_entries.end();
            for (auto it = m_entries.begin(); it != m_entries.end(); ++it)
            {
                if (it->second.in_use == 0 && (oldest == m_entries.end() || it->second.last_use < oldest->second.last_use))
                {
                    oldest = it;
                }
            }
            if (oldest == m_entries.end())
            {
                return false;  // everything registered is in use by a copy
            }
            ++m_stats.evictions;
            unregister(oldest, dropped);
        }
        return true;
    }

    bool host_registration_cache::remembered(const std::vector<range>& ring, const range& r, match how) noexcept
    {
        return std::any_of(ring.begin(), ring.end(), [&](const range& seen) {
            return seen.begin == r.begin && seen.end == r.end &&
                   (how == match::range || seen.identity == r.identity) &&
                   (how != match::same_use || seen.use == r.use);
        });
    }

    std::uint64_t host_registration_cache::begin_use() noexcept
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return ++m_uses;
    }

    void host_registration_cache::remember(std::vector<range>& ring, const range& r) noexcept
    {
        ring.erase(std::remove_if(ring.begin(), ring.end(),
                                  [&](const range& seen) { return seen.begin == r.begin && seen.end == r.end; }),
                   ring.end());
        if (ring.size() >= ring_size)
        {
            ring.erase(ring.begin());
        }
        ring.push_back(r);
    }

    host_registration_cache::lease host_registration_cache::acquire(const void* address, std::size_t bytes,
                                                                    std::shared_ptr<host_memory_owner> owner, policy how,
                                                                    std::uint64_t use)
    {
        char* first = nullptr;
        char* last = nullptr;
        inner_pages(address, bytes, m_limits.page, first, last);
        auto inner = static_cast<std::size_t>(last - first);
        lease result;
        // Declared before the lock: owners let go are released after the mutex is (they may take the GIL).
        std::vector<std::shared_ptr<host_memory_owner>> dropped;
        std::lock_guard<std::mutex> lock(m_mutex);
        sweep_locked(dropped);
        if (inner < m_limits.min_bytes || inner == 0)
        {
            return result;
        }
        auto found = find_containing(first, last);
        if (found != m_entries.end())
        {
            entry& e = found->second;
            ++e.in_use;
            ++e.uses;
            e.last_use = ++m_clock;
            ++m_stats.hits;
            result.m_cache = this;
            result.m_begin = found->first;
            result.m_inner = first;
            result.m_bytes = inner;
            return result;
        }
        range r{first, last, owner ? owner->identity() : nullptr, use};
        if (remembered(m_refused, r, match::range))
        {
            return result;
        }
        switch (how)
        {
        case policy::per_copy:
            break;
        case policy::cached:
            if (!owner)
            {
                return result;
            }
            break;
        case policy::second_use:
            if (!owner || remembered(m_unused, r, match::range))
            {
                return result;
            }
            if (!remembered(m_seen, r, match::array))
            {
                remember(m_seen, r);
                ++m_stats.staged_first_use;
                return result;
            }
            if (use != 0 && remembered(m_seen, r, match::same_use))
            {
                // The same call's copy again (the copy back of its copy in): still its first use.
                ++m_stats.staged_same_use;
                return result;
            }
            m_seen.erase(std::remove_if(m_seen.begin(), m_seen.end(),
                                        [&](const range& seen) { return seen.begin == first && seen.end == last; }),
                         m_seen.end());
            break;
        }
        // A registered range overlapping this one (another array, or a different slice of this one) would
        // make the driver refuse: it goes first, unless a copy uses it.
        auto it = m_entries.upper_bound(first);
        if (it != m_entries.begin() && std::prev(it)->second.end > first)
        {
            --it;
        }
        while (it != m_entries.end() && it->first < last)
        {
            auto next = std::next(it);
            if (it->second.in_use != 0)
            {
                return result;
            }
            ++m_stats.evictions;
            unregister(it, dropped);
            it = next;
        }
        if (!make_room(inner, 1, dropped))
        {
            return result;
        }
        if (!m_hooks.register_range(first, inner))
        {
            ++m_stats.failures;
            remember(m_refused, r);
            return result;
        }
        ++m_stats.registrations;
        entry e;
        e.end = last;
        e.owner = std::move(owner);
        e.in_use = 1;
        e.uses = 1;
        e.last_use = ++m_clock;
        e.transient = how == policy::per_copy;
        m_entries.emplace(first, std::move(e));
        m_bytes += inner;
        result.m_cache = this;
        result.m_begin = first;
        result.m_inner = first;
        result.m_bytes = inner;
        return result;
    }

    void host_registration_cache::end_lease(char* key) noexcept
    {
        std::vector<std::shared_ptr<host_memory_owner>> dropped;
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_entries.find(key);
        if (it == m_entries.end())
        {
            return;  // forgotten meanwhile (the context went)
        }
        if (it->second.in_use > 0)
        {
            --it->second.in_use;
        }
        if (it->second.transient && it->second.in_use == 0)
        {
            unregister(it, dropped);
        }
    }

    void host_registration_cache::release_all()
    {
        std::vector<std::shared_ptr<host_memory_owner>> dropped;
        std::lock_guard<std::mutex> lock(m_mutex);
        for (auto it = m_entries.begin(); it != m_entries.end();)
        {
            auto next = std::next(it);
            if (it->second.in_use == 0)
            {
                unregister(it, dropped);
            }
            it = next;
        }
        m_seen.clear();
        m_unused.clear();
        m_refused.clear();
    }

    void host_registration_cache::forget() noexcept
    {
        std::vector<std::shared_ptr<host_memory_owner>> dropped;
        std::lock_guard<std::mutex> lock(m_mutex);
        for (auto& [begin, e] : m_entries)
        {
            dropped.push_back(std::move(e.owner));
        }
        m_entries.clear();
        m_bytes = 0;
        m_seen.clear();
        m_unused.clear();
        m_refused.clear();
    }

    void host_registration_cache::set_limits(limits bounds)
    {
        std::vector<std::shared_ptr<host_memory_owner>> dropped;
        std::lock_guard<std::mutex> lock(m_mutex);
        m_limits = bounds;
        make_room(0, 0, dropped);  // over the new limits: the least recently used go now
    }

    host_registration_cache::statistics host_registration_cache::stats() const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        statistics s = m_stats;
        s.entries = m_entries.size();
        s.bytes = m_bytes;
        return s;
    }
}
