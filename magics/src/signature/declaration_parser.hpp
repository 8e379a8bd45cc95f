#pragma once
// The third pass of the signature parser: the declarations of the __global__ functions.
//
// declaration_parser walks the expanded tokens once, keeping a scope stack (namespace, extern "C"
// block, other braces) and the start of the current declaration. At each `__global__` it reads the
// declaration around it: the template header and extern "C" before it, attributes (__launch_bounds__,
// [[...]], __attribute__((...)), unknown macro-like attributes) skipped, the name as the first
// identifier followed by its parameter list, and each parameter as a small declarator (base type, cv,
// pointer levels, name, arrays, default). typedef/using aliases, enums and the data members of
// structs, classes and unions seen on the way are recorded in a type_model (a record's layout is
// worked out when its closing brace is met), through which parameter types resolve to scalar kinds,
// sizes and layouts. A declaration and a
// later definition with the same parameter types are merged into one entry, and so are the copies of
// a kernel that source_lexer kept from the branches of an #if it could not decide.
//
// Declarators themselves are read by its base, declarator_reader. Every failure is a signature_error
// naming the line; every loop consumes at least one token. Owns its tokens and its type_model. One run() per object, on one thread.

#include <cstddef>
#include <memory>
#include <set>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "declarator_reader.hpp"
#include "kernel_signature.hpp"
#include "source_token.hpp"
#include "type_model.hpp"

namespace xcuda::cxx
{
    // One __global__ declaration or definition, before duplicates are merged.
    struct found_kernel
    {
        kernel_signature signature;
        bool definition = false;
        std::string key;  // qualified name + parameter types with top-level cv dropped
    };

    class declaration_parser : private declarator_reader
    {
    public:
        // The tokens as macro_expander left them; `files` names each token's file index ("" for the cell).
        // `doubts`: the sentences a token's doubt indexes (source_lexer::doubts).
        explicit declaration_parser(std::vector<token> toks, std::vector<std::string> files = {},
                                    std::vector<std::string> doubts = {});

        // The kernels in source order; a kernel declared and later defined appears once.
        std::vector<kernel_signature> run();
        // The namespace-scope __constant__/__device__/__managed__ variables run() met, in source order.
        const std::vector<module_variable>& variables() const { return m_variables; }

    private:
        // A data member of the record being read.
        struct member
        {
            std::string name;
            std::shared_ptr<const value_layout> type;
            std::vector<std::size_t> extents;
            std::size_t alignment = 0;  // alignas / __align__ on the member, 0 if none
        };

        struct scope
        {
            bool is_namespace = false;
            std::vector<std::string> names;
            int linkage = -1;  // 1: extern "C" { }, 0: extern "C++" { }, -1: inherited
            // struct/class/union { } or enum { }: what its closing brace defines
            bool is_record = false;
            bool is_union = false;
            bool is_enum = false;
            bool is_typedef = false;   // typedef struct { } name;
            bool unknown = false;      // a member the layout cannot be worked out for
            std::string record_name;   // "" when anonymous
            std::size_t alignment = 0; // alignas / __align__ on the record
            std::vector<std::shared_ptr<const value_layout>> bases;
            std::vector<member> members;
            resolved_type underlying;  // an enum's
            std::size_t begin = 0;     // its first token (of the statement that opens it)
            std::string doubt;         // a member or a token of it the reader is not sure of: why
            bool public_access = true; // at the current member (class: private until an access specifier)
            bool private_fields = false;  // a data member that is private or protected
        };

        // What a closing brace of a record or enum leaves for the declarators after it
        // (`} name, *pointer;`): the type and whether they are typedef names.
        struct after_type
        {
            std::size_t statement = 0;  // the token after the brace
            resolved_type type;
            bool is_typedef = false;
            bool active = false;
        };

        std::string doubt_in(std::size_t begin, std::size_t end) const;
        void open_scope(std::size_t begin, std::size_t brace);
        void record_class_template(std::size_t begin, std::size_t brace);
        resolved_type instantiate_class(const std::string& spelling) const;
        bool open_record(std::size_t begin, std::size_t brace, scope& s);
        void close_scope();
        bool is_brace_initializer(std::size_t begin, std::size_t brace) const;
        void record_member(std::size_t begin, std::size_t end);
        void declare_after_type(std::size_t end);
        void add_member(scope& record, const declarator& d, std::size_t alignment);
        std::string qualified(const std::string& name) const;
        void record_alias(std::size_t begin, std::size_t end);
        void define_alias(const declarator& d, const std::string& doubt = {});
        resolved_type resolve(const declarator& d, int line) const;
        kernel_parameter make_parameter(std::size_t begin, std::size_t end, const std::string& what) const;
        std::size_t parse_kernel(std::size_t statement, std::size_t global, std::vector<found_kernel>& found);
        // parse_kernel's parts: the template header and extern "C" before the __global__ at `global`; the
        // kernel's name and parameter list after it (attributes and attribute macros skipped); its name,
        // qualified name, line and file; its parameters; whether a body follows (a definition).
        struct kernel_name
        {
            std::size_t name = npos;
            std::size_t open = npos;   // its parameter list's '('
            std::size_t close = npos;  // and ')'
        };
        void read_kernel_prefix(std::size_t statement, std::size_t global, kernel_signature& k);
        kernel_name find_kernel_name(std::size_t global, kernel_signature& k) const;
        void name_kernel(const kernel_name& where, std::size_t global, kernel_signature& k) const;
        void read_kernel_parameters(std::size_t open, std::size_t close, kernel_signature& k) const;
        bool has_body(std::size_t close) const;
        static bool is_trailing_word(const std::string& w);
        // The statement starting at `statement` whose __constant__/__device__/__managed__ is at `at`: a
        // variable definition at namespace scope is recorded; returns where to go on (after its `;`), or
        // at + 1 for anything else (a __device__ function, a variable inside a function).
        std::size_t parse_variable(std::size_t statement, std::size_t at);
        void add_variable(const declarator& d, const std::string& space, int line, std::size_t file);
        void read_template_parameters(std::size_t begin, std::size_t end, kernel_signature& k);
        static std::vector<kernel_signature> merge(std::vector<found_kernel>& found);

        std::vector<std::string> m_files;
        std::vector<std::string> m_doubts;
        std::size_t m_close = 0;  // the closing brace close_scope is called for
        std::vector<scope> m_scopes;
        after_type m_after;
        int m_anonymous = 0;
        // A class template seen so far (`template <class T, int N> struct Matrix { ... };`): its parameters'
        // names and defaults and its tokens from `struct` to the closing brace, instantiated by substitution
        // when a parameter type names it (Matrix<float>), read by a parser of its own over those tokens.
        struct class_template
        {
            std::vector<std::string> parameters;
            std::vector<std::vector<token>> defaults;  // empty where none
            std::vector<token> body;
            bool specialized = false;  // a specialization was seen: instances are left to the compiler
        };
        std::unordered_map<std::string, class_template> m_class_templates;
        mutable std::unordered_map<std::string, resolved_type> m_instances;
        int m_instance_depth = 0;  // of the parser instantiating: nested instances stop at 8
        // Tokens all instantiations of one parse may copy together (shared with the instances' parsers):
        // past it, instances are left unknown, so a huge template named many times costs no more than a
        // cell at the token limit.
        std::shared_ptr<std::size_t> m_instance_budget = std::make_shared<std::size_t>(2000000);
        type_model m_types;  // the aliases seen so far
        std::set<std::string> m_template_names;  // of the kernel being read: they shadow aliases
        std::vector<module_variable> m_variables;
    };
}
