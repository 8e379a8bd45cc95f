// Conditional compilation as the signature reader evaluates it (issue 25, item 4): the branch the
// compiler takes decides the types, with NVRTC's predefined macros, -D / -U, the cell's own #define and
// #undef and header cells; what it cannot decide makes the parameters that depend on it refused, with
// a sentence naming the construct; and its limits end hostile input with a usage_error.

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "errors.hpp"
#include "kernel_signature.hpp"

using xcuda::kernel_parameter;
using xcuda::parse_context;
using xcuda::parse_kernel_signatures;
using xcuda::scalar_kind;

namespace
{
    const char* const precision =
        "#ifdef DOUBLE_PRECISION\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"
        "struct Particle { real x, y; };\n"
        "__global__ void step(Particle* p, real dt, int n) {}\n";

    parse_context for_arch(const std::string& arch)
    {
        parse_context c;
        c.arch = arch;
        c.nvrtc_version = {13, 0};
        return c;
    }

    kernel_parameter only(const std::string& source, const parse_context& context, std::size_t index = 0)
    {
        auto k = parse_kernel_signatures(source, context);
        EXPECT_EQ(k.size(), 1u) << source;
        if (k.empty() || k[0].parameters.size() <= index)
        {
            return {};
        }
        return k[0].parameters[index];
    }
}

TEST(preprocessor, the_else_branch_types_without_the_define_and_the_if_branch_with_it)
{
    parse_context c = for_arch("sm_90");
    auto k = parse_kernel_signatures(precision, c);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].parameters[0].layout->size, 8u);
    EXPECT_EQ(k[0].parameters[1].kind, scalar_kind::f32);
    EXPECT_TRUE(k[0].parameters[0].refusal.empty());
    c.defines = {"DOUBLE_PRECISION"};
    k = parse_kernel_signatures(precision, c);
    EXPECT_EQ(k[0].parameters[0].layout->size, 16u);
    EXPECT_EQ(k[0].parameters[0].layout->fields.at(1).offset, 8u);
    EXPECT_EQ(k[0].parameters[1].kind, scalar_kind::f64);
    // -U after -D undefines it again, as NVRTC reads its options in order.
    c.extra = {"-UDOUBLE_PRECISION"};
    EXPECT_EQ(parse_kernel_signatures(precision, c)[0].parameters[1].kind, scalar_kind::f32);
    c.extra = {"--undefine-macro=DOUBLE_PRECISION"};
    EXPECT_EQ(parse_kernel_signatures(precision, c)[0].parameters[1].kind, scalar_kind::f32);
}

TEST(preprocessor, the_cells_own_define_and_undef_apply_from_where_they_are)
{
    parse_context c = for_arch("sm_90");
    EXPECT_EQ(only(std::string("#define DOUBLE_PRECISION\n") + precision, c, 1).kind, scalar_kind::f64);
    EXPECT_EQ(only(std::string("#define DOUBLE_PRECISION\n#undef DOUBLE_PRECISION\n") + precision, c, 1).kind,
              scalar_kind::f32);
    c.headers["config.cuh"] = "#pragma once\n#define DOUBLE_PRECISION 1\n";
    EXPECT_EQ(only(std::string("#include \"config.cuh\"\n") + precision, c, 1).kind, scalar_kind::f64);
}

TEST(preprocessor, integer_expressions_and_elif_chains_evaluate_as_the_preprocessor_does)
{
    parse_context c = for_arch("sm_90");
    const std::string chain = "#define N 4\n"
                              "#if (N * 2 > 7) && !defined(SMALL) || UNDEFINED_NAME == 3\ntypedef double T;\n"
                              "#elif N << 1 == 8\ntypedef int T;\n#else\ntypedef char T;\n#endif\n"
                              "__global__ void k(T x) {}\n";
    EXPECT_EQ(only(chain, c).kind, scalar_kind::f64);
    EXPECT_EQ(only("#define SMALL\n" + chain, c).kind, scalar_kind::i32);
    EXPECT_EQ(only("#define SMALL\n#define N 5\n" + chain.substr(12), c).kind, scalar_kind::i8);
    EXPECT_EQ(only("#if 10 / 3 == 3 && 10 % 3 == 1 && (1 ? 2 : 3) == 2 && -1 < 0 && 0x10 == 16 && ~0 == -1 && "
                   "(5 & 3) == 1 && (5 | 3) == 7 && (5 ^ 3) == 6 && 8 >> 2 == 2 && 2 >= 2 && 1 != 2\n"
                   "typedef long T;\n#else\ntypedef short T;\n#endif\n__global__ void k(T x) {}\n", c).kind,
              scalar_kind::i64);
    EXPECT_EQ(only("#ifndef N\ntypedef long T;\n#elifdef M\ntypedef int T;\n#else\ntypedef short T;\n#endif\n"
                   "__global__ void k(T x) {}\n", c).kind,
              scalar_kind::i64);
}

