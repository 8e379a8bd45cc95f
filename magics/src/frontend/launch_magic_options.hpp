#pragma once
// The option lines of the launch magics, declared for the one magic-argument parser
// (base/magic_arguments) like every magic's, and read into what each magic asks for: %cuda_timeit,
// %cuda_bench, %cuda_profile and %cuda_sanitize. What follows the options is Python, split here
// (launch_magic_line) and evaluated by the caller in the user's namespace.
//
// Every read_* throws usage_error ("<magic>: <problem> (see <magic> -h)"), in the order the magic
// checks: the options, their values, then the Python text. With help set, nothing past it is read.
// The declarations are made once (function statics); any thread.

#include <array>
#include <optional>
#include <string>

#include "launch_magic_line.hpp"
#include "magic_arguments.hpp"
#include "profile_result.hpp"

namespace xcuda
{
    class launch_magic_options
    {
    public:
        static const magic_arguments& timeit();
        static const magic_arguments& bench();
        static const magic_arguments& profile();
        static const magic_arguments& sanitize();

        struct timeit_request
        {
            bool help = false;
            int repeat = 100;
            int warmup = 5;
            std::optional<long long> nbytes;
            bool return_object = false;  // -o
            launch_magic_line::launch_text launch;
        };
        struct bench_request
        {
            bool help = false;
            int block = 256;
            int repeat = 20;
            int warmup = 3;
            std::optional<double> bytes_per_element;
            std::optional<double> peak;
            bool plot = true;
            bool progress = true;
            bool return_object = false;
            std::array<std::string, 3> expressions;  // kernel, sizes, make_args
        };
        struct profile_request
        {
            bool help = false;
            profile_options options;
            bool plot = true;
            bool return_object = false;
            launch_magic_line::launch_text launch;
        };
        struct sanitize_request
        {
            bool help = false;
            std::string tool = "memcheck";
            bool keep = false;
            bool return_object = false;
            launch_magic_line::launch_text launch;
        };

        static timeit_request read_timeit(const std::string& line);
        static bench_request read_bench(const std::string& line, const launch_magic_line::is_expression& compiles);
        static profile_request read_profile(const std::string& line);
        static sanitize_request read_sanitize(const std::string& line);
    };
}
