// Hostile input to the core (issue 28): FIFOs where files are expected, NUL bytes in cells, inputs past
// the signature reader's limits, and cache housekeeping. Each case must end at once with a clear error
// (or a miss), never block, crash or run for minutes.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <future>
#include <string>
#include <thread>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_io.hpp"
#include "disk_cache.hpp"
#include "errors.hpp"
#include "kernel_signature.hpp"
#include "parse_interrupts.hpp"
#include "private_files.hpp"

using namespace xcuda;

namespace
{
    std::string fresh_folder()
    {
        char pattern[] = "/tmp/xcuda-hostile-XXXXXX";
        const char* made = ::mkdtemp(pattern);
        return made ? made : "";
    }

    // Runs f on another thread; fails the test (instead of hanging) when it has not returned in 10 s, then
    // opens the FIFO for writing so that a reader blocked in open() comes back and the test binary can end.
    template <typename F>
    void returns_without_blocking(F f, const std::string& fifo)
    {
        auto done = std::async(std::launch::async, f);
        if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
        {
            ADD_FAILURE() << "blocked on the FIFO " << fifo;
            int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
            while (fd < 0 && done.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready)
            {
                fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
            }
            if (fd >= 0)
            {
                ::close(fd);
            }
        }
        done.get();
    }

    std::string expect_usage_error(const std::string& source, const parse_context& context = {})
    {
        try
        {
            parse_kernel_signatures(source, context);
        }
        catch (const usage_error& e)
        {
            return e.what();
        }
        ADD_FAILURE() << "no usage_error";
        return {};
    }
}

// The codec of the compile worker's messages and the cache's entries: what it writes reads back, and an
// input cut anywhere, or a length or count the input cannot hold, is refused without reading past it.
TEST(byte_io, what_is_put_reads_back_and_any_cut_or_oversized_length_is_refused)
{
    std::string out;
    xcuda::byte_io::put_u64(out, 0x0123456789abcdefULL);
    xcuda::byte_io::put_text(out, std::string("a\0b", 3));
    xcuda::byte_io::put_list(out, {"first", "", "third"});
    std::size_t at = 0;
    std::uint64_t value = 0;
    std::string text;
    std::vector<std::string> items;
    ASSERT_TRUE(xcuda::byte_io::get_u64(out, at, value));
    ASSERT_TRUE(xcuda::byte_io::get_text(out, at, text));
    ASSERT_TRUE(xcuda::byte_io::get_list(out, at, items));
    EXPECT_EQ(value, 0x0123456789abcdefULL);
    EXPECT_EQ(text, std::string("a\0b", 3));
    EXPECT_EQ(items, (std::vector<std::string>{"first", "", "third"}));
    EXPECT_EQ(at, out.size());
    for (std::size_t cut = 0; cut < out.size(); ++cut)
    {
        std::string in = out.substr(0, cut);
        std::size_t from = 0;
        bool whole = xcuda::byte_io::get_u64(in, from, value) && xcuda::byte_io::get_text(in, from, text) &&
                     xcuda::byte_io::get_list(in, from, items);
        EXPECT_FALSE(whole) << "cut at " << cut;
        EXPECT_LE(from, in.size());
    }
    std::string huge;
    xcuda::byte_io::put_u64(huge, ~0ULL);  // a count of 2^64 - 1 items, with nothing after it
    std::size_t from = 0;
    EXPECT_FALSE(xcuda::byte_io::get_list(huge, from, items));
    from = 0;
    EXPECT_FALSE(xcuda::byte_io::get_text(huge, from, text));
}

// The signature reader asks the interrupt check while it works (issue 28: an interrupt waited 27 s):
// a check saying "stop" ends a large parse with interrupted_error; one saying "go on" is asked and the
// parse completes.
TEST(parse_interrupts, a_long_parse_asks_the_check_and_stops_when_it_says_so)
{
    std::string source;
    for (int i = 0; i < 20000; ++i)
    {
        source += "struct S" + std::to_string(i) + " { float a; int b[4]; };\n";
    }
    source += "extern \"C\" __global__ void k(S7* p, int n) {}\n";
    int asked = 0;
    xcuda::parse_interrupts::set_check([&asked] {
        ++asked;
        return false;
    });
    EXPECT_EQ(xcuda::parse_kernel_signatures(source).size(), 1u);
    EXPECT_GT(asked, 2);  // 300k tokens through the expander and the parser: asked every 16384 steps
    xcuda::parse_interrupts::set_check([&asked] {
        ++asked;
        return true;
    });
    asked = 0;
    EXPECT_THROW(xcuda::parse_kernel_signatures(source), xcuda::interrupted_error);
    EXPECT_EQ(asked, 1);  // stopped at the first question
    xcuda::parse_interrupts::set_check(nullptr);
    EXPECT_EQ(xcuda::parse_kernel_signatures(source).size(), 1u);
}

