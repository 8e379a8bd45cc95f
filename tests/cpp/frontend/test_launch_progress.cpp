// frontend/launch_progress: what a long launch on the PTX simulator shows, and when (the watch's calls are
// given here with the times they would come at). connect() is tested end to end (tests/simulator,
// tests/kernel: the interrupt and the progress of a running launch).

#include <gtest/gtest.h>

#include <vector>

#include "launch_progress.hpp"

namespace
{
    using xcuda::cuda_driver;
    using xcuda::launch_progress;
    using kind = launch_progress::update::kind;

    cuda_driver::simulated_launch at(double seconds, unsigned long long done, unsigned long long blocks,
                                     bool finished = false)
    {
        return {"spin", done, blocks, seconds, finished};
    }

    TEST(launch_progress, nothing_shows_in_the_first_second_nor_clears_after_a_short_launch)
    {
        launch_progress p;
        EXPECT_EQ(p.step(at(0.02, 1, 10)).what, kind::none);
        EXPECT_EQ(p.step(at(0.9, 5, 10)).what, kind::none);
        EXPECT_EQ(p.step(at(0.95, 10, 10, true)).what, kind::none);
    }

    TEST(launch_progress, after_a_second_it_says_blocks_done_of_all_the_rate_and_the_time_left)
    {
        launch_progress p;
        launch_progress::update u = p.step(at(2.0, 3000, 10000));
        ASSERT_EQ(u.what, kind::show);
        EXPECT_EQ(u.text, "kernel 'spin' on the PTX simulator: 3,000 of 10,000 blocks (30%), 1500 blocks/s, about 5 s "
                          "left; Kernel > Interrupt stops it");
        EXPECT_NE(u.html.find("<progress value=\"3000\" max=\"10000\""), std::string::npos) << u.html;
        EXPECT_EQ(u.line, "\r" + u.text);
        EXPECT_TRUE(u.warning.empty());
    }

    TEST(launch_progress, a_first_block_that_has_not_ended_is_said_without_a_rate)
    {
        launch_progress p;
        EXPECT_EQ(p.step(at(1.2, 0, 1)).text,
                  "kernel 'spin' on the PTX simulator: 0 of 1 blocks (0%), 1 s in its first block; Kernel > Interrupt stops it");
    }

    TEST(launch_progress, the_text_is_renewed_every_half_second_and_cleared_at_the_end)
    {
        launch_progress p;
        EXPECT_EQ(p.step(at(1.0, 10, 100)).what, kind::show);
        EXPECT_EQ(p.step(at(1.2, 12, 100)).what, kind::none);
        EXPECT_EQ(p.step(at(1.6, 16, 100)).what, kind::show);
        launch_progress::update end = p.step(at(2.0, 100, 100, true));
        EXPECT_EQ(end.what, kind::clear);
        EXPECT_EQ(end.line.front(), '\r');
        // A new launch starts over: nothing in its first second.
        EXPECT_EQ(p.step(at(0.5, 1, 100)).what, kind::none);
    }

    TEST(launch_progress, a_launch_that_would_take_hours_is_warned_about_once_with_the_estimate)
    {
        launch_progress p;
        launch_progress::update u = p.step(at(1.0, 100000, 2147483647ull));
        EXPECT_EQ(u.warning, "kernel 'spin' on the PTX simulator: 2,147,483,647 blocks at about 100000 blocks/s would "
                             "take about 5 h 57 min (the simulator interprets every thread on the CPU); Kernel > "
                             "Interrupt (Ctrl-C) stops it and keeps the session's state");
        EXPECT_TRUE(p.step(at(2.0, 200000, 2147483647ull)).warning.empty());
        launch_progress short_one;
        EXPECT_TRUE(short_one.step(at(1.0, 100, 1000)).warning.empty());
    }

    TEST(launch_progress, durations_read_as_a_person_says_them)
    {
        EXPECT_EQ(launch_progress::duration(4.4), "4 s");
        EXPECT_EQ(launch_progress::duration(125), "2 min");
        EXPECT_EQ(launch_progress::duration(3 * 3600 + 12 * 60), "3 h 12 min");
        EXPECT_EQ(launch_progress::duration(5 * 86400.0), "5 days");
    }
}
