// Unit tests of compiling without a GPU: the %%cuda option parser (compile/cuda_cell_arguments), compile
// diagnostics, the compile caches in memory and on disk, the NVRTC compiler and the memo of its version.

#include <fstream>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "compile_cache.hpp"
#include "cuda_cell_arguments.hpp"
#include "cuda_sources.hpp"
#include "diagnostics.hpp"
#include "disk_cache.hpp"
#include "errors.hpp"
#include "nvrtc_compiler.hpp"
#include "nvrtc_library.hpp"
#include "nvrtc_version_memo.hpp"
#include "standard_headers.hpp"

namespace xcuda
{
    namespace
    {
        using xcuda_tests::saxpy_source;
    }

    TEST(magic_arguments, options_are_read_in_every_spelling)
    {
        cuda_cell_options o = cuda_cell_arguments::parse(
            "--name mod --arch=sm_90 -DN=4 -D DEBUG -I/opt/inc -I /other --std c++20 --lineinfo --fast-math --ptx "
            "-maxrregcount=32 -- --extra-device-vectorization");
        EXPECT_EQ(o.name, "mod");
        EXPECT_EQ(o.compile.arch, "sm_90");
        EXPECT_EQ(o.compile.defines, (std::vector<std::string>{"N=4", "DEBUG"}));
        EXPECT_EQ(o.compile.include_dirs, (std::vector<std::string>{"/opt/inc", "/other"}));
        EXPECT_EQ(o.compile.std, "c++20");
        EXPECT_TRUE(o.compile.lineinfo);
        EXPECT_TRUE(o.compile.fast_math);
        EXPECT_TRUE(o.show_ptx);
        EXPECT_EQ(o.compile.extra, (std::vector<std::string>{"-maxrregcount=32", "--extra-device-vectorization"}));
    }

    TEST(magic_arguments, quoted_values_keep_their_spaces)
    {
        cuda_cell_options o = cuda_cell_arguments::parse("-D 'GREETING=\"hi there\"' -I \"/a b/c\"");
        EXPECT_EQ(o.compile.defines.at(0), "GREETING=\"hi there\"");
        EXPECT_EQ(o.compile.include_dirs.at(0), "/a b/c");
    }

    TEST(magic_arguments, bad_options_say_what_was_expected)
    {
        auto message = [](const std::string& line) {
            try
            {
                cuda_cell_arguments::parse(line);
            }
            catch (const usage_error& e)
            {
                return std::string(e.what());
            }
            return std::string("no error");
        };
        EXPECT_NE(message("--arch").find("needs a value"), std::string::npos);
        EXPECT_NE(message("--arch gpu9").find("sm_XX"), std::string::npos);
        EXPECT_NE(message("--name 3x").find("identifier"), std::string::npos);
        EXPECT_NE(message("--std 17").find("c++17"), std::string::npos);
        EXPECT_NE(message("saxpy").find("unexpected word"), std::string::npos);
        EXPECT_NE(message("-D 'open").find("unterminated"), std::string::npos);
    }

    TEST(diagnostics, error_lines_come_from_the_cell_not_a_file)
    {
        std::string log = "cell(2): error: identifier \"q\" is undefined\ncell(7): warning: unused\n"
                          "cell(5): error: expected a \";\"\n";
        EXPECT_EQ(diagnostics::error_lines(log), (std::vector<int>{2, 5}));
        std::string message =
            diagnostics::format_compile_error("a\nb\nc\nd\ne\nf\n", log, {"--gpu-architecture=compute_75"}, "X");
        EXPECT_NE(message.find(">    2 | b"), std::string::npos) << message;
        EXPECT_NE(message.find("Options: --gpu-architecture=compute_75"), std::string::npos) << message;
    }

    TEST(compile_cache, keys_differ_when_anything_that_changes_the_binary_differs)
    {
        compile_options a;
        a.arch = "compute_75";
        compile_options b = a;
        b.defines.push_back("N=2");
        compile_options c = a;
        c.arch = "sm_90";
        std::string k = compile_cache::make_key("src", a, {});
        EXPECT_EQ(k, compile_cache::make_key("src", a, {}));
        EXPECT_NE(k, compile_cache::make_key("src ", a, {}));
        EXPECT_NE(k, compile_cache::make_key("src", b, {}));
        EXPECT_NE(k, compile_cache::make_key("src", c, {}));
        EXPECT_NE(k, compile_cache::make_key("src", a, {{"h.cuh", "1"}}));
        EXPECT_NE(compile_cache::make_key("src", a, {{"h.cuh", "1"}}), compile_cache::make_key("src", a, {{"h.cuh", "2"}}));
        compile_options d = a;
        d.name_expressions.push_back("scale<float>");
        EXPECT_NE(k, compile_cache::make_key("src", d, {}));
    }

