// Behaviour of parse_kernel_signatures: a table of declarations as users type them in %%cuda cells
// (hostile ones included), the errors it reports, and a bounded fuzz run that must never crash,
// hang or throw anything but signature_error.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "constant_expression.hpp"
#include "diagnostics.hpp"
#include "kernel_signature.hpp"
#include "resource_usage.hpp"

using xcuda::kernel_parameter;
using xcuda::kernel_signature;
using xcuda::parse_kernel_signatures;
using xcuda::scalar_kind;
using xcuda::signature_error;

namespace
{
    struct expected_parameter
    {
        std::string name;
        std::string type;
        std::string element_type;
        bool is_pointer;
        bool is_const;
        scalar_kind kind;
        std::size_t size;
        std::string default_value;
    };

    struct expected_kernel
    {
        std::string name;
        std::string qualified_name;
        bool extern_c;
        std::vector<std::string> template_parameters;
        int line;
        std::vector<expected_parameter> parameters;
    };

    struct signature_case
    {
        std::string behaviour;  // the test's name
        std::string source;
        std::vector<expected_kernel> kernels;
    };

    constexpr auto u = scalar_kind::unknown;
    constexpr auto f32 = scalar_kind::f32;
    constexpr auto i32 = scalar_kind::i32;
    constexpr auto u64 = scalar_kind::u64;

    expected_parameter value(std::string name, std::string type, scalar_kind kind, std::size_t size,
                             std::string default_value = "")
    {
        std::string element = type.compare(0, 6, "const ") == 0 ? type.substr(6) : type;
        bool is_const = element != type;
        return {std::move(name), std::move(type), element, false, is_const, kind, size, std::move(default_value)};
    }

    expected_parameter pointer(std::string name, std::string type, std::string element, bool is_const, scalar_kind kind)
    {
        return {std::move(name), std::move(type), std::move(element), true, is_const, kind, 8, ""};
    }

    const expected_kernel saxpy_kernel = {
        "saxpy", "saxpy", true, {}, 1,
        {value("a", "float", f32, 4), pointer("x", "const float*", "float", true, f32),
         pointer("y", "const float*", "float", true, f32), pointer("out", "float*", "float", false, f32),
         value("n", "size_t", u64, 8)}};

    // The source as typed: comments, line breaks and splices, strings, macros and the preprocessor.
    std::vector<signature_case> source_text_cases()
    {
        return {
            {"saxpy_is_read_with_kinds_and_pointer_flags",
             "extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n"
             "{\n    size_t i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = a * x[i] + y[i];\n}\n",
             {saxpy_kernel}},

            {"comments_and_line_breaks_anywhere_keep_line_numbers",
             "// a kernel\n/* spanning\n   lines */\n__global__ /* c */ void\n// between\n"
             "scale( // first\n  float* /* data */ data,\n  int n /* count */)\n{ }\n",
             {{"scale", "scale", false, {}, 6,
               {pointer("data", "float*", "float", false, f32), value("n", "int", i32, 4)}}}},

            {"crlf_line_endings_and_splices_keep_line_numbers",
             "// one\r\n#define X \\\r\n  1\r\n__global__ void k(int n)\r\n{}\r\n",
             {{"k", "k", false, {}, 4, {value("n", "int", i32, 4)}}}},

            {"global_inside_comments_and_strings_does_not_count",
             "// __global__ void a(int);\n/* __global__ void b(int); */\n"
             "const char* s = \"__global__ void c(int);\";\nconst char* t = \"\\\" __global__ void d(int)\";\n"
             "char q = '\\'';\nconst char* r = R\"x(__global__ void e(int) )\" )x\";\n__global__ void real_one() {}\n",
             {{"real_one", "real_one", false, {}, 7, {}}}},

            {"global_at_the_end_of_a_comment_and_string_only_text_finds_nothing",
             "/* __global__ */ \"__global__\" '_' // __global__",
             {}},

            {"preprocessor_lines_with_continuations_are_skipped",
             "#include <cuda_fp16.h>\n#pragma once\n#if defined(__CUDACC_RTC__) \\\n  && 1\n#endif\n"
             "#define UNUSED(x) \\\n   __global__ void not_a_kernel(x)\n__global__ void k(int n) {}\n",
             {{"k", "k", false, {}, 8, {value("n", "int", i32, 4)}}}},

            {"if_0_blocks_hide_kernels_and_if_1_else_blocks_are_dropped",
             "#if 0\n__global__ void hidden(int x) {}\nit's prose, not code\n#endif\n"
             "#if 1\n__global__ void shown(int x) {}\n#else\n__global__ void other(int x) {}\n#endif\n",
             {{"shown", "shown", false, {}, 6, {value("x", "int", i32, 4)}}}},

            {"kernel_hidden_behind_object_like_macro_is_found",
             "#define KERNEL extern \"C\" __global__ void\n#define REAL float\n\n"
             "KERNEL scale(REAL* x, REAL a) {}\n",
             {{"scale", "scale", true, {}, 4,
               {pointer("x", "float*", "float", false, f32), value("a", "float", f32, 4)}}}},

            {"kernel_declared_through_function_like_macro_is_found",
             "#define DECLARE(name, T) \\\n  __global__ void name(T* x, int n)\n"
             "#define CAT(a, b) a##b\nDECLARE(fill_f, float) {}\nDECLARE(CAT(fill_, i), int) {}\n",
             {{"fill_f", "fill_f", false, {}, 4, {pointer("x", "float*", "float", false, f32), value("n", "int", i32, 4)}},
              {"fill_i", "fill_i", false, {}, 5, {pointer("x", "int*", "int", false, i32), value("n", "int", i32, 4)}}}},
        };
    }