TEST(private_files, a_fifo_is_refused_at_once_and_named)
{
    std::string folder = fresh_folder();
    std::string fifo = folder + "/entry.xcc";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    returns_without_blocking([&] {
        std::string bytes = "untouched";
        std::string problem;
        EXPECT_FALSE(private_files::read(fifo, bytes, &problem));
        EXPECT_EQ(bytes, "untouched");
        EXPECT_NE(problem.find("FIFO"), std::string::npos) << problem;
    }, fifo);
    ::unlink(fifo.c_str());
    ::rmdir(folder.c_str());
}

TEST(disk_cache, a_fifo_at_an_entry_path_is_a_miss_not_a_hang)
{
    std::string folder = fresh_folder();
    disk_cache cache(folder + "/cache", 1 << 20, true);
    ASSERT_TRUE(cache.enabled());
    std::string fifo = cache.path_for("key");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    returns_without_blocking([&] { EXPECT_EQ(cache.load("key"), nullptr); }, fifo);
    ::unlink(fifo.c_str());
    ::rmdir((folder + "/cache").c_str());
    ::rmdir(folder.c_str());
}

TEST(kernel_signature, an_included_fifo_is_refused_with_a_clear_message)
{
    std::string folder = fresh_folder();
    std::string fifo = folder + "/planted.h";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    parse_context context;
    context.include_dirs = {folder};
    returns_without_blocking([&] {
        std::string message = expect_usage_error("#include \"planted.h\"\n__global__ void k(int n) {}\n", context);
        EXPECT_NE(message.find("planted.h"), std::string::npos) << message;
        EXPECT_NE(message.find("a FIFO, not a regular file"), std::string::npos) << message;
    }, fifo);
    ::unlink(fifo.c_str());
    ::rmdir(folder.c_str());
}

TEST(kernel_signature, a_nul_byte_in_the_cell_is_refused_naming_its_line_and_column)
{
    std::string source = std::string("__global__ void a(int n) {}\n  int x;") + '\0' + "\n__global__ void hidden(float f) {}\n";
    std::string message = expect_usage_error(source);
    EXPECT_NE(message.find("NUL byte at line 2, column 9"), std::string::npos) << message;
}

TEST(kernel_signature, a_nul_byte_in_a_header_cell_is_refused_naming_the_header)
{
    parse_context context;
    context.headers["h.cuh"] = std::string("struct S { int a; };") + '\0' + "\n";
    std::string message = expect_usage_error("#include \"h.cuh\"\n__global__ void k(S s) {}\n", context);
    EXPECT_NE(message.find("h.cuh"), std::string::npos) << message;
    EXPECT_NE(message.find("line 1, column 21"), std::string::npos) << message;
}

// The limits: each hostile input of the issue ends in a usage_error naming the limit, well within 10 s
// (the cases ran about two minutes each before).
TEST(kernel_signature, ten_thousand_defines_are_refused_naming_the_limit)
{
    parse_context context;
    for (int i = 0; i < 10000; ++i)
    {
        context.defines.push_back("D" + std::to_string(i) + "=" + std::to_string(i));
    }
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error("__global__ void k(int n) {}\n", context);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("-D options"), std::string::npos) << message;
    EXPECT_NE(message.find("limit of 1000"), std::string::npos) << message;
}

TEST(kernel_signature, a_ten_megabyte_define_is_refused_naming_the_limit)
{
    parse_context context;
    context.defines.push_back("BIG=" + std::string(10u << 20, '1'));
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error("__global__ void k(int n) {}\n", context);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("-D option BIG="), std::string::npos) << message;
    EXPECT_NE(message.find("%%cuda_header"), std::string::npos) << message;
}

TEST(kernel_signature, a_ten_megabyte_header_name_is_refused_naming_the_limit)
{
    parse_context context;
    context.headers[std::string(10u << 20, 'h')] = "struct S {};\n";
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error("__global__ void k(int n) {}\n", context);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("header cell's name"), std::string::npos) << message;
}

// Cache housekeeping (item 11).
namespace
{
    compile_result small_result(const std::string& ptx)
    {
        compile_result r;
        r.arch = "compute_75";
        r.ptx = ptx;
        return r;
    }

