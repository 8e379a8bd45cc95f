#include "launch_history.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace xcuda
{
    std::string launch_record::describe() const
    {
        auto dims = [](const unsigned d[3]) {
            return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
        };
        std::string text = std::string(kernel) + "[grid=" + dims(grid) + ", block=" + dims(block);
        if (shared_mem)
        {
            text += ", shared_mem=" + std::to_string(shared_mem);
        }
        text += "] on device " + std::to_string(device);
        if (stream)
        {
            char handle[32];
            std::snprintf(handle, sizeof handle, "%p", static_cast<void*>(stream));
            text += std::string(", stream ") + handle;
        }
        return text;
    }

    void launch_history::mark_finished() noexcept
    {
        m_finished = m_serial.load();
    }

    std::vector<launch_record> launch_history::unfinished_launches() const
    {
        std::lock_guard<spin_lock> lock(m_lock);
        std::vector<launch_record> result;
        std::uint64_t last = m_serial;
        std::uint64_t first = std::max<std::uint64_t>(m_finished + 1, last > capacity ? last - capacity + 1 : 1);
        for (std::uint64_t serial = first; serial <= last; ++serial)
        {
            result.push_back(m_records[(serial - 1) % capacity]);
        }
        return result;
    }

    std::vector<launch_record> launch_history::unfinished_on(int device) const
    {
        std::vector<launch_record> result;
        for (const launch_record& r : unfinished_launches())
        {
            if (r.device == device)
            {
                result.push_back(r);
            }
        }
        return result;
    }
}
