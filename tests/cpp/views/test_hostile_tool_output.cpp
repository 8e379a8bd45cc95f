// Hostile input to the views (issue 28): the views' parsers read what tools print (nvdisasm, cuobjdump, ncu,
// compute-sanitizer) and PTX: a bounded random run over mutations of the recorded outputs. Each must return
// or throw an xcuda::error (tool_error for an ncu page without a table), never another exception, a crash or
// UB. Item 9's `//-----` was one such input.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "code_listing.hpp"
#include "errors.hpp"
#include "ncu_report.hpp"
#include "sanitizer_report.hpp"

using namespace xcuda;

namespace
{
    std::string read_file(const std::string& path)
    {
        std::ifstream in(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
}

TEST(views, mutated_tool_outputs_never_crash_or_throw_other_errors)
{
    const std::string fixtures = XCUDA_TEST_FIXTURES;
    const std::string recordings = XCUDA_TEST_RECORDINGS;
    const std::vector<std::string> seeds = {
        read_file(fixtures + "/saxpy.ptx"), read_file(fixtures + "/saxpy_cuobjdump.sass"),
        read_file(recordings + "/ncu/ncu_source_both.csv"), read_file(recordings + "/ncu/ncu_raw.csv"),
        read_file(recordings + "/ncu/ncu_details.csv"), read_file(recordings + "/sanitizer/memcheck.txt"),
        "//-----\n//---- .text.k ----\n        /*0000*/ MOV R1, c[0x0][0x28] ;\n//## File \"cell\", line 3\n"};
    const std::string alphabet = "/-#.:,\"0x123 \n\t*;()[]{}=_abcLineNoAddress";
    std::mt19937 rng(28);
    auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    for (int round = 0; round < 1500; ++round)
    {
        std::string input = seeds[pick(seeds.size())];
        if (input.size() > 4000)
        {
            std::size_t from = pick(input.size() - 4000);
            input = input.substr(from, 4000);
        }
        int edits = 1 + static_cast<int>(pick(8));
        for (int e = 0; e < edits && !input.empty(); ++e)
        {
            std::size_t at = pick(input.size());
            switch (pick(5))
            {
            case 0: input.erase(at, 1 + pick(40)); break;
            case 1: input.insert(at, 1, alphabet[pick(alphabet.size())]); break;
            case 2: input[at] = alphabet[pick(alphabet.size())]; break;
            case 3: input.insert(at, std::to_string(static_cast<long long>(rng()) * 1000003)); break;
            default: input.resize(at); break;
            }
        }
        auto run = [&](const char* what, auto parse) {
            try
            {
                parse();
            }
            catch (const xcuda::error&)
            {
            }
            catch (const std::exception& e)
            {
                ADD_FAILURE() << what << " threw " << typeid(e).name() << ": " << e.what() << "\non input:\n" << input;
            }
        };
        run("from_ptx", [&] { code_listing::from_ptx(input); });
        run("from_sass", [&] { code_listing::from_sass(input); });
        run("parse_source", [&] { ncu_report::parse_source(input); });
        run("parse_raw", [&] { ncu_report::parse_raw(input); });
        run("parse_details", [&] { ncu_report::parse_details(input); });
        run("sanitizer", [&] { sanitizer_report::parse(input, "memcheck"); });
        if (HasFailure())
        {
            break;  // one input is enough to read
        }
    }
}