    TEST(compile_cache, keys_carry_the_digest_of_the_standard_header_stand_ins)
    {
        // A changed stand-in changes the binary of every cell that includes it: its digest is in the key.
        compile_options a;
        a.arch = "compute_75";
        const std::string key = compile_cache::make_key({13, 0}, "src", a, {});
        EXPECT_NE(key.find("standard headers " + standard_headers::digest()), std::string::npos) << key.substr(0, 80);
        EXPECT_EQ(standard_headers::digest(), standard_headers::digest_of(standard_headers::all()));
    }

    TEST(standard_headers, the_digest_changes_with_any_stand_ins_text_or_name)
    {
        std::vector<standard_header> headers = standard_headers::all();
        ASSERT_GT(headers.size(), 20u);
        const std::string original = standard_headers::digest_of(headers);
        std::string changed = std::string(headers[3].text) + " ";
        headers[3].text = changed.c_str();
        EXPECT_NE(original, standard_headers::digest_of(headers));
        headers = standard_headers::all();
        headers[5].name = "renamed";
        EXPECT_NE(original, standard_headers::digest_of(headers));
    }

    TEST(standard_headers, a_stand_in_is_left_out_where_a_header_cell_or_an_include_folder_has_that_name)
    {
        const std::string folder = ::testing::TempDir() + "/xcuda_standard_headers_test";
        ::mkdir(folder.c_str(), 0700);
        std::ofstream(folder + "/cmath") << "// the user's own\n";
        EXPECT_EQ(standard_headers::for_compile({}, {}).count("cmath"), 1u);
        EXPECT_EQ(standard_headers::for_compile({}, {{"cstdint", "x"}}).count("cstdint"), 0u);
        for (const std::vector<std::string>& extra : {std::vector<std::string>{"-I" + folder},
                                                      std::vector<std::string>{"-I", folder},
                                                      std::vector<std::string>{"--include-path=" + folder}})
        {
            auto stand_ins = standard_headers::for_compile(include_folders({}, extra), {});
            EXPECT_EQ(stand_ins.count("cmath"), 0u) << extra[0];
            EXPECT_EQ(stand_ins.count("cstdint"), 1u) << extra[0];
        }
        EXPECT_EQ(standard_headers::for_compile(include_folders({folder}, {}), {}).count("cmath"), 0u);
        std::remove((folder + "/cmath").c_str());
        ::rmdir(folder.c_str());
    }

    TEST(compile_cache, least_recently_used_entries_are_dropped_past_capacity)
    {
        compile_cache cache;
        cache.set_capacity(2);
        auto result = std::make_shared<const compile_result>();
        cache.insert("a", result);
        cache.insert("b", result);
        EXPECT_NE(cache.find("a"), nullptr);  // a is now the most recent
        cache.insert("c", result);
        EXPECT_EQ(cache.find("b"), nullptr);
        EXPECT_NE(cache.find("a"), nullptr);
        EXPECT_NE(cache.find("c"), nullptr);
    }

    TEST(nvrtc_compiler, saxpy_compiles_to_ptx_with_its_entry_and_to_cubin_for_an_sm_target)
    {
        compile_options options;
        options.arch = "compute_75";
        compile_result ptx_only = nvrtc_compiler::compile(saxpy_source, options);
        EXPECT_NE(ptx_only.ptx.find(".entry saxpy"), std::string::npos);
        EXPECT_TRUE(ptx_only.cubin.empty());
        options.arch = "sm_90";
        compile_result both = nvrtc_compiler::compile(saxpy_source, options);
        EXPECT_FALSE(both.cubin.empty());
        EXPECT_NE(both.ptx.find(".target sm_90"), std::string::npos);
    }

    TEST(nvrtc_compiler, compile_errors_carry_the_log_options_and_cell_line)
    {
        compile_options options;
        options.arch = "compute_75";
        try
        {
            nvrtc_compiler::compile("extern \"C\" __global__ void f(int* x)\n{\n  x[0] = nope;\n}\n", options);
            FAIL() << "no error";
        }
        catch (const compile_error& e)
        {
            std::string message = e.what();
            EXPECT_NE(message.find("cell(3): error"), std::string::npos) << message;
            EXPECT_NE(message.find(">    3 |   x[0] = nope;"), std::string::npos) << message;
            EXPECT_NE(message.find("--gpu-architecture=compute_75"), std::string::npos) << message;
            EXPECT_EQ(message.find("/tmp"), std::string::npos) << message;
        }
    }

    TEST(nvrtc_compiler, name_expressions_give_mangled_names_of_cpp_kernels)
    {
        compile_options options;
        options.arch = "compute_75";
        options.name_expressions = {"&ns::scale"};
        compile_result result = nvrtc_compiler::compile(
            "namespace ns { __global__ void scale(float* x, float a) { x[0] *= a; } }\n", options);
        EXPECT_EQ(result.lowered_names.at("&ns::scale"), "_ZN2ns5scaleEPff");
    }

