// Unit tests of launch plans (argument packing and range checks, a launch's dimensions against the device's
// limits, the parameter count read from PTX), of argument blocks and of the launch history. None needs a
// GPU.

#include <cmath>
#include <cstring>
#include <atomic>
#include <new>
#include <thread>

#include <gtest/gtest.h>

#include "cuda_session.hpp"
#include "cuda_sources.hpp"
#include "fixture.hpp"
#include "errors.hpp"
#include "kernel_signature.hpp"
#include "argument_block.hpp"
#include "launch_history.hpp"
#include "launch_plan.hpp"

namespace xcuda
{
    namespace
    {
        using xcuda_tests::saxpy_source;

        launch_plan plan_for(const std::string& declaration)
        {
            auto signatures = parse_kernel_signatures(declaration);
            EXPECT_EQ(signatures.size(), 1u);
            return launch_plan(signatures.at(0));
        }

        template <class T>
        T stored(const argument_block& block, std::size_t index)
        {
            T value;
            std::memcpy(&value, block.pointers()[index], sizeof(T));
            return value;
        }
    }

    TEST(launch_plan, saxpy_parameters_get_scalar_and_pointer_slots)
    {
        launch_plan plan = plan_for(saxpy_source);
        argument_block block(plan);
        ASSERT_EQ(plan.arity(), 5u);
        EXPECT_EQ(plan.slots()[0].cls, parameter_class::scalar);
        EXPECT_EQ(plan.slots()[0].kind, scalar_kind::f32);
        EXPECT_EQ(plan.slots()[1].cls, parameter_class::pointer);
        EXPECT_TRUE(plan.slots()[1].is_const);
        EXPECT_FALSE(plan.slots()[3].is_const);
        EXPECT_EQ(plan.slots()[4].kind, scalar_kind::u64);
        for (std::size_t i = 0; i < plan.arity(); ++i)
        {
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block.pointers()[i]) % 16, 0u);
        }
    }

    TEST(launch_plan, integers_are_stored_at_their_declared_width)
    {
        launch_plan plan = plan_for("extern \"C\" __global__ void k(char a, short b, int c, long long d, "
                                    "unsigned char e, unsigned short f, unsigned g, size_t h, bool i) {}");
        argument_block block(plan);
        block.store_signed(0, -5);
        block.store_signed(1, -300);
        block.store_signed(2, -70000);
        block.store_signed(3, -(1LL << 40));
        block.store_signed(4, 200);
        block.store_signed(5, 60000);
        block.store_unsigned(6, 4000000000ULL);
        block.store_unsigned(7, 18000000000000000000ULL);
        block.store_bool(8, true);
        EXPECT_EQ(stored<std::int8_t>(block, 0), -5);
        EXPECT_EQ(stored<std::int16_t>(block, 1), -300);
        EXPECT_EQ(stored<std::int32_t>(block, 2), -70000);
        EXPECT_EQ(stored<std::int64_t>(block, 3), -(1LL << 40));
        EXPECT_EQ(stored<std::uint8_t>(block, 4), 200);
        EXPECT_EQ(stored<std::uint16_t>(block, 5), 60000);
        EXPECT_EQ(stored<std::uint32_t>(block, 6), 4000000000u);
        EXPECT_EQ(stored<std::uint64_t>(block, 7), 18000000000000000000ULL);
        EXPECT_EQ(stored<unsigned char>(block, 8), 1);
    }

    TEST(launch_plan, out_of_range_integers_name_the_parameter_and_range)
    {
        launch_plan plan = plan_for("extern \"C\" __global__ void k(int count, unsigned char level, size_t n) {}");
        argument_block block(plan);
        try
        {
            block.store_signed(0, 1LL << 31);
            FAIL() << "no error";
        }
        catch (const argument_value_error& e)
        {
            EXPECT_NE(std::string(e.what()).find("parameter 0 'count' (int)"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("-2147483648..2147483647"), std::string::npos) << e.what();
        }
        EXPECT_THROW(block.store_signed(1, 256), argument_value_error);
        EXPECT_THROW(block.store_signed(1, -1), argument_value_error);
        EXPECT_THROW(block.store_signed(2, -1), argument_value_error);
        EXPECT_NO_THROW(block.store_signed(1, 255));
    }

    TEST(launch_plan, the_32_and_64_bit_integer_stores_take_their_whole_range_and_nothing_past_it)
    {
        launch_plan plan = plan_for("extern \"C\" __global__ void k(int a, unsigned b, long long c, unsigned long long d) {}");
        argument_block block(plan);
        block.store_signed(0, INT32_MIN);
        EXPECT_EQ(stored<std::int32_t>(block, 0), INT32_MIN);
        block.store_signed(0, INT32_MAX);
        EXPECT_EQ(stored<std::int32_t>(block, 0), INT32_MAX);
        EXPECT_THROW(block.store_signed(0, INT32_MIN - 1LL), argument_value_error);
        EXPECT_THROW(block.store_signed(0, INT32_MAX + 1LL), argument_value_error);
        block.store_signed(1, 0);
        EXPECT_EQ(stored<std::uint32_t>(block, 1), 0u);
        block.store_signed(1, UINT32_MAX);
        EXPECT_EQ(stored<std::uint32_t>(block, 1), UINT32_MAX);
        EXPECT_THROW(block.store_signed(1, -1), argument_value_error);
        EXPECT_THROW(block.store_signed(1, UINT32_MAX + 1LL), argument_value_error);
        block.store_signed(2, INT64_MIN);
        EXPECT_EQ(stored<std::int64_t>(block, 2), INT64_MIN);
        block.store_signed(3, INT64_MAX);
        EXPECT_EQ(stored<std::uint64_t>(block, 3), static_cast<std::uint64_t>(INT64_MAX));
        block.store_unsigned(3, UINT64_MAX);
        EXPECT_EQ(stored<std::uint64_t>(block, 3), UINT64_MAX);
        EXPECT_THROW(block.store_signed(3, -1), argument_value_error);
    }

    TEST(launch_plan, fp8_values_round_to_nearest_even_and_refuse_what_they_cannot_hold)
    {
        // Hand-computed patterns: e4m3 is 1 sign, 4 exponent (bias 7), 3 mantissa bits, no infinity;
        // e5m2 is 1, 5 (bias 15), 2, with IEEE infinities.
        auto e4m3 = [](double v) { std::uint8_t b = 0; EXPECT_TRUE(launch_plan::to_fp8_e4m3(v, b)) << v; return b; };
        auto e5m2 = [](double v) { std::uint8_t b = 0; EXPECT_TRUE(launch_plan::to_fp8_e5m2(v, b)) << v; return b; };
        EXPECT_EQ(e4m3(1.0), 0x38);
        EXPECT_EQ(e4m3(1.0625), 0x38);     // a tie between 1.0 and 1.125: to the even mantissa
        EXPECT_EQ(e4m3(1.1875), 0x3a);     // a tie between 1.125 and 1.25: to the even one, 1.25
        EXPECT_EQ(e4m3(-448.0), 0xfe);
        EXPECT_EQ(e4m3(463.9), 0x7e);      // rounds down to 448
        EXPECT_EQ(e4m3(0.001953125), 0x01);  // 2^-9, the smallest subnormal
        EXPECT_EQ(e4m3(0.0009765625), 0x00); // half of it: a tie, to even (zero)
        EXPECT_EQ(e4m3(0.0029296875), 0x02); // 1.5 x 2^-9: a tie, to even (2 x 2^-9)
        EXPECT_EQ(e4m3(-0.0), 0x80);
        EXPECT_EQ(e4m3(std::nan("")), 0x7f);
        EXPECT_EQ(e5m2(1.0), 0x3c);
        EXPECT_EQ(e5m2(57344.0), 0x7b);
        EXPECT_EQ(e5m2(-INFINITY), 0xfc);
        EXPECT_EQ(e5m2(std::nan("")), 0x7e);
        EXPECT_EQ(e5m2(1.5e-5), 0x01);     // just under the smallest subnormal, 2^-16: rounds up to it
        EXPECT_EQ(e5m2(7e-6), 0x00);       // under half of it (2^-17): rounds to zero
        std::uint8_t bits = 0;
        EXPECT_FALSE(launch_plan::to_fp8_e4m3(464.1, bits));  // rounds to 480, past 448
        EXPECT_FALSE(launch_plan::to_fp8_e4m3(INFINITY, bits));
        EXPECT_FALSE(launch_plan::to_fp8_e5m2(61440.0, bits));  // a tie between 57344 and 65536: to even, past
    }

    TEST(launch_plan, fp8_and_packed_pair_parameters)
    {
        launch_plan plan = plan_for("extern \"C\" __global__ void k(__nv_fp8_e4m3 a, __nv_fp8_e5m2 b, "
                                    "__half2 c, const __nv_bfloat162* d) {}");
        EXPECT_EQ(plan.slots()[0].cls, parameter_class::scalar);
        EXPECT_EQ(plan.slots()[0].size, 1u);
        EXPECT_EQ(plan.slots()[2].cls, parameter_class::opaque) << "a pair by value takes its record's bytes";
        EXPECT_EQ(plan.slots()[2].size, 4u);
        EXPECT_EQ(plan.slots()[3].kind, scalar_kind::bf16x2);
        argument_block block(plan);
        block.store_float(0, 0.3);
        block.store_signed(1, -3);
        EXPECT_EQ(stored<std::uint8_t>(block, 0), 0x2a);  // 0.3 -> 0.3125
        EXPECT_EQ(stored<std::uint8_t>(block, 1), 0xc2);  // -3 in e5m2
        EXPECT_THROW(block.store_float(0, 500.0), argument_value_error);
        EXPECT_THROW(block.store_float(1, 70000.0), argument_value_error);
    }

    TEST(launch_plan, floats_convert_to_the_declared_precision)
    {
        launch_plan plan = plan_for("extern \"C\" __global__ void k(float a, double b, __half c, __nv_bfloat16 d) {}");
        argument_block block(plan);
        block.store_float(0, 0.1);
        block.store_float(1, 0.1);
        block.store_float(2, 1.5);
        block.store_float(3, 1.5);
        EXPECT_EQ(stored<float>(block, 0), 0.1f);
        EXPECT_EQ(stored<double>(block, 1), 0.1);
        EXPECT_EQ(stored<std::uint16_t>(block, 2), 0x3e00);  // 1.5 in IEEE half
        EXPECT_EQ(stored<std::uint16_t>(block, 3), 0x3fc0);  // 1.5 in bfloat16
        block.store_signed(0, 3);
        EXPECT_EQ(stored<float>(block, 0), 3.0f);
        EXPECT_THROW(block.store_float(0, 1e39), argument_value_error);
        EXPECT_THROW(block.store_float(2, 70000.0), argument_value_error);
    }

    TEST(launch_plan, a_float_for_an_integer_parameter_is_a_type_error)
    {
        launch_plan plan = plan_for("extern \"C\" __global__ void k(int n) {}");
        argument_block block(plan);
        EXPECT_THROW(block.store_float(0, 2.5), argument_type_error);
    }

    TEST(launch_plan, half_conversion_rounds_to_nearest_even_and_handles_extremes)
    {
        EXPECT_EQ(launch_plan::to_half(0.0f), 0x0000);
        EXPECT_EQ(launch_plan::to_half(-2.0f), 0xc000);
        EXPECT_EQ(launch_plan::to_half(65504.0f), 0x7bff);
        EXPECT_EQ(launch_plan::to_half(1e6f), 0x7c00);             // overflow to infinity
        EXPECT_EQ(launch_plan::to_half(5.9604645e-8f), 0x0001);    // smallest subnormal
        EXPECT_EQ(launch_plan::to_half(1.0f + 1.0f / 2048), 0x3c00);  // tie rounds to even
    }

    TEST(launch_plan, by_value_structs_take_bytes_of_their_size)
    {
        launch_plan plan = plan_for("extern \"C\" __global__ void k(float4 v) {}");
        argument_block block(plan);
        EXPECT_EQ(plan.slots()[0].cls, parameter_class::opaque);
        float value[4] = {1, 2, 3, 4};
        block.store_bytes(0, value, sizeof value);
        EXPECT_EQ(stored<float>(block, 0), 1.0f);
        EXPECT_THROW(block.store_bytes(0, value, 8), argument_type_error);
    }

    TEST(launch_plan, driver_parameter_sizes_that_disagree_are_reported)
    {
        launch_plan plan = plan_for(saxpy_source);
        EXPECT_EQ(plan.with_driver_sizes({4, 8, 8, 8, 8}), nullptr);  // nothing to learn: the same plan
        EXPECT_THROW(plan.with_driver_sizes({4, 8, 8, 8}), signature_error);
        EXPECT_THROW(plan.with_driver_sizes({8, 8, 8, 8, 8}), signature_error);
    }

    TEST(launch_plan, driver_sizes_fill_what_the_declaration_left_unknown_in_a_new_plan)
    {
        // A class template with a specialization: the reader leaves its instances' sizes to the compiler.
        launch_plan plan = plan_for("template <class T> struct box { T v[3]; };\ntemplate <> struct box<int> { int x; };\n"
                                    "extern \"C\" __global__ void k(box<double> b, int n) {}");
        ASSERT_EQ(plan.slots()[0].size, 0u);
        std::unique_ptr<launch_plan> refined = plan.with_driver_sizes({24, 4});
        ASSERT_NE(refined, nullptr);
        EXPECT_EQ(refined->slots()[0].size, 24u);
        EXPECT_EQ(plan.slots()[0].size, 0u);  // the plan a call may still hold is unchanged
        argument_block block(*refined);
        double values[3] = {1, 2, 3};
        block.store_bytes(0, values, sizeof values);
        block.store_signed(1, 7);
        EXPECT_EQ(stored<double>(block, 0), 1.0);
        EXPECT_EQ(stored<int>(block, 1), 7);
        argument_block unknown(plan);
        EXPECT_THROW(unknown.store_bytes(0, values, sizeof values), argument_type_error);
    }

    TEST(launch_plan, a_packed_plan_puts_each_slot_at_the_kernels_own_offset)
    {
        launch_plan plan = plan_for(saxpy_source);  // float a, const float* x, const float* y, float* out, size_t n
        EXPECT_FALSE(plan.packed());
        std::unique_ptr<launch_plan> packed = plan.packed_at({0, 8, 16, 24, 32});
        ASSERT_NE(packed, nullptr);
        EXPECT_TRUE(packed->packed());
        EXPECT_TRUE(packed->has_offsets({0, 8, 16, 24, 32}));
        EXPECT_FALSE(plan.has_offsets({0, 8, 16, 24, 32}));
        EXPECT_EQ(packed->block_bytes(), 40u);  // the end of the last parameter, as the driver counts them
        EXPECT_TRUE(packed->has_gaps());        // 4 bytes after the float
        EXPECT_EQ(plan.block_bytes(), 80u);     // the plan a call may still hold is unchanged

        // Made where every byte held 0xab before, so that padding left as it was shows.
        alignas(argument_block) unsigned char storage[sizeof(argument_block)];
        std::memset(storage, 0xab, sizeof storage);
        std::unique_ptr<argument_block, void (*)(argument_block*)> made(new (storage) argument_block(*packed),
                                                                       [](argument_block* b) { b->~argument_block(); });
        argument_block& block = *made;
        ASSERT_EQ(block.data(), block.pointers()[0]);
        EXPECT_EQ(block.bytes(), 40u);
        block.store_float(0, 2.5);
        block.store_pointer(1, 0x1111);
        block.store_pointer(2, 0x2222);
        block.store_pointer(3, 0x3333);
        block.store_unsigned(4, 4096);
        const auto* bytes = static_cast<const unsigned char*>(block.data());
        float a = 0;
        std::uint64_t pointer = 0, n = 0;
        std::memcpy(&a, bytes, 4);
        std::memcpy(&pointer, bytes + 16, 8);
        std::memcpy(&n, bytes + 32, 8);
        EXPECT_EQ(a, 2.5f);
        EXPECT_EQ(pointer, 0x2222u);
        EXPECT_EQ(n, 4096u);
        for (int padding = 4; padding < 8; ++padding)
        {
            EXPECT_EQ(bytes[padding], 0) << "padding byte " << padding;  // the driver copies it: defined
        }
    }

    TEST(launch_plan, offsets_that_do_not_fit_the_sizes_make_no_packed_plan)
    {
        launch_plan plan = plan_for(saxpy_source);
        EXPECT_EQ(plan.packed_at({0, 8, 16, 24}), nullptr);         // one parameter short
        EXPECT_EQ(plan.packed_at({0, 4, 16, 24, 32}), nullptr);     // a pointer at a 4-byte offset
        EXPECT_EQ(plan.packed_at({0, 8, 12, 24, 32}), nullptr);     // y overlaps x
        EXPECT_EQ(plan.packed_at({0, 8, 16, 24, 32760}), nullptr);  // past the driver's 32,764 bytes
        EXPECT_NE(plan.packed_at({32, 0, 8, 16, 24}), nullptr);     // any order, as long as they fit
        launch_plan dense = plan_for("extern \"C\" __global__ void k(double* p, int a, int b) {}");
        std::unique_ptr<launch_plan> packed = dense.packed_at({0, 8, 12});
        ASSERT_NE(packed, nullptr);
        EXPECT_FALSE(packed->has_gaps());
        EXPECT_EQ(packed->block_bytes(), 16u);
        launch_plan unknown = plan_for("template <class T> struct box { T v[3]; };\ntemplate <> struct box<int> { int x; };\n"
                                       "extern \"C\" __global__ void k(box<double> b, int n) {}");
        EXPECT_EQ(unknown.packed_at({0, 24}), nullptr);  // a size still unknown: with_driver_sizes first
        std::unique_ptr<launch_plan> refined = unknown.with_driver_sizes({24, 4});
        ASSERT_NE(refined, nullptr);
        EXPECT_NE(refined->packed_at({0, 24}), nullptr);
    }

    TEST(argument_block, two_blocks_of_one_plan_hold_their_own_values)
    {
        launch_plan plan = plan_for(saxpy_source);
        argument_block first(plan);
        argument_block second(plan);
        first.store_float(0, 1.0);
        second.store_float(0, 2.0);
        first.store_pointer(1, 0x1000);
        second.store_pointer(1, 0x2000);
        EXPECT_EQ(stored<float>(first, 0), 1.0f);
        EXPECT_EQ(stored<float>(second, 0), 2.0f);
        EXPECT_EQ(stored<std::uint64_t>(first, 1), 0x1000u);
        EXPECT_EQ(stored<std::uint64_t>(second, 1), 0x2000u);
    }

    TEST(argument_block, a_block_larger_than_the_inline_storage_is_aligned_and_complete)
    {
        std::string declaration = "extern \"C\" __global__ void k(";
        for (int i = 0; i < 60; ++i)
        {
            declaration += std::string(i ? ", " : "") + "double a" + std::to_string(i);
        }
        launch_plan plan = plan_for(declaration + ") {}");
        ASSERT_GT(plan.block_bytes(), 512u);
        argument_block block(plan);
        for (int i = 0; i < 60; ++i)
        {
            block.store_float(static_cast<std::size_t>(i), i * 0.5);
        }
        for (int i = 0; i < 60; ++i)
        {
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block.pointers()[i]) % 16, 0u);
            EXPECT_EQ(stored<double>(block, static_cast<std::size_t>(i)), i * 0.5);
        }
    }

    TEST(launch_plan, launch_dimensions_over_device_limits_are_value_errors)
    {
        device_properties device;
        device.name = "test device";
        device.max_threads_per_block = 1024;
        device.max_block = {1024, 1024, 64};
        device.max_grid = {2147483647, 65535, 65535};
        launch_dims dims;
        dims.block = {256, 1, 1};
        EXPECT_NO_THROW(launch_plan::validate(dims, device, 1024, 49152, "k"));
        dims.block = {1025, 1, 1};
        EXPECT_THROW(launch_plan::validate(dims, device, 1024, 49152, "k"), argument_value_error);
        dims.block = {32, 32, 2};
        EXPECT_THROW(launch_plan::validate(dims, device, 1024, 49152, "k"), argument_value_error);
        dims.block = {128, 1, 1};
        dims.grid = {1, 70000, 1};
        EXPECT_THROW(launch_plan::validate(dims, device, 1024, 49152, "k"), argument_value_error);
        dims.grid = {1, 1, 1};
        dims.shared_mem = 100000;
        EXPECT_THROW(launch_plan::validate(dims, device, 1024, 49152, "k"), argument_value_error);
        dims.shared_mem = 0;
        dims.block = {512, 1, 1};
        try
        {
            launch_plan::validate(dims, device, 256, 49152, "k");
            FAIL() << "no error";
        }
        catch (const argument_value_error& e)
        {
            EXPECT_NE(std::string(e.what()).find("__launch_bounds__"), std::string::npos) << e.what();
        }
    }

    // The parameter count read from PTX (what a replay checks its arguments against).
    TEST(launch_plan, the_ptx_entry_says_how_many_parameters_the_kernel_has)
    {
        const std::string ptx = xcuda_tests::fixture("two_kernels.ptx") + xcuda_tests::fixture("saxpy.ptx");
        EXPECT_EQ(launch_plan::ptx_parameter_count(ptx, "saxpy"), 5);
        EXPECT_EQ(launch_plan::ptx_parameter_count(ptx, "fill"), 3);
        EXPECT_EQ(launch_plan::ptx_parameter_count(ptx, "fil"), -1);  // a prefix of another entry's name
        EXPECT_EQ(launch_plan::ptx_parameter_count(".visible .entry empty()\n{\n\tret;\n}\n", "empty"), 0);
        EXPECT_EQ(launch_plan::ptx_parameter_count(ptx, "missing"), -1);
    }

    TEST(launch_history, a_kernel_name_is_kept_to_95_characters)
    {
        launch_history history;
        unsigned ones[3] = {1, 1, 1};
        std::string name(200, 'k');
        history.record(launch_name(name), ones, ones, 0, nullptr, 0);
        std::vector<launch_record> launches = history.unfinished_launches();
        ASSERT_EQ(launches.size(), 1u);
        EXPECT_EQ(std::string(launches[0].kernel), std::string(95, 'k'));
        EXPECT_STREQ(launch_name("saxpy").text, "saxpy");
    }

    TEST(launch_history, launches_recorded_from_several_threads_at_once_are_each_kept_whole)
    {
        // Each thread records its own name with grid.x = its number: a record torn between two threads'
        // copies would pair one thread's name with another's grid or serial.
        launch_history history;
        constexpr int threads = 4;
        constexpr int each = 200000;
        std::atomic<int> ready{0};
        std::vector<std::thread> running;
        for (int t = 0; t < threads; ++t)
        {
            running.emplace_back([&history, &ready, t] {
                ready.fetch_add(1);
                while (ready.load() < threads)
                {
                }  // all start together
                launch_name name("thread" + std::to_string(t) + std::string(60, 'x'));
                unsigned grid[3] = {static_cast<unsigned>(t), 1, 1};
                unsigned block[3] = {32, 1, 1};
                for (int i = 0; i < each; ++i)
                {
                    history.record(name, grid, block, 0, nullptr, 0);
                }
            });
        }
        for (auto& thread : running)
        {
            thread.join();
        }
        std::vector<launch_record> launches = history.unfinished_launches();
        ASSERT_EQ(launches.size(), launch_history::capacity);
        for (std::size_t k = 0; k < launches.size(); ++k)
        {
            const launch_record& r = launches[k];
            EXPECT_EQ(std::string(r.kernel), "thread" + std::to_string(r.grid[0]) + std::string(60, 'x'));
            EXPECT_EQ(r.serial, static_cast<std::uint64_t>(threads) * each - launch_history::capacity + 1 + k);
        }
    }

    TEST(launch_history, keeps_the_last_launches_not_yet_waited_for_oldest_first)
    {
        launch_history history;
        unsigned grid[3] = {4, 1, 1};
        unsigned block[3] = {256, 1, 1};
        EXPECT_FALSE(history.unfinished());
        for (int i = 0; i < 10; ++i)
        {
            history.record("k" + std::to_string(i), grid, block, 0, nullptr, i % 2);
        }
        EXPECT_TRUE(history.unfinished());
        std::vector<launch_record> launches = history.unfinished_launches();
        ASSERT_EQ(launches.size(), launch_history::capacity);
        EXPECT_STREQ(launches.front().kernel, "k2");
        EXPECT_STREQ(launches.back().kernel, "k9");
        EXPECT_EQ(launches.back().describe(), "k9[grid=(4, 1, 1), block=(256, 1, 1)] on device 1");
        EXPECT_EQ(history.unfinished_on(0).size(), 4u);
        history.mark_finished();
        EXPECT_FALSE(history.unfinished());
        EXPECT_TRUE(history.unfinished_launches().empty());
        history.record("after", grid, block, 64, nullptr, 0);
        ASSERT_EQ(history.unfinished_launches().size(), 1u);
        EXPECT_EQ(history.unfinished_launches()[0].describe(),
                  "after[grid=(4, 1, 1), block=(256, 1, 1), shared_mem=64] on device 0");
    }
}
