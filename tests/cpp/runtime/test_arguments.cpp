// Tests of a launch's arguments matched to the kernel's parameters (runtime/argument_completion) and
// of the checks and messages for a wrong argument (runtime/argument_problems): what py_arguments.cpp
// raises as TypeError / ValueError / DeviceMismatchError. No GPU and no Python.

#include "expect_error.hpp"
#include <gtest/gtest.h>

#include "argument_completion.hpp"
#include "argument_problems.hpp"
#include "compiler.hpp"
#include "cuda_kernel.hpp"
#include "cuda_session.hpp"
#include "errors.hpp"
#include "kernel_signature.hpp"
#include "launch_plan.hpp"
#include "module_registry.hpp"

namespace xcuda
{
    namespace
    {
        kernel_signature signature_of(const std::string& declaration)
        {
            auto signatures = parse_kernel_signatures(declaration);
            EXPECT_EQ(signatures.size(), 1u);
            return signatures.at(0);
        }

        using xcuda_tests::message_of;

        const char* with_defaults =
            "extern \"C\" __global__ void k(float* out, int n = 256, float scale = 2.5f, const float* bias = nullptr,\n"
            "                               bool flag = true, unsigned long long mask = 0xffffffffffffffffull)\n{}\n";
    }

    TEST(argument_completion, keywords_find_their_parameter_and_unknown_names_list_the_real_ones)
    {
        kernel_signature s = signature_of(with_defaults);
        EXPECT_EQ(argument_completion::parameter_named(s, "out"), 0u);
        EXPECT_EQ(argument_completion::parameter_named(s, "bias"), 3u);
        std::string message = message_of<argument_type_error>([&] { argument_completion::parameter_named(s, "size"); });
        EXPECT_NE(message.find("has no parameter named 'size'; its parameters are 'out', 'n', 'scale', 'bias', 'flag' "
                               "and 'mask'"),
                  std::string::npos) << message;
        message = message_of<argument_type_error>([&] { argument_completion::given_twice(s, 1, "n"); });
        EXPECT_NE(message.find(" got parameter 1 'n' twice: by position and by name"), std::string::npos) << message;
        message = message_of<argument_type_error>([&] { argument_completion::wrong_count(s, 1, 3); });
        EXPECT_NE(message.find(" takes 1 argument, got 3"), std::string::npos) << message;
    }

    TEST(argument_completion, defaults_fill_the_parameters_left_with_their_values)
    {
        kernel_signature s = signature_of(with_defaults);
        std::vector<argument_completion::default_argument> filled(s.parameters.size());
        std::vector<bool> given{true, false, false, false, false, false};
        argument_completion::fill_defaults(
            s, 1, [&](std::size_t i) { return bool(given[i]); },
            [&](std::size_t i, const argument_completion::default_argument& value) {
                filled[i] = value;
                given[i] = true;
            });
        using type = argument_completion::default_argument::type;
        EXPECT_EQ(filled[1].kind, type::integer);
        EXPECT_EQ(filled[1].integer, 256);
        EXPECT_EQ(filled[2].kind, type::floating);
        EXPECT_DOUBLE_EQ(filled[2].real, 2.5);
        EXPECT_EQ(filled[3].kind, type::null_pointer);
        EXPECT_EQ(filled[4].kind, type::boolean);
        EXPECT_EQ(filled[4].integer, 1);
        EXPECT_EQ(filled[5].kind, type::unsigned_integer);
        EXPECT_EQ(static_cast<unsigned long long>(filled[5].integer), 0xffffffffffffffffull);
    }

    TEST(argument_completion, parameters_without_a_default_are_named_together)
    {
        kernel_signature s = signature_of("extern \"C\" __global__ void k(float* x, int n, float a, int m = 1) {}\n");
        std::string message = message_of<argument_type_error>([&] {
            argument_completion::fill_defaults(s, 1, [](std::size_t i) { return i == 0; },
                                               [](std::size_t, const argument_completion::default_argument&) {});
        });
        EXPECT_NE(message.find(" takes 4 arguments, got 1: 'n' and 'a' have no default argument"), std::string::npos)
            << message;
    }

