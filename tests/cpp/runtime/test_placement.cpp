// Unit tests of where a process runs: the device choice (XCUDA_DEVICE, launchers' local ranks, an
// engine's host slot, the device count), the session's use of it, and the per-host registry of
// engines (slots, GPU records, stale records). None needs a GPU; the registry tests use a fresh
// folder under /tmp and two registries in one process (flock locks exclude each other there too).

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "cuda_session.hpp"
#include "device_choice.hpp"
#include "errors.hpp"
#include "engine_placement.hpp"
#include "host_registry.hpp"

namespace xcuda
{
    namespace
    {
        device_environment environment(const std::map<std::string, std::string>& values)
        {
            return device_environment::from([&](const char* name) -> const char* {
                auto it = values.find(name);
                return it == values.end() ? nullptr : it->second.c_str();
            });
        }

        device_choice choose(const std::map<std::string, std::string>& values, int count, host_slot slot = {})
        {
            return device_choice::choose(environment(values), slot, count);
        }

        // The usage_error's message for a refused environment, "" when none was thrown.
        std::string refusal(const std::map<std::string, std::string>& values)
        {
            try
            {
                choose(values, 2);
            }
            catch (const usage_error& e)
            {
                return e.what();
            }
            return "";
        }

        bool contains(const std::string& text, const std::string& part)
        {
            return text.find(part) != std::string::npos;
        }

        // A fresh folder, removed with its files at the end of the test.
        struct scratch_folder
        {
            std::string path;
            scratch_folder()
            {
                char name[] = "/tmp/xcuda-registry-test-XXXXXX";
                path = ::mkdtemp(name);
            }
            ~scratch_folder()
            {
                std::string command = "rm -rf '" + path + "'";
                int ignored = std::system(command.c_str());
                (void)ignored;
            }
        };

        // Sets an environment variable for one scope (the session reads the process' environment).
        struct scoped_variable
        {
            std::string name;
            scoped_variable(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
            ~scoped_variable() { ::unsetenv(name.c_str()); }
        };
    }

    // ---- device_choice --------------------------------------------------------------------------

    TEST(device_choice, nothing_set_chooses_device_0_and_says_which_variables_were_looked_at)
    {
        device_choice choice = choose({}, 4);
        EXPECT_EQ(choice.ordinal(), 0);
        EXPECT_EQ(choice.source(), device_source::fallback);
        EXPECT_TRUE(contains(choice.reason(), "XCUDA_DEVICE is unset")) << choice.reason();
        EXPECT_TRUE(contains(choice.reason(), "OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID and LOCAL_RANK"))
            << choice.reason();
        EXPECT_TRUE(choice.open_to_host_slot());
    }

    TEST(device_choice, xcuda_device_overrides_local_ranks_and_the_host_slot_and_says_so)
    {
        device_choice choice = choose({{"XCUDA_DEVICE", "1"}, {"SLURM_LOCALID", "0"}}, 2, {3, "engine 3"});
        EXPECT_EQ(choice.ordinal(), 1);
        EXPECT_EQ(choice.source(), device_source::variable);
        EXPECT_EQ(choice.source_name(), "XCUDA_DEVICE");
        EXPECT_EQ(choice.reason(), "XCUDA_DEVICE=1, which overrides SLURM_LOCALID=0 and the engine's host slot 3");
        EXPECT_FALSE(choice.depends_on_count());
        EXPECT_FALSE(choice.open_to_host_slot());
    }

    TEST(device_choice, xcuda_device_is_not_wrapped_by_the_device_count)
    {
        // The session refuses a device that does not exist; the choice itself never folds it onto another.
        EXPECT_EQ(choose({{"XCUDA_DEVICE", "5"}}, 2).ordinal(), 5);
    }

    TEST(device_choice, xcuda_device_simulator_chooses_the_simulators_one_device_over_a_local_rank)
    {
        device_choice choice = choose({{"XCUDA_DEVICE", "simulator"}, {"SLURM_LOCALID", "3"}}, 1);
        EXPECT_EQ(choice.ordinal(), 0);
        EXPECT_EQ(choice.source(), device_source::simulator);
        EXPECT_EQ(choice.source_name(), "XCUDA_DEVICE");
        EXPECT_TRUE(contains(choice.reason(), "XCUDA_DEVICE=simulator: the PTX simulator's one device")) << choice.reason();
    }

