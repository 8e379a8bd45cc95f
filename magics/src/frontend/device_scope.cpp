#include "device_scope.hpp"

#include "cuda_session.hpp"

namespace xcuda
{
    device_scope::device_scope(cuda_session& session, int ordinal)
        : m_ordinal(ordinal)
    {
        session.validate_ordinal(ordinal);
    }

    int device_scope::enter(cuda_session& session)
    {
        session.settle_device_choice();  // restore the final choice, not a rank before the count was known
        m_previous.push_back(session.device_ordinal());
        session.set_device(m_ordinal);
        return m_ordinal;
    }

    void device_scope::exit(cuda_session& session)
    {
        if (!m_previous.empty())
        {
            int previous = m_previous.back();
            m_previous.pop_back();
            session.set_device(previous);
        }
    }
}
