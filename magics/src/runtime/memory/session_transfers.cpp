#include "session_transfers.hpp"

#include "device_session.hpp"

namespace xcuda
{
    session_transfers::session_transfers(device_session& session)
        : m_session(session)
        , m_copies(session.copies())
        , m_temporaries(session)
    {
        // An allocation that runs out of device memory frees the kept temporaries and tries again.
        session.set_kept_memory_hook([this](int ordinal) { return m_temporaries.release_all(ordinal); });
    }

    session_transfers::~session_transfers()
    {
        m_session.set_kept_memory_hook(nullptr);
    }

    void session_transfers::change(const transfer_settings& changed)
    {
        bool shrunk = changed.temporary_cache_limit < settings().temporary_cache_limit;
        m_copies.change(changed);
        if (shrunk)
        {
            m_temporaries.release_all();  // kept under the old limit: start again under the new
        }
    }

    void session_transfers::close(bool lost) noexcept
    {
        if (!lost)
        {
            m_temporaries.clear();  // freed by their destructors while their contexts still exist
        }
        m_copies.close(lost);
    }
}