    // How a kernel is declared: linkage, attributes, namespaces, templates, declarations and definitions.
    std::vector<signature_case> kernel_declaration_cases()
    {
        return {
            {"extern_c_block_marks_its_kernels_and_extern_cxx_block_unmarks",
             "extern \"C\" {\n__global__ void a(int x) {}\nextern \"C++\" {\n__global__ void b(int x) {}\n}\n"
             "__global__ void c() {}\n}\n__global__ void d() {}\n",
             {{"a", "a", true, {}, 2, {value("x", "int", i32, 4)}},
              {"b", "b", false, {}, 4, {value("x", "int", i32, 4)}},
              {"c", "c", true, {}, 6, {}},
              {"d", "d", false, {}, 8, {}}}},

            {"global_may_follow_void_and_extern_c",
             "void __global__ first(int n) {}\nextern \"C\" void __global__ second(int n) {}\n"
             "__global__ extern \"C\" void third(int n);\n",
             {{"first", "first", false, {}, 1, {value("n", "int", i32, 4)}},
              {"second", "second", true, {}, 2, {value("n", "int", i32, 4)}},
              {"third", "third", true, {}, 3, {value("n", "int", i32, 4)}}}},

            {"launch_bounds_and_attributes_are_skipped",
             "__global__ void __launch_bounds__(256, 2) k1(float* x) {}\n"
             "__launch_bounds__(128) __global__ void k2(float* x) {}\n"
             "[[nodiscard]] static inline __forceinline__ __global__ void __attribute__((noinline, used)) k3(float* x) {}\n"
             "__global__ void __cluster_dims__(2, 1, 1) __maxnreg__(32) __noinline__ k4(float* x) {}\n",
             {{"k1", "k1", false, {}, 1, {pointer("x", "float*", "float", false, f32)}},
              {"k2", "k2", false, {}, 2, {pointer("x", "float*", "float", false, f32)}},
              {"k3", "k3", false, {}, 3, {pointer("x", "float*", "float", false, f32)}},
              {"k4", "k4", false, {}, 4, {pointer("x", "float*", "float", false, f32)}}}},

            {"unknown_attribute_macro_before_the_name_is_skipped",
             "__global__ void MY_BOUNDS(128, 4) k(float* x) {}\n",
             {{"k", "k", false, {}, 1, {pointer("x", "float*", "float", false, f32)}}}},

            {"namespaces_qualify_the_name",
             "namespace a { namespace b {\n__global__ void k1() {}\n} \n__global__ void k2() {}\n}\n"
             "namespace c::d {\n__global__ void k3() {}\n}\nnamespace {\n__global__ void k4() {}\n}\n"
             "__global__ void k5() {}\n",
             {{"k1", "a::b::k1", false, {}, 2, {}},
              {"k2", "a::k2", false, {}, 4, {}},
              {"k3", "c::d::k3", false, {}, 7, {}},
              {"k4", "k4", false, {}, 10, {}},
              {"k5", "k5", false, {}, 12, {}}}},

            {"out_of_line_definition_keeps_its_qualifier",
             "namespace ns { __global__ void k(int); }\n__global__ void ns::k(int n) {}\n",
             {{"k", "ns::k", false, {}, 2, {value("n", "int", i32, 4)}}}},

            {"declaration_and_definition_appear_once_with_definition_names",
             "__global__ void k(float*, int n = 10);\nint helper();\n\n__global__ void k(float* data, int n)\n{}\n",
             {{"k", "k", false, {}, 4,
               {pointer("data", "float*", "float", false, f32), value("n", "int", i32, 4, "10")}}}},

            {"overloads_with_different_types_stay_separate",
             "__global__ void k(float* x);\n__global__ void k(double* x);\n__global__ void k(float* y) {}\n",
             {{"k", "k", false, {}, 3, {pointer("y", "float*", "float", false, f32)}},
              {"k", "k", false, {}, 2, {pointer("x", "double*", "double", false, scalar_kind::f64)}}}},

            {"device_and_host_functions_are_ignored",
             "__device__ float sq(float x) { return x * x; }\nfloat host(int n);\n__host__ __device__ int both();\n"
             "__global__ void k(float* x) { x[0] = sq(x[0]); }\n",
             {{"k", "k", false, {}, 4, {pointer("x", "float*", "float", false, f32)}}}},

            {"template_parameters_are_recorded_and_t_has_unknown_kind",
             "template <typename T, int N = 4>\n__global__ void fill(T* x, T value, int n) {}\n",
             {{"fill", "fill", false, {"typename T", "int N = 4"}, 2,
               {pointer("x", "T*", "T", false, u), value("value", "T", u, 0), value("n", "int", i32, 4)}}}},

            {"template_parameter_shadows_alias_of_the_same_name",
             "typedef float T;\ntemplate <class T> __global__ void k(T v) {}\n__global__ void g(T v) {}\n",
             {{"k", "k", false, {"class T"}, 2, {value("v", "T", u, 0)}},
              {"g", "g", false, {}, 3, {value("v", "T", f32, 4)}}}},

            {"explicit_instantiation_is_a_separate_signature_named_as_its_template",
             "template <typename T>\n__global__ void k(T* x) {}\ntemplate __global__ void k<float>(float*);\n",
             {{"k", "k", false, {"typename T"}, 2, {pointer("x", "T*", "T", false, u)}},
              {"k<float>", "k<float>", false, {}, 3, {pointer("x", "float*", "float", false, f32)}}}},
        };
    }