    TEST(argument_completion, a_default_xcuda_cannot_evaluate_says_to_pass_it)
    {
        kernel_signature s = signature_of("extern \"C\" __global__ void k(float* x, float* y = x + 1, int n = 2) {}\n");
        std::string message = message_of<argument_type_error>([&] {
            argument_completion::fill_defaults(s, 1, [](std::size_t i) { return i == 0; },
                                               [](std::size_t, const argument_completion::default_argument&) {});
        });
        EXPECT_NE(message.find(": 'y' defaults to 'x + 1', which is not a constant xcuda can evaluate; pass it"),
                  std::string::npos) << message;
    }

    TEST(argument_problems, element_types_are_checked_against_the_signature)
    {
        launch_plan plan(signature_of("extern \"C\" __global__ void k(const float* x, void* raw, double* y) {}\n"));
        EXPECT_TRUE(argument_problems::element_kind_fits(plan, 0, scalar_kind::f32));
        EXPECT_FALSE(argument_problems::element_kind_fits(plan, 0, scalar_kind::f64));
        EXPECT_TRUE(argument_problems::element_kind_fits(plan, 1, scalar_kind::i8));
        std::string message = message_of<argument_type_error>(
            [&] { argument_problems::wrong_element_kind(plan, 2, "int32", "a numpy array"); });
        EXPECT_EQ(message, "parameter 2 'y' (double*) needs float64 elements, got a numpy array of int32; convert it "
                           "first, for example with .astype(numpy.float64)");
    }

    TEST(argument_problems, const_parameters_refuse_copies_back_and_written_ones_read_only_arrays)
    {
        launch_plan plan(signature_of("extern \"C\" __global__ void k(const float* x, float* y) {}\n"));
        EXPECT_NO_THROW(argument_problems::check_copy_out(plan, 0, false, "In"));
        EXPECT_NO_THROW(argument_problems::check_copy_out(plan, 1, true, "InOut"));
        EXPECT_EQ(message_of<argument_value_error>([&] { argument_problems::check_copy_out(plan, 0, true, "Out"); }),
                  "parameter 0 'x' (const float*) is const: the kernel cannot write it, so xcuda.Out would copy back "
                  "nothing; use xcuda.In");
        EXPECT_NO_THROW(argument_problems::check_writable(plan, 0, true, "numpy array"));
        EXPECT_EQ(message_of<argument_value_error>([&] { argument_problems::check_writable(plan, 1, true, "array"); }),
                  "parameter 1 'y' (float*) is written by the kernel, but the array passed is read-only");
    }

    TEST(argument_problems, strides_must_be_c_order_where_an_extent_is_more_than_one)
    {
        launch_plan plan(signature_of("extern \"C\" __global__ void k(float* x) {}\n"));
        std::size_t shape[2] = {3, 4};
        long long c_order[2] = {16, 4};
        EXPECT_NO_THROW(argument_problems::check_c_contiguous(plan, 0, shape, c_order, 2, 4, "(16, 4)"));
        std::size_t column[2] = {3, 1};
        long long any_last[2] = {4, 999};
        EXPECT_NO_THROW(argument_problems::check_c_contiguous(plan, 0, column, any_last, 2, 4, "(4, 999)"));
        long long fortran[2] = {4, 12};
        EXPECT_EQ(message_of<argument_value_error>(
                      [&] { argument_problems::check_c_contiguous(plan, 0, shape, fortran, 2, 4, "(4, 12)"); }),
                  "parameter 0 'x' (float*): the array is not C-contiguous (strides (4, 12)); a kernel gets a plain "
                  "pointer, so pass a contiguous copy");
        EXPECT_EQ(argument_problems::check_dimensions(plan, 0, 64), 64u);
        EXPECT_THROW(argument_problems::check_dimensions(plan, 0, 65), argument_value_error);
    }

