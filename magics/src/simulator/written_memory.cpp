#include "written_memory.hpp"

#include <algorithm>

namespace xcuda::sim
{
    void written_memory::track(std::uintptr_t start, std::size_t bytes)
    {
        region r;
        r.start = start;
        r.bytes = bytes;
        const std::size_t words = (bytes + 63) / 64;
        r.bits.reset(new std::atomic<std::uint64_t>[std::max<std::size_t>(words, 1)]);
        for (std::size_t i = 0; i < std::max<std::size_t>(words, 1); ++i)
        {
            r.bits[i].store(0, std::memory_order_relaxed);
        }
        m_regions[start] = std::move(r);
    }

    void written_memory::forget(std::uintptr_t start)
    {
        m_regions.erase(start);
    }

    void written_memory::forget_all()
    {
        m_regions.clear();
    }

    written_memory::region* written_memory::find(std::uintptr_t address)
    {
        auto it = m_regions.upper_bound(address);
        if (it == m_regions.begin())
        {
            return nullptr;
        }
        --it;
        return address < it->first + it->second.bytes ? &it->second : nullptr;
    }

    void written_memory::mark(region& r, std::size_t offset, std::size_t bytes)
    {
        std::size_t end = std::min(offset + bytes, r.bytes);
        while (offset < end)
        {
            const std::size_t word = offset / 64, bit = offset % 64;
            const std::size_t n = std::min<std::size_t>(64 - bit, end - offset);
            const std::uint64_t mask = (n == 64 ? ~std::uint64_t(0) : ((std::uint64_t(1) << n) - 1)) << bit;
            if ((r.bits[word].load(std::memory_order_relaxed) & mask) != mask)
            {
                r.bits[word].fetch_or(mask, std::memory_order_relaxed);
            }
            offset += n;
        }
    }

    long long written_memory::first_unwritten(const region& r, std::size_t offset, std::size_t bytes)
    {
        std::size_t end = std::min(offset + bytes, r.bytes);
        for (std::size_t i = offset; i < end; ++i)
        {
            if (!((r.bits[i / 64].load(std::memory_order_relaxed) >> (i % 64)) & 1))
            {
                return static_cast<long long>(i);
            }
        }
        return -1;
    }

    void written_memory::written(std::uintptr_t address, std::size_t bytes)
    {
        // A copy or memset may span allocations only where they touch; each tracked one is marked for its part.
        const std::uintptr_t end = address + bytes;
        while (address < end && !m_regions.empty())
        {
            region* r = find(address);
            if (!r)
            {
                auto next = m_regions.upper_bound(address);
                if (next == m_regions.end() || next->first >= end)
                {
                    return;
                }
                address = next->first;
                continue;
            }
            std::size_t n = std::min<std::size_t>(end - address, r->start + r->bytes - address);
            mark(*r, address - r->start, n);
            address += n;
        }
    }

    void written_memory::copied(std::uintptr_t to, std::uintptr_t from, std::size_t bytes)
    {
        if (m_regions.empty())
        {
            return;
        }
        region* target = find(to);
        region* source = find(from);
        if (!target || !source || to + bytes > target->start + target->bytes || from + bytes > source->start + source->bytes)
        {
            written(to, bytes);  // from host memory (or across allocations): every byte copied is written
            return;
        }
        for (std::size_t i = 0; i < bytes; ++i)
        {
            const std::size_t s = from - source->start + i;
            if ((source->bits[s / 64].load(std::memory_order_relaxed) >> (s % 64)) & 1)
            {
                mark(*target, to - target->start + i, 1);
            }
        }
    }
}
