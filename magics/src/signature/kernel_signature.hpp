#pragma once
// The signatures of the __global__ functions of a %%cuda cell, read from the source text alone.
//
// The launcher needs to know, before anything runs, what each kernel takes: how many arguments,
// which are device pointers, which scalar type each value must be converted to, and how many bytes it
// occupies in the argument buffer. NVRTC does not report this, so the cell's text is parsed here.
// The parser is pure C++ (no CUDA, no Python), holds no state between calls and is safe to call from
// any thread.

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
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
        f64,
        // Narrow and packed floats (issue 45, item 5), after the others so that the kinds above keep their
        // values: fp8 as ml_dtypes names them, and the packed pairs __half2 / __nv_bfloat162, which a
        // pointer's element kind is (by value they are records of two fields: kernel_parameter::layout).
        fp8_e4m3,
        fp8_e5m2,
        f16x2,
        bf16x2
    };
    // The last kind, for tables indexed by kind.
    constexpr scalar_kind last_scalar_kind = scalar_kind::bf16x2;
    // Whether a kind is a packed pair of 16-bit floats (__half2, __nv_bfloat162).
    constexpr bool is_packed_pair(scalar_kind k) { return k == scalar_kind::f16x2 || k == scalar_kind::bf16x2; }

    // "bool", "int8", "uint8", ..., "float16", "bfloat16", "float32", "float64", "unknown":
    // the NumPy dtype names, so the Python side can use them directly (bfloat16, float8_e4m3fn and
    // float8_e5m2 are ml_dtypes' names; "float16x2" / "bfloat16x2" name the packed pairs).
    const char* scalar_kind_name(scalar_kind k);
    // Bytes of one value; 0 for unknown.
    std::size_t scalar_kind_size(scalar_kind k);

    // How a value type is laid out in memory, as far as numpy needs it to make a dtype: a scalar (an
    // enum's underlying type too), a device pointer (8 bytes), or a record (struct, class, union, CUDA
    // vector type) with its fields at their offsets. size 0: not known from the source (a bit-field, a
    // virtual base, a member of unknown type, a template parameter).
    struct value_layout
    {
        struct field
        {
            std::string name;
            std::size_t offset = 0;
            std::vector<std::size_t> extents;  // `float v[2][3]`: {2, 3}
            std::shared_ptr<const value_layout> type;
        };

        scalar_kind kind = scalar_kind::unknown;  // a scalar's kind; unknown for records and pointers
        bool is_pointer = false;                  // a pointer field: 8 bytes, passed as an address
        std::size_t size = 0;
        std::size_t alignment = 0;
        std::vector<field> fields;                // a record's fields (a union's all at offset 0)
        bool private_fields = false;              // some are private or protected: code outside the
                                                  // record (the layout probe) cannot name them

        bool known() const { return size != 0; }
        bool is_record() const { return !fields.empty(); }
    };

    struct parse_context;

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
        // The layout of the value (by-value parameters) or of the pointee (single pointers), when the
        // source fixes it; null otherwise. Records and CUDA vector types get one with their fields.
        std::shared_ptr<const value_layout> layout;
        // Non-empty when the reader cannot be sure of this parameter's type (it comes from a branch of
        // an #if it could not decide, or the compiled code disagrees with the layout it read): the
        // sentence saying why. Such a parameter has no kind, size or layout, and a launch is refused.
        std::string refusal;
        // "texture" for a cudaTextureObject_t (or CUtexObject) value, "surface" for a cudaSurfaceObject_t (or
        // CUsurfObject); "" otherwise. Such a parameter is a 64-bit handle (kind u64): it takes an xcuda texture
        // or surface object, or the integer handle itself (docs/textures.md).
        std::string handle_object;
    };

    struct kernel_signature
    {
        std::string name;            // unqualified: "saxpy"
        std::string qualified_name;  // with enclosing namespaces: "ns::inner::saxpy"
        std::vector<kernel_parameter> parameters;
        bool extern_c = false;       // extern "C", directly or inside an extern "C" { } block
        std::vector<std::string> template_parameters;  // {"typename T", "int N = 4"}; empty if none
        int line = 0;                // 1-based line of the kernel's name (of the definition, if any)
        std::string file;            // "" for the cell itself, else the header it is defined in

        bool is_template() const { return !template_parameters.empty(); }
        // "saxpy(float a, const float* x, const float* y, float* out, size_t n)"
        std::string to_string() const;

        // This template kernel instantiated as `expression` ("saxpy<float>", "ns::fill<int, 4>"): the
        // template arguments (or the parameters' defaults) replace the template parameters in each
        // parameter type, so the instance is typed like any other kernel. Its name and qualified name
        // are the expression, which is also the NVRTC name expression of the instance. Throws
        // signature_error when the expression does not instantiate this template.
        kernel_signature instantiate(const std::string& expression) const;
        // The same, its parameter types read after the text of the unit it belongs to (`source` with
        // `context`, as parse_kernel_signatures reads them), in the kernel's namespace: a class template
        // instance (`Matrix<float>`), a typedef or a struct of the unit is laid out as in the unit's own
        // kernels. Falls back to the instantiation above when the unit cannot be read.
        kernel_signature instantiate(const std::string& expression, const std::string& source,
                                     const parse_context& context) const;
    };

    // What the compiled unit sees beside the cell's own text: the header cells (name -> text), the -I
    // folders (searched for #include "..." and <...> that are not header cells), the -D macros
    // ("N=4", "DEBUG"), and what decides NVRTC's predefined macros: the target (__CUDA_ARCH__ 900 for
    // sm_90 and compute_90; "" leaves its value unknown), the standard (__cplusplus), --fast-math, the
    // NVRTC version (__CUDACC_VER_MAJOR__, CUDART_VERSION; {0, 0}: unknown) and the raw options (-U,
    // -D, -G, -rdc, ... among them). The toolkit's own headers are not read: the CUDA vector types are
    // known by name, and an -I of a toolkit folder is skipped.
    struct parse_context
    {
        std::map<std::string, std::string> headers;
        std::vector<std::string> include_dirs;
        std::vector<std::string> defines;
        std::string arch;
        std::string standard;
        bool fast_math = false;
        bool relocatable = false;
        std::vector<std::string> extra;
        std::pair<int, int> nvrtc_version{0, 0};
        // The toolkit's include folders, asked for only when a header is searched for in the -I folders
        // (finding them may load NVRTC). The compile layer gives nvrtc_compiler::toolkit_include_dirs
        // (parse_context_of); null: no -I folder is the toolkit's.
        const std::vector<std::string>& (*toolkit_include_dirs)() = nullptr;
        // Text the compiler reads before the cell besides its predefined macros: what nvcc's host headers
        // give every .cu file (the compile layer's nvcc_prelude: uint, M_PI, INT_MAX). "" for none.
        std::string prelude;
    };

    // The macros NVRTC defines before the cell for this context, then the -D and -U options in order,
    // as preprocessor text ("#define __CUDA_ARCH__ 900\n..."). Names whose value the reader does not
    // know (no arch, no NVRTC version) are listed in `unknown`.
    std::string predefined_macros(const parse_context& context, std::vector<std::string>& unknown);

    // The signature reader's limits, each far beyond a real cell, so that hostile input ends in a usage
    // error within a second instead of minutes of work (issue 28).
    struct signature_limits
    {
        static constexpr std::size_t source_bytes = 16u << 20;       // the cell, and each header cell
        static constexpr std::size_t header_name_bytes = 4096;       // a %%cuda_header name
        static constexpr std::size_t defines = 1000;                 // -D options
        static constexpr std::size_t define_bytes = 64u << 10;       // one -D NAME=VALUE
        static constexpr std::size_t tokens = 2000000;               // after macro expansion
        static constexpr std::size_t nesting = 256;                  // ( [ { and template < >, and scopes
        static constexpr std::size_t condition_nesting = 256;        // #if groups inside each other
        static constexpr std::size_t condition_tokens = 65536;       // one #if condition, its macros expanded
    };

    // A __constant__, __device__ or __managed__ variable at namespace scope of a cell: what
    // module.get_global(name) reads and writes (cuModuleGetGlobal finds it by `symbol`).
    struct module_variable
    {
        std::string name;            // unqualified: "c_Kernel"
        std::string qualified_name;  // with enclosing namespaces: "filters::c_Kernel"
        std::string symbol;          // in the binary: the name, or the Itanium mangling inside a namespace
        std::string space;           // "__constant__", "__device__" or "__managed__"
        std::string type;            // the element type as written, normalized: "float", "Params", "int*"
        bool is_const = false;       // declared const (still writable from the host)
        bool is_pointer = false;     // the element is a pointer (an 8-byte device address)
        std::vector<std::size_t> extents;            // `float k[2][17]`: {2, 17}; empty for one value
        std::shared_ptr<const value_layout> layout;  // of one element; null or size 0 when unknown
        int line = 0;                // 1-based line of its name
        std::string file;            // "" for the cell itself, else the header it is declared in

        // Bytes of the whole variable; 0 when the element's layout is unknown.
        std::size_t size() const;
    };

    // Refuses (usage_error) what no compile should be given: a NUL byte in the cell or a header cell (NVRTC
    // would stop reading there while the signature reader went on, binding kernels NVRTC never compiled),
    // and inputs past the signature reader's limits (signature_limits below). The message names the line and
    // column, or the limit, and what to do. Called by parse_kernel_signatures and by compiler::compile.
    void check_compile_inputs(const std::string& source, const std::map<std::string, std::string>& headers,
                              const std::vector<std::string>& defines = {});

    // Finds every __global__ function (declaration or definition) of a CUDA C++ source, and of the
    // headers it includes, and parses its signature, in the order the compiler sees them; a kernel
    // declared and later defined appears once. Types come from every declaration of the unit: builtin
    // and CUDA types, typedef/using aliases, enums, structs, classes and unions. Throws signature_error
    // for text it cannot make sense of, usage_error for input check_compile_inputs refuses or past the
    // token and nesting limits (signature_limits); never anything else, never loops forever.
    std::vector<kernel_signature> parse_kernel_signatures(const std::string& source,
                                                          const parse_context& context = {});

    // The __constant__, __device__ and __managed__ variables at namespace scope of a source and the
    // headers it includes, in the order the compiler sees them, typed as parse_kernel_signatures types
    // parameters (the same reader). extern declarations, variable templates and __shared__ variables are
    // left out. Throws as parse_kernel_signatures.
    std::vector<module_variable> parse_module_variables(const std::string& source, const parse_context& context = {});
}