    TEST(nvrtc_compiler, toolkit_headers_are_on_the_include_path)
    {
        compile_options options;
        options.arch = "compute_75";
        EXPECT_NO_THROW(nvrtc_compiler::compile(
            "#include <cuda/std/cstdint>\nextern \"C\" __global__ void f(cuda::std::uint32_t* x) { x[0] = 1; }\n",
            options));
    }

    namespace
    {
        compile_result sample_result()
        {
            compile_result result;
            result.arch = "sm_90";
            result.ptx = ".version 9.0\n.entry k()";
            result.cubin = std::string("\x7f" "ELF\0\1binary", 12);
            result.log = "ptxas info";
            result.options = {"--gpu-architecture=sm_90", "--std=c++17"};
            result.lowered_names = {{"&ns::k", "_ZN2ns1kEv"}};
            result.milliseconds = 12.5;
            return result;
        }
    }

    TEST(disk_cache, entries_round_trip_every_field)
    {
        std::string bytes = disk_cache::serialize("the key", sample_result());
        auto back = disk_cache::deserialize(bytes, "the key");
        ASSERT_NE(back, nullptr);
        EXPECT_EQ(back->arch, "sm_90");
        EXPECT_EQ(back->cubin, sample_result().cubin);
        EXPECT_EQ(back->ptx, sample_result().ptx);
        EXPECT_EQ(back->options, sample_result().options);
        EXPECT_EQ(back->lowered_names, sample_result().lowered_names);
        EXPECT_DOUBLE_EQ(back->milliseconds, 12.5);
    }

    TEST(disk_cache, any_damage_or_another_key_is_a_miss)
    {
        std::string bytes = disk_cache::serialize("the key", sample_result());
        EXPECT_EQ(disk_cache::deserialize(bytes, "another key"), nullptr);
        for (std::size_t i = 0; i < bytes.size(); i += 7)
        {
            std::string damaged = bytes;
            damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
            EXPECT_EQ(disk_cache::deserialize(damaged, "the key"), nullptr) << "byte " << i;
        }
        for (std::size_t length = 0; length < bytes.size(); length += 5)
        {
            EXPECT_EQ(disk_cache::deserialize(bytes.substr(0, length), "the key"), nullptr) << "length " << length;
        }
        EXPECT_EQ(disk_cache::deserialize(bytes + "x", "the key"), nullptr);
    }

    TEST(disk_cache, store_then_load_in_a_private_folder)
    {
        std::string folder = ::testing::TempDir() + "xcuda-disk-cache-test/sub";
        disk_cache cache(folder, 1 << 20, true);
        ASSERT_TRUE(cache.enabled());
        struct stat st;
        ASSERT_EQ(::stat(folder.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0700u);
        cache.store("key one", sample_result());
        auto loaded = cache.load("key one");
        ASSERT_NE(loaded, nullptr);
        EXPECT_EQ(loaded->ptx, sample_result().ptx);
        EXPECT_EQ(cache.load("key two"), nullptr);
    }

    TEST(nvrtc_version_memo, a_memo_answers_only_for_the_same_search_and_the_same_file)
    {
        std::string file = ::testing::TempDir() + "xcuda-memo-libnvrtc.so.13";
        std::ofstream(file) << "a library";
        std::string text = nvrtc_version_memo::format({13, 2}, "fingerprint\n", file);
        auto version = nvrtc_version_memo::parse(text, "fingerprint\n");
        ASSERT_TRUE(version.has_value());
        EXPECT_EQ(*version, std::make_pair(13, 2));
        EXPECT_FALSE(nvrtc_version_memo::parse(text, "another search\n").has_value());
        EXPECT_FALSE(nvrtc_version_memo::parse(text.substr(0, text.size() / 2), "fingerprint\n").has_value());
        EXPECT_FALSE(nvrtc_version_memo::parse("xcuda nvrtc-version 1\nthirteen\n" + file + "\n", "").has_value());
        std::ofstream(file, std::ios::app) << " replaced by another";  // another size: another file
        EXPECT_FALSE(nvrtc_version_memo::parse(text, "fingerprint\n").has_value());
        std::remove(file.c_str());
        EXPECT_EQ(nvrtc_library::file_identity(file), "-");
    }

    TEST(nvrtc_version_memo, the_search_fingerprint_follows_the_environment)
    {
        std::string before = nvrtc_library::search_fingerprint();
        EXPECT_EQ(before, nvrtc_library::search_fingerprint());
        const char* set = std::getenv("CUDA_PATH");
        std::string saved = set ? set : "";
        ::setenv("CUDA_PATH", "/nonexistent-toolkit", 1);
        std::string other = nvrtc_library::search_fingerprint();
        if (set)
        {
            ::setenv("CUDA_PATH", saved.c_str(), 1);
        }
        else
        {
            ::unsetenv("CUDA_PATH");
        }
        EXPECT_NE(before, other);
        EXPECT_NE(other.find("/nonexistent-toolkit/lib64/libnvrtc.so.13 -"), std::string::npos) << other;
    }
}