    struct environment_variable
    {
        environment_variable(const char* name, const std::string& value) : m_name(name) { ::setenv(name, value.c_str(), 1); }
        ~environment_variable() { ::unsetenv(m_name); }
        const char* m_name;
    };
}

TEST(disk_cache, a_cache_size_that_is_no_number_warns_and_keeps_the_default)
{
    std::string folder = fresh_folder();
    environment_variable dir("XCUDA_CACHE_DIR", folder + "/cache");
    environment_variable size("XCUDA_CACHE_SIZE", "garbage");
    disk_cache cache = disk_cache::from_environment();
    ASSERT_TRUE(cache.enabled());
    EXPECT_NE(cache.trust_problem().find("XCUDA_CACHE_SIZE=garbage is not a size"), std::string::npos)
        << cache.trust_problem();
    cache.store("one", small_result("first"));
    cache.store("two", small_result("second"));
    EXPECT_NE(cache.load("one"), nullptr);  // a cap of 0 would have evicted it
    EXPECT_NE(cache.load("two"), nullptr);
    std::system(("rm -rf " + folder).c_str());
}

TEST(disk_cache, cache_sizes_with_suffixes_parse_and_junk_does_not)
{
    std::uint64_t bytes = 0;
    EXPECT_TRUE(disk_cache::parse_size("500M", bytes));
    EXPECT_EQ(bytes, 500ull << 20);
    EXPECT_TRUE(disk_cache::parse_size("123", bytes));
    EXPECT_EQ(bytes, 123u);
    for (const char* junk : {"garbage", "", "-1", "1.5G", "12 M", "99999999999999999999", "20000000000G", "1e9"})
    {
        EXPECT_FALSE(disk_cache::parse_size(junk, bytes)) << junk;
    }
}

TEST(disk_cache, a_cache_path_that_is_a_regular_file_turns_the_cache_off_with_a_warning)
{
    std::string folder = fresh_folder();
    std::string file = folder + "/cache";
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
    disk_cache cache(file, 1 << 20, true);
    EXPECT_FALSE(cache.enabled());
    EXPECT_NE(cache.trust_problem().find("is a regular file, not a folder"), std::string::npos) << cache.trust_problem();
    std::system(("rm -rf " + folder).c_str());
}

TEST(disk_cache, a_stale_temporary_file_is_evicted_and_a_fresh_one_kept)
{
    std::string folder = fresh_folder();
    disk_cache cache(folder + "/cache", 1 << 20, true);
    ASSERT_TRUE(cache.enabled());
    std::string stale = cache.path_for("dead") + ".tmp.99999.1";
    std::string fresh = cache.path_for("busy") + ".tmp.99999.2";
    for (const std::string& path : {stale, fresh})
    {
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::write(fd, "partial", 7), 7);
        ::close(fd);
    }
    struct timespec old_times[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, stale.c_str(), old_times, 0), 0);
    cache.store("live", small_result("ptx"));  // a store runs the eviction
    EXPECT_NE(::access(stale.c_str(), F_OK), 0) << "the stale temporary file is still there";
    EXPECT_EQ(::access(fresh.c_str(), F_OK), 0) << "a temporary file being written was removed";
    std::system(("rm -rf " + folder).c_str());
}

namespace
{
    // The bytes of the folder's entries (what the cap counts).
    std::uint64_t entry_bytes(const std::string& folder)
    {
        std::uint64_t total = 0;
        if (DIR* dir = ::opendir(folder.c_str()))
        {
            while (dirent* item = ::readdir(dir))
            {
                std::string name = item->d_name;
                struct stat st;
                if (name.size() > 4 && name.compare(name.size() - 4, 4, ".xcc") == 0 &&
                    ::stat((folder + "/" + name).c_str(), &st) == 0)
                {
                    total += static_cast<std::uint64_t>(st.st_size);
                }
            }
            ::closedir(dir);
        }
        return total;
    }

    // Keys of one length, so every entry below has the same size.
    std::string numbered_key(char owner, std::uint64_t number)
    {
        char key[32];
        std::snprintf(key, sizeof key, "%c%09llu", owner, static_cast<unsigned long long>(number));
        return key;
    }

    const compile_result& kilobyte_result()
    {
        static const compile_result result = small_result(std::string(1000, 'p'));
        return result;
    }
}

