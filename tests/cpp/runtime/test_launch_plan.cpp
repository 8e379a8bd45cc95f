// Unit tests of the pure C++ parts of the core: launch plans (argument packing and range checks),
// the %%cuda option parser, compile diagnostics, the compile cache and the NVRTC compiler. None
// needs a GPU.

#include <cstring>
#include <new>

#include <gtest/gtest.h>

#include "compile_cache.hpp"
#include "cuda_session.hpp"
#include "diagnostics.hpp"
#include "errors.hpp"
#include "kernel_signature.hpp"
#include "argument_block.hpp"
#include "launch_history.hpp"
#include "launch_plan.hpp"
#include "cuda_cell_arguments.hpp"
#include "magic_arguments.hpp"
#include "nvrtc_compiler.hpp"

namespace xcuda
{
    namespace
    {
        const char* saxpy_source =
            "extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n"
            "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }\n";

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

    TEST(magic_arguments, options_are_read_in_every_spelling)
    {
        cuda_cell_options o = cuda_cell_arguments::parse(
            "--name mod --arch=sm_90 -DN=4 -D DEBUG -I/opt/inc -I /other --std c++20 --lineinfo --fast-math --ptx "
            "-maxrregcount=32 -- --extra-device-vectorization");
        EXPECT_EQ(o.name, "mod");
        EXPECT_EQ(o.compile.arch, "sm_90");
        EXPECT_EQ(o.compile.defines, (std::vector<std::string>{"N=4", "DEBUG"}));
        EXPECT_EQ(o.compile.include_dirs, (std::vector<std::string>{"/opt/inc", "/other"}));
        EXPECT_EQ(o.compile.std, "c++20");
        EXPECT_TRUE(o.compile.lineinfo);
        EXPECT_TRUE(o.compile.fast_math);
        EXPECT_TRUE(o.show_ptx);
        EXPECT_EQ(o.compile.extra, (std::vector<std::string>{"-maxrregcount=32", "--extra-device-vectorization"}));
    }

    TEST(magic_arguments, quoted_values_keep_their_spaces)
    {
        cuda_cell_options o = cuda_cell_arguments::parse("-D 'GREETING=\"hi there\"' -I \"/a b/c\"");
        EXPECT_EQ(o.compile.defines.at(0), "GREETING=\"hi there\"");
        EXPECT_EQ(o.compile.include_dirs.at(0), "/a b/c");
    }

    TEST(magic_arguments, bad_options_say_what_was_expected)
    {
        auto message = [](const std::string& line) {
            try
            {
                cuda_cell_arguments::parse(line);
            }
            catch (const usage_error& e)
            {
                return std::string(e.what());
            }
            return std::string("no error");
        };
        EXPECT_NE(message("--arch").find("needs a value"), std::string::npos);
        EXPECT_NE(message("--arch gpu9").find("sm_XX"), std::string::npos);
        EXPECT_NE(message("--name 3x").find("identifier"), std::string::npos);
        EXPECT_NE(message("--std 17").find("c++17"), std::string::npos);
        EXPECT_NE(message("saxpy").find("unexpected word"), std::string::npos);
        EXPECT_NE(message("-D 'open").find("unterminated"), std::string::npos);
    }

    TEST(magic_arguments, one_declaration_gives_spellings_help_trailing_text_and_one_line_errors)
    {
        magic_arguments declared("%demo", "expression", "A demo.");
        declared.add({{"-r", "--repeat"}, "N", "how often"})
            .add({{"-o"}, "", "return it"})
            .trailing_as(magic_arguments::trailing::text);
        magic_arguments::parsed p = declared.parse("--repeat=3 -o f(x, 'a b')  ");
        EXPECT_EQ(p.value("-r"), "3");
        EXPECT_TRUE(p.has("-o"));
        EXPECT_EQ(p.text, "f(x, 'a b')");  // the rest exactly as written, quotes and all
        EXPECT_EQ(declared.integer(p, "-r", 1, 1), 3);
        EXPECT_TRUE(declared.parse("-h").help);
        EXPECT_NE(declared.usage().find("-r N, --repeat"), std::string::npos) << declared.usage();
        EXPECT_NE(declared.usage().find("-h, --help"), std::string::npos);
        try
        {
            declared.parse("--repaet 3 f()");
            FAIL() << "no error";
        }
        catch (const usage_error& e)
        {
            EXPECT_EQ(std::string(e.what()), "%demo: unknown option --repaet; did you mean -r? (see %demo -h)");
        }
        EXPECT_THROW(declared.integer(declared.parse("-r x f()"), "-r", 1, 1), usage_error);
        EXPECT_THROW(declared.integer(declared.parse("-r 0 f()"), "-r", 1, 1), usage_error);
    }

