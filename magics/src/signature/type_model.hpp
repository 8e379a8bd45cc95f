#pragma once
// The C++ type model of the signature parser: what a type written in a kernel's parameter list stands
// for, as far as a launch cares: its scalar kind and its size in the argument buffer.
//
// Builtin types are read from their words in any order (`unsigned long long`, `long double`), sized for
// LP64 as NVRTC compiles for it. The standard and CUDA scalar names (`size_t`, `std::int32_t`, `__half`,
// `__nv_bfloat16`) and the CUDA vector and packed types (`float4`, `dim3`, `__half2`) are known by
// name, the vector types from a table of their fields, sizes and alignments as vector_types.h declares
// them (the toolkit's headers themselves are not read). What the unit declares is recorded in its
// type_model as the declaration_parser meets it: typedef and using aliases (resolving to what they
// name, pointer levels and const included), enums (their underlying type), and structs, classes and
// unions (their layout: fields, offsets, size and alignment, by the Itanium C++ ABI rules NVRTC
// follows for plain data). Anything else (a template parameter, a class template, a type whose
// declaration was not seen) resolves to its spelling alone, with no kind and no size.

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel_signature.hpp"

namespace xcuda::cxx
{
    struct pointer_level
    {
        bool is_const = false;
        bool is_volatile = false;
    };

    // What a base type name stands for once aliases are followed.
    struct resolved_type
    {
        scalar_kind kind = scalar_kind::unknown;
        std::size_t size = 0;
        std::string spelling;               // the base type after aliases
        bool base_const = false;            // const on the base inside an alias
        std::vector<pointer_level> levels;  // pointer levels inside an alias
        std::shared_ptr<const value_layout> layout;  // of the base type, when known
        std::string doubt;  // declared from tokens the reader is not sure of (token::doubt): why
        std::string handle; // "texture" or "surface": a texture or surface object (kernel_parameter::handle_object)
    };

    // The layout of a scalar kind (size and alignment alike).
    std::shared_ptr<const value_layout> scalar_layout(scalar_kind kind);
    // The layout of an 8-byte device pointer.
    std::shared_ptr<const value_layout> pointer_layout();

    // `const volatile base* const*`: the cv of the base, then the first `count` of `levels`, each a
    // `*` with its own cv.
    std::string spell(bool is_const, bool is_volatile, const std::string& base,
                      const std::vector<pointer_level>& levels, std::size_t count);

    // Element type of a pointer made of `levels` over `base`: drop the last level and the cv of
    // what remains on top.
    std::string pointee(bool is_const, bool is_volatile, const std::string& base,
                        const std::vector<pointer_level>& levels);

    // The words builtin types are made of: `unsigned`, `long`, `double`, `void`, `auto`...
    const std::set<std::string>& builtin_words();

    // Kind and size of the builtin type made of `words`, in written order. Throws signature_error naming
    // `line` for words that make no type (`short long`, `unsigned float`).
    resolved_type builtin_type(const std::vector<std::string>& words, int line);

    // The named types of one source: those every source knows and the aliases this one declares.
    // Owned by the declaration_parser that fills it, on its thread.
    class type_model
    {
    public:
        // What a possibly qualified, possibly templated type name stands for; its spelling alone, with
        // no kind and no size, when it is none of the names known here.
        resolved_type resolve_name(const std::string& name) const;

        // `name` stands for `type` from here on; a later alias of the same name replaces it. Also for
        // structs (their layout) and enums (their underlying type, spelled with the enum's name).
        void define_alias(const std::string& name, resolved_type type);
        // `namespace name = target;`: a type spelled `name::T` (or `outer::name::T` for an alias declared in
        // `outer`) is looked up as `target::T`. name and target as qualified as written, without a leading ::.
        void define_namespace_alias(const std::string& name, const std::string& target);

    private:
        // The spelling with a leading namespace alias replaced by what it names, repeatedly (an alias of an
        // alias), at most a few times: an alias naming itself stops there.
        std::string without_namespace_aliases(const std::string& name) const;

        std::unordered_map<std::string, resolved_type> m_aliases;
        std::unordered_map<std::string, std::string> m_namespace_aliases;
    };
}
