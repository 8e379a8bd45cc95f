#pragma once
// The progress bar of long sweeps (xcuda.bench, %cuda_bench) on screen. What it says and when is the
// core's (operations/progress_meter); here it is shown: through IPython's display/update_display where
// the shell has a rich display publisher (a notebook kernel), with '\r' on sys.stderr when that is a
// terminal, else nowhere. Holds Python objects: GIL held.

#include <string>

#include "progress_meter.hpp"
#include "py_common.hpp"

namespace xcuda::python
{
    class progress_bar
    {
    public:
        progress_bar(bool enabled, std::string label, std::size_t total);
        // After size number `done` (1-based), n, has been timed.
        void step(std::size_t done, long long n);
        // The last state, or why the sweep stopped. Only where the bar was shown.
        void finish(const std::string& stopped, std::size_t done);

    private:
        enum class mode { none, display, text };
        void show(const std::string& text, std::size_t done);

        progress_meter m_meter;
        mode m_mode = mode::none;
        py::object m_handle;  // IPython DisplayHandle (display mode)
        py::object m_stream;  // sys.stderr (text mode)
    };
}