    // How a parameter is written: const and restrict, pointer levels, arrays, names, defaults, function pointers.
    std::vector<signature_case> parameter_cases()
    {
        return {
            {"const_in_either_position_and_restrict_spellings_normalize",
             "__global__ void k(float const* a, const float* __restrict__ b, float* __restrict c,\n"
             "                  float* restrict d, const float* const __restrict__ e)\n{}\n",
             {{"k", "k", false, {}, 1,
               {pointer("a", "const float*", "float", true, f32), pointer("b", "const float*", "float", true, f32),
                pointer("c", "float*", "float", false, f32), pointer("d", "float*", "float", false, f32),
                pointer("e", "const float* const", "float", true, f32)}}}},

            {"volatile_pointer_to_pointer_and_const_pointer_are_described",
             "__global__ void k(volatile int* flags, float** rows, const float* const* table, float* const p) {}\n",
             {{"k", "k", false, {}, 1,
               {pointer("flags", "volatile int*", "int", false, i32), pointer("rows", "float**", "float*", false, u),
                pointer("table", "const float* const*", "const float*", true, u),
                pointer("p", "float* const", "float", false, f32)}}}},

            {"array_parameters_are_pointers",
             "__global__ void k(float x[], const int y[16], float m[4][16]) {}\n",
             {{"k", "k", false, {}, 1,
               {pointer("x", "float*", "float", false, f32), pointer("y", "const int*", "int", true, i32),
                pointer("m", "float (*)[16]", "float[16]", false, u)}}}},

            {"unnamed_parameters_have_empty_names",
             "__global__ void k(float*, int, const double*);\n",
             {{"k", "k", false, {}, 1,
               {pointer("", "float*", "float", false, f32), value("", "int", i32, 4),
                pointer("", "const double*", "double", true, scalar_kind::f64)}}}},

            {"default_arguments_keep_commas_inside_brackets",
             "__global__ void k(int n = 10, float a = std::min(1, 2), Foo<int, 2> f = Foo<int, 2>(), int m = (1 < 2))\n{}\n",
             {{"k", "k", false, {}, 1,
               {value("n", "int", i32, 4, "10"), value("a", "float", f32, 4, "std::min(1, 2)"),
                value("f", "Foo<int, 2>", u, 0, "Foo<int, 2>()"), value("m", "int", i32, 4, "(1 < 2)")}}}},

            {"void_and_empty_parameter_lists_mean_no_parameters",
             "__global__ void a(void) {}\n__global__ void b() {}\n__global__ void c( /* nothing */ ) {}\n",
             {{"a", "a", false, {}, 1, {}}, {"b", "b", false, {}, 2, {}}, {"c", "c", false, {}, 3, {}}}},

            {"nested_template_arguments_stay_in_one_parameter",
             "__global__ void k(Foo<Bar<int>, 3> f, const Foo<Bar<Baz<float>>, 2>* g, int n) {}\n",
             {{"k", "k", false, {}, 1,
               {value("f", "Foo<Bar<int>, 3>", u, 0),
                pointer("g", "const Foo<Bar<Baz<float>>, 2>*", "Foo<Bar<Baz<float>>, 2>", true, u),
                value("n", "int", i32, 4)}}}},

            {"function_pointer_parameter_is_an_eight_byte_pointer",
             "__global__ void k(float (*op)(float, float), int n) {}\n",
             {{"k", "k", false, {}, 1,
               {{"op", "float (*)(float, float)", "", true, false, u, 8, ""}, value("n", "int", i32, 4)}}}},
        };
    }