TEST(preprocessor, cuda_arch_is_the_targets_times_ten_and_device_code_sees_it_defined)
{
    const std::string source = "#if __CUDA_ARCH__ >= 800\ntypedef double T;\n#elif defined(__CUDA_ARCH__)\n"
                               "typedef float T;\n#endif\n#ifndef __CUDA_ARCH__\ntypedef int T;\n#endif\n"
                               "__global__ void k(T x) {}\n";
    EXPECT_EQ(only(source, for_arch("sm_90")).kind, scalar_kind::f64);
    EXPECT_EQ(only(source, for_arch("sm_90a")).kind, scalar_kind::f64);
    EXPECT_EQ(only(source, for_arch("compute_75")).kind, scalar_kind::f32);
    EXPECT_EQ(only(source, for_arch("sm_100")).kind, scalar_kind::f64);
    // NVRTC defines __CUDACC__ and __CUDACC_RTC__, never __NVCC__.
    EXPECT_EQ(only("#if defined(__CUDACC__) && defined(__CUDACC_RTC__) && !defined(__NVCC__)\ntypedef double T;\n"
                   "#else\ntypedef float T;\n#endif\n__global__ void k(T x) {}\n", for_arch("sm_90")).kind,
              scalar_kind::f64);
    EXPECT_EQ(only("#if __cplusplus >= 202002L\ntypedef double T;\n#else\ntypedef float T;\n#endif\n"
                   "__global__ void k(T x) {}\n", for_arch("sm_90")).kind,
              scalar_kind::f32);
    parse_context cxx20 = for_arch("sm_90");
    cxx20.standard = "c++20";
    EXPECT_EQ(only("#if __cplusplus >= 202002L\ntypedef double T;\n#else\ntypedef float T;\n#endif\n"
                   "__global__ void k(T x) {}\n", cxx20).kind,
              scalar_kind::f64);
}

TEST(preprocessor, a_condition_the_reader_cannot_decide_refuses_the_parameters_that_depend_on_it)
{
    parse_context c = for_arch("sm_90");
    kernel_parameter p = only("#ifdef __SOME_VENDOR_MACRO__\ntypedef double real;\n#else\ntypedef float real;\n"
                              "#endif\n__global__ void k(real* x, int n) {}\n", c);
    EXPECT_NE(p.refusal.find("#ifdef __SOME_VENDOR_MACRO__"), std::string::npos) << p.refusal;
    EXPECT_NE(p.refusal.find("line 1 of the cell"), std::string::npos) << p.refusal;
    EXPECT_EQ(p.kind, scalar_kind::unknown);
    EXPECT_TRUE(only("#ifdef __SOME_VENDOR_MACRO__\ntypedef double real;\n#else\ntypedef float real;\n"
                     "#endif\n__global__ void k(real* x, int n) {}\n", c, 1).refusal.empty());
    // A function-like macro in a condition is named.
    p = only("#define AT_LEAST(v) (__CUDA_ARCH__ >= v)\n#if AT_LEAST(800)\ntypedef double T;\n#else\n"
             "typedef float T;\n#endif\n__global__ void k(T x) {}\n", c);
    EXPECT_NE(p.refusal.find("function-like macro AT_LEAST"), std::string::npos) << p.refusal;
    // After a toolkit header the reader does not read, a toolkit macro name may be defined by it.
    p = only("#include <cuda_fp16.h>\n#ifdef CUDA_NO_HALF\ntypedef float T;\n#else\ntypedef __half T;\n#endif\n"
             "__global__ void k(T x) {}\n", c);
    EXPECT_NE(p.refusal.find("CUDA_NO_HALF may be defined by <cuda_fp16.h>"), std::string::npos) << p.refusal;
    // A user's own name is not: undefined, as the preprocessor has it.
    EXPECT_TRUE(only("#include <cuda_fp16.h>\n#ifdef MY_FLAG\ntypedef float T;\n#else\ntypedef __half T;\n#endif\n"
                     "__global__ void k(T x) {}\n", c).refusal.empty());
    // __has_include is not evaluated.
    p = only("#if __has_include(<cuda_bf16.h>)\ntypedef float T;\n#endif\n__global__ void k(T x) {}\n", c);
    EXPECT_NE(p.refusal.find("__has_include"), std::string::npos) << p.refusal;
}

