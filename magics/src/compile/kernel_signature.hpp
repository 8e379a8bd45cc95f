#pragma once
// The signatures of the __global__ functions of a %%cuda cell, read from the source text alone.
//
// The launcher needs to know, before anything runs, what each kernel takes: how many arguments,
// which are device pointers, which scalar type each value must be converted to, and how many bytes it
// occupies in the argument buffer. NVRTC does not report this, so the cell's text is parsed here.
// The parser is pure C++ (no CUDA, no Python), holds no state between calls and is safe to call from
// any thread.

#include <cstddef>
#include <string>
#include <vector>

#include "errors.hpp"

namespace xcuda
{
    // Scalar kind of a value parameter, or of a pointer parameter's element type.
    enum class scalar_kind
    {
        unknown,
        boolean,
        i8,
        u8,
        i16,
        u16,
        i32,
        u32,
        i64,
        u64,
        f16,
        bf16,
        f32,
        f64
    };

    // "bool", "int8", "uint8", ..., "float16", "bfloat16", "float32", "float64", "unknown":
    // the NumPy dtype names, so the Python side can use them directly.
    const char* scalar_kind_name(scalar_kind k);
    // Bytes of one value; 0 for unknown.
    std::size_t scalar_kind_size(scalar_kind k);

    struct kernel_parameter
    {
        std::string name;          // "" when the parameter is unnamed
        std::string type;          // normalized C++ spelling: "float", "const float*", "size_t", "float**"
        std::string element_type;  // pointers: pointee without cv ("float", "float*" for float**);
                                   // values: type minus top-level const
        bool is_pointer = false;   // also true for array parameters `float x[]`
        bool is_const = false;     // pointers: the pointee is const; values: the value is declared const
        scalar_kind kind = scalar_kind::unknown;  // of the value, or of the pointee
        std::size_t size = 0;      // bytes in the argument buffer: 8 for pointers, scalar and CUDA vector
                                   // type sizes, 0 if unknown (structs, template parameters)
        std::string default_value; // text after '=' (trimmed), "" if none
    };

    struct kernel_signature
    {
        std::string name;            // unqualified: "saxpy"
        std::string qualified_name;  // with enclosing namespaces: "ns::inner::saxpy"
        std::vector<kernel_parameter> parameters;
        bool extern_c = false;       // extern "C", directly or inside an extern "C" { } block
        std::vector<std::string> template_parameters;  // {"typename T", "int N = 4"}; empty if none
        int line = 0;                // 1-based line of the kernel's name (of the definition, if any)

        bool is_template() const { return !template_parameters.empty(); }
        // "saxpy(float a, const float* x, const float* y, float* out, size_t n)"
        std::string to_string() const;

        // This template kernel instantiated as `expression` ("saxpy<float>", "ns::fill<int, 4>"): the
        // template arguments (or the parameters' defaults) replace the template parameters in each
        // parameter type, so the instance is typed like any other kernel. Its name and qualified name
        // are the expression, which is also the NVRTC name expression of the instance. Throws
        // signature_error when the expression does not instantiate this template.
        kernel_signature instantiate(const std::string& expression) const;
    };

    // Finds every __global__ function (declaration or definition) of a CUDA C++ source and parses its
    // signature, in source order; a kernel declared and later defined appears once. Throws
    // signature_error for text it cannot make sense of; never anything else, never loops forever.
    std::vector<kernel_signature> parse_kernel_signatures(const std::string& source);
}
