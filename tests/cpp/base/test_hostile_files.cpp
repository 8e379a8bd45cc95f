// Hostile input to the core (issue 28) at the base layer: the byte codec of the compile worker's messages and
// the cache's entries, and private files where a FIFO is planted. Each case must end at once with a clear
// error, never block, crash or read past its input.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_io.hpp"
#include "hostile.hpp"
#include "private_files.hpp"

using namespace xcuda;
using xcuda_tests::fresh_folder;
using xcuda_tests::returns_without_blocking;

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
