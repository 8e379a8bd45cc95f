// Behaviour of parse_module_variables: which declarations of a unit are module variables (namespace-scope
// __constant__, __device__, __managed__), and how each is typed (the signature reader's types), named and
// sized. Pure C++: no CUDA.

#include "expect_error.hpp"
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_signature.hpp"

using xcuda::module_variable;
using xcuda::parse_module_variables;
using xcuda::scalar_kind;

namespace
{
    const module_variable& named(const std::vector<module_variable>& variables, const std::string& name)
    {
        for (const module_variable& v : variables)
        {
            if (v.qualified_name == name)
            {
                return v;
            }
        }
        throw std::runtime_error("no variable " + name);
    }

    std::vector<std::string> names(const std::vector<module_variable>& variables)
    {
        std::vector<std::string> result;
        for (const module_variable& v : variables)
        {
            result.push_back(v.qualified_name);
        }
        return result;
    }

    TEST(module_variables, scalars_arrays_and_extents_from_macros)
    {
        auto found = parse_module_variables(R"(
#define RADIUS 8
__constant__ float c_Kernel[2 * RADIUS + 1];
__device__ unsigned long long d_total = 0;
__constant__ int c_grid[4][3] = {{0}};
)");
        ASSERT_EQ(found.size(), 3u);
        const module_variable& k = named(found, "c_Kernel");
        EXPECT_EQ(k.space, "__constant__");
        EXPECT_EQ(k.extents, std::vector<std::size_t>{17});
        EXPECT_EQ(k.layout->kind, scalar_kind::f32);
        EXPECT_EQ(k.size(), 68u);
        EXPECT_EQ(k.symbol, "c_Kernel");
        EXPECT_EQ(k.line, 3);
        EXPECT_EQ(named(found, "d_total").size(), 8u);
        EXPECT_EQ(named(found, "d_total").space, "__device__");
        EXPECT_EQ(named(found, "c_grid").extents, (std::vector<std::size_t>{4, 3}));
        EXPECT_EQ(named(found, "c_grid").size(), 48u);
    }

    TEST(module_variables, structs_typedefs_vector_types_and_pointers)
    {
        auto found = parse_module_variables(R"(
typedef unsigned int uint;
struct Params { float3 g; uint n; double bias; };
__constant__ Params c_params;
__device__ uint d_count;
__device__ float4 d_v[2];
__device__ float* d_where;
__managed__ __device__ int m_flag;
)");
        EXPECT_EQ(named(found, "c_params").size(), 24u);  // float3 (12) + uint (4) + double (8)
        EXPECT_TRUE(named(found, "c_params").layout->is_record());
        EXPECT_EQ(named(found, "d_count").layout->kind, scalar_kind::u32);
        EXPECT_EQ(named(found, "d_count").type, "uint");
        EXPECT_EQ(named(found, "d_v").size(), 32u);
        EXPECT_TRUE(named(found, "d_where").is_pointer);
        EXPECT_EQ(named(found, "d_where").size(), 8u);
        EXPECT_EQ(named(found, "m_flag").space, "__managed__");
    }

    TEST(module_variables, namespaces_mangle_and_extern_c_does_not)
    {
        auto found = parse_module_variables(R"(
namespace filters { namespace inner { __constant__ int c_taps; } }
extern "C" { __device__ int c_linked; }
)");
        EXPECT_EQ(named(found, "filters::inner::c_taps").symbol, "_ZN7filters5inner6c_tapsE");
        EXPECT_EQ(named(found, "filters::inner::c_taps").name, "c_taps");
        EXPECT_EQ(named(found, "c_linked").symbol, "c_linked");
    }

    TEST(module_variables, functions_locals_members_externs_templates_and_shared_are_not_variables)
    {
        auto found = parse_module_variables(R"(
__device__ float helper(float x) { __shared__ float s[4]; int local = 1; return x + local; }
__device__ __forceinline__ int twice(int x) { return 2 * x; }
template <typename T> __device__ T tv;
extern __device__ int elsewhere;
extern __shared__ float dynamic[];
struct S { int a; };
__global__ void k(float* out) { __shared__ int t; out[0] = t; }
__device__ int a = 1, b[2] = {3, 4}, c;
)");
        EXPECT_EQ(names(found), (std::vector<std::string>{"a", "b", "c"}));
        EXPECT_EQ(named(found, "b").size(), 8u);
    }

