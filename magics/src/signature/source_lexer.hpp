#pragma once
// The first pass of the signature parser: a C preprocessor good enough to find declarations.
//
// source_lexer turns the text into tokens that carry their line and whether white space came before
// them. Comments, string/char/raw-string literals and backslash continuations are consumed whole, so a
// `__global__` inside them is never seen. Preprocessor lines are taken out of the stream: #define and
// #undef become marker tokens (so macros apply from their definition on) and conditional compilation
// is evaluated as the compiler does (#if, #ifdef, #ifndef, #elif, #elifdef, #elifndef, #else, #endif,
// defined(), integer expressions), with the object-like macros known at that point: NVRTC's predefined
// ones and the -D / -U options (given as a "<command line>" prelude, see parse_kernel_signatures), the
// cell's own and its header cells'. A name nobody defined is 0, as in the preprocessor, unless it
// could be defined where the reader does not look (a reserved name such as __FOO__ that is not one of
// NVRTC's macros it knows, or a toolkit/standard macro name after an #include the reader does not read).
//
// Where a condition cannot be decided (such a name, a function-like macro, __has_include, a macro
// defined under another undecided condition), every branch is kept and its tokens carry a doubt: an
// index into doubts(), a sentence naming the directive, its line and file and what was not known.
// declaration_parser refuses a parameter whose type comes from such tokens.
//
// An unterminated comment or literal in code that is kept is a signature_error naming its line; in a
// dropped branch or on a directive line it is tolerated, as the preprocessor would. Limits: #if groups
// nest at most signature_limits::condition_nesting deep and a condition expands to at most
// signature_limits::condition_tokens tokens (usage_error past them).
//
// #include of a header the include_resolver knows (a header cell, a file by relative path or of an -I folder) is read in
// place, its tokens marked with the header's file index; every header is read once per unit, as
// include guards or #pragma once would have it. Other includes (the toolkit's) are skipped, and noted.
//
// Borrows the source text and the resolver, which must outlive it. One run() per object, on one thread.

#include <cstddef>
#include <set>
#include <string>
#include <unordered_map>
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
        // includer: the file index of the one holding the #include (0: the cell), whose folder a quoted
        // include is looked up in first, as the preprocessor does.
        virtual const std::string* open(const std::string& name, bool angled, int& file, int includer) = 0;
        // Whether `name` was read into this unit before (open answered null for a second #include).
        virtual bool was_read(const std::string& name) const = 0;
    };

    // What the lexers of one unit (the cell, its prelude and its headers) share: the macros defined
    // so far, the doubts, and the first #include the reader did not read.
    struct preprocessor_state
    {
        struct macro
        {
            bool function_like = false;
            std::vector<token> body;  // an object-like macro's replacement
            int doubt = -1;           // defined or #undef'd under an undecided #if, or its value unknown
        };
        std::unordered_map<std::string, macro> macros;
        std::vector<std::string> doubts;
        std::string unread_header;  // "<cuda_fp16.h>", "" if none so far
    };

    class source_lexer
    {
    public:
        // `state`: shared with the lexers run before on the same unit (the prelude); null for a lexer
        // of its own. `file_name`: how the doubts name the text ("the cell", a header's name).
        explicit source_lexer(const std::string& source, include_resolver* includes = nullptr, int file = 0,
                              preprocessor_state* state = nullptr, std::string file_name = "the cell");

        // Appends the tokens of the source, with its define/undef markers, to `tokens`, and the macros
        // it defines to `macros`, which a define marker's `macro` indexes.
        void run(std::vector<token>& tokens, std::vector<macro_definition>& macros);

        // The sentences a token's doubt indexes.
        const std::vector<std::string>& doubts() const { return m_state.doubts; }

    private:
        // One #if group: whether the text around it is kept, whether this branch is kept, and
        // whether a branch known to be true was already taken (so #else is dropped).
        struct condition
        {
            bool parent_active;
            bool active;
            bool taken;        // a branch known to be taken came before (or is this one)
            int earlier_doubt; // of an undecided branch before this one, -1 if none
            int doubt;         // of this branch's tokens: its own, else the enclosing one's
            int outer_doubt;   // of the text around the group
        };
        // A condition's value: 0, 1, or undecided with the doubt saying why.
        struct decision
        {
            int value = 0;
            int doubt = -1;
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
        int current_doubt() const;
        int add_doubt(const std::string& directive, int line, const std::string& why);
        std::string unknown_name_problem(const std::string& name) const;
        void expand_condition(const std::vector<token>& in, std::vector<token>& out, std::vector<std::string>& active,
                              std::string& why, int line);
        decision evaluate(const std::string& directive, const std::vector<token>& c, int line);
        decision evaluate_defined(const std::string& directive, const std::string& name, int line);
        void open_condition(decision value);
        void next_branch(decision value);
        bool guarded_by(const std::string& macro);
        void directive(std::vector<token>& tokens, std::vector<macro_definition>& macros);
        void define(std::vector<token>& tokens, std::vector<macro_definition>& macros);
        void include(std::vector<token>& tokens, std::vector<macro_definition>& macros);
        source_lexer(const std::string& source, include_resolver* includes, int file, source_lexer& parent,
                     std::string file_name);

        const std::string& m_src;
        std::size_t m_pos = 0;
        int m_line = 1;
        bool m_line_start = true;
        std::vector<condition> m_conditions;
        preprocessor_state m_own_state;
        preprocessor_state& m_state;  // shared with the lexers of included headers
        include_resolver* m_includes = nullptr;
        int m_file = 0;
        std::string m_file_name;
        int m_base_doubt = -1;  // of the #include that read this header
        int m_depth = 0;
    };
}