    // What a parameter's type resolves to: standard names, aliases, integer and float spellings, CUDA types, structs.
    std::vector<signature_case> parameter_type_cases()
    {
        return {
            {"qualified_standard_names_resolve",
             "__global__ void k(std::size_t a, ::size_t b, cuda::std::int32_t c, ::std::uint8_t* d) {}\n",
             {{"k", "k", false, {}, 1,
               {value("a", "std::size_t", u64, 8), value("b", "::size_t", u64, 8),
                value("c", "cuda::std::int32_t", i32, 4),
                pointer("d", "::std::uint8_t*", "::std::uint8_t", false, scalar_kind::u8)}}}},

            {"typedef_and_using_aliases_resolve_to_scalar_kinds",
             "typedef float real;\nusing index_t = unsigned int;\ntypedef double dbl, *dbl_ptr;\n"
             "using rp = const real*;\n"
             "__global__ void k(real a, real* b, index_t n, dbl_ptr d, rp e) {}\n",
             {{"k", "k", false, {}, 5,
               {value("a", "real", f32, 4), pointer("b", "real*", "real", false, f32),
                value("n", "index_t", scalar_kind::u32, 4),
                {"d", "dbl_ptr", "double", true, false, scalar_kind::f64, 8, ""},
                {"e", "rp", "float", true, true, f32, 8, ""}}}}},

            {"integer_spellings_map_to_kinds",
             "__global__ void k(bool a, char b, signed char c, unsigned char d, short e, short int f,\n"
             "  unsigned short g, int h, signed i, unsigned j, unsigned int k_, long l, long int m,\n"
             "  unsigned long n, long long o, unsigned long long p, long unsigned int q) {}\n",
             {{"k", "k", false, {}, 1,
               {value("a", "bool", scalar_kind::boolean, 1), value("b", "char", scalar_kind::i8, 1),
                value("c", "signed char", scalar_kind::i8, 1), value("d", "unsigned char", scalar_kind::u8, 1),
                value("e", "short", scalar_kind::i16, 2), value("f", "short int", scalar_kind::i16, 2),
                value("g", "unsigned short", scalar_kind::u16, 2), value("h", "int", i32, 4),
                value("i", "signed", i32, 4), value("j", "unsigned", scalar_kind::u32, 4),
                value("k_", "unsigned int", scalar_kind::u32, 4), value("l", "long", scalar_kind::i64, 8),
                value("m", "long int", scalar_kind::i64, 8), value("n", "unsigned long", u64, 8),
                value("o", "long long", scalar_kind::i64, 8), value("p", "unsigned long long", u64, 8),
                value("q", "long unsigned int", u64, 8)}}}},

            {"fixed_width_and_size_typedefs_map_to_kinds",
             "__global__ void k(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f, int64_t g,\n"
             "  uint64_t h, ssize_t i, ptrdiff_t j, intptr_t k_, uintptr_t l) {}\n",
             {{"k", "k", false, {}, 1,
               {value("a", "int8_t", scalar_kind::i8, 1), value("b", "uint8_t", scalar_kind::u8, 1),
                value("c", "int16_t", scalar_kind::i16, 2), value("d", "uint16_t", scalar_kind::u16, 2),
                value("e", "int32_t", i32, 4), value("f", "uint32_t", scalar_kind::u32, 4),
                value("g", "int64_t", scalar_kind::i64, 8), value("h", "uint64_t", u64, 8),
                value("i", "ssize_t", scalar_kind::i64, 8), value("j", "ptrdiff_t", scalar_kind::i64, 8),
                value("k_", "intptr_t", scalar_kind::i64, 8), value("l", "uintptr_t", u64, 8)}}}},

            {"half_bfloat16_float_double_map_to_kinds",
             "__global__ void k(__half a, half b, __nv_bfloat16 c, nv_bfloat16 d, float e, double f, const __half* g) {}\n",
             {{"k", "k", false, {}, 1,
               {value("a", "__half", scalar_kind::f16, 2), value("b", "half", scalar_kind::f16, 2),
                value("c", "__nv_bfloat16", scalar_kind::bf16, 2), value("d", "nv_bfloat16", scalar_kind::bf16, 2),
                value("e", "float", f32, 4), value("f", "double", scalar_kind::f64, 8),
                pointer("g", "const __half*", "__half", true, scalar_kind::f16)}}}},

            {"cuda_vector_types_have_sizes_but_no_kind",
             "__global__ void k(float4 a, int2 b, uint4 c, longlong2 d, double3 e, char3 f, float2* g, __half2 h) {}\n",
             {{"k", "k", false, {}, 1,
               {value("a", "float4", u, 16), value("b", "int2", u, 8), value("c", "uint4", u, 16),
                value("d", "longlong2", u, 16), value("e", "double3", u, 24), value("f", "char3", u, 3),
                pointer("g", "float2*", "float2", false, u), value("h", "__half2", scalar_kind::f16x2, 4)}}}},

            {"struct_parameters_have_no_kind_but_their_size",
             "struct Params { float* x; int n; };\n"
             "__global__ void k(const __grid_constant__ Params p, struct Params q, Params* r) {}\n",
             {{"k", "k", false, {}, 2,
               {value("p", "const Params", u, 16), value("q", "struct Params", u, 16),
                pointer("r", "Params*", "Params", false, u)}}}},
        };
    }

    std::vector<signature_case> cases()
    {
        std::vector<signature_case> all;
        for (auto table : {source_text_cases, kernel_declaration_cases, parameter_cases, parameter_type_cases})
        {
            std::vector<signature_case> some = table();
            all.insert(all.end(), some.begin(), some.end());
        }
        return all;
    }

    // Readable test names instead of byte dumps when a case fails.
    void PrintTo(const signature_case& c, std::ostream* os)
    {
        *os << c.behaviour;
    }

    class declaration_table : public ::testing::TestWithParam<signature_case>
    {
    };

    TEST_P(declaration_table, parses_as_expected)
    {
        const signature_case& c = GetParam();
        std::vector<kernel_signature> got;
        ASSERT_NO_THROW(got = parse_kernel_signatures(c.source)) << c.source;
        ASSERT_EQ(got.size(), c.kernels.size()) << c.source;
        for (std::size_t k = 0; k < got.size(); ++k)
        {
            const kernel_signature& s = got[k];
            const expected_kernel& e = c.kernels[k];
            SCOPED_TRACE("kernel " + e.name + ": " + s.to_string());
            EXPECT_EQ(s.name, e.name);
            EXPECT_EQ(s.qualified_name, e.qualified_name);
            EXPECT_EQ(s.extern_c, e.extern_c);
            EXPECT_EQ(s.template_parameters, e.template_parameters);
            EXPECT_EQ(s.is_template(), !e.template_parameters.empty());
            EXPECT_EQ(s.line, e.line);
            ASSERT_EQ(s.parameters.size(), e.parameters.size());
            for (std::size_t i = 0; i < e.parameters.size(); ++i)
            {
                const kernel_parameter& p = s.parameters[i];
                const expected_parameter& x = e.parameters[i];
                SCOPED_TRACE("parameter " + std::to_string(i + 1));
                EXPECT_EQ(p.name, x.name);
                EXPECT_EQ(p.type, x.type);
                EXPECT_EQ(p.element_type, x.element_type);
                EXPECT_EQ(p.is_pointer, x.is_pointer);
                EXPECT_EQ(p.is_const, x.is_const);
                EXPECT_EQ(xcuda::scalar_kind_name(p.kind), std::string(xcuda::scalar_kind_name(x.kind)));
                EXPECT_EQ(p.size, x.size);
                EXPECT_EQ(p.default_value, x.default_value);
            }
        }
    }