TEST(preprocessor, a_macro_defined_under_an_undecided_condition_makes_its_uses_doubtful)
{
    parse_context c = for_arch("sm_90");
    kernel_parameter p = only("#ifdef __VENDOR__\n#define REAL double\n#else\n#define REAL float\n#endif\n"
                              "__global__ void k(REAL* x) {}\n", c);
    EXPECT_NE(p.refusal.find("#ifdef __VENDOR__"), std::string::npos) << p.refusal;
    // ... and so does a condition that tests it.
    p = only("#ifdef __VENDOR__\n#define WIDE\n#endif\n#ifdef WIDE\ntypedef double T;\n#else\ntypedef float T;\n"
             "#endif\n__global__ void k(T x) {}\n", c);
    EXPECT_NE(p.refusal.find("WIDE"), std::string::npos) << p.refusal;
    // A struct with a member of a doubtful type is doubtful, by value and behind a pointer.
    auto k = parse_kernel_signatures("#ifdef __VENDOR__\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"
                                     "struct P { real x; int n; };\n__global__ void k(P p, P* q, int n) {}\n",
                                     c);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_FALSE(k[0].parameters[0].refusal.empty());
    EXPECT_FALSE(k[0].parameters[1].refusal.empty());
    EXPECT_EQ(k[0].parameters[1].size, 8u);
    EXPECT_TRUE(k[0].parameters[2].refusal.empty());
}

TEST(preprocessor, include_guards_with_reserved_names_are_not_doubts)
{
    parse_context c = for_arch("sm_90");
    c.headers["vec.cuh"] = "#ifndef __MY_VEC_H__\n#define __MY_VEC_H__\nstruct V { float x, y; };\n#endif\n";
    kernel_parameter p = only("#include <cuda_fp16.h>\n#include \"vec.cuh\"\n__global__ void k(V v) {}\n", c);
    EXPECT_TRUE(p.refusal.empty()) << p.refusal;
    EXPECT_EQ(p.size, 8u);
}

TEST(preprocessor, without_a_target_the_arch_macros_are_unknown)
{
    parse_context c;
    kernel_parameter p = only("#if __CUDA_ARCH__ >= 800\ntypedef double T;\n#else\ntypedef float T;\n#endif\n"
                              "__global__ void k(T x) {}\n", c);
    EXPECT_NE(p.refusal.find("__CUDA_ARCH__"), std::string::npos) << p.refusal;
    EXPECT_NE(p.refusal.find("--arch"), std::string::npos) << p.refusal;
}

TEST(preprocessor, threads_reading_with_other_targets_each_get_their_own_predefined_macros)
{
    // The predefined macros are lexed once per text and shared (kernel_signature.cpp's lex_prelude): threads
    // alternating between targets, and no target at all (the same text as a default, but its macros
    // doubtful), must each read their own.
    const std::string source = "#if __CUDA_ARCH__ >= 800\ntypedef double T;\n#else\ntypedef float T;\n#endif\n"
                               "__global__ void k(T x) {}\n";
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t)
    {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 60; ++i)
            {
                switch ((i + t) % 3)
                {
                case 0:
                    wrong += only(source, for_arch("sm_90")).kind != scalar_kind::f64;
                    break;
                case 1:
                    wrong += only(source, for_arch("compute_75")).kind != scalar_kind::f32;
                    break;
                default:
                    wrong += only(source, parse_context{}).refusal.find("__CUDA_ARCH__") == std::string::npos;
                }
            }
        });
    }
    for (std::thread& thread : threads)
    {
        thread.join();
    }
    EXPECT_EQ(wrong.load(), 0);
}

TEST(preprocessor, nesting_and_expansion_past_the_limits_are_usage_errors)
{
    parse_context c = for_arch("sm_90");
    std::string deep;
    for (int i = 0; i < 300; ++i)
    {
        deep += "#if 1\n";
    }
    deep += "__global__ void k(int x) {}\n";
    for (int i = 0; i < 300; ++i)
    {
        deep += "#endif\n";
    }
    try
    {
        parse_kernel_signatures(deep, c);
        ADD_FAILURE() << "no usage_error";
    }
    catch (const xcuda::usage_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("nests #if groups deeper than xcuda's limit of 256"), std::string::npos)
            << e.what();
    }
    // Each macro doubles the one before: 2^30 tokens if expanded.
    std::string bomb = "#define A0 1\n";
    for (int i = 1; i <= 30; ++i)
    {
        bomb += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + " + A" + std::to_string(i - 1) + "\n";
    }
    bomb += "#if A30\n#endif\n__global__ void k(int x) {}\n";
    EXPECT_THROW(parse_kernel_signatures(bomb, c), xcuda::usage_error);
}

