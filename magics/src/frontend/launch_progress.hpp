#pragma once
// What a long launch on the PTX simulator shows while it runs, and when: nothing for its first second (most
// launches end before), then "kernel 'spin' on the PTX simulator: 1,234 of 4,096 blocks (30%), 812 blocks/s,
// about 4 s left", renewed every half second, and nothing once the launch has ended (the line is cleared).
// A launch whose blocks so far say it would take more than ten minutes is warned about once, with the
// estimate and the way out (Kernel > Interrupt). Where it is shown is Python's: xcuda/progress.py draws
// what this says, as for progress_meter's sweeps.
//
// connect() hands the simulator's launch watch (cuda_driver::set_launch_watch) a function that asks
// `interrupted` at every call (true stops the launch) and `draw` with what to show. Threading: the watch
// is called on the launching thread, one launch at a time (the simulator runs them in turn).

#include <functional>
#include <string>

#include "cuda_driver.hpp"

namespace xcuda
{
    class launch_progress
    {
    public:
        struct update
        {
            enum class kind
            {
                none,
                show,   // text (and html, and line for a terminal) in place of the last
                clear,  // the launch ended: remove what was shown
            };
            kind what = kind::none;
            std::string text;
            std::string html;
            std::string line;     // for a terminal: '\r', the text, blanks over what a longer last text left
            std::string warning;  // not empty: say this once, apart from the progress line
        };

        // One call of the watch: what to draw now.
        update step(const cuda_driver::simulated_launch& launch);

        static void connect(std::function<bool()> interrupted, std::function<void(const update&)> draw);

        // "3 h 12 min", "45 s": a duration as the progress line says it.
        static std::string duration(double seconds);

    private:
        bool m_shown = false;
        bool m_warned = false;
        double m_last_shown = 0;
        std::size_t m_width = 0;
    };
}
