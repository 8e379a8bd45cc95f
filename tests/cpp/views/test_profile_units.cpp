// views/launch_profile: the figures in the units xcuda.LaunchProfile shows (us, GB/s, GFLOP/s), None
// (an empty optional) where ncu did not report the figure they come from.

#include <gtest/gtest.h>

#include "launch_profile.hpp"

namespace
{
    TEST(launch_profile_units, nanoseconds_and_bytes_per_second_are_shown_as_microseconds_and_gigabytes)
    {
        xcuda::launch_profile p;
        p.duration_ns = 2500;
        p.dram_bytes_per_second = 3.2e12;
        p.peak_dram_bytes_per_second = 4.8e12;
        p.fp32_flops = 1e9;
        p.fp64_flops = 1e9;
        EXPECT_DOUBLE_EQ(*p.duration_us(), 2.5);
        EXPECT_DOUBLE_EQ(*p.dram_gbs(), 3200);
        EXPECT_DOUBLE_EQ(*p.peak_dram_gbs(), 4800);
        // 2e9 FLOP in 2.5 us: 8e14 FLOP/s.
        EXPECT_DOUBLE_EQ(*p.gflops(), 8e5);
    }

    TEST(launch_profile_units, a_figure_ncu_did_not_report_stays_missing)
    {
        xcuda::launch_profile p;
        EXPECT_FALSE(p.duration_us());
        EXPECT_FALSE(p.dram_gbs());
        EXPECT_FALSE(p.peak_dram_gbs());
        EXPECT_FALSE(p.gflops());
        p.fp32_flops = 1e9;
        EXPECT_FALSE(p.gflops()) << "FLOP counts without a duration give no rate";
    }
}
