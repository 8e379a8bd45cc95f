#pragma once
// The module level of PTX, for ptx_parser: the text in tokens, the module directives (.version, .target,
// .address_size, .file, .pragma, .section), variables (.global, .const, .shared, with alignment, arrays and
// initialisers; .local and .param inside a function), .entry and .func headers with their .param lists and
// performance directives, and what is settled once the whole module is read (calls to their callees,
// dynamic shared memory after the static, reconvergence points). A function's body is read by the
// subclass (ptx_parser.cpp's reader of instructions) through body(); a body it refuses is kept as a
// refused function so that the module's other kernels still load.
//
// One object reads one module text, once, on one thread.

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    class ptx_module_reader
    {
    public:
        explicit ptx_module_reader(const std::string& text);
        virtual ~ptx_module_reader() = default;

        // The module, read to its end. Throws sim_error (invalid_ptx) for text that is not PTX as expected.
        ptx_program run();

    protected:
        struct token
        {
            enum class kind
            {
                ident,
                number,
                string,
                punct,
                end
            };
            kind what = kind::end;
            std::string text;
            int line = 0;
        };

        // A literal as written: an integer, or the bits of a 0f (f32) / 0d (f64) float.
        struct literal
        {
            char kind = 'i';  // 'i', 'f' (f32 bits), 'd' (f64 bits)
            std::uint64_t bits = 0;
        };

        // Reads a function's body, its opening brace read, up to and with its closing brace: instructions
        // go into m_program.functions[index].code, registers into m_registers.
        virtual void body(int index) = 0;

        // ---- tokens ----
        const token& peek(std::size_t ahead = 0) const
        {
            std::size_t i = std::min(m_at + ahead, m_tokens.size() - 1);
            return m_tokens[i];
        }
        const token& next()
        {
            const token& t = peek();
            if (m_at < m_tokens.size() - 1)
            {
                ++m_at;
            }
            return t;
        }
        bool accept(const char* text)
        {
            if (peek().what != token::kind::end && peek().what != token::kind::string && peek().text == text)
            {
                next();
                return true;
            }
            return false;
        }
        void expect(const char* text)
        {
            if (!accept(text))
            {
                fail("expected '" + std::string(text) + "'");
            }
        }
        [[noreturn]] void fail(const std::string& what) const
        {
            const token& t = peek();
            fail_at(t.line, what + (t.what == token::kind::end ? " at the end of the text" : ", found '" + t.text + "'"));
        }
        [[noreturn]] static void fail_at(int line, const std::string& what)
        {
            throw sim_error(sim_error::kind::invalid_ptx,
                            "the simulator cannot read this PTX" +
                                (line > 0 ? " (PTX line " + std::to_string(line) + ")" : std::string()) + ": " + what);
        }
        void skip_line(int line)
        {
            while (peek().what != token::kind::end && peek().line == line)
            {
                next();
            }
        }
        std::string identifier()
        {
            if (peek().what != token::kind::ident)
            {
                fail("expected a name");
            }
            return next().text;
        }
        std::uint64_t integer();
        static literal number(const std::string& text, int line);

        // [.align N] [.v2|.v4] .type name[N]... [= initialiser] ;  (the space is already read)
        void variable(state_space space, int function_index);
        int find_symbol(const std::string& name) const;

        std::vector<token> m_tokens;
        std::size_t m_at = 0;
        ptx_program m_program;
        bool m_extern = false;
        std::unordered_map<std::string, int> m_module_scope;
        std::unordered_map<std::string, int> m_function_scope;
        std::unordered_map<std::string, int> m_registers;
        std::vector<std::uint8_t> m_register_bits;  // by register index
        std::vector<std::tuple<std::uint32_t, std::size_t, std::string>> m_label_fixups;
        std::vector<std::tuple<int, std::uint32_t, std::string>> m_call_fixups;
        std::uint32_t m_line = 0;  // the source line and file of the last .loc, for instructions and refusals
        std::uint8_t m_file = 0;

    private:
        static std::vector<token> tokenize(const std::string& text);
        void top_level();
        int add_symbol(ptx_symbol symbol);
        std::vector<int> parameters(int function_index, bool entry);
        void variable_in_list(state_space space, int function_index);
        void function(bool entry);
        void refuse_body(int index, std::size_t opening, const sim_error& e);
    };
}
