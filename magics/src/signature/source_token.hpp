#pragma once
// The tokens of a %%cuda cell as the signature parser sees them, shared by its three passes
// (source_lexer -> macro_expander -> declaration_parser), and the small helpers all of them use.
//
// A token is a word, number, literal or punctuator of the text with its line and whether white space
// came before it, kept so that a type or a default value reads back as it was written. The lexer also
// leaves marker tokens where #define and #undef were, so that a macro applies from its definition on.
//
// Namespace xcuda::cxx holds the pieces of this C++ source reader; they are internal to
// parse_kernel_signatures (kernel_signature.hpp), not part of the core's API. Plain values: a token's
// hide set is shared, read-only, between the tokens of one macro expansion.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace xcuda::cxx
{
    // "Not found" of the readers' offsets into the source text (std::string::npos).
    inline constexpr std::size_t npos = std::string::npos;

    enum class token_kind
    {
        identifier,
        number,
        string,
        character,
        punct,
        define,  // marker: macro m_macros[macro] is defined from here on
        undef    // marker: the macro named `text` is undefined from here on
    };

    struct token
    {
        token_kind kind = token_kind::punct;
        std::string text;
        int line = 0;  // in its file
        int file = 0;  // 0: the cell; else the index of the header it came from
        bool space_before = false;
        bool paste_operator = false;  // a '##' written in a macro body
        int macro = -1;
        // Where the reader cannot be sure the compiler sees this token (it comes from a branch of an #if
        // it could not decide, or from a macro defined in one): an index into the unit's doubts (what was
        // not decided, and why), -1 when it is sure. Types read from such tokens are not given to launches.
        int doubt = -1;
        // Sorted ids of the macros that must not expand this token again; shared between the
        // tokens of one expansion, so long macro chains do not copy it per token.
        std::shared_ptr<const std::vector<int>> hidden;
    };

    struct macro_definition
    {
        std::string name;
        bool function_like = false;
        bool variadic = false;
        std::vector<std::string> parameters;
        std::vector<token> body;
        int doubt = -1;  // defined in a branch the reader could not decide (token::doubt)
    };

    inline bool is_identifier_start(int c)
    {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
    }

    inline bool is_identifier_char(int c)
    {
        return is_identifier_start(c) || (c >= '0' && c <= '9');
    }

    inline bool is_digit(int c)
    {
        return c >= '0' && c <= '9';
    }

    inline bool is_punct(const token& t, const char* text)
    {
        return t.kind == token_kind::punct && t.text == text;
    }

    inline bool is_identifier(const token& t, const char* text)
    {
        return t.kind == token_kind::identifier && t.text == text;
    }

    // Joins tokens back into text, keeping one space wherever the source had white space.
    std::string join_as_written(const std::vector<token>& toks, std::size_t begin, std::size_t end);

    // Joins tokens into a canonical type spelling: spaces only between words and after commas.
    std::string join_canonical(const std::vector<token>& toks, std::size_t begin, std::size_t end);
}
