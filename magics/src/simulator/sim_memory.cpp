#include "sim_memory.hpp"

#include <cstdio>

namespace xcuda::sim
{
    std::string hex(std::uint64_t value)
    {
        char text[32];
        std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
        return text;
    }

    void sim_memory::add(std::uintptr_t start, std::size_t bytes, std::string name)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        m_ranges[start] = allocation{start, bytes, std::move(name)};
    }

    bool sim_memory::remove(std::uintptr_t start)
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        return m_ranges.erase(start) == 1;
    }

    const sim_memory::allocation* sim_memory::containing(std::uintptr_t address) const
    {
        auto it = m_ranges.upper_bound(address);
        if (it == m_ranges.begin())
        {
            return nullptr;
        }
        --it;
        return address < it->first + it->second.bytes ? &it->second : nullptr;
    }

    const sim_memory::allocation* sim_memory::find(std::uintptr_t address, std::size_t bytes) const
    {
        const allocation* a = containing(address);
        return a && address + bytes <= a->start + a->bytes ? a : nullptr;
    }

    std::string sim_memory::describe(std::uintptr_t address, std::size_t bytes) const
    {
        std::lock_guard<std::recursive_mutex> lock(m_mutex);
        const allocation* inside = containing(address);
        if (inside)
        {
            return "it starts inside " + inside->name + " at " + hex(inside->start) + " (" + std::to_string(inside->bytes) +
                   " bytes) but runs " + std::to_string(address + bytes - (inside->start + inside->bytes)) + " bytes past its end";
        }
        const allocation* before = nullptr;
        const allocation* after = nullptr;
        auto it = m_ranges.upper_bound(address);
        if (it != m_ranges.end())
        {
            after = &it->second;
        }
        if (it != m_ranges.begin())
        {
            before = &std::prev(it)->second;
        }
        std::uintptr_t past = before ? address - (before->start + before->bytes) : ~std::uintptr_t(0);
        std::uintptr_t ahead = after ? after->start - address : ~std::uintptr_t(0);
        const std::uintptr_t near = std::uintptr_t(1) << 20;
        if (before && past <= ahead && past < near)
        {
            return std::to_string(past) + " bytes past the end of " + before->name + " at " + hex(before->start) + " (" +
                   std::to_string(before->bytes) + " bytes)";
        }
        if (after && ahead < near)
        {
            return std::to_string(ahead) + " bytes before " + after->name + " at " + hex(after->start) + " (" +
                   std::to_string(after->bytes) + " bytes)";
        }
        return "not in or near any allocation";
    }
}
