// base/magic_arguments: a magic's options declared once give their spellings, the help text, the text after
// them and one-line errors (the %%cuda options built on it: compile/test_compiling.cpp).

#include <gtest/gtest.h>

#include <string>

#include "errors.hpp"
#include "magic_arguments.hpp"

namespace xcuda
{
    TEST(magic_arguments, one_declaration_gives_spellings_help_trailing_text_and_one_line_errors)
    {
        magic_arguments declared("%demo", "expression", "A demo.");
        declared.add({{"-r", "--repeat"}, "N", "how often"})
            .add({{"-o"}, "", "return it"})
            .trailing_as(magic_arguments::trailing::text);
        magic_arguments::parsed p = declared.parse("--repeat=3 -o f(x, 'a b')  ");
        EXPECT_EQ(p.value("-r"), "3");
        EXPECT_TRUE(p.has("-o"));
        EXPECT_EQ(p.text, "f(x, 'a b')");  // the rest exactly as written, quotes and all
        EXPECT_EQ(declared.integer(p, "-r", 1, 1), 3);
        EXPECT_TRUE(declared.parse("-h").help);
        EXPECT_NE(declared.usage().find("-r N, --repeat"), std::string::npos) << declared.usage();
        EXPECT_NE(declared.usage().find("-h, --help"), std::string::npos);
        try
        {
            declared.parse("--repaet 3 f()");
            FAIL() << "no error";
        }
        catch (const usage_error& e)
        {
            EXPECT_EQ(std::string(e.what()), "%demo: unknown option --repaet; did you mean -r? (see %demo -h)");
        }
        EXPECT_THROW(declared.integer(declared.parse("-r x f()"), "-r", 1, 1), usage_error);
        EXPECT_THROW(declared.integer(declared.parse("-r 0 f()"), "-r", 1, 1), usage_error);
    }
}
