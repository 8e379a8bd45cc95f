#pragma once
// A CUDA stream made in one device's context, ordered with the legacy default stream (as CuPy's and
// PyTorch's ordinary streams are), so xcuda's own copies on the default stream order with it.
//
// Ownership: owns its CUstream and destroys it in the destructor unless its context is gone (the
// handle died with it); use after that raises session_closed_error or session_lost_error.
// synchronize() waits interruptibly and holds no Python state: callers release the GIL.

#include <cstdint>
#include <string>

#include <cuda.h>

#include "cuda_session.hpp"

namespace xcuda
{
    class cuda_stream
    {
    public:
        // On the session's current device.
        explicit cuda_stream(cuda_session& session);
        ~cuda_stream();
        cuda_stream(const cuda_stream&) = delete;
        cuda_stream& operator=(const cuda_stream&) = delete;

        // The handle, after checking its context is alive.
        CUstream handle() const;
        // The handle as made, for display; never checks.
        CUstream raw() const noexcept { return m_handle; }
        int device() const noexcept { return m_device; }
        // The handle for work on device `current`; device_mismatch_error when the stream is another device's.
        CUstream handle_on(int current) const;
        // repr: "<xcuda.Stream handle=0x5581d2c0>".
        std::string describe() const;

        // What a stream argument may not be (argument_type_error): a bare integer other than 0 (taken as a
        // handle, a wrong one crashes the driver; `text` is how Python spells it), or an object of a type
        // (`type_text`) with no stream protocol.
        [[noreturn]] static void refuse_integer(const std::string& text);
        [[noreturn]] static void refuse_object(const std::string& type_text);

        void synchronize();
        // Whether all work queued on it has finished.
        bool query();

    private:
        cuda_session& m_session;
        CUstream m_handle = nullptr;
        int m_device = 0;
        std::uint64_t m_generation = 0;
    };
}