    INSTANTIATE_TEST_SUITE_P(kernel_signature, declaration_table, ::testing::ValuesIn(cases()),
                             [](const ::testing::TestParamInfo<signature_case>& info) { return info.param.behaviour; });

    struct error_case
    {
        std::string behaviour;
        std::string source;
        int line;
        std::string fragment;
    };

    std::vector<error_case> error_cases()
    {
        return {
            {"unterminated_comment_names_where_it_opens", "__global__ void k();\n/* never\nclosed", 2,
             "unterminated /* comment"},
            {"unterminated_string_names_its_line", "int x;\nconst char* s = \"abc;\n__global__ void k();", 2,
             "unterminated string literal"},
            {"unterminated_character_literal_names_its_line", "char c = 'a;\n", 1, "unterminated character literal"},
            {"unterminated_raw_string_names_its_line", "\nauto s = R\"x(never closed\n\n", 2,
             "unterminated raw string literal"},
            {"unclosed_parameter_list_is_unbalanced", "\n__global__ void k(float* x, int n {\n", 2,
             "'(' is never closed"},
            {"mismatched_bracket_in_parameters_is_unbalanced", "__global__ void k(float* x, int n]\n{}\n", 1,
             "unexpected ']'"},
            {"global_without_a_name_is_reported", "int a;\n__global__ void;\n", 2, "not followed by a function name"},
            {"global_at_the_end_of_the_text_is_reported", "int a;\n\n__global__", 3, "not followed by a function name"},
            {"global_before_a_brace_is_reported", "__global__ { }", 1, "not followed by a function name"},
            {"empty_parameter_after_a_comma_is_reported", "__global__ void k(int a,\n)", 2,
             "parameter 2 of 'k' is empty"},
            {"invalid_builtin_combination_is_reported", "__global__ void k(int a,\n unsigned float b)", 2,
             "invalid type 'unsigned float'"},
            {"c_variadic_kernel_is_reported", "__global__ void k(int a, ...)", 1, "variadic"},
            {"two_names_in_one_parameter_are_reported", "__global__ void k(int x y)", 1,
             "parameter 1 of 'k': unexpected 'y'"},
            {"void_parameter_with_a_name_is_reported", "__global__ void k(void x)", 1, "cannot have type void"},
            {"parameter_without_type_is_reported", "__global__ void k(const)", 1, "no type"},
            {"parenthesized_name_is_reported", "__global__ void (k)(int x)", 1, "expected the kernel's name"},
            {"default_without_value_is_reported", "__global__ void k(int n =)", 1, "'=' without a default value"},
        };
    }

    void PrintTo(const error_case& c, std::ostream* os)
    {
        *os << c.behaviour;
    }

    class error_table : public ::testing::TestWithParam<error_case>
    {
    };

    TEST_P(error_table, raises_signature_error_naming_the_line)
    {
        const error_case& c = GetParam();
        try
        {
            parse_kernel_signatures(c.source);
            FAIL() << "expected signature_error for:\n" << c.source;
        }
        catch (const signature_error& e)
        {
            EXPECT_EQ(e.line(), c.line) << e.what();
            std::string what = e.what();
            EXPECT_EQ(what.rfind("line " + std::to_string(c.line) + ": ", 0), 0u) << what;
            EXPECT_NE(what.find(c.fragment), std::string::npos) << what;
        }
    }

    INSTANTIATE_TEST_SUITE_P(kernel_signature, error_table, ::testing::ValuesIn(error_cases()),
                             [](const ::testing::TestParamInfo<error_case>& info) { return info.param.behaviour; });

    TEST(kernel_signature, to_string_spells_the_signature)
    {
        auto k = parse_kernel_signatures(
            "extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n);\n"
            "__global__ void g(int n = 3, float (*op)(float));\n");
        ASSERT_EQ(k.size(), 2u);
        EXPECT_EQ(k[0].to_string(), "saxpy(float a, const float* x, const float* y, float* out, size_t n)");
        EXPECT_EQ(k[1].to_string(), "g(int n = 3, float (*op)(float))");
    }

    TEST(kernel_signature, scalar_kinds_have_numpy_names_and_sizes)
    {
        EXPECT_STREQ(xcuda::scalar_kind_name(scalar_kind::boolean), "bool");
        EXPECT_STREQ(xcuda::scalar_kind_name(scalar_kind::u16), "uint16");
        EXPECT_STREQ(xcuda::scalar_kind_name(scalar_kind::f16), "float16");
        EXPECT_STREQ(xcuda::scalar_kind_name(scalar_kind::bf16), "bfloat16");
        EXPECT_STREQ(xcuda::scalar_kind_name(scalar_kind::f64), "float64");
        EXPECT_STREQ(xcuda::scalar_kind_name(scalar_kind::unknown), "unknown");
        EXPECT_EQ(xcuda::scalar_kind_size(scalar_kind::i8), 1u);
        EXPECT_EQ(xcuda::scalar_kind_size(scalar_kind::bf16), 2u);
        EXPECT_EQ(xcuda::scalar_kind_size(scalar_kind::u32), 4u);
        EXPECT_EQ(xcuda::scalar_kind_size(scalar_kind::i64), 8u);
        EXPECT_EQ(xcuda::scalar_kind_size(scalar_kind::unknown), 0u);
    }

