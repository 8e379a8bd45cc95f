// Hostile input to the signature reader (issue 28): FIFOs where files are included, NUL bytes in cells and
// header cells, inputs past the reader's limits, and the interrupt check a long parse asks. Each case must
// end at once with a clear error, never block, crash or run for minutes.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.hpp"
#include "hostile.hpp"
#include "kernel_signature.hpp"
#include "parse_interrupts.hpp"

using namespace xcuda;
using xcuda_tests::fresh_folder;
using xcuda_tests::returns_without_blocking;

namespace
{
    std::string expect_usage_error(const std::string& source, const parse_context& context = {})
    {
        try
        {
            parse_kernel_signatures(source, context);
        }
        catch (const usage_error& e)
        {
            return e.what();
        }
        ADD_FAILURE() << "no usage_error";
        return {};
    }
}

// The signature reader asks the interrupt check while it works (issue 28: an interrupt waited 27 s):
// a check saying "stop" ends a large parse with interrupted_error; one saying "go on" is asked and the
// parse completes.
TEST(parse_interrupts, a_long_parse_asks_the_check_and_stops_when_it_says_so)
{
    std::string source;
    for (int i = 0; i < 20000; ++i)
    {
        source += "struct S" + std::to_string(i) + " { float a; int b[4]; };\n";
    }
    source += "extern \"C\" __global__ void k(S7* p, int n) {}\n";
    int asked = 0;
    xcuda::parse_interrupts::set_check([&asked] {
        ++asked;
        return false;
    });
    EXPECT_EQ(xcuda::parse_kernel_signatures(source).size(), 1u);
    EXPECT_GT(asked, 2);  // 300k tokens through the expander and the parser: asked every 16384 steps
    xcuda::parse_interrupts::set_check([&asked] {
        ++asked;
        return true;
    });
    asked = 0;
    EXPECT_THROW(xcuda::parse_kernel_signatures(source), xcuda::interrupted_error);
    EXPECT_EQ(asked, 1);  // stopped at the first question
    xcuda::parse_interrupts::set_check(nullptr);
    EXPECT_EQ(xcuda::parse_kernel_signatures(source).size(), 1u);
}

TEST(kernel_signature, an_included_fifo_is_refused_with_a_clear_message)
{
    std::string folder = fresh_folder();
    std::string fifo = folder + "/planted.h";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    parse_context context;
    context.include_dirs = {folder};
    returns_without_blocking([&] {
        std::string message = expect_usage_error("#include \"planted.h\"\n__global__ void k(int n) {}\n", context);
        EXPECT_NE(message.find("planted.h"), std::string::npos) << message;
        EXPECT_NE(message.find("a FIFO, not a regular file"), std::string::npos) << message;
    }, fifo);
    ::unlink(fifo.c_str());
    ::rmdir(folder.c_str());
}

TEST(kernel_signature, a_nul_byte_in_the_cell_is_refused_naming_its_line_and_column)
{
    std::string source = std::string("__global__ void a(int n) {}\n  int x;") + '\0' + "\n__global__ void hidden(float f) {}\n";
    std::string message = expect_usage_error(source);
    EXPECT_NE(message.find("NUL byte at line 2, column 9"), std::string::npos) << message;
}

TEST(kernel_signature, a_nul_byte_in_a_header_cell_is_refused_naming_the_header)
{
    parse_context context;
    context.headers["h.cuh"] = std::string("struct S { int a; };") + '\0' + "\n";
    std::string message = expect_usage_error("#include \"h.cuh\"\n__global__ void k(S s) {}\n", context);
    EXPECT_NE(message.find("h.cuh"), std::string::npos) << message;
    EXPECT_NE(message.find("line 1, column 21"), std::string::npos) << message;
}

// The limits: each hostile input of the issue ends in a usage_error naming the limit, well within 10 s
// (the cases ran about two minutes each before).
TEST(kernel_signature, ten_thousand_defines_are_refused_naming_the_limit)
{
    parse_context context;
    for (int i = 0; i < 10000; ++i)
    {
        context.defines.push_back("D" + std::to_string(i) + "=" + std::to_string(i));
    }
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error("__global__ void k(int n) {}\n", context);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("-D options"), std::string::npos) << message;
    EXPECT_NE(message.find("limit of 1000"), std::string::npos) << message;
}

TEST(kernel_signature, a_ten_megabyte_define_is_refused_naming_the_limit)
{
    parse_context context;
    context.defines.push_back("BIG=" + std::string(10u << 20, '1'));
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error("__global__ void k(int n) {}\n", context);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("-D option BIG="), std::string::npos) << message;
    EXPECT_NE(message.find("%%cuda_header"), std::string::npos) << message;
}

TEST(kernel_signature, a_ten_megabyte_header_name_is_refused_naming_the_limit)
{
    parse_context context;
    context.headers[std::string(10u << 20, 'h')] = "struct S {};\n";
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error("__global__ void k(int n) {}\n", context);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("header cell's name"), std::string::npos) << message;
}

TEST(kernel_signature, sixteen_thousand_nested_structs_are_refused_naming_the_limit)
{
    std::string source;
    for (int i = 0; i < 16000; ++i)
    {
        source += "struct S" + std::to_string(i) + " { ";
    }
    source += "int x; ";
    for (int i = 0; i < 16000; ++i)
    {
        source += "}; ";
    }
    source += "\n__global__ void k(int a) {}\n";
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error(source);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("deeper than xcuda's limit of 256 levels"), std::string::npos) << message;
    EXPECT_NE(message.find("line 1 of the cell"), std::string::npos) << message;
}

TEST(kernel_signature, a_hundred_thousand_nested_template_brackets_are_refused_naming_the_limit)
{
    std::string source = "__global__ void k(A";
    for (int i = 0; i < 100000; ++i)
    {
        source += "<A";
    }
    source += std::string(100000, '>') + " a) {}\n";
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error(source);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("template brackets < >"), std::string::npos) << message;
}

TEST(kernel_signature, nesting_at_the_limit_still_parses)
{
    std::string source;
    for (int i = 0; i < 200; ++i)
    {
        source += "namespace N" + std::to_string(i) + " { ";
    }
    source += "__global__ void k(int a) { if (a < 3 && a > 1) { a = (((a))); } }";
    for (int i = 0; i < 200; ++i)
    {
        source += "} ";
    }
    std::vector<kernel_signature> kernels = parse_kernel_signatures(source + "\n");
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].parameters.size(), 1u);
}
