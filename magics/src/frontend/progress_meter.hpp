#pragma once
// What the progress bar of a long sweep (xcuda.bench, %cuda_bench) says and when: it appears after
// the first size, for sweeps of more than 4 sizes or once a sweep has run longer than 1 s, so a failing
// first launch leaves nothing on screen; its last state says how the sweep ended. Where it is shown
// (IPython's display, a terminal's '\r') is Python's: xcuda/progress.py draws what this says.
//
// Threading: one thread (the sweep's).

#include <chrono>
#include <optional>
#include <string>

namespace xcuda
{
    class progress_meter
    {
    public:
        using clock = std::chrono::steady_clock;

        // The clock starts here; `now` lets a test choose the time.
        progress_meter(std::string label, std::size_t total, clock::time_point start = clock::now());

        // After size number done (1-based), n: the bar's text when it should be shown now, else none.
        std::optional<std::string> step(std::size_t done, long long n, clock::time_point now = clock::now()) const;
        // The last state: "saxpy: 17 sizes in 3.4 s", or "saxpy: stopped after 4/7 sizes (why)" with
        // stopped (why) not empty; none where the bar was never shown.
        std::optional<std::string> finish(const std::string& stopped, std::size_t done,
                                          clock::time_point now = clock::now()) const;

        // The bar as HTML (a <progress> element and the text) for a notebook.
        std::string html(const std::string& text, std::size_t done) const;
        // The bar for a terminal: '\r', the text, and blanks over what a longer last text left.
        std::string overwrite(const std::string& text);

        // Called once the caller has shown a text.
        void mark_shown() noexcept { m_shown = true; }
        bool shown() const noexcept { return m_shown; }

    private:
        double elapsed(clock::time_point now) const;

        std::string m_label;
        std::size_t m_total;
        clock::time_point m_start;
        bool m_shown = false;
        std::size_t m_width = 0;
    };
}
