// Tests of what the Kernel, Module and Launcher objects of the Python module ask the core for: the
// rules and messages of a launch configuration (runtime/launch_configuration), the timing result
// (runtime/kernel_timing), a module's reprs, ptxas resources and missing-kernel messages
// (runtime/module_report), a variant's options (runtime/kernel_variant), the launcher cache
// (runtime/recent_cache) and when a call's arguments need no completion (argument_completion). No
// GPU and no Python: NVRTC compiles the modules.

#include "expect_error.hpp"
#include <gtest/gtest.h>

#include "argument_completion.hpp"
#include "compiler.hpp"
#include "cuda_kernel.hpp"
#include "cuda_session.hpp"
#include "errors.hpp"
#include "kernel_timing.hpp"
#include "kernel_variant.hpp"
#include "launch_configuration.hpp"
#include "module_registry.hpp"
#include "module_report.hpp"
#include "recent_cache.hpp"

namespace xcuda
{
    namespace
    {
        using xcuda_tests::message_of;

        // A module of source for arch, built without a GPU (the registry only compiles).
        struct binding_rules_module
        {
            cuda_session session;
            compiler compile{disk_cache("", 0, false)};
            module_registry registry{session, compile};
            std::shared_ptr<cuda_module> module;

            binding_rules_module(const std::string& source, const std::string& arch)
            {
                compile_options options;
                options.arch = arch;
                module = registry.build("cell_7", compile_recipe{source, options, {}}).module;
            }
        };

        const char* binding_rules_source =
            "__constant__ float c_scale;\n"
            "extern \"C\" __global__ void saxpy(float* y, const float* x, float a, int n)\n"
            "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i] * c_scale; }\n"
            "extern \"C\" __global__ void fill(float* y, int n = 4) { y[threadIdx.x] = n; }\n";
    }

