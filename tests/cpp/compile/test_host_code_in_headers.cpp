// Unit tests of setting host code aside in the user's headers (compile/user_headers, compile/host_code): the
// lookup of quoted includes as NVRTC makes it, the renaming of includes to the names NVRTC gives the headers,
// what is blanked, and that every line keeps its number. Files in a temporary folder; no NVRTC, no GPU.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "host_code.hpp"
#include "user_headers.hpp"

namespace xcuda
{
    namespace
    {
        std::string temporary_folder()
        {
            char pattern[] = "/tmp/xcuda-user-headers-XXXXXX";
            const char* made = ::mkdtemp(pattern);
            return made ? std::string(made) : std::string();
        }

        void write(const std::string& path, const std::string& text)
        {
            ::mkdir(path.substr(0, path.find_last_of('/')).c_str(), 0700);
            std::ofstream(path) << text;
        }

        int lines(const std::string& text)
        {
            int count = 0;
            for (char c : text)
            {
                count += c == '\n';
            }
            return count;
        }
    }

    TEST(host_code, a_destructor_refused_at_its_tilde_is_set_aside_and_named_with_it)
    {
        std::string source = "struct R {\n    R() {}\n    ~R() { pop(); }\n};\n";
        set_aside_code aside = host_code::set_aside(source, {{3, 5}});
        ASSERT_EQ(aside.functions.size(), 1u);
        EXPECT_EQ(aside.functions[0].first, "~R");
        EXPECT_EQ(aside.source.find("pop"), std::string::npos);
        EXPECT_NE(aside.source.find("R() {}"), std::string::npos);
        EXPECT_EQ(lines(aside.source), lines(source));
    }

    TEST(host_code, main_stays_in_a_cell_and_is_set_aside_from_a_header)
    {
        std::string source = "int main(int argc, char** argv) {\n    return argc;\n}\n";
        EXPECT_TRUE(host_code::set_aside(source, {{1, 5}}).functions.empty());
        set_aside_code aside = host_code::set_aside(source, {{1, 5}}, true);
        ASSERT_EQ(aside.functions.size(), 1u);
        EXPECT_EQ(aside.functions[0], (std::pair<std::string, int>{"main", 1}));
        EXPECT_EQ(aside.source.find("return"), std::string::npos);
        EXPECT_EQ(lines(aside.source), lines(source));
    }

    TEST(user_headers, a_quoted_include_is_found_in_its_includers_folder_before_the_include_folders)
    {
        std::string root = temporary_folder();
        ASSERT_FALSE(root.empty());
        write(root + "/llmc/utils.h", "int a;\n");
        write(root + "/inc/utils.h", "int b;\n");
        write(root + "/inc/only.h", "int c;\n");
        std::map<std::string, std::string> cells{{"cell.cuh", "x"}};
        user_headers headers({root + "/inc"}, cells);
        EXPECT_EQ(headers.resolve("utils.h", root + "/llmc/dataloader.h"), root + "/llmc/utils.h");
        EXPECT_EQ(headers.resolve("only.h", root + "/llmc/dataloader.h"), root + "/inc/only.h");
        EXPECT_EQ(headers.resolve("missing.h", root + "/llmc/dataloader.h"), "");
        EXPECT_EQ(headers.resolve("cell.cuh", ""), "");  // a header cell is NVRTC's by name, not a file
        std::filesystem::remove_all(root);
    }

    TEST(user_headers, includes_are_renamed_to_the_names_nvrtc_gives_the_headers_and_host_code_is_blanked)
    {
        std::string root = temporary_folder();
        ASSERT_FALSE(root.empty());
        write(root + "/llmc/utils.h", "#pragma once\nvoid host_io() { fopen(); }\n__device__ int keep() { return 1; }\n");
        write(root + "/llmc/dataloader.h", "#pragma once\n#include \"utils.h\"\nint loader_count;\n");
        std::map<std::string, std::string> cells;
        user_headers headers({}, cells);
        std::string cell = "#include \"" + root + "/llmc/dataloader.h\"\n__global__ void k() {}\n";
        std::string utils = root + "/llmc/utils.h";
        set_aside_code aside = headers.set_aside(utils, {{2, 6}}, cell);
        ASSERT_EQ(aside.functions.size(), 1u);
        EXPECT_EQ(aside.functions[0].first, "host_io");
        const std::string* loader = headers.text_of(root + "/llmc/dataloader.h");
        ASSERT_NE(loader, nullptr);
        EXPECT_NE(loader->find("#include \"" + utils + "\""), std::string::npos) << *loader;
        EXPECT_EQ(headers.text_of(utils)->find("fopen"), std::string::npos);
        EXPECT_NE(headers.text_of(utils)->find("__device__ int keep()"), std::string::npos);
        EXPECT_EQ(lines(*headers.text_of(utils)), 3);
        EXPECT_TRUE(headers.set_aside(root + "/not/a/users.h", {{1, 1}}, cell).functions.empty());
        EXPECT_EQ(headers.reachable(cell).size(), 2u);
        std::filesystem::remove_all(root);
    }

    TEST(user_headers, only_directives_are_followed_wherever_the_hash_is_on_the_line)
    {
        std::string root = temporary_folder();
        ASSERT_FALSE(root.empty());
        for (const char* name : {"a.h", "b.h", "c.h", "d.h", "e.h", "f.h"})
        {
            write(root + "/" + name, name == std::string("a.h") ? "#pragma once\n#include \"f.h\"\n" : "int x;\n");
        }
        std::string cell = "#include \"" + root + "/a.h\"\n" +                            // the first character
                           "int x = 1; // # include \"" + root + "/b.h\" in a comment\n" +  // '#' not first
                           "const char* s = \"#include \\\"" + root + "/c.h\\\"\";\n" +      // '#' in a string
                           "  \t#  include \"" + root + "/d.h\"\n" +                       // blanks around '#'
                           "#include \"" + root + "/e.h\"";                                // no newline at the end
        std::map<std::string, std::string> cells;
        user_headers headers({}, cells);
        std::map<std::string, std::string> files = headers.reachable(cell);
        std::string found;
        for (const auto& [name, text] : files)
        {
            found += name.substr(root.size() + 1) + " ";
        }
        EXPECT_EQ(found, "a.h d.h e.h f.h ");  // f.h from a.h's folder
        EXPECT_NE(files[root + "/a.h"].find("#include \"" + root + "/f.h\""), std::string::npos) << files[root + "/a.h"];
        std::filesystem::remove_all(root);
    }
}