    TEST(kernel_signature, self_referencing_and_exponential_macros_terminate)
    {
        std::string src = "#define A A B\n#define B A\nA\n#define F(x) F(x) x\nF(F(1))\n";
        for (int i = 0; i < 40; ++i)
        {
            src += "#define M" + std::to_string(i + 1) + " M" + std::to_string(i) + " M" + std::to_string(i) + "\n";
        }
        src += "M40\n__global__ void still_found(int n) {}\n";
        std::vector<kernel_signature> k;
        ASSERT_NO_THROW(k = parse_kernel_signatures(src));
        ASSERT_EQ(k.size(), 1u);
        EXPECT_EQ(k[0].name, "still_found");
    }

    // Random bytes and mutated kernels: the only acceptable outcomes are a result or signature_error.
    TEST(kernel_signature, random_and_mutated_input_never_crashes_or_throws_other_errors)
    {
        const std::vector<std::string> seeds = {
            "extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {}",
            "template <typename T, int N = 4>\n__global__ void __launch_bounds__(256) f(T* x, int n = (1, 2)) {}",
            "namespace a::b { extern \"C\" { __global__ void k(float x[], const int* __restrict__ p); } }",
            "#define K(n, T) __global__ void n(T* x)\nK(a, float) {}\n/* c */ // d\n\"s\" 'c' R\"(r)\"",
            "typedef float real; using idx = unsigned; __global__ void g(real* r, idx n, Foo<Bar<int>, 3> f);"};
        const std::string alphabet = "_global_(){}[]<>,;*&=:#\"'\\/\n abcTn0123\r\t.-+!";
        std::mt19937 rng(12345);
        auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
        for (int round = 0; round < 4000; ++round)
        {
            std::string input;
            if (round % 4 == 0)
            {
                std::size_t n = pick(200);
                for (std::size_t i = 0; i < n; ++i)
                {
                    input += static_cast<char>(rng() & 0xff);
                }
            }
            else
            {
                input = seeds[pick(seeds.size())];
                int edits = 1 + static_cast<int>(pick(6));
                for (int e = 0; e < edits && !input.empty(); ++e)
                {
                    std::size_t at = pick(input.size());
                    switch (pick(4))
                    {
                    case 0: input.erase(at, 1 + pick(4)); break;
                    case 1: input.insert(at, 1, alphabet[pick(alphabet.size())]); break;
                    case 2: input[at] = alphabet[pick(alphabet.size())]; break;
                    default: input.insert(at, input.substr(pick(input.size()), pick(20))); break;
                    }
                }
            }
            try
            {
                parse_kernel_signatures(input);
            }
            catch (const signature_error& e)
            {
                EXPECT_GT(e.line(), 0) << input;
            }
            catch (const xcuda::usage_error& e)
            {
                // Refused before parsing (check_compile_inputs): of these inputs, only a NUL byte can be.
                EXPECT_NE(input.find('\0'), std::string::npos) << e.what();
                EXPECT_NE(std::string(e.what()).find("NUL byte at line"), std::string::npos) << e.what();
            }
        }
    }

    // ---- the types of the whole unit ----------------------------------------------------------------

    const xcuda::value_layout& layout_of(const std::vector<kernel_signature>& k, std::size_t parameter)
    {
        static const xcuda::value_layout none;
        const auto& layout = k.at(0).parameters.at(parameter).layout;
        return layout ? *layout : none;
    }

    TEST(kernel_signature, structs_are_laid_out_as_the_compiler_lays_them_out)
    {
        auto k = parse_kernel_signatures(
            "struct Mixed { char c; double d; short s; };\n"                      // 0, 8, 16 -> 24, align 8
            "struct alignas(16) Padded { float x; };\n"                            // 16, align 16
            "struct Member { char c; __align__(8) int i; float v[3]; };\n"         // 0, 8, 12 -> 24
            "union U { float f; double d; char b[3]; };\n"                         // 8
            "struct Nested { char c; Mixed m; };\n"                                // 0, 8 -> 32
            "struct Anon { int tag; union { float f; int i; }; };\n"               // 0, 4 -> 8
            "struct Base { float a; }; struct Derived : public Base { double b; };\n"  // 0, 8 -> 16
            "struct Methods { __device__ float len() const { return x; } static const int N = 3; float x{1.0f}; "
            "int n = 2; Methods() = default; };\n"                                 // 0, 4 -> 8
            "typedef struct { unsigned char r, g, b; } rgb_t;\n"                   // 3, align 1
            "struct Bits { int a : 3; int b; };\n"                                 // unknown
            "struct Virtual { virtual __device__ void f(); int x; };\n"            // unknown
            "__global__ void k(Mixed a, Padded b, Member c, U d, Nested e, Anon f, Derived g, Methods h, rgb_t i,"
            " Bits j, Virtual l) {}\n");
        struct expect { std::size_t size, alignment; std::vector<std::size_t> offsets; };
        std::vector<expect> expected = {{24, 8, {0, 8, 16}}, {16, 16, {0}}, {24, 8, {0, 8, 12}}, {8, 8, {0, 0, 0}},
                                        {32, 8, {0, 8}}, {8, 4, {0, 4, 4}}, {16, 8, {0, 8}}, {8, 4, {0, 4}},
                                        {3, 1, {0, 1, 2}}};
        for (std::size_t i = 0; i < expected.size(); ++i)
        {
            SCOPED_TRACE(k[0].parameters[i].type);
            const auto& l = layout_of(k, i);
            EXPECT_EQ(l.size, expected[i].size);
            EXPECT_EQ(k[0].parameters[i].size, expected[i].size);
            EXPECT_EQ(l.alignment, expected[i].alignment);
            std::vector<std::size_t> offsets;
            for (const auto& f : l.fields)
            {
                offsets.push_back(f.offset);
            }
            EXPECT_EQ(offsets, expected[i].offsets);
        }
        EXPECT_EQ(layout_of(k, 2).fields[2].extents, std::vector<std::size_t>{3});
        EXPECT_EQ(k[0].parameters[9].size, 0u);   // a bit-field: the driver's size decides
        EXPECT_EQ(k[0].parameters[10].size, 0u);  // a vtable pointer
    }

