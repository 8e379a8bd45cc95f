#pragma once
// Captures what the CUDA driver writes to the process' stdout while device printf output is flushed.
//
// Why: a kernel's printf lands in a device buffer that the driver prints, with the C library's stdout,
// at the next synchronising call. In a Jupyter kernel file descriptor 1 is the kernel's terminal, not
// the cell, so the output would never reach the user. Around a synchronising call, file descriptor 1
// is pointed at an in-memory file, and what was written is handed back as a string.
//
// Threading: file descriptor 1 is process-wide; anything another thread writes to it during the
// window is captured too (and shown in the cell). One capture at a time in the process: a capture holds
// a process-wide mutex from its start to finish(), so threads waiting at once (the waits release the
// GIL) take turns. Without it a second capture saved the first one's redirection as "stdout" and put it
// back at its end: the process' stdout was lost for good (tests/cpp/runtime/test_launch_call.cpp, the test of
// threads waiting at once). A capture spans only the synchronising call after the work is done.

#include <mutex>
#include <string>

namespace xcuda
{
    class printf_capture
    {
    public:
        // Starts capturing (flushes stdout first). Does nothing if the redirection cannot be made.
        printf_capture();
        // Restores file descriptor 1 if finish() was not called.
        ~printf_capture();
        printf_capture(const printf_capture&) = delete;
        printf_capture& operator=(const printf_capture&) = delete;

        // Flushes stdout, restores file descriptor 1 and returns what was written meanwhile.
        std::string finish();

    private:
        std::unique_lock<std::mutex> m_turn;  // the process' one capture at a time
        int m_saved = -1;
    };
}
