#pragma once
// The first pass of the signature parser: a C preprocessor good enough to find declarations.
//
// source_lexer turns the text into tokens that carry their line and whether white space came before
// them. Comments, string/char/raw-string literals and backslash continuations are consumed whole, so a
// `__global__` inside them is never seen. Preprocessor lines are taken out of the stream: #define and
// #undef become marker tokens (so macros apply from their definition on), #if 0 / #if 1 / #ifdef of a
// macro defined above are honoured, and every other condition keeps all its branches (the duplicates
// this gives are merged by declaration_parser). Linear in the size of the text.
//
// An unterminated comment or literal in code that is kept is a signature_error naming its line; in a
// dropped branch or on a directive line it is tolerated, as the preprocessor would.
//
// #include of a header the include_resolver knows (a header cell, a file of an -I folder) is read in
// place, its tokens marked with the header's file index; every header is read once per unit, as
// include guards or #pragma once would have it. Other includes (the toolkit's) are skipped.
//
// Borrows the source text and the resolver, which must outlive it. One run() per object, on one thread.

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "source_token.hpp"

namespace xcuda::cxx
{
    // Finds the text of an #include'd header for the lexer.
    class include_resolver
    {
    public:
        virtual ~include_resolver() = default;
        // The header's text (owned by the resolver) and its file index (> 0), or null when the header
        // is unknown here or was read before in this unit.
        virtual const std::string* open(const std::string& name, bool angled, int& file) = 0;
    };

    class source_lexer
    {
    public:
        explicit source_lexer(const std::string& source, include_resolver* includes = nullptr, int file = 0);

        // Appends the tokens of the source, with its define/undef markers, to `tokens`, and the macros
        // it defines to `macros`, which a define marker's `macro` indexes.
        void run(std::vector<token>& tokens, std::vector<macro_definition>& macros);

    private:
        // One #if group: whether the text around it is kept, whether this branch is kept, and
        // whether a branch known to be true was already taken (so #else is dropped).
        struct condition
        {
            bool parent_active;
            bool active;
            bool taken;
        };

        int peek(std::size_t k = 0) const;
        std::size_t splice_length() const;
        void count_lines(std::size_t begin, std::size_t end);
        bool active() const;
        bool skip_space(bool in_directive, bool lenient);
        void read_quoted(token& t, std::size_t begin, bool lenient);
        void read_raw(token& t, std::size_t begin, bool lenient);
        bool next_token(token& t, bool in_directive, bool lenient);
        std::vector<token> rest_of_line();
        int evaluate(const std::vector<token>& c) const;
        void open_condition(int value);
        void directive(std::vector<token>& tokens, std::vector<macro_definition>& macros);
        void define(std::vector<token>& tokens, std::vector<macro_definition>& macros);
        void include(std::vector<token>& tokens, std::vector<macro_definition>& macros);
        source_lexer(const std::string& source, include_resolver* includes, int file, source_lexer& parent);

        const std::string& m_src;
        std::size_t m_pos = 0;
        int m_line = 1;
        bool m_line_start = true;
        std::vector<condition> m_conditions;
        std::set<std::string> m_own_defined;
        std::set<std::string>& m_defined;  // shared with the lexers of included headers
        include_resolver* m_includes = nullptr;
        int m_file = 0;
        int m_depth = 0;
    };
}
