// frontend/bench_sweep: what xcuda.bench refuses before any GPU work (the kernel, make_args, sizes),
// with the messages the binding used to write (TypeError in Python: argument_type_error here).

#include <gtest/gtest.h>

#include "bench_sweep.hpp"
#include "errors.hpp"
#include "expect_error.hpp"

namespace
{
    using xcuda::bench_sweep;
    using xcuda_tests::message_of;

    TEST(bench_checks, a_launcher_is_refused_naming_the_block_argument)
    {
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { bench_sweep::check_kernel(true, false, "Launcher"); }),
                  "bench takes the kernel itself, not kernel[grid, block]: the grid follows each size as "
                  "ceil(n / block); pass block= for the block size");
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { bench_sweep::check_kernel(false, false, "int"); }),
                  "bench needs an xcuda.Kernel (a __global__ function of a %%cuda cell), got int");
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { bench_sweep::check_kernel(false, true, "Kernel"); }),
                  "(nothing thrown)");
    }

    TEST(bench_checks, make_args_must_be_callable)
    {
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { bench_sweep::check_make_args(false, "tuple"); }),
                  "make_args must be a function of the size n that returns the kernel's arguments, e.g. "
                  "lambda n: (a, x, y, out, n); got tuple");
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { bench_sweep::check_make_args(true, "function"); }),
                  "(nothing thrown)");
    }

    TEST(bench_checks, sizes_that_are_not_ints_say_what_they_are_and_a_float_how_to_write_it)
    {
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { bench_sweep::refuse_sizes("str"); }),
                  "sizes must be an iterable of ints (a list, a range, a numpy array), got str");
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { bench_sweep::refuse_size("1e6", "float", true); }),
                  "sizes must be ints, got 1e6 (float): write int(...) or 2**k");
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { bench_sweep::refuse_size("'a'", "str", false); }),
                  "sizes must be ints, got 'a' (str)");
        EXPECT_NE(std::string(bench_sweep::matplotlib_missing()).find("plot=False"), std::string::npos);
    }
}