    TEST(device_choice, xcuda_device_gpu_chooses_as_if_unset_and_says_it_refuses_the_simulator)
    {
        device_choice by_rank = choose({{"XCUDA_DEVICE", "gpu"}, {"SLURM_LOCALID", "3"}}, 2);
        EXPECT_EQ(by_rank.ordinal(), 1);
        EXPECT_EQ(by_rank.source(), device_source::local_rank);
        EXPECT_TRUE(contains(by_rank.reason(), "local rank 3 (SLURM_LOCALID=3)")) << by_rank.reason();
        EXPECT_TRUE(contains(by_rank.reason(), "; XCUDA_DEVICE=gpu: a GPU, never the PTX simulator")) << by_rank.reason();
        device_choice by_default = choose({{"XCUDA_DEVICE", "gpu"}}, 2);
        EXPECT_EQ(by_default.ordinal(), 0);
        EXPECT_EQ(by_default.source(), device_source::fallback);
        EXPECT_FALSE(contains(by_default.reason(), "XCUDA_DEVICE is unset")) << by_default.reason();
        EXPECT_TRUE(contains(by_default.reason(), "XCUDA_DEVICE=gpu names no device")) << by_default.reason();
    }

    TEST(device_choice, the_simulators_device_names_who_chose_the_simulator)
    {
        device_choice choice = device_choice::on_simulator("xcuda.use_simulator()");
        EXPECT_EQ(choice.ordinal(), 0);
        EXPECT_EQ(choice.source(), device_source::simulator);
        EXPECT_EQ(choice.reason(), "xcuda.use_simulator(): the PTX simulator's one device");
        EXPECT_EQ(device_choice::on_simulator("the fallback: no NVIDIA driver was found and XCUDA_DEVICE is unset").source_name(),
                  "simulator fallback");
    }

    TEST(device_choice, a_value_past_int_is_refused_with_its_text_instead_of_narrowing_to_device_0)
    {
        std::string message = refusal({{"XCUDA_DEVICE", "4294967296"}});
        EXPECT_TRUE(contains(message, "XCUDA_DEVICE='4294967296' is not a device ordinal")) << message;
        EXPECT_TRUE(contains(message, "from 0 to 2147483647")) << message;
        EXPECT_TRUE(contains(message, "unset it")) << message;
    }

    TEST(device_choice, malformed_device_values_are_refused_with_their_text)
    {
        for (const char* text : {"-1", "abc", "1 ", " 1", "+1", "1.0", "0x1", "2147483648", "99999999999999999999"})
        {
            std::string message = refusal({{"XCUDA_DEVICE", text}});
            EXPECT_TRUE(contains(message, std::string("XCUDA_DEVICE='") + text + "'")) << text << ": " << message;
        }
        EXPECT_EQ(choose({{"XCUDA_DEVICE", "2147483647"}}, -1).ordinal(), 2147483647);
        EXPECT_EQ(choose({{"XCUDA_DEVICE", "0007"}}, -1).ordinal(), 7);
        EXPECT_EQ(choose({{"XCUDA_DEVICE", "000"}}, -1).ordinal(), 0);
    }

    TEST(device_choice, an_empty_xcuda_device_counts_as_unset)
    {
        EXPECT_EQ(choose({{"XCUDA_DEVICE", ""}, {"LOCAL_RANK", "1"}}, 4).source(), device_source::local_rank);
    }

    TEST(device_choice, the_local_rank_chooses_modulo_the_device_count)
    {
        device_choice within = choose({{"SLURM_LOCALID", "1"}}, 2);
        EXPECT_EQ(within.ordinal(), 1);
        EXPECT_EQ(within.source(), device_source::local_rank);
        EXPECT_EQ(within.source_name(), "SLURM_LOCALID");
        EXPECT_EQ(within.reason(), "local rank 1 (SLURM_LOCALID=1)");
        device_choice wrapped = choose({{"LOCAL_RANK", "3"}}, 2);
        EXPECT_EQ(wrapped.ordinal(), 1);
        EXPECT_EQ(wrapped.reason(), "local rank 3 (LOCAL_RANK=3), modulo the 2 devices this process sees");
        EXPECT_TRUE(wrapped.depends_on_count());
        EXPECT_FALSE(wrapped.open_to_host_slot());
    }

    TEST(device_choice, without_a_device_count_the_rank_is_taken_as_it_is)
    {
        EXPECT_EQ(choose({{"SLURM_LOCALID", "3"}}, -1).ordinal(), 3);
    }

