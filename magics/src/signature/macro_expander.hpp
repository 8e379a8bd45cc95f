#pragma once
// The second pass of the signature parser: the source's own macros, expanded as the preprocessor does.
//
// macro_expander expands the object-like and function-like macros of the source (with #, ## and
// __VA_ARGS__), each from its #define marker on and up to its #undef marker, rescanning an expansion
// together with what follows it. A hide set per token stops recursion; a global token budget stops
// exponential definitions: past it, tokens pass unexpanded. Macros the source does not define
// (NVRTC's predefined ones, -D options) and calls it cannot match pass as written; it reports nothing.
//
// Borrows the macro table, which must outlive it. One run() per object (it keeps the macros defined so
// far and what is left of the budget), on one thread.

#include <string>
#include <unordered_map>
#include <vector>

#include "source_token.hpp"

namespace xcuda::cxx
{
    class macro_expander
    {
    public:
        // `macros` as source_lexer::run filled them.
        explicit macro_expander(const std::vector<macro_definition>& macros);

        // The tokens with every macro of the source expanded and the define/undef markers gone.
        std::vector<token> run(std::vector<token> tokens);

    private:
        static constexpr int max_depth = 64;

        static bool hidden(const token& t, int id);
        static void hide_in(std::vector<int>& hidden, int id);
        static void restore(std::vector<token>& stack, std::vector<token>& consumed);
        void expand(std::vector<token>& stack, std::vector<token>& out, int depth, bool top);
        static bool collect_arguments(std::vector<token>& stack, std::vector<std::vector<token>>& args,
                                      std::vector<token>& consumed);
        static bool match_arity(const macro_definition& m, std::vector<std::vector<token>>& args);
        std::vector<token> substitute(const macro_definition& m, int id, const token& call,
                                      std::vector<std::vector<token>>& args, int depth);

        const std::vector<macro_definition>& m_macros;
        std::unordered_map<std::string, int> m_table;
        long m_budget = 1L << 18;  // tokens produced by all expansions together: far above any cell
    };
}
