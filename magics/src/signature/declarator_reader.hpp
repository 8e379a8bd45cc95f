#pragma once
// Reading declarators out of the signature parser's tokens: the bracket matching, top-level comma
// splitting and small declarator grammar that declaration_parser uses for kernel parameters, typedefs
// and the data members of records. Syntax only: what a type name stands for is the type_model's.
//
// Owns the tokens. Its readers are const and hold no state between calls; every failure is a
// signature_error naming the line, and every loop consumes at least one token.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "source_token.hpp"
#include "type_model.hpp"

namespace xcuda::cxx
{
    // A declarator as written: `const float* __restrict__ const x[] = nullptr`.
    struct declarator
    {
        bool base_const = false;
        bool base_volatile = false;
        std::vector<std::string> builtin;  // builtin type words, in written order
        std::string type_name;             // or a (qualified, templated) type name
        std::string elaborated;            // struct/class/union/enum/typename
        std::vector<pointer_level> levels;
        std::vector<std::string> dims;     // array extents
        int references = 0;
        bool pack = false;
        std::string function_pointer;      // spelling when the declarator is `R (*name)(args)`
        std::string name;

        bool has_base() const { return !builtin.empty() || !type_name.empty(); }
        std::string base_spelling() const
        {
            std::string b;
            for (const std::string& w : builtin)
            {
                b += b.empty() ? w : " " + w;
            }
            if (!elaborated.empty())
            {
                b = elaborated + " " + type_name;
            }
            else if (!type_name.empty())
            {
                b = type_name;
            }
            return b;
        }
    };

    class declarator_reader
    {
    public:
        explicit declarator_reader(std::vector<token> toks);

        // Words that qualify a declaration without changing its type (__restrict__, __device__, ...).
        static bool is_ignored_qualifier(const std::string& w);
        // Attribute-like names followed by a parenthesized argument list that is skipped whole.
        static bool is_attribute_call(const std::string& w);

    protected:
        const token* at(std::size_t i) const;
        bool punct_at(std::size_t i, const char* text) const;
        bool identifier_at(std::size_t i) const;
        int line_at(std::size_t i) const;
        // Index of the bracket that closes the one at `open`; ()[]{} must nest properly.
        std::size_t match(std::size_t open, std::size_t limit, const std::string& what) const;
        // Index of the '>' that closes the '<' at `open`, or npos if it is not a template bracket.
        std::size_t match_angle(std::size_t open, std::size_t limit) const;
        // [begin, end) split at top-level commas; angle brackets count only after a name.
        std::vector<std::pair<std::size_t, std::size_t>> split(std::size_t begin, std::size_t end, bool angles) const;
        // The largest alignas / __align__ / aligned in [begin, end), alignas(type) through `types`; 0 if none.
        std::size_t alignment_in(std::size_t begin, std::size_t end, const type_model& types, bool& unreadable) const;
        // `*p`, `q[4]` after a comma: the first declarator's base type with its own declarator.
        declarator next_declarator(const declarator& first, std::size_t begin, std::size_t end) const;
        // One declarator in [begin, end); `what` names it in error messages.
        declarator parse_declarator(std::size_t begin, std::size_t end, const std::string& what) const;
        std::size_t read_type_name(std::size_t k, std::size_t end, declarator& d, const std::string& what) const;
        std::size_t read_function_pointer(std::size_t k, std::size_t end, declarator& d,
                                          const std::string& what) const;

        std::vector<token> m_toks;
    };
}