    TEST(diagnostics, error_lines_come_from_the_cell_not_a_file)
    {
        std::string log = "cell(2): error: identifier \"q\" is undefined\ncell(7): warning: unused\n"
                          "cell(5): error: expected a \";\"\n";
        EXPECT_EQ(diagnostics::error_lines(log), (std::vector<int>{2, 5}));
        std::string message =
            diagnostics::format_compile_error("a\nb\nc\nd\ne\nf\n", log, {"--gpu-architecture=compute_75"}, "X");
        EXPECT_NE(message.find(">    2 | b"), std::string::npos) << message;
        EXPECT_NE(message.find("Options: --gpu-architecture=compute_75"), std::string::npos) << message;
    }

    TEST(compile_cache, keys_differ_when_anything_that_changes_the_binary_differs)
    {
        compile_options a;
        a.arch = "compute_75";
        compile_options b = a;
        b.defines.push_back("N=2");
        compile_options c = a;
        c.arch = "sm_90";
        std::string k = compile_cache::make_key("src", a, {});
        EXPECT_EQ(k, compile_cache::make_key("src", a, {}));
        EXPECT_NE(k, compile_cache::make_key("src ", a, {}));
        EXPECT_NE(k, compile_cache::make_key("src", b, {}));
        EXPECT_NE(k, compile_cache::make_key("src", c, {}));
        EXPECT_NE(k, compile_cache::make_key("src", a, {{"h.cuh", "1"}}));
        EXPECT_NE(compile_cache::make_key("src", a, {{"h.cuh", "1"}}), compile_cache::make_key("src", a, {{"h.cuh", "2"}}));
        compile_options d = a;
        d.name_expressions.push_back("scale<float>");
        EXPECT_NE(k, compile_cache::make_key("src", d, {}));
    }

    TEST(compile_cache, least_recently_used_entries_are_dropped_past_capacity)
    {
        compile_cache cache;
        cache.set_capacity(2);
        auto result = std::make_shared<const compile_result>();
        cache.insert("a", result);
        cache.insert("b", result);
        EXPECT_NE(cache.find("a"), nullptr);  // a is now the most recent
        cache.insert("c", result);
        EXPECT_EQ(cache.find("b"), nullptr);
        EXPECT_NE(cache.find("a"), nullptr);
        EXPECT_NE(cache.find("c"), nullptr);
    }

    TEST(nvrtc_compiler, saxpy_compiles_to_ptx_with_its_entry_and_to_cubin_for_an_sm_target)
    {
        compile_options options;
        options.arch = "compute_75";
        compile_result ptx_only = nvrtc_compiler::compile(saxpy_source, options);
        EXPECT_NE(ptx_only.ptx.find(".entry saxpy"), std::string::npos);
        EXPECT_TRUE(ptx_only.cubin.empty());
        options.arch = "sm_90";
        compile_result both = nvrtc_compiler::compile(saxpy_source, options);
        EXPECT_FALSE(both.cubin.empty());
        EXPECT_NE(both.ptx.find(".target sm_90"), std::string::npos);
    }

    TEST(nvrtc_compiler, compile_errors_carry_the_log_options_and_cell_line)
    {
        compile_options options;
        options.arch = "compute_75";
        try
        {
            nvrtc_compiler::compile("extern \"C\" __global__ void f(int* x)\n{\n  x[0] = nope;\n}\n", options);
            FAIL() << "no error";
        }
        catch (const compile_error& e)
        {
            std::string message = e.what();
            EXPECT_NE(message.find("cell(3): error"), std::string::npos) << message;
            EXPECT_NE(message.find(">    3 |   x[0] = nope;"), std::string::npos) << message;
            EXPECT_NE(message.find("--gpu-architecture=compute_75"), std::string::npos) << message;
            EXPECT_EQ(message.find("/tmp"), std::string::npos) << message;
        }
    }

    TEST(nvrtc_compiler, name_expressions_give_mangled_names_of_cpp_kernels)
    {
        compile_options options;
        options.arch = "compute_75";
        options.name_expressions = {"&ns::scale"};
        compile_result result = nvrtc_compiler::compile(
            "namespace ns { __global__ void scale(float* x, float a) { x[0] *= a; } }\n", options);
        EXPECT_EQ(result.lowered_names.at("&ns::scale"), "_ZN2ns5scaleEPff");
    }

    TEST(nvrtc_compiler, toolkit_headers_are_on_the_include_path)
    {
        compile_options options;
        options.arch = "compute_75";
        EXPECT_NO_THROW(nvrtc_compiler::compile(
            "#include <cuda/std/cstdint>\nextern \"C\" __global__ void f(cuda::std::uint32_t* x) { x[0] = 1; }\n",
            options));
    }
}

#include <fstream>
#include <sys/stat.h>

#include "disk_cache.hpp"

namespace xcuda
{
    namespace
    {
        compile_result sample_result()
        {
            compile_result result;
            result.arch = "sm_90";
            result.ptx = ".version 9.0\n.entry k()";
            result.cubin = std::string("\x7f" "ELF\0\1binary", 12);
            result.log = "ptxas info";
            result.options = {"--gpu-architecture=sm_90", "--std=c++17"};
            result.lowered_names = {{"&ns::k", "_ZN2ns1kEv"}};
            result.milliseconds = 12.5;
            return result;
        }
    }