    TEST(kernel_signature, cuda_vector_types_have_the_toolkits_sizes_and_alignments)
    {
        auto k = parse_kernel_signatures("__global__ void k(float4 a, float3 b, double2 c, int2 d, char3 e, uint4 f, "
                                         "short2 g, double4_32a h, dim3 i, longlong2 j) {}\n");
        std::vector<std::pair<std::size_t, std::size_t>> expected = {{16, 16}, {12, 4}, {16, 16}, {8, 8}, {3, 1},
                                                                      {16, 16}, {4, 4}, {32, 32}, {12, 4}, {16, 16}};
        for (std::size_t i = 0; i < expected.size(); ++i)
        {
            SCOPED_TRACE(k[0].parameters[i].type);
            EXPECT_EQ(layout_of(k, i).size, expected[i].first);
            EXPECT_EQ(layout_of(k, i).alignment, expected[i].second);
        }
        EXPECT_EQ(layout_of(k, 0).fields[3].name, "w");
        EXPECT_EQ(layout_of(k, 0).fields[3].type->kind, scalar_kind::f32);
    }

    TEST(kernel_signature, enums_are_their_underlying_type)
    {
        auto k = parse_kernel_signatures("enum Color { RED, GREEN };\nenum class Small : unsigned char { A, B };\n"
                                         "namespace ns { enum struct Wide : long long { X }; }\n"
                                         "typedef enum { ON, OFF } Switch;\n"
                                         "__global__ void k(Color c, Small s, ns::Wide w, Switch t) {}\n");
        EXPECT_EQ(k[0].parameters[0].kind, scalar_kind::i32);
        EXPECT_EQ(k[0].parameters[1].kind, scalar_kind::u8);
        EXPECT_EQ(k[0].parameters[2].kind, scalar_kind::i64);
        EXPECT_EQ(k[0].parameters[3].kind, scalar_kind::i32);
        EXPECT_EQ(k[0].parameters[1].type, "Small");
    }

    TEST(kernel_signature, a_namespace_alias_names_the_types_of_the_namespace_it_stands_for)
    {
        auto k = parse_kernel_signatures(
            "namespace image { namespace v1 { struct Tex { float* p; int w; int h; }; typedef float pixel; } }\n"
            "namespace img = ::image::v1;\nnamespace im = image;\nnamespace outer { namespace alias = im::v1; }\n"
            "__global__ void k(img::Tex t, const img::pixel* q, im::v1::Tex u, outer::alias::pixel v, "
            "image::v1::pixel w) {}\n");
        ASSERT_EQ(k.size(), 1u);
        ASSERT_EQ(k[0].parameters.size(), 5u);
        EXPECT_EQ(k[0].parameters[0].type, "img::Tex");  // as written
        ASSERT_EQ(layout_of(k, 0).fields.size(), 3u);
        EXPECT_EQ(layout_of(k, 0).size, 16u);
        EXPECT_EQ(layout_of(k, 0).fields[2].name, "h");
        EXPECT_EQ(k[0].parameters[1].kind, scalar_kind::f32);  // the pointee of const img::pixel*
        EXPECT_EQ(layout_of(k, 2).size, 16u);
        EXPECT_EQ(k[0].parameters[3].kind, scalar_kind::f32);  // an alias of an alias, declared in a namespace
        EXPECT_EQ(k[0].parameters[4].kind, scalar_kind::f32);  // a namespace's typedef by its qualified name
    }

    TEST(kernel_signature, a_namespace_alias_that_names_itself_leaves_the_type_unknown)
    {
        auto k = parse_kernel_signatures("namespace a = b;\nnamespace b = a;\n__global__ void k(a::T t, int n) {}\n");
        ASSERT_EQ(k.size(), 1u);
        EXPECT_EQ(k[0].parameters[0].kind, scalar_kind::unknown);
        EXPECT_EQ(k[0].parameters[1].kind, scalar_kind::i32);
    }

    TEST(kernel_signature, headers_and_defines_are_part_of_the_unit)
    {
        xcuda::parse_context context;
        context.headers["types.cuh"] = "#pragma once\ntypedef unsigned int uint;\nstruct P { float a; uint n; };\n"
                                       "#include \"more.cuh\"\n__global__ void in_header(uint* x) {}\n";
        context.headers["more.cuh"] = "#include \"types.cuh\"\nusing real = REAL;\n";
        context.defines = {"REAL=double", "FLAG"};
        auto k = parse_kernel_signatures("#include <cuda_fp16.h>\n#include \"types.cuh\"\n#include \"types.cuh\"\n"
                                         "#ifdef FLAG\n__global__ void own(uint n, P p, real r) {}\n#endif\n",
                                         context);
        ASSERT_EQ(k.size(), 2u);
        EXPECT_EQ(k[0].name, "in_header");
        EXPECT_EQ(k[0].file, "types.cuh");
        EXPECT_EQ(k[0].line, 5);
        EXPECT_EQ(k[1].file, "");
        EXPECT_EQ(k[1].parameters[0].kind, scalar_kind::u32);
        EXPECT_EQ(k[1].parameters[1].size, 8u);
        EXPECT_EQ(k[1].parameters[2].kind, scalar_kind::f64);
    }