    TEST(argument_problems, scalar_and_by_value_messages_say_what_to_pass)
    {
        launch_plan plan(signature_of("struct P { int a; float b; };\n"
                                      "extern \"C\" __global__ void k(float a, int n, P p, float* x) {}\n"));
        using hint = argument_problems::not_number_hint;
        EXPECT_EQ(message_of<argument_type_error>(
                      [&] { argument_problems::not_a_number(plan, 0, "numpy.ndarray", hint::array); }),
                  "parameter 0 'a' (float) takes a number, got numpy.ndarray; for a single value pass a scalar "
                  "(array.item() or array[0])");
        EXPECT_NE(message_of<argument_type_error>(
                      [&] { argument_problems::not_a_number(plan, 1, "xcuda.DeviceArray", hint::device_array); })
                      .find("; this parameter is a value, not a pointer"),
                  std::string::npos);
        EXPECT_EQ(message_of<argument_value_error>([&] { argument_problems::integer_too_large(plan, 1, "2**70"); }),
                  "parameter 1 'n' (int): 2**70 does not fit in any 64-bit integer");
        EXPECT_EQ(message_of<argument_value_error>([&] { argument_problems::integer_too_large_for_float(plan, 0); }),
                  "parameter 0 'a' (float): the integer is too large for a float");
        std::string bytes = message_of<argument_type_error>([&] { argument_problems::value_without_bytes(plan, 2, "", "str"); });
        EXPECT_NE(bytes.find("is passed by value as raw bytes: give a numpy scalar or 0-d array of a matching "
                             "structured dtype, or a bytes object of the type's size; got str"),
                  std::string::npos) << bytes;
        bytes = message_of<argument_type_error>([&] { argument_problems::value_without_bytes(plan, 2, "{'a': ...}", "str"); });
        EXPECT_NE(bytes.find("dtype {'a': ...} (kernel.parameters[2]['dtype']), or a tuple of its fields"),
                  std::string::npos) << bytes;
        EXPECT_NE(message_of<argument_type_error>([&] { argument_problems::int_for_pointer(plan, 3, "4096"); })
                      .find("if 4096 is a device address, say so: xcuda.Pointer(4096)"),
                  std::string::npos);
        EXPECT_NE(message_of<argument_type_error>([&] { argument_problems::not_a_pointer(plan, 3, "str"); })
                      .find("a numpy array (copied to the device for the launch) or None; got str"),
                  std::string::npos);
    }

    TEST(argument_problems, a_device_mismatch_says_the_three_ways_out)
    {
        cuda_session session;
        compiler compile{disk_cache("", 0, false)};
        module_registry registry{session, compile};
        compile_options options;
        options.arch = "compute_75";
        auto module = registry.build("mismatch", compile_recipe{"extern \"C\" __global__ void k(float* x) {}\n", options, {}})
                          .module;
        cuda_kernel kernel(module, module->signatures().at(0));
        std::string message = message_of<device_mismatch_error>([&] { argument_problems::device_mismatch(kernel, 0, 1, 0); });
        EXPECT_EQ(message, "parameter 0 'x' (float*) of kernel 'k' lives on device 1, but the launch is on device 0 (the "
                           "current device). Copy it over with xcuda.copy(xcuda.empty_like(arr), arr) made under `with "
                           "xcuda.device(0):`, launch inside `with xcuda.device(1):`, or let device 0 read device 1's "
                           "memory with xcuda.enable_peer_access(0, 1)");
    }
}

namespace xcuda
{
    TEST(argument_problems, out_and_inout_need_a_writeable_numpy_array)
    {
        EXPECT_NO_THROW(argument_problems::check_copy_target("Out", true, true, "numpy.ndarray"));
        EXPECT_EQ(message_of<argument_type_error>([] { argument_problems::check_copy_target("Out", false, false, "list"); }),
                  "xcuda.Out needs a numpy array to copy the result into, got list");
        EXPECT_EQ(message_of<argument_value_error>(
                      [] { argument_problems::check_copy_target("InOut", true, false, "numpy.ndarray"); }),
                  "xcuda.InOut needs a writeable array");
    }
}