TEST(disk_cache, a_store_lists_the_folder_only_when_the_cap_or_a_32nd_of_it_is_reached)
{
    // Listing the folder and stat-ing every entry at every store costs a full cache more than a compile.
    std::string folder = fresh_folder();
    const std::uint64_t cap = 32 * 8192;
    disk_cache cache(folder + "/cache", cap, true);
    ASSERT_TRUE(cache.enabled());
    const std::uint64_t entry = disk_cache::serialize(numbered_key('a', 0), kilobyte_result()).size();
    std::uint64_t next = 0;
    cache.store(numbered_key('a', next++), kilobyte_result());
    EXPECT_EQ(cache.listings(), 1u);  // the process' first store lists
    // A 32nd of the cap (8192 bytes) stored since: the next listing, not before.
    const std::uint64_t per_listing = (cap / 32 + entry - 1) / entry;
    for (std::uint64_t i = 1; i < per_listing; ++i)
    {
        cache.store(numbered_key('a', next++), kilobyte_result());
    }
    EXPECT_EQ(cache.listings(), 1u);
    cache.store(numbered_key('a', next++), kilobyte_result());
    EXPECT_EQ(cache.listings(), 2u);
    // Past the cap: the entries stay within it after every store, and the folder is listed about once
    // per 32nd of the cap stored, not at every store.
    const std::uint64_t stores = 3 * cap / entry;
    for (std::uint64_t i = 0; i < stores; ++i)
    {
        cache.store(numbered_key('a', next++), kilobyte_result());
        ASSERT_LE(entry_bytes(folder + "/cache"), cap) << "after store " << i;
    }
    EXPECT_LE(cache.listings(), 2 + stores / (per_listing - 1) + 1);
    EXPECT_GE(cache.listings(), 2 + stores / (per_listing + 1));
    std::system(("rm -rf " + folder).c_str());
}

TEST(disk_cache, what_another_process_stores_is_evicted_within_a_32nd_of_the_cap)
{
    // Two caches on one folder stand for two kernels: `mine` listed it while it was nearly empty, then
    // `other` filled it to the cap. `mine` sees that at the latest once it has stored a 32nd of the cap.
    std::string folder = fresh_folder();
    const std::uint64_t cap = 32 * 8192;
    disk_cache mine(folder + "/cache", cap, true);
    disk_cache other(folder + "/cache", cap, true);
    mine.store(numbered_key('m', 0), kilobyte_result());
    const std::uint64_t entry = disk_cache::serialize(numbered_key('o', 0), kilobyte_result()).size();
    for (std::uint64_t i = 0; entry_bytes(folder + "/cache") + entry <= cap; ++i)
    {
        other.store(numbered_key('o', i), kilobyte_result());
    }
    const std::uint64_t per_listing = (cap / 32 + entry - 1) / entry;
    for (std::uint64_t i = 1; i <= per_listing; ++i)
    {
        mine.store(numbered_key('m', i), kilobyte_result());
        ASSERT_LE(entry_bytes(folder + "/cache"), cap + cap / 32 + entry) << "after my store " << i;
    }
    EXPECT_LE(entry_bytes(folder + "/cache"), cap);
    EXPECT_EQ(mine.listings(), 2u);
    std::system(("rm -rf " + folder).c_str());
}

TEST(disk_cache, stores_from_several_threads_keep_the_folder_within_the_cap)
{
    // Compiles on several threads store at once, into one cache and into copies of it (the compiler's
    // and the session's): the listing's bookkeeping is shared, so the folder ends within the cap and every
    // listing is counted by each copy alike.
    std::string folder = fresh_folder();
    const std::uint64_t cap = 32 * 8192;
    disk_cache cache(folder + "/cache", cap, true);
    const std::uint64_t entry = disk_cache::serialize(numbered_key('t', 0), kilobyte_result()).size();
    const std::uint64_t per_thread = 2 * cap / entry / 8 + 1;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 8; ++t)
    {
        threads.emplace_back([&, t] {
            disk_cache copy = cache;  // a copy shares the bookkeeping
            for (std::uint64_t i = 0; i < per_thread; ++i)
            {
                (t % 2 ? copy : cache).store(numbered_key(static_cast<char>('a' + t), i), kilobyte_result());
            }
        });
    }
    for (std::thread& thread : threads)
    {
        thread.join();
    }
    EXPECT_LE(entry_bytes(folder + "/cache"), cap);
    disk_cache copy = cache;
    EXPECT_EQ(copy.listings(), cache.listings());
    EXPECT_GE(cache.listings(), 2u);                      // the first store, and the cap crossed
    EXPECT_LE(cache.listings(), 8 * per_thread / 2);      // not one a store
    std::system(("rm -rf " + folder).c_str());
}

