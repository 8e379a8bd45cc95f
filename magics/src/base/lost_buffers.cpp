#include "lost_buffers.hpp"

namespace xcuda
{
    lost_buffers::lost_buffers(const kernel_fault& fault)
    {
        m_entries.reserve(fault.lost().size());
        for (const auto& buffer : fault.lost())
        {
            m_entries.push_back({buffer, {}});
        }
    }

    void lost_buffers::name(std::uintptr_t id, const std::string& name)
    {
        for (auto& entry : m_entries)
        {
            if (entry.buffer.id == id)
            {
                entry.names.push_back(name);
            }
        }
    }

    std::string lost_buffers::describe() const
    {
        std::string text;
        std::size_t unnamed = 0;
        for (const auto& entry : m_entries)
        {
            if (entry.names.empty())
            {
                ++unnamed;
                continue;
            }
            std::string joined;
            for (const auto& name : entry.names)
            {
                joined += (joined.empty() ? "" : " = ") + name;
            }
            text += "\n  " + joined + ": " + entry.buffer.label;
        }
        if (!text.empty())
        {
            text = "\nDevice arrays lost (using them raises xcuda.SessionLostError):" + text;
        }
        if (unnamed)
        {
            text += "\n  and " + std::to_string(unnamed) + " buffer" + (unnamed == 1 ? "" : "s") +
                    " not bound to a variable (temporaries, or held inside other objects)";
        }
        return text + "\nYour Python variables and host (numpy) arrays are intact. Run %cuda_recover to "
                      "continue on the GPU: it replaces the kernel process and carries your variables over.";
    }
}