    TEST(launch_configuration, each_axis_is_an_int_from_1_to_2_to_the_32_minus_1)
    {
        EXPECT_EQ(launch_configuration::dimension(256, "block", 0), 256u);
        EXPECT_EQ(launch_configuration::dimension(0xffffffffLL, "grid", 2), 0xffffffffu);
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::dimension(0, "grid", 1); }),
                  "grid y must be at least 1, got 0");
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::dimension(1LL << 32, "block", 2); }),
                  "block z = 4294967296 is larger than any device allows");
        EXPECT_EQ(message_of<argument_type_error>([] { launch_configuration::dimension_not_int("block", 0, "float"); }),
                  "block x must be an int, got float");
        EXPECT_NO_THROW(launch_configuration::check_dimension_count("grid", 3));
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::check_dimension_count("grid", 4); }),
                  "grid must be an int or a tuple of 1 to 3 ints, got 4 values");
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::check_dimension_count("block", 0); }),
                  "block must be an int or a tuple of 1 to 3 ints, got 0 values");
    }

    TEST(launch_configuration, a_key_is_a_tuple_of_2_to_4_values_and_shared_mem_fits_32_bits)
    {
        EXPECT_EQ(message_of<argument_type_error>([] { launch_configuration::key_not_tuple("256"); }),
                  "launch as kernel[grid, block](*args), or kernel[grid, block, stream, shared_mem](*args); got "
                  "kernel[256]");
        EXPECT_NO_THROW(launch_configuration::check_key_size(2));
        EXPECT_NO_THROW(launch_configuration::check_key_size(4));
        EXPECT_EQ(message_of<argument_type_error>([] { launch_configuration::check_key_size(5); }),
                  "kernel[...] takes 2 to 4 values (grid, block, stream, shared_mem), got 5");
        EXPECT_EQ(message_of<argument_type_error>([] { launch_configuration::check_key_size(1); }),
                  "kernel[...] takes 2 to 4 values (grid, block, stream, shared_mem), got 1");
        EXPECT_EQ(launch_configuration::shared_mem(0), 0u);
        EXPECT_EQ(launch_configuration::shared_mem(49152), 49152u);
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::shared_mem(-1); }),
                  "shared_mem must be between 0 and 2**32-1 bytes, got -1");
    }

    TEST(launch_configuration, grid_for_and_forall_cover_n_elements_and_refuse_nothing_to_cover)
    {
        EXPECT_EQ(launch_configuration::grid_for(1000, 256), 4);
        EXPECT_EQ(launch_configuration::grid_for(1024, 256), 4);
        EXPECT_EQ(launch_configuration::forall_grid(1, 256), 1);
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::grid_for(0, 256); }),
                  "grid_for needs n >= 1 and block >= 1");
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::forall_grid(10, 0); }),
                  "forall needs n >= 1 and block >= 1, got n=10, block=0");
        EXPECT_NO_THROW(launch_configuration::check_timing(1, 0));
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::check_timing(0, 5); }),
                  "repeat must be at least 1 and warmup at least 0");
        EXPECT_EQ(message_of<argument_value_error>([] { launch_configuration::check_timing(10, -1); }),
                  "repeat must be at least 1 and warmup at least 0");
        EXPECT_EQ(message_of<argument_type_error>([] { launch_configuration::unknown_timing_keyword("repeats"); }),
                  "time() got an unexpected keyword 'repeats' (it takes repeat, warmup and nbytes)");
    }

    TEST(launch_configuration, a_launcher_names_its_kernel_grid_block_and_shared_memory_when_some)
    {
        launch_dims dims;
        dims.grid = {4, 1, 1};
        dims.block = {256, 2, 1};
        EXPECT_EQ(launch_configuration::launcher_text("saxpy", dims),
                  "<xcuda.Launcher saxpy[grid=(4, 1, 1), block=(256, 2, 1)]>");
        dims.shared_mem = 1024;
        EXPECT_EQ(launch_configuration::launcher_text("saxpy", dims),
                  "<xcuda.Launcher saxpy[grid=(4, 1, 1), block=(256, 2, 1), shared_mem=1024]>");
    }

    TEST(kernel_timing, the_text_gives_microseconds_and_the_bandwidth_when_the_bytes_are_known)
    {
        timing_summary summary;
        summary.samples_ms = {0.002, 0.001, 0.003};
        summary.median_ms = 0.002;
        summary.min_ms = 0.001;
        summary.max_ms = 0.003;
        kernel_timing without = kernel_timing::of("saxpy", summary, std::nullopt, false);
        EXPECT_FALSE(without.bandwidth_gbs());
        EXPECT_EQ(without.text(), "saxpy: median 2.00 us (min 1.00, max 3.00) over 3 launches");
        kernel_timing with = kernel_timing::of("saxpy", summary, 4e6, true);
        ASSERT_TRUE(with.bandwidth_gbs());
        EXPECT_DOUBLE_EQ(*with.bandwidth_gbs(), 4e6 / 2e-6 / 1e9);
        EXPECT_EQ(with.text(), "saxpy: median 2.00 us (min 1.00, max 3.00) over 3 launches "
                               "[simulated: the PTX simulator's time on the CPU, not a GPU's; no bandwidth from it]");
        EXPECT_EQ(kernel_timing::of("saxpy", summary, 4e6, false).text(),
                  "saxpy: median 2.00 us (min 1.00, max 3.00) over 3 launches; 2000.0 GB/s for 4.0 MB");
        summary.median_ms = 0;
        EXPECT_FALSE(kernel_timing::of("saxpy", summary, 4e6, false).bandwidth_gbs());
    }

    TEST(module_report, reprs_name_the_module_its_target_and_its_kernels_in_order)
    {
        binding_rules_module built(binding_rules_source, "compute_75");
        EXPECT_EQ(module_report::target_text(*built.module), "compute_75 PTX");
        EXPECT_EQ(module_report::kernel_names(*built.module), (std::vector<std::string>{"saxpy", "fill"}));
        EXPECT_EQ(module_report::module_text(*built.module), "<xcuda.Module cell_7 [compute_75 PTX]: saxpy, fill>");
        cuda_kernel kernel(built.module, built.module->signatures().at(1));
        EXPECT_EQ(module_report::kernel_text(kernel),
                  "<xcuda.Kernel " + kernel.signature().to_string() + " [compute_75 PTX]>");
        EXPECT_EQ(module_report::needs_configuration(kernel),
                  "a kernel needs a launch configuration: fill[grid, block](...), or fill.forall(n)(...) to cover n "
                  "elements");
        EXPECT_TRUE(module_report::ptxas_resources(*built.module).empty());  // no ptxas for compute_XX
    }

    TEST(module_report, ptxas_resources_come_per_kernel_with_the_modules_arch)
    {
        binding_rules_module built(binding_rules_source, "sm_75");
        EXPECT_EQ(module_report::target_text(*built.module), "sm_75");
        auto resources = module_report::ptxas_resources(*built.module);
        ASSERT_EQ(resources.size(), 2u);
        EXPECT_EQ(resources[0].first, "saxpy");
        EXPECT_EQ(resources[1].first, "fill");
        EXPECT_EQ(resources[0].second.arch, "sm_75");
        EXPECT_EQ(resources[0].second.source, "ptxas");
        EXPECT_GT(resources[0].second.registers, 0);
        EXPECT_EQ(module_report::resource_text(resources[0].second),
                  resources[0].second.summary() + " [sm_75, ptxas]");
    }

    TEST(module_report, a_missing_kernel_lists_the_kernels_and_hints_at_a_variable_of_that_name)
    {
        binding_rules_module built(binding_rules_source, "compute_75");
        EXPECT_EQ(module_report::missing_kernel(*built.module, "sax"),
                  "module 'cell_7' has no kernel 'sax'; it has: ['saxpy', 'fill']");
        EXPECT_EQ(module_report::missing_attribute(*built.module, "sax"), "module 'cell_7' has no kernel 'sax'");
        std::string hint = "; 'c_scale' is a __constant__ variable: module.get_global('c_scale') or "
                           "module.globals.c_scale reads and writes it";
        EXPECT_EQ(module_report::variable_hint(*built.module, "c_scale"), hint);
        EXPECT_EQ(module_report::missing_attribute(*built.module, "c_scale"),
                  "module 'cell_7' has no kernel 'c_scale'" + hint);
        EXPECT_EQ(module_report::variable_hint(*built.module, "__array_interface__"), "");
    }

    TEST(module_report, a_profile_of_another_kernel_or_of_recorded_output_is_refused)
    {
        binding_rules_module built(binding_rules_source, "compute_75");
        auto saxpy = std::make_shared<cuda_kernel>(built.module, built.module->signatures().at(0));
        auto fill = std::make_shared<cuda_kernel>(built.module, built.module->signatures().at(1));
        EXPECT_NO_THROW(module_report::check_profile_of(*saxpy, saxpy));
        EXPECT_EQ(message_of<usage_error>([&] { module_report::check_profile_of(*saxpy, fill); }),
                  "this profile is of kernel 'fill' (cell_7), not of this kernel as compiled now; profile it again");
        EXPECT_EQ(message_of<usage_error>([&] { module_report::check_profile_of(*saxpy, nullptr); }),
                  "this profile is of recorded ncu output, not of this kernel as compiled now; profile it again");
        EXPECT_EQ(message_of<argument_type_error>([] { module_report::not_a_profile("dict"); }),
                  "lines(profile=...) takes an xcuda.LaunchProfile (from %cuda_profile -o or kernel.profile), got dict");
    }

    TEST(module_report, occupancy_reads_as_one_line)
    {
        occupancy_report o;
        o.block = 256;
        o.active_blocks_per_sm = 8;
        o.active_warps_per_sm = 64;
        o.max_warps_per_sm = 64;
        o.occupancy = 1.0;
        o.limiter = "threads per SM";
        o.suggested_block = 1024;
        EXPECT_EQ(module_report::occupancy_text(o), "block 256: 8 blocks (64 of 64 warps) per SM, occupancy 100%, "
                                                    "limited by threads per SM; suggested block 1024");
    }

    TEST(kernel_variant, changes_only_the_options_given_and_adds_defines_and_options)
    {
        binding_rules_module built(binding_rules_source, "compute_75");
        compile_options same = kernel_variant::options(*built.module, std::nullopt, std::nullopt, std::nullopt, {}, {});
        EXPECT_EQ(same.arch, "compute_75");
        EXPECT_EQ(same.fast_math, built.module->options().fast_math);
        EXPECT_EQ(same.std, built.module->options().std);
        compile_options changed =
            kernel_variant::options(*built.module, std::string("sm_90"), true, std::string("c++20"), {"N=4"}, {"-G"});
        EXPECT_EQ(changed.arch, "sm_90");
        EXPECT_TRUE(changed.fast_math);
        EXPECT_EQ(changed.std, "c++20");
        ASSERT_FALSE(changed.defines.empty());
        EXPECT_EQ(changed.defines.back(), "N=4");
        ASSERT_FALSE(changed.extra.empty());
        EXPECT_EQ(changed.extra.back(), "-G");
        EXPECT_EQ(kernel_variant::name(*built.module), "cell_7 [variant]");
    }

    TEST(recent_cache, finds_the_last_n_remembered_and_replaces_the_oldest)
    {
        recent_cache<const char*, int, 2> cache;
        auto is = [](const char* wanted) { return [wanted](const char* key) { return std::string(key) == wanted; }; };
        EXPECT_EQ(cache.find(is("a")), nullptr);
        cache.remember("a", 1);
        cache.remember("b", 2);
        ASSERT_NE(cache.find(is("a")), nullptr);
        EXPECT_EQ(*cache.find(is("a")), 1);
        EXPECT_EQ(*cache.find(is("b")), 2);
        cache.remember("c", 3);  // in place of "a", the oldest
        EXPECT_EQ(cache.find(is("a")), nullptr);
        EXPECT_EQ(*cache.find(is("c")), 3);
        EXPECT_EQ(*cache.find(is("b")), 2);
    }

    TEST(argument_completion, a_template_or_too_many_arguments_pass_as_given)
    {
        binding_rules_module built(binding_rules_source, "compute_75");
        cuda_kernel saxpy(built.module, built.module->signatures().at(0));
        EXPECT_FALSE(argument_completion::passes_as_given(saxpy, 4, 0));
        EXPECT_FALSE(argument_completion::passes_as_given(saxpy, 2, 2));
        EXPECT_TRUE(argument_completion::passes_as_given(saxpy, 5, 0));
        binding_rules_module templated("template <class T> __global__ void scale(T* y, T a) {}\n", "compute_75");
        cuda_kernel scale(templated.module, templated.module->signatures().at(0));
        EXPECT_TRUE(argument_completion::passes_as_given(scale, 2, 0));
        EXPECT_NE(message_of<argument_type_error>([&] { argument_completion::passes_as_given(scale, 1, 1); }),
                  "(nothing thrown)");
    }
}