    TEST(module_variables, an_unknown_type_leaves_the_size_unknown)
    {
        // A class template's instance is laid out by the reader (templates by value, issue 25 item 5); an
        // extent the reader cannot evaluate stays unknown.
        auto found = parse_module_variables(R"(
template <int N> struct Box { float v[N]; };
__constant__ Box<4> c_box;
__constant__ float c_sized[SOMETHING_UNDEFINED];
)");
        ASSERT_EQ(found.size(), 2u);
        EXPECT_EQ(named(found, "c_box").size(), 16u);
        EXPECT_EQ(named(found, "c_sized").size(), 0u);
    }
}

// ---- global_variable: the host's checks of a value written into a module variable ----

#include "global_variable.hpp"

namespace
{
    using xcuda::global_variable;


    std::vector<module_variable> cell_variables()
    {
        return parse_module_variables(R"(
__constant__ float c_Kernel[17];
__device__ int d_count;
namespace filters { __constant__ double taps[2][3]; }
)");
    }

    TEST(global_variable, spells_its_declaration_shape_and_size)
    {
        auto found = cell_variables();
        global_variable k(named(found, "c_Kernel"), "float32", true);
        EXPECT_EQ(k.shape(), std::vector<std::int64_t>{17});
        EXPECT_EQ(k.count(), 17u);
        EXPECT_EQ(k.nbytes(), 68u);
        EXPECT_EQ(k.spelling(), "__constant__ float c_Kernel[17]");
        EXPECT_EQ(k.typed(), "float32(17,) (68 bytes)");
        EXPECT_EQ(k.describe("cell_1"), "<xcuda.ModuleVariable __constant__ float c_Kernel[17]: float32(17,) (68 bytes) of module cell_1>");
        global_variable n(named(found, "d_count"), "int32", true);
        EXPECT_TRUE(n.shape().empty());
        EXPECT_EQ(n.count(), 1u);
        EXPECT_EQ(n.typed(), "int32 (4 bytes)");
        global_variable taps(named(found, "filters::taps"), "float64", true);
        EXPECT_EQ(taps.typed(), "float64(2, 3) (48 bytes)");
    }

    TEST(global_variable, a_missing_name_lists_what_the_module_has)
    {
        auto found = cell_variables();
        EXPECT_EQ(global_variable::names(found), "c_Kernel, d_count, filters::taps");
        EXPECT_EQ(global_variable::name_list(found, true), (std::vector<std::string>{"c_Kernel", "d_count", "filters::taps"}));
        EXPECT_EQ(global_variable::name_list(found, false), (std::vector<std::string>{"c_Kernel", "d_count", "taps"}));
        EXPECT_EQ(global_variable::missing_message("m", found, "c_kernel"),
                  "module 'm' has no __constant__ or __device__ variable 'c_kernel' at namespace scope; it has: "
                  "c_Kernel, d_count, filters::taps");
        EXPECT_EQ(global_variable::missing_message("m", {}, "x"),
                  "module 'm' has no __constant__ or __device__ variable 'x' at namespace scope (it has none)");
    }

    TEST(global_variable, a_value_of_another_dtype_or_size_is_refused_naming_both)
    {
        global_variable k(named(cell_variables(), "c_Kernel"), "float32", true);
        EXPECT_NO_THROW(k.check_array_dtype(true, "float32", "(17,)", 68, "float32"));
        EXPECT_EQ(xcuda_tests::message_of<xcuda::argument_type_error>([&] { k.check_array_dtype(false, "float64", "(17,)", 136, "float32"); }),
                  "'c_Kernel' is float32(17,) (68 bytes); the numpy array given is float64(17,) (136 bytes): convert it "
                  "first, for example with .astype(numpy.float32)");
        EXPECT_NO_THROW(k.check_size(17, 68));
        EXPECT_EQ(xcuda_tests::message_of<xcuda::argument_value_error>([&] { k.check_size(16, 64); }),
                  "'c_Kernel' is float32(17,) (68 bytes); the value given has 16 elements (64 bytes)");
        std::string long_text(200, 'x');
        std::string conversion = xcuda_tests::message_of<xcuda::argument_type_error>([&] { k.refuse_conversion("str", long_text, "bad"); });
        EXPECT_EQ(conversion, "'c_Kernel' is float32(17,) (68 bytes): str " + std::string(80, 'x') +
                                  " does not make values of that dtype (bad)");
    }

    TEST(global_variable, an_unknown_layout_is_a_signature_error_at_its_line)
    {
        auto found = cell_variables();
        // No dtype numpy could make: refused even with a size.
        try
        {
            global_variable v(named(found, "d_count"), "None", false);
            FAIL() << "no signature_error";
        }
        catch (const xcuda::signature_error& e)
        {
            EXPECT_EQ(e.line(), 3);
            EXPECT_NE(std::string(e.what()).find("the __device__ variable 'd_count' has a type (int) the signature reader "
                                                 "cannot work out"),
                      std::string::npos)
                << e.what();
        }
    }
}

