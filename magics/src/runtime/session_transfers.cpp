#include "session_transfers.hpp"

#include <string>

#include "cuda_session.hpp"
#include "errors.hpp"
#include "host_staging.hpp"
#include "pinned_memory.hpp"
#include "temporary_cache.hpp"

namespace xcuda
{
    session_transfers::session_transfers(cuda_session& session)
        : m_session(session)
        , m_temporaries(std::make_unique<temporary_cache>(session))
    {
    }

    session_transfers::~session_transfers() = default;

    host_staging& session_transfers::staging(int ordinal)
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
            m_staging[index].reset(new host_staging(m_session, ordinal));
        }
        return *m_staging[index];
    }

    session_transfers::memory_lease session_transfers::memory(std::size_t bytes)
    {
        memory_lease lease{std::unique_lock<std::mutex>(m_memory_mutex), nullptr};
        if (!m_memory || m_memory->size() < bytes)
        {
            m_memory.reset();
            m_memory = pinned_memory::allocate(m_session, bytes);
        }
        lease.memory = m_memory.get();
        return lease;
    }

    void session_transfers::change(const transfer_settings& changed)
    {
        if (changed.pageable != m_settings.pageable && m_session.active())
        {
            for (int ordinal = 0; ordinal < m_session.device_count(); ++ordinal)
            {
                if (m_session.generation(ordinal) != 0)
                {
                    m_session.make_current(ordinal);
                    staging(ordinal).registrations().release_all();
                }
            }
            m_session.make_current();
        }
        bool shrunk = changed.temporary_cache_limit < m_settings.temporary_cache_limit;
        m_settings = changed;
        if (shrunk)
        {
            m_temporaries->release_all();  // kept under the old limit: start again under the new
        }
    }

    void session_transfers::release_host_registrations()
    {
        if (m_session.active())
        {
            m_session.make_current();
            staging(m_session.device_ordinal()).registrations().release_all();
        }
    }

    void session_transfers::close(bool lost) noexcept
    {
        m_memory.reset();  // unregistered while its context still exists
        if (lost)
        {
            return;
        }
        m_temporaries->clear();  // freed by their destructors while their contexts still exist
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
