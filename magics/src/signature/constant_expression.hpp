#pragma once
// The value of a constant expression the signature parser meets: a default argument (`= 256`,
// `= 1.0f`, `= NULL`, `= -1`, `= 2 * BLOCK` once the source's macros are expanded), an array extent
// or an alignment (`alignas(16)`, `__align__(8)`). Literals of every C++ form (hex, octal, binary,
// digit separators, suffixes, floats with exponents, characters), true/false/nullptr/NULL, unary and
// binary arithmetic, comparisons, the conditional operator, parentheses, C-style and static_cast
// casts to builtin types and pointers, and sizeof of a builtin type. Anything else (a function call,
// a variable, a type it does not know) makes the value unknown; it never throws.

#include <cstddef>
#include <string>
#include <vector>

#include "source_token.hpp"

namespace xcuda::cxx
{
    struct constant_value
    {
        enum class type
        {
            unknown,
            integer,       // `value` (and `is_unsigned` for 0xffffffffffffffffu)
            floating,      // `real`
            boolean,       // `value` is 0 or 1
            null_pointer   // NULL, nullptr, 0 cast to a pointer
        };
        type kind = type::unknown;
        long long value = 0;
        bool is_unsigned = false;
        double real = 0;

        bool known() const { return kind != type::unknown; }
    };

    // The value of the tokens [begin, end).
    constant_value evaluate_constant(const std::vector<token>& tokens, std::size_t begin, std::size_t end);

    // The same for a text (a default value as kernel_parameter keeps it).
    constant_value evaluate_constant(const std::string& text);
}