    TEST(disk_cache, entries_round_trip_every_field)
    {
        std::string bytes = disk_cache::serialize("the key", sample_result());
        auto back = disk_cache::deserialize(bytes, "the key");
        ASSERT_NE(back, nullptr);
        EXPECT_EQ(back->arch, "sm_90");
        EXPECT_EQ(back->cubin, sample_result().cubin);
        EXPECT_EQ(back->ptx, sample_result().ptx);
        EXPECT_EQ(back->options, sample_result().options);
        EXPECT_EQ(back->lowered_names, sample_result().lowered_names);
        EXPECT_DOUBLE_EQ(back->milliseconds, 12.5);
    }

    TEST(disk_cache, any_damage_or_another_key_is_a_miss)
    {
        std::string bytes = disk_cache::serialize("the key", sample_result());
        EXPECT_EQ(disk_cache::deserialize(bytes, "another key"), nullptr);
        for (std::size_t i = 0; i < bytes.size(); i += 7)
        {
            std::string damaged = bytes;
            damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
            EXPECT_EQ(disk_cache::deserialize(damaged, "the key"), nullptr) << "byte " << i;
        }
        for (std::size_t length = 0; length < bytes.size(); length += 5)
        {
            EXPECT_EQ(disk_cache::deserialize(bytes.substr(0, length), "the key"), nullptr) << "length " << length;
        }
        EXPECT_EQ(disk_cache::deserialize(bytes + "x", "the key"), nullptr);
    }

    TEST(disk_cache, store_then_load_in_a_private_folder)
    {
        std::string folder = ::testing::TempDir() + "xcuda-disk-cache-test/sub";
        disk_cache cache(folder, 1 << 20, true);
        ASSERT_TRUE(cache.enabled());
        struct stat st;
        ASSERT_EQ(::stat(folder.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0700u);
        cache.store("key one", sample_result());
        auto loaded = cache.load("key one");
        ASSERT_NE(loaded, nullptr);
        EXPECT_EQ(loaded->ptx, sample_result().ptx);
        EXPECT_EQ(cache.load("key two"), nullptr);
    }
}

#include "nvrtc_library.hpp"
#include "nvrtc_version_memo.hpp"

namespace xcuda
{
    TEST(nvrtc_version_memo, a_memo_answers_only_for_the_same_search_and_the_same_file)
    {
        std::string file = ::testing::TempDir() + "xcuda-memo-libnvrtc.so.13";
        std::ofstream(file) << "a library";
        std::string text = nvrtc_version_memo::format({13, 2}, "fingerprint\n", file);
        auto version = nvrtc_version_memo::parse(text, "fingerprint\n");
        ASSERT_TRUE(version.has_value());
        EXPECT_EQ(*version, std::make_pair(13, 2));
        EXPECT_FALSE(nvrtc_version_memo::parse(text, "another search\n").has_value());
        EXPECT_FALSE(nvrtc_version_memo::parse(text.substr(0, text.size() / 2), "fingerprint\n").has_value());
        EXPECT_FALSE(nvrtc_version_memo::parse("xcuda nvrtc-version 1\nthirteen\n" + file + "\n", "").has_value());
        std::ofstream(file, std::ios::app) << " replaced by another";  // another size: another file
        EXPECT_FALSE(nvrtc_version_memo::parse(text, "fingerprint\n").has_value());
        std::remove(file.c_str());
        EXPECT_EQ(nvrtc_library::file_identity(file), "-");
    }

    TEST(nvrtc_version_memo, the_search_fingerprint_follows_the_environment)
    {
        std::string before = nvrtc_library::search_fingerprint();
        EXPECT_EQ(before, nvrtc_library::search_fingerprint());
        const char* set = std::getenv("CUDA_PATH");
        std::string saved = set ? set : "";
        ::setenv("CUDA_PATH", "/nonexistent-toolkit", 1);
        std::string other = nvrtc_library::search_fingerprint();
        if (set)
        {
            ::setenv("CUDA_PATH", saved.c_str(), 1);
        }
        else
        {
            ::unsetenv("CUDA_PATH");
        }
        EXPECT_NE(before, other);
        EXPECT_NE(other.find("/nonexistent-toolkit/lib64/libnvrtc.so.13 -"), std::string::npos) << other;
    }
}

namespace xcuda
{
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