    TEST(device_choice, mpi_ranks_come_before_slurms_inherited_batch_rank)
    {
        device_choice choice = choose({{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}, 2);
        EXPECT_EQ(choice.ordinal(), 1);
        EXPECT_EQ(choice.source_name(), "OMPI_COMM_WORLD_LOCAL_RANK");
        EXPECT_TRUE(contains(choice.reason(), "SLURM_LOCALID=0 ignored: OMPI_COMM_WORLD_LOCAL_RANK comes first"))
            << choice.reason();
        EXPECT_EQ(choose({{"SLURM_LOCALID", "0"}, {"MPI_LOCALRANKID", "1"}}, 2).source_name(), "MPI_LOCALRANKID");
        EXPECT_EQ(choose({{"LOCAL_RANK", "0"}, {"SLURM_LOCALID", "1"}}, 2).source_name(), "SLURM_LOCALID");
    }

    TEST(device_choice, a_malformed_local_rank_is_refused_naming_its_variable)
    {
        std::string message = refusal({{"SLURM_LOCALID", "two"}});
        EXPECT_TRUE(contains(message, "SLURM_LOCALID='two' is not a local rank")) << message;
        EXPECT_TRUE(contains(message, "set XCUDA_DEVICE")) << message;
        // XCUDA_DEVICE decides before the rank is read: a broken rank does not matter then.
        EXPECT_EQ(refusal({{"XCUDA_DEVICE", "1"}, {"SLURM_LOCALID", "two"}}), "");
    }

    TEST(device_choice, an_engines_host_slot_chooses_only_when_nothing_else_did)
    {
        device_choice slot = choose({}, 2, {3, "ipyparallel engine 7 (pid 42)"});
        EXPECT_EQ(slot.ordinal(), 1);
        EXPECT_EQ(slot.source(), device_source::host_slot);
        EXPECT_TRUE(contains(slot.reason(), "slot 3 among this host's xcuda engines (ipyparallel engine 7 (pid 42))"))
            << slot.reason();
        EXPECT_TRUE(contains(slot.reason(), "modulo the 2 devices")) << slot.reason();
        EXPECT_EQ(choose({{"LOCAL_RANK", "0"}}, 2, {1, "e"}).source(), device_source::local_rank);
    }

    TEST(device_choice, cuda_visible_devices_is_named_in_the_reason)
    {
        device_choice choice = choose({{"SLURM_LOCALID", "0"}, {"CUDA_VISIBLE_DEVICES", "2,3"}}, 2);
        EXPECT_TRUE(contains(choice.reason(), "CUDA_VISIBLE_DEVICES=2,3")) << choice.reason();
    }

    TEST(device_choice, set_device_replaces_the_choice)
    {
        device_choice choice = device_choice::by_call(1);
        EXPECT_EQ(choice.ordinal(), 1);
        EXPECT_EQ(choice.reason(), "xcuda.set_device(1)");
        EXPECT_FALSE(choice.open_to_host_slot());
    }

    // ---- the session's use of it (the process' environment, no driver touched) ----------------------

    TEST(session_device_choice, a_malformed_xcuda_device_is_refused_at_the_first_gpu_operation_on_any_machine)
    {
        scoped_variable device("XCUDA_DEVICE", "4294967296");
        cuda_session session;
        EXPECT_EQ(session.device_ordinal(), -1);
        EXPECT_TRUE(contains(session.choice_problem(), "XCUDA_DEVICE='4294967296'")) << session.choice_problem();
        try
        {
            session.ensure();
            FAIL() << "ensure() accepted XCUDA_DEVICE=4294967296";
        }
        catch (const usage_error& e)
        {
            EXPECT_TRUE(contains(e.what(), "XCUDA_DEVICE='4294967296' is not a device ordinal")) << e.what();
        }
        session.set_device(0);  // an explicit choice replaces the refused one
        EXPECT_EQ(session.choice_problem(), "");
        EXPECT_EQ(session.device_ordinal(), 0);
        EXPECT_EQ(session.choice().source(), device_source::call);
    }

    TEST(session_device_choice, a_local_rank_chooses_before_any_driver_call_and_a_slot_does_not_override_it)
    {
        scoped_variable rank("SLURM_LOCALID", "1");
        cuda_session session;
        EXPECT_EQ(session.device_ordinal(), 1);
        EXPECT_EQ(session.choice().source_name(), "SLURM_LOCALID");
        session.set_host_slot({0, "engine 0"});
        EXPECT_EQ(session.device_ordinal(), 1);
    }

    TEST(session_device_choice, an_engines_slot_chooses_when_nothing_else_did)
    {
        cuda_session session;
        ASSERT_EQ(session.choice().source(), device_source::fallback) << "a device variable is set in this test's environment";
        session.set_host_slot({2, "engine 5"});
        EXPECT_EQ(session.device_ordinal(), 2);
        EXPECT_EQ(session.choice().source(), device_source::host_slot);
        session.set_device(0);
        session.set_host_slot({1, "engine 5"});
        EXPECT_EQ(session.device_ordinal(), 0) << "a slot replaced xcuda.set_device's choice";
    }

    // ---- host_registry --------------------------------------------------------------------------

    TEST(host_registry, engines_get_the_lowest_free_slot_and_a_released_slot_is_reused)
    {
        scratch_folder folder;
        host_registry first(folder.path);
        host_registry second(folder.path);
        EXPECT_EQ(first.slot(), -1);
        EXPECT_EQ(first.lease_slot("engine 0"), 0);
        EXPECT_EQ(second.lease_slot("engine 1"), 1);
        EXPECT_EQ(first.lease_slot("engine 0"), 0) << "a second lease moved the slot";
        first.release();
        host_registry third(folder.path);
        EXPECT_EQ(third.lease_slot("engine 2"), 0);
    }

    TEST(host_registry, a_second_process_on_one_gpu_sees_the_first_until_it_goes)
    {
        scratch_folder folder;
        host_registry a(folder.path);
        host_registry b(folder.path);
        EXPECT_TRUE(a.use_gpu("GPU-1111", "engine 0 on device 0").empty());
        std::vector<std::string> others = b.use_gpu("GPU-1111", "engine 1 on device 0");
        ASSERT_EQ(others.size(), 1u);
        EXPECT_EQ(others[0], "engine 0 on device 0");
        EXPECT_EQ(a.others_on("GPU-1111"), std::vector<std::string>{"engine 1 on device 0"});
        EXPECT_TRUE(b.use_gpu("GPU-2222", "engine 1 on device 1").empty()) << "another GPU counted as shared";
        a.release();
        EXPECT_TRUE(b.others_on("GPU-1111").empty());
    }

    TEST(host_registry, a_record_nobody_holds_is_stale_and_removed)
    {
        scratch_folder folder;
        std::string stale = folder.path + "/gpu-GPU-1111.999999.1";
        std::ofstream(stale) << "an engine that crashed";
        host_registry registry(folder.path);
        EXPECT_TRUE(registry.use_gpu("GPU-1111", "engine 0").empty());
        EXPECT_NE(::access(stale.c_str(), F_OK), 0) << "the stale record was left";
    }

    TEST(host_registry, a_relative_folder_is_refused)
    {
        try
        {
            host_registry registry("engines");
            FAIL() << "a relative folder was accepted";
        }
        catch (const usage_error& e)
        {
            EXPECT_TRUE(contains(e.what(), "absolute path, got 'engines' (XCUDA_HOST_REGISTRY)")) << e.what();
        }
    }

    TEST(host_registry, the_default_folder_follows_xcuda_host_registry)
    {
        scoped_variable chosen("XCUDA_HOST_REGISTRY", "/tmp/somewhere");
        EXPECT_EQ(host_registry::default_directory(), "/tmp/somewhere");
    }

    // ---- engine_placement -----------------------------------------------------------------------

    TEST(engine_placement, an_engine_joins_its_host_leases_a_slot_and_reports_it)
    {
        scratch_folder folder;
        cuda_session session;
        ASSERT_EQ(session.choice().source(), device_source::fallback) << "a device variable is set in this test's environment";
        engine_placement placement(session);
        EXPECT_FALSE(placement.joined());
        std::vector<std::string> warnings;
        auto warn = [&](const std::string& message) { warnings.push_back(message); };
        EXPECT_EQ(placement.join("engine 3", folder.path, warn), "");
        EXPECT_TRUE(placement.joined());
        EXPECT_TRUE(warnings.empty()) << "no context, no GPU to share";
        EXPECT_EQ(placement.join("engine 4", folder.path, warn), "") << "a second join did something";
        engine_placement::report r = placement.choice_report();
        EXPECT_EQ(r.engine, std::optional<std::string>("engine 3"));
        EXPECT_EQ(r.host_slot, std::optional<int>(0));
        EXPECT_EQ(r.registry, std::optional<std::string>(folder.path));
        EXPECT_EQ(r.source, "host slot");
        EXPECT_FALSE(r.gpu_uuid) << "a UUID without a context";
        EXPECT_TRUE(r.shared_with.empty());
    }

    TEST(engine_placement, a_registry_that_fails_leaves_the_engine_unplaced_and_says_why)
    {
        cuda_session session;
        engine_placement placement(session);
        std::string failure = placement.join("engine 0", "engines", [](const std::string&) {});
        EXPECT_FALSE(placement.joined());
        EXPECT_TRUE(contains(failure, "xcuda: this engine could not join its host's engine registry: ")) << failure;
        EXPECT_TRUE(contains(failure, "is not checked for sharing a GPU.")) << failure;
        EXPECT_EQ(placement.record_gpu(0), "") << "an engine outside the registry recorded a GPU";
        engine_placement::report r = placement.choice_report();
        EXPECT_FALSE(r.engine);
        EXPECT_FALSE(r.host_slot);
        EXPECT_FALSE(r.registry);
    }

    TEST(engine_placement, a_refused_device_variable_is_reported_as_refused)
    {
        scoped_variable device("XCUDA_DEVICE", "gpu-one");
        cuda_session session;
        engine_placement placement(session);
        engine_placement::report r = placement.choice_report();
        EXPECT_FALSE(r.ordinal);
        EXPECT_EQ(r.source, "refused");
        EXPECT_TRUE(contains(r.reason, "gpu-one")) << r.reason;
    }
}
