#include "host_copies.hpp"

#include <string>

#include "device_contexts.hpp"
#include "errors.hpp"
#include "host_staging.hpp"
#include "pinned_memory.hpp"

namespace xcuda
{
    host_copies::host_copies(device_contexts& contexts)
        : m_contexts(contexts)
    {
    }

    host_copies::~host_copies() = default;

    host_staging& host_copies::staging(int ordinal)
    {
        if (ordinal < 0)
        {
            throw usage_error("device ordinal must be >= 0, got " + std::to_string(ordinal));
        }
        std::size_t index = static_cast<std::size_t>(ordinal);
        std::lock_guard<std::mutex> lock(m_staging_mutex);  // several threads' first copies
        if (m_staging.size() <= index)
        {
            m_staging.resize(index + 1);
        }
        if (!m_staging[index])
        {
            m_staging[index].reset(new host_staging(m_contexts, m_settings, ordinal));
        }
        return *m_staging[index];
    }

    host_copies::memory_lease host_copies::memory(std::size_t bytes)
    {
        memory_lease lease{std::unique_lock<std::mutex>(m_memory_mutex), nullptr};
        if (!m_memory || m_memory->size() < bytes)
        {
            m_memory.reset();
            m_memory = pinned_memory::allocate(m_contexts, bytes);
        }
        lease.memory = m_memory.get();
        return lease;
    }

    void host_copies::change(const transfer_settings& changed)
    {
        if (changed.pageable != m_settings.pageable && m_contexts.active())
        {
            for (int ordinal = 0; ordinal < m_contexts.device_count(); ++ordinal)
            {
                if (m_contexts.generation(ordinal) != 0)
                {
                    m_contexts.make_current(ordinal);
                    staging(ordinal).registrations().release_all();
                }
            }
            m_contexts.make_current();
        }
        m_settings = changed;
    }

    void host_copies::release_host_registrations()
    {
        if (m_contexts.active())
        {
            m_contexts.make_current();
            staging(m_contexts.device_ordinal()).registrations().release_all();
        }
    }

    void host_copies::close(bool lost) noexcept
    {
        m_memory.reset();  // unregistered while its context still exists
        if (lost)
        {
            return;
        }
        // Staging that registered numpy arrays in place but never allocated its own buffers is not a
        // registered resource: release it here too, or the registrations outlive the session (and
        // compute-sanitizer's leak check reports them).
        for (auto& staging : m_staging)
        {
            if (staging)
            {
                staging->release();
            }
        }
    }
}
