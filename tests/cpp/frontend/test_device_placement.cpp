// frontend/session_report's device_placement: the engine placement's report (what
// xcuda.device_choice() shows) as the rows of %cuda_info read it.

#include <gtest/gtest.h>

#include "engine_placement.hpp"
#include "session_report.hpp"

namespace
{
    TEST(device_placement, a_refused_choice_has_no_ordinal_and_keeps_its_reason)
    {
        xcuda::engine_placement::report refused;
        refused.reason = "XCUDA_DEVICE=abc is not a device number";
        xcuda::device_placement p = xcuda::device_placement::of(refused);
        EXPECT_TRUE(p.refused);
        EXPECT_EQ(p.ordinal, -1);
        EXPECT_EQ(p.reason, "XCUDA_DEVICE=abc is not a device number");
        EXPECT_FALSE(p.in_engine);
        EXPECT_FALSE(p.has_gpu_uuid);
        EXPECT_EQ(p.host_slot, -1);
    }

    TEST(device_placement, an_engines_slot_registry_gpu_and_neighbours_carry_over)
    {
        xcuda::engine_placement::report engine;
        engine.ordinal = 1;
        engine.source = "host slot";
        engine.reason = "slot 1 among this host's xcuda engines";
        engine.engine = "ipyparallel engine 3 (pid 42)";
        engine.host_slot = 1;
        engine.registry = "/tmp/xcuda-1000/engines";
        engine.gpu_uuid = "GPU-1111";
        engine.shared_with = {"engine 0 on device 1"};
        xcuda::device_placement p = xcuda::device_placement::of(engine);
        EXPECT_FALSE(p.refused);
        EXPECT_EQ(p.ordinal, 1);
        EXPECT_TRUE(p.in_engine);
        EXPECT_EQ(p.engine, "ipyparallel engine 3 (pid 42)");
        EXPECT_EQ(p.host_slot, 1);
        EXPECT_EQ(p.registry, "/tmp/xcuda-1000/engines");
        EXPECT_TRUE(p.has_gpu_uuid);
        EXPECT_EQ(p.gpu_uuid, "GPU-1111");
        EXPECT_EQ(p.shared_with, std::vector<std::string>{"engine 0 on device 1"});
    }

    TEST(device_placement, a_variable_choice_outside_an_engine_has_no_slot)
    {
        xcuda::engine_placement::report chosen;
        chosen.ordinal = 0;
        chosen.registry = "/tmp/unused";
        xcuda::device_placement p = xcuda::device_placement::of(chosen);
        EXPECT_EQ(p.ordinal, 0);
        EXPECT_FALSE(p.in_engine);
        EXPECT_EQ(p.registry, "") << "the registry is only shown for an engine";
        EXPECT_EQ(p.host_slot, -1);
    }
}
