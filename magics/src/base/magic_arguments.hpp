#pragma once
// One parser for the option line of every magic (%%cuda, %%cuda_header, %cuda_timeit, %cuda_bench and
// those to come). A magic declares its options once and gets from that declaration:
//   - the same spellings everywhere: `--opt VALUE`, `--opt=VALUE`, `-o VALUE`, glued `-DNAME` where
//     declared, shell-style quoting ('...', "...", backslash);
//   - `-h` / `--help` in every magic;
//   - a usage text made from the declarations (the magic's docstring, `%%cuda?`, `-h`);
//   - a usage error of one line that names the problem and ends with a pointer to `-h`, with a
//     did-you-mean for a misspelled option.
// What follows the options is, per magic: nothing, positional words, or the rest of the line as
// written (a Python expression, quotes and all). IPython has already split a cell magic's line from
// its body and expanded {variables} in the line.
//
// Pure C++ (no Python): the binding layer turns usage_error into IPython's UsageError.

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace xcuda
{
    class magic_arguments
    {
    public:
        // What may stand after the options.
        enum class trailing
        {
            none,   // nothing
            words,  // shell words (positional arguments)
            text    // the rest of the line exactly as written
        };

        struct option
        {
            std::vector<std::string> names;  // the first is the canonical one: {"--repeat", "-r"}
            std::string value;               // the value's name in the usage ("N"); empty: a flag
            std::string help;
            bool repeatable = false;
            bool glued = false;              // a value may follow a one-letter name directly: -DN=4
        };

        struct parsed
        {
            bool help = false;
            std::map<std::string, std::vector<std::string>> values;  // by canonical name; "" for flags
            std::vector<std::string> words;     // trailing::words
            std::string text;                   // trailing::text
            std::vector<std::string> passed;    // accepted unknown options, and every word after "--"

            bool has(const std::string& name) const { return values.count(name) != 0; }
            // The last value given, or fallback.
            std::string value(const std::string& name, const std::string& fallback = "") const;
            std::vector<std::string> all(const std::string& name) const;
        };

        // magic: as the user types it ("%%cuda"); synopsis: what follows the options in the usage line.
        magic_arguments(std::string magic, std::string synopsis, std::string description);

        magic_arguments& add(option spec);
        magic_arguments& trailing_as(trailing kind, std::string hint = "");
        magic_arguments& epilog(std::string text);
        // Unknown words that start with '-' go to `passed` when accepts(word) is true (%%cuda hands
        // NVRTC's own options through); otherwise they are refused, with a did-you-mean. After a
        // bare "--" every word is passed, when an acceptor is set. takes_value(word), when given, says
        // which passed options take the next word as their value (nvcc's -I include): that word is passed
        // with it, unless it is "--" or one of this magic's own options.
        magic_arguments& pass_unknown(std::function<bool(const std::string&)> accepts, std::string what,
                                      std::function<bool(const std::string&)> takes_value = {});

        // Throws usage_error: "<magic>: <problem> (see <magic> -h)".
        parsed parse(const std::string& line) const;
        std::string usage() const;
        const std::string& magic() const noexcept { return m_magic; }

        // A usage_error message for a problem found after parsing (a bad value): same form.
        std::string problem(const std::string& text) const;
        // The integer value of an option, or fallback when absent; refuses other text and values
        // below minimum with a usage_error.
        long long integer(const parsed& p, const std::string& name, long long fallback, long long minimum) const;
        double number(const parsed& p, const std::string& name, double fallback, bool positive) const;

        // Shell-style words (quotes and backslashes), and where each word began in the line.
        struct word
        {
            std::string text;
            std::size_t begin = 0;
        };
        static std::vector<word> split_words(const std::string& line);
        static std::vector<std::string> split(const std::string& line);

    private:
        const option* find(const std::string& name) const;
        std::string suggestion(const std::string& name) const;

        std::string m_magic;
        std::string m_synopsis;
        std::string m_description;
        std::string m_epilog;
        std::vector<option> m_options;
        trailing m_trailing = trailing::none;
        std::string m_trailing_hint;
        std::function<bool(const std::string&)> m_accepts;
        std::function<bool(const std::string&)> m_takes_value;
        std::string m_passed_to;
    };
}
