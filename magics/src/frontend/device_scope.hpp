#pragma once
// `with xcuda.device(n):`: the device chosen for a block and the one to return to after it. The same
// object may be entered again (nested or later): each enter pushes the device current then, each exit
// pops it. Not thread-safe: the session's current device is the process's (cuda_session says why).

#include <vector>

namespace xcuda
{
    class cuda_session;

    class device_scope
    {
    public:
        // Throws usage_error (ValueError) unless the ordinal names a device.
        device_scope(cuda_session& session, int ordinal);

        int ordinal() const noexcept { return m_ordinal; }
        // Makes the device current; returns its ordinal.
        int enter(cuda_session& session);
        // Makes the device current before the matching enter() current again.
        void exit(cuda_session& session);

    private:
        int m_ordinal = 0;
        std::vector<int> m_previous;
    };
}
