#pragma once
// The progress bar of long sweeps (xcuda.bench, %cuda_bench). Holds Python objects: GIL held.

#include <chrono>
#include <string>

#include "py_common.hpp"

namespace xcuda::python
{
    // A one-line bar that updates in place: through IPython's display/update_display where the shell
    // has a rich display publisher (a notebook kernel), with '\r' on sys.stderr when that is a
    // terminal, else nowhere. It appears after the first size, for sweeps of more than 4 sizes or
    // once a sweep has run longer than 1 s, so a failing first launch leaves nothing on screen.
    class progress_bar
    {
    public:
        progress_bar(bool enabled, std::string label, std::size_t total);

        // After size number `done` (1-based), n, has been timed.
        void step(std::size_t done, long long n);

        // The last state: "saxpy: 17 sizes in 3.4 s", or why the sweep stopped. Only where the bar was shown.
        void finish(const std::string& stopped, std::size_t done);

    private:
        enum class mode { none, display, text };

        double elapsed() const;

        void show(const std::string& text, std::size_t done);

        std::string m_label;
        std::size_t m_total;
        std::chrono::steady_clock::time_point m_start;
        mode m_mode = mode::none;
        bool m_shown = false;
        py::object m_handle;  // IPython DisplayHandle (display mode)
        py::object m_stream;  // sys.stderr (text mode)
        std::size_t m_width = 0;
    };
}
