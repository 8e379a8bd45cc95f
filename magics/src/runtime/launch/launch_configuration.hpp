#pragma once
// The rules of a launch configuration, kernel[grid, block(, stream(, shared_mem))], and their words:
// each check throws the argument_type_error / argument_value_error the module raises as TypeError and
// ValueError. The binding reads the Python objects (which type a value is, its int) and hands the
// numbers here. They run when a configuration is new (a Kernel caches its launchers), never per
// launch. Stateless.

#include <array>
#include <cstddef>
#include <string>

#include "launch_plan.hpp"

namespace xcuda
{
    class launch_configuration
    {
    public:
        // One axis (0, 1, 2: x, y, z) of `what` ("grid", "block"): at least 1 and below 2**32.
        static unsigned dimension(long long value, const char* what, int axis);
        // An axis given as something other than an int (type: the Python type's name).
        [[noreturn]] static void dimension_not_int(const char* what, int axis, const std::string& type);
        // An axis given as an int past 64 bits (text: its repr; negative: below zero).
        [[noreturn]] static void dimension_out_of_range(const char* what, int axis, const std::string& text,
                                                        bool negative);
        // A tuple of grid or block values must have 1 to 3 of them; throws otherwise.
        static void check_dimension_count(const char* what, std::size_t count);

        // kernel[key] where key is not a tuple (key_repr: its repr), or has not 2 to 4 values.
        [[noreturn]] static void key_not_tuple(const std::string& key_repr);
        static void check_key_size(std::size_t size);
        // Dynamic shared memory: 0 to 2**32-1 bytes.
        static unsigned shared_mem(long long bytes);
        // shared_mem given as something other than an int (type), or as an int past 64 bits (text).
        [[noreturn]] static void shared_mem_not_int(const std::string& type);
        [[noreturn]] static void shared_mem_out_of_range(const std::string& text);

        // Blocks of `block` threads that cover n elements, for xcuda.grid_for and Kernel.forall (whose
        // message names the values).
        static long long grid_for(long long n, long long block);
        static long long forall_grid(long long n, long long block);

        // Kernel.time / Launcher.time: repeat at least 1, warmup at least 0; Launcher.time's keywords.
        static void check_timing(int repeat, int warmup);
        [[noreturn]] static void unknown_timing_keyword(const std::string& key);

        // "<xcuda.Launcher saxpy[grid=(4, 1, 1), block=(256, 1, 1)(, shared_mem=1024)]>"
        static std::string launcher_text(const std::string& kernel, const launch_dims& dims);
    };
}
