#include "printf_capture.hpp"

#include <cstdio>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace xcuda
{
    namespace
    {
        // One in-memory file for the process, emptied after each capture.
        int capture_file()
        {
            static int fd = [] {
                int file = ::memfd_create("xcuda-printf", MFD_CLOEXEC);
                if (file < 0)
                {
                    std::FILE* temporary = std::tmpfile();
                    file = temporary ? ::dup(::fileno(temporary)) : -1;
                }
                return file;
            }();
            return fd;
        }

        std::mutex& capture_turns()
        {
            static std::mutex turns;
            return turns;
        }
    }

    printf_capture::printf_capture() : m_turn(capture_turns())
    {
        int file = capture_file();
        if (file < 0)
        {
            return;
        }
        std::fflush(stdout);
        m_saved = ::dup(1);
        if (m_saved >= 0 && ::dup2(file, 1) < 0)
        {
            ::close(m_saved);
            m_saved = -1;
        }
    }

    printf_capture::~printf_capture()
    {
        if (m_saved >= 0)
        {
            finish();
        }
    }

    std::string printf_capture::finish()
    {
        if (m_saved < 0)
        {
            if (m_turn.owns_lock())
            {
                m_turn.unlock();
            }
            return {};
        }
        std::fflush(stdout);
        ::dup2(m_saved, 1);
        ::close(m_saved);
        m_saved = -1;
        int file = capture_file();
        off_t length = ::lseek(file, 0, SEEK_END);
        std::string text(length > 0 ? static_cast<std::size_t>(length) : 0, '\0');
        std::size_t done = 0;
        while (done < text.size())
        {
            ssize_t got = ::pread(file, &text[done], text.size() - done, static_cast<off_t>(done));
            if (got <= 0)
            {
                break;
            }
            done += static_cast<std::size_t>(got);
        }
        text.resize(done);
        if (::ftruncate(file, 0) != 0)
        {
            text += "\n[xcuda: could not empty the printf capture file]\n";
        }
        ::lseek(file, 0, SEEK_SET);
        m_turn.unlock();
        return text;
    }
}
