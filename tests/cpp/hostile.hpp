#pragma once
// Helpers of the hostile-input tests (issue 28) of several layers: a fresh folder under /tmp, and a call that
// must return although a FIFO it may open never gets a writer. The hostile-input tests, by layer:
// base/test_hostile_files.cpp, signature/test_hostile_signatures.cpp, compile/test_hostile_cache.cpp and
// views/test_hostile_tool_output.cpp.

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace xcuda_tests
{
    inline std::string fresh_folder()
    {
        char pattern[] = "/tmp/xcuda-hostile-XXXXXX";
        const char* made = ::mkdtemp(pattern);
        return made ? made : "";
    }

    // Runs f on another thread; fails the test (instead of hanging) when it has not returned in 10 s, then
    // opens the FIFO for writing so that a reader blocked in open() comes back and the test binary can end.
    template <typename F>
    void returns_without_blocking(F f, const std::string& fifo)
    {
        auto done = std::async(std::launch::async, f);
        if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
        {
            ADD_FAILURE() << "blocked on the FIFO " << fifo;
            int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
            while (fd < 0 && done.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready)
            {
                fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
            }
            if (fd >= 0)
            {
                ::close(fd);
            }
        }
        done.get();
    }
}