TEST(class_templates, an_instance_is_laid_out_from_the_template_and_a_huge_one_named_often_stays_bounded)
{
    parse_context c = for_arch("sm_90");
    auto k = parse_kernel_signatures("template <typename T, int N = 2> struct M { T* d; int r, c; T s[N]; };\n"
                                     "__global__ void f(M<float> a, M<double, 4> b) {}\n", c);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].parameters[0].size, 24u);
    EXPECT_EQ(k[0].parameters[1].size, 48u);
    // A template of 200,000 tokens named by 100 different instances: 20 million tokens if all were copied;
    // the budget leaves the later ones unknown, and the parse ends.
    std::string big = "template <int N> struct Big {\n";
    for (int i = 0; i < 40000; ++i)
    {
        big += "int m" + std::to_string(i) + ";\n";
    }
    big += "};\n__global__ void g(";
    for (int i = 0; i < 100; ++i)
    {
        big += (i ? ", Big<" : "Big<") + std::to_string(i) + "> p" + std::to_string(i);
    }
    big += ") {}\n";
    k = parse_kernel_signatures(big, c);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].parameters[0].size, 160000u);
    EXPECT_EQ(k[0].parameters[99].size, 0u);
}

#include "layout_probe.hpp"

TEST(layout_probe, reads_its_arrays_from_ptx_as_bytes_or_as_u64)
{
    // NVRTC 13 writes bytes, little-endian, leaving trailing zeros out of the initializer.
    const std::string ptx = ".global .align 8 .b8 xcuda_probe_0[24] = {24, 1, 0, 0, 0, 0, 0, 0, 8};\n"
                            ".global .align 8 .u64 xcuda_probe_1[3] = {16, 8, 4};\n";
    EXPECT_EQ(xcuda::layout_probe::read_array(ptx, "xcuda_probe_0"),
              (std::vector<unsigned long long>{280, 8, 0}));
    EXPECT_EQ(xcuda::layout_probe::read_array(ptx, "xcuda_probe_1"), (std::vector<unsigned long long>{16, 8, 4}));
    EXPECT_TRUE(xcuda::layout_probe::read_array(ptx, "xcuda_probe_2").empty());
    EXPECT_TRUE(xcuda::layout_probe::read_array("garbage xcuda_probe_0[", "xcuda_probe_0").empty());
}

TEST(layout_probe, probes_struct_parameters_only_and_refuses_a_mismatch_naming_both_numbers)
{
    parse_context c = for_arch("sm_90");
    auto k = parse_kernel_signatures("struct P { char c; double d; };\n"
                                     "extern \"C\" __global__ void k(P p, const P* q, float x, float* y) {}\n", c);
    xcuda::layout_probe probe(k);
    ASSERT_FALSE(probe.empty());
    EXPECT_NE(probe.source().find("xcuda_probe_0[]"), std::string::npos);
    EXPECT_NE(probe.source().find("xcuda_probe_1[]"), std::string::npos);
    EXPECT_EQ(probe.source().find("xcuda_probe_2[]"), std::string::npos);  // float and float* need none
    // What NVRTC says of a packed P: size 9, alignment 1, d at 1.
    std::string ptx = ".global .align 8 .u64 xcuda_probe_0[4] = {9, 1, 0, 1};\n"
                      ".global .align 8 .u64 xcuda_probe_1[4] = {16, 8, 0, 8};\n";
    EXPECT_EQ(probe.apply(ptx, k), 2u);
    EXPECT_NE(k[0].parameters[0].refusal.find("sizeof is 9 bytes to NVRTC and 16 to the reader"), std::string::npos)
        << k[0].parameters[0].refusal;
    EXPECT_EQ(k[0].parameters[0].size, 0u);
    EXPECT_TRUE(k[0].parameters[1].refusal.empty());
    EXPECT_TRUE(parse_kernel_signatures("__global__ void f(float* x, int n) {}", c).size() == 1);
    EXPECT_TRUE(xcuda::layout_probe(parse_kernel_signatures("__global__ void f(float* x, int n) {}", c)).empty());
}
