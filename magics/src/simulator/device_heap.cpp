#include "device_heap.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "sim_memory.hpp"

namespace xcuda::sim
{
    namespace
    {
        // A block's bytes in the arena: rounded up to 16, then 16 bytes no block uses, so that an overrun of up
        // to 16 bytes is caught even where the next block follows.
        std::size_t footprint(std::size_t bytes)
        {
            return (std::max<std::size_t>(bytes, 1) + 15) / 16 * 16 + 16;
        }
    }

    void device_heap::free_deleter::operator()(std::uint8_t* p) const
    {
        std::free(p);
    }

    std::size_t device_heap::bytes() const
    {
        std::lock_guard<std::mutex> held(m_mutex);
        return m_bytes;
    }

    bool device_heap::set_bytes(std::size_t bytes)
    {
        std::lock_guard<std::mutex> held(m_mutex);
        if (!m_alive.empty())
        {
            return false;
        }
        m_bytes = bytes;
        m_arena.reset();
        m_freed.clear();
        return true;
    }

    std::uint64_t device_heap::allocate(std::size_t bytes)
    {
        std::lock_guard<std::mutex> held(m_mutex);
        if (!m_arena)
        {
            m_arena.reset(static_cast<std::uint8_t*>(std::aligned_alloc(256, (std::max<std::size_t>(m_bytes, 1) + 255) / 256 * 256)));
            if (!m_arena)
            {
                return 0;  // the host has no room for the arena: every malloc returns null
            }
        }
        const std::size_t size = footprint(bytes);
        // First fit: the lowest gap between alive blocks that holds size.
        std::uint64_t at = 0;
        for (const auto& [offset, asked] : m_alive)
        {
            if (offset >= at + size)
            {
                break;
            }
            at = offset + footprint(asked);
        }
        if (bytes > m_bytes || at + size > m_bytes)
        {
            return 0;
        }
        m_alive.emplace(at, bytes);
        m_freed.erase(m_freed.lower_bound(at), m_freed.lower_bound(at + size));
        return reinterpret_cast<std::uintptr_t>(m_arena.get()) + at;
    }

    bool device_heap::release(std::uint64_t address)
    {
        std::lock_guard<std::mutex> held(m_mutex);
        if (!m_arena)
        {
            return false;
        }
        auto found = m_alive.find(address - reinterpret_cast<std::uintptr_t>(m_arena.get()));
        if (address < reinterpret_cast<std::uintptr_t>(m_arena.get()) || found == m_alive.end())
        {
            return false;
        }
        m_freed[found->first] = found->second;
        m_alive.erase(found);
        return true;
    }

    bool device_heap::in_arena(std::uint64_t address) const
    {
        std::lock_guard<std::mutex> held(m_mutex);
        auto start = reinterpret_cast<std::uintptr_t>(m_arena.get());
        return m_arena && address >= start && address < start + m_bytes;
    }

    std::uint8_t* device_heap::find(std::uint64_t address, std::size_t bytes) const
    {
        std::lock_guard<std::mutex> held(m_mutex);
        if (!m_arena)
        {
            return nullptr;
        }
        auto start = reinterpret_cast<std::uintptr_t>(m_arena.get());
        if (address < start)
        {
            return nullptr;
        }
        std::uint64_t offset = address - start;
        auto after = m_alive.upper_bound(offset);
        if (after == m_alive.begin())
        {
            return nullptr;
        }
        auto block = std::prev(after);
        if (offset + bytes > block->first + block->second || offset + bytes < offset)
        {
            return nullptr;
        }
        return m_arena.get() + offset;
    }

    std::string device_heap::describe(std::uint64_t address, std::size_t) const
    {
        std::lock_guard<std::mutex> held(m_mutex);
        auto start = reinterpret_cast<std::uintptr_t>(m_arena.get());
        std::uint64_t offset = address - start;
        auto freed = m_freed.upper_bound(offset);
        if (freed != m_freed.begin() && offset < std::prev(freed)->first + std::prev(freed)->second)
        {
            --freed;
            return "inside the block of " + std::to_string(freed->second) + " bytes at " + hex(start + freed->first) +
                   " that free() released (a use after free)";
        }
        auto after = m_alive.upper_bound(offset);
        if (after != m_alive.begin())
        {
            auto block = std::prev(after);
            std::uint64_t end = block->first + block->second;
            if (offset >= block->first && offset < end + 4096)
            {
                std::string block_text = "the block of " + std::to_string(block->second) + " bytes malloc gave at " +
                                         hex(start + block->first);
                return offset >= end ? std::to_string(offset - end) + " bytes past the end of " + block_text
                                     : "running over the end of " + block_text;
            }
        }
        return "in the device heap (malloc's " + std::to_string(m_bytes) + " bytes) but in no block malloc gave";
    }
}