TEST(kernel_signature, sixteen_thousand_nested_structs_are_refused_naming_the_limit)
{
    std::string source;
    for (int i = 0; i < 16000; ++i)
    {
        source += "struct S" + std::to_string(i) + " { ";
    }
    source += "int x; ";
    for (int i = 0; i < 16000; ++i)
    {
        source += "}; ";
    }
    source += "\n__global__ void k(int a) {}\n";
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error(source);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("deeper than xcuda's limit of 256 levels"), std::string::npos) << message;
    EXPECT_NE(message.find("line 1 of the cell"), std::string::npos) << message;
}

TEST(kernel_signature, a_hundred_thousand_nested_template_brackets_are_refused_naming_the_limit)
{
    std::string source = "__global__ void k(A";
    for (int i = 0; i < 100000; ++i)
    {
        source += "<A";
    }
    source += std::string(100000, '>') + " a) {}\n";
    auto start = std::chrono::steady_clock::now();
    std::string message = expect_usage_error(source);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_NE(message.find("template brackets < >"), std::string::npos) << message;
}

TEST(kernel_signature, nesting_at_the_limit_still_parses)
{
    std::string source;
    for (int i = 0; i < 200; ++i)
    {
        source += "namespace N" + std::to_string(i) + " { ";
    }
    source += "__global__ void k(int a) { if (a < 3 && a > 1) { a = (((a))); } }";
    for (int i = 0; i < 200; ++i)
    {
        source += "} ";
    }
    std::vector<kernel_signature> kernels = parse_kernel_signatures(source + "\n");
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].parameters.size(), 1u);
}

// The views' parsers read what tools print (nvdisasm, cuobjdump, ncu, compute-sanitizer) and PTX: a
// bounded random run over mutations of the recorded outputs. Each must return or throw an xcuda::error
// (tool_error for an ncu page without a table), never another exception, a crash or UB. Item 9's
// `//-----` was one such input.
#include <fstream>
#include <iterator>
#include <random>

#include "code_listing.hpp"
#include "ncu_report.hpp"
#include "sanitizer_report.hpp"

namespace
{
    std::string read_file(const std::string& path)
    {
        std::ifstream in(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
}

TEST(views, mutated_tool_outputs_never_crash_or_throw_other_errors)
{
    const std::string fixtures = XCUDA_TEST_FIXTURES;
    const std::string recordings = XCUDA_TEST_RECORDINGS;
    const std::vector<std::string> seeds = {
        read_file(fixtures + "/saxpy.ptx"), read_file(fixtures + "/saxpy_cuobjdump.sass"),
        read_file(recordings + "/ncu/ncu_source_both.csv"), read_file(recordings + "/ncu/ncu_raw.csv"),
        read_file(recordings + "/ncu/ncu_details.csv"), read_file(recordings + "/sanitizer/memcheck.txt"),
        "//-----\n//---- .text.k ----\n        /*0000*/ MOV R1, c[0x0][0x28] ;\n//## File \"cell\", line 3\n"};
    const std::string alphabet = "/-#.:,\"0x123 \n\t*;()[]{}=_abcLineNoAddress";
    std::mt19937 rng(28);
    auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    for (int round = 0; round < 1500; ++round)
    {
        std::string input = seeds[pick(seeds.size())];
        if (input.size() > 4000)
        {
            std::size_t from = pick(input.size() - 4000);
            input = input.substr(from, 4000);
        }
        int edits = 1 + static_cast<int>(pick(8));
        for (int e = 0; e < edits && !input.empty(); ++e)
        {
            std::size_t at = pick(input.size());
            switch (pick(5))
            {
            case 0: input.erase(at, 1 + pick(40)); break;
            case 1: input.insert(at, 1, alphabet[pick(alphabet.size())]); break;
            case 2: input[at] = alphabet[pick(alphabet.size())]; break;
            case 3: input.insert(at, std::to_string(static_cast<long long>(rng()) * 1000003)); break;
            default: input.resize(at); break;
            }
        }
        auto run = [&](const char* what, auto parse) {
            try
            {
                parse();
            }
            catch (const xcuda::error&)
            {
            }
            catch (const std::exception& e)
            {
                ADD_FAILURE() << what << " threw " << typeid(e).name() << ": " << e.what() << "\non input:\n" << input;
            }
        };
        run("from_ptx", [&] { code_listing::from_ptx(input); });
        run("from_sass", [&] { code_listing::from_sass(input); });
        run("parse_source", [&] { ncu_report::parse_source(input); });
        run("parse_raw", [&] { ncu_report::parse_raw(input); });
        run("parse_details", [&] { ncu_report::parse_details(input); });
        run("sanitizer", [&] { sanitizer_report::parse(input, "memcheck"); });
        if (HasFailure())
        {
            break;  // one input is enough to read
        }
    }
}