    TEST(kernel_signature, a_template_parameter_with_an_empty_default_is_a_signature_error)
    {
        auto k = parse_kernel_signatures("template <typename T, int N => __global__ void f(T* x) {}");
        ASSERT_EQ(k.size(), 1u);
        EXPECT_THROW(k[0].instantiate("f<int>"), signature_error);
        EXPECT_EQ(k[0].instantiate("f<int, 3>").parameters.at(0).kind, scalar_kind::i32);
    }

    TEST(constant_expression, default_arguments_evaluate_as_cpp_does)
    {
        using xcuda::cxx::evaluate_constant;
        using type = xcuda::cxx::constant_value::type;
        EXPECT_EQ(evaluate_constant("NULL").kind, type::null_pointer);
        EXPECT_EQ(evaluate_constant("(int*)0").kind, type::null_pointer);
        EXPECT_EQ(evaluate_constant("2 * 8 + 1").value, 17);
        EXPECT_EQ(evaluate_constant("-1").value, -1);
        EXPECT_EQ(evaluate_constant("1 << 10").value, 1024);
        EXPECT_EQ(evaluate_constant("0x10u").value, 16);
        EXPECT_TRUE(evaluate_constant("0xffffffffffffffffull").is_unsigned);
        EXPECT_EQ(evaluate_constant("1'000").value, 1000);
        EXPECT_DOUBLE_EQ(evaluate_constant("0.5f").real, 0.5);
        EXPECT_DOUBLE_EQ(evaluate_constant("1e-3").real, 1e-3);
        EXPECT_EQ(evaluate_constant("true").kind, type::boolean);
        EXPECT_EQ(evaluate_constant("'A'").value, 65);
        EXPECT_EQ(evaluate_constant("(unsigned char)300").value, 44);
        EXPECT_EQ(evaluate_constant("sizeof(double) * 2").value, 16);
        EXPECT_EQ(evaluate_constant("3 > 2 ? 7 : 9").value, 7);
        EXPECT_FALSE(evaluate_constant("f(3)").known());
        EXPECT_FALSE(evaluate_constant("1 / 0").known());
        EXPECT_FALSE(evaluate_constant(std::string(100000, '(') + "1").known());
    }

    // ---- the log parsers take any text a cell can make NVRTC echo ------------------------------------

    TEST(log_parsers, any_text_is_read_without_throwing)
    {
        const std::vector<std::string> pieces = {
            "cell(", "bad.cuh(", "__nv_name_map(", "): ", "error: ", "warning #1105-D: ", "catastrophic error: ",
            "#warning directive: ", "Function properties for", "Function properties for ", "ptxas info    : ",
            "ptxas         .     ", "Used ", " registers", "bytes stack frame", "bytes smem", "bytes cmem[",
            "Compiling entry function '", "' for '", "'", "\"", "^", "  ", "\n", "\r\n", "0", "3", "99999999999999999999",
            "-1", "(", ")", "\xc3\xa9", "\xf0\x9f\x98\x80", "\xff\xfe", std::string(1, '\0'), "overloaded function \"",
            "host functions are not allowed in JIT mode", "nvrtc: error: ", std::string(5000, 'x')};
        std::map<std::string, std::string> headers = {{"bad.cuh", "line one\nline two\n"}};
        std::mt19937 rng(2024);
        for (int round = 0; round < 3000; ++round)
        {
            std::string log;
            std::size_t n = rng() % 30;
            for (std::size_t i = 0; i < n; ++i)
            {
                log += pieces[rng() % pieces.size()];
            }
            std::string source = round % 3 ? "extern \"C\" __global__ void k(int* x) {}\n" : log;
            EXPECT_NO_THROW(xcuda::diagnostics::parse(source, log, {80, 90}, headers)) << log;
            EXPECT_NO_THROW(xcuda::diagnostics::error_lines(log)) << log;
            EXPECT_NO_THROW(xcuda::diagnostics::format_compile_error(source, log, {"-x"}, "status", {80}, headers))
                << log;
            EXPECT_NO_THROW(xcuda::resource_usage::parse_ptxas_log(log)) << log;
        }
    }

    TEST(log_parsers, a_warning_that_reads_like_ptxas_does_not_confuse_the_report)
    {
        std::string log = "cell(1): warning #1105-D: #warning directive: Function properties for\n"
                          "  #warning Function properties for\n   ^\n\n"
                          "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
                          "ptxas info    : Function properties for k\n"
                          "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                          "ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]\n";
        auto usage = xcuda::resource_usage::parse_ptxas_log(log);
        ASSERT_EQ(usage.size(), 1u);
        EXPECT_EQ(usage.at("k").registers, 8);
        auto d = xcuda::diagnostics::parse("#warning Function properties for\n", log);
        ASSERT_EQ(d.size(), 1u);
        EXPECT_EQ(d[0].severity, "warning");
    }

    TEST(log_parsers, messages_in_a_header_cell_name_it_and_its_line)
    {
        std::string log = "bad.cuh(2): error: identifier \"y\" is undefined\n  int x = y;\n          ^\n";
        auto d = xcuda::diagnostics::parse("#include \"bad.cuh\"\n", log, {}, {{"bad.cuh", "#pragma once\nint x = y;\n"}});
        ASSERT_EQ(d.size(), 1u);
        EXPECT_EQ(d[0].file, "bad.cuh");
        EXPECT_EQ(d[0].line, 2);
        EXPECT_EQ(d[0].source_line, "int x = y;");
        EXPECT_EQ(d[0].column, 9);
    }
}
