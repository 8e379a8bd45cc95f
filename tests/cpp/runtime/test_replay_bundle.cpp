// The replay bundle (runtime/replay_bundle), the folder a launch is replayed from under ncu or
// compute-sanitizer, without a GPU: its round trip and its privacy rules, the pointer regions, module
// variables and the cooperative flag.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "errors.hpp"
#include "replay_bundle.hpp"

using namespace xcuda;

namespace
{
    mode_t mode_of(const std::string& path)
    {
        struct stat st;
        return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
    }

    // A bundle of a saxpy-like launch: a scalar, two pointers into one region, one into another.
    replay_bundle sample_bundle()
    {
        replay_bundle b;
        b.symbol = "_Z5saxpyfPKfPfm";
        b.kernel_name = "saxpy";
        b.device = 1;
        b.dims.grid = {4, 2, 1};
        b.dims.block = {256, 1, 1};
        b.dims.shared_mem = 128;
        b.cubin = std::string("\x7f" "ELF cubin bytes\0with a zero", 28);
        b.arguments = {std::string("\x00\x00\x80\x3f", 4), std::string(8, '\0'), std::string(8, '\0'), std::string(8, '\0')};
        std::vector<std::uint64_t> starts =
            b.place_pointers({{1, 0x1000, 64}, {2, 0x1010, 16}, {3, 0x9000, 32}});
        EXPECT_EQ(starts, (std::vector<std::uint64_t>{0x1000, 0x9000}));
        b.regions[0].contents = std::string(64, 'a');
        b.regions[1].initialised = false;
        return b;
    }
}

TEST(replay_bundle, overlapping_pointers_share_a_region_and_keep_their_offsets)
{
    replay_bundle b;
    // x and a view 16 bytes into it; y apart; an empty array and a null pointer get no region.
    b.place_pointers({{0, 0x2000, 100}, {1, 0x2010, 200}, {2, 0x8000, 8}, {3, 0x5000, 0}, {4, 0, 0}});
    ASSERT_EQ(b.regions.size(), 2u);
    EXPECT_EQ(b.regions[0].bytes, 0x10u + 200u);  // spans both
    EXPECT_EQ(b.regions[1].bytes, 8u);
    ASSERT_EQ(b.pointers.size(), 3u);
    EXPECT_EQ(b.pointers[0].argument, 0u);
    EXPECT_EQ(b.pointers[0].region, 0u);
    EXPECT_EQ(b.pointers[0].offset, 0u);
    EXPECT_EQ(b.pointers[1].offset, 0x10u);
    EXPECT_EQ(b.pointers[2].region, 1u);
    // Touching but not overlapping ranges are two allocations, as in the session.
    replay_bundle touching;
    touching.place_pointers({{0, 0x100, 16}, {1, 0x110, 16}});
    EXPECT_EQ(touching.regions.size(), 2u);
}

TEST(replay_bundle, a_written_bundle_reads_back_the_same)
{
    replay_bundle written = sample_bundle();
    std::string folder = replay_bundle::make_folder();
    written.write(folder);
    EXPECT_EQ(mode_of(folder), 0700u);
    EXPECT_EQ(mode_of(folder + "/launch"), 0600u);
    EXPECT_EQ(mode_of(folder + "/module.cubin"), 0600u);
    EXPECT_EQ(mode_of(folder + "/region-0.bin"), 0600u);
    EXPECT_NE(::access((folder + "/region-1.bin").c_str(), F_OK), 0);  // uninitialised: no file

    replay_bundle read = replay_bundle::read(folder);
    EXPECT_EQ(read.symbol, written.symbol);
    EXPECT_EQ(read.kernel_name, "saxpy");
    EXPECT_EQ(read.device, 1);
    EXPECT_EQ(read.dims.grid, written.dims.grid);
    EXPECT_EQ(read.dims.block, written.dims.block);
    EXPECT_EQ(read.dims.shared_mem, 128u);
    EXPECT_EQ(read.cubin, written.cubin);  // binary, zero byte included
    EXPECT_EQ(read.arguments, written.arguments);
    ASSERT_EQ(read.regions.size(), 2u);
    EXPECT_EQ(read.regions[0].contents, std::string(64, 'a'));
    EXPECT_FALSE(read.regions[1].initialised);
    EXPECT_EQ(read.regions[1].bytes, 32u);
    ASSERT_EQ(read.pointers.size(), 3u);
    EXPECT_EQ(read.pointers[1].offset, 0x10u);
    EXPECT_EQ(read.describe(), "saxpy[grid=(4, 2, 1), block=(256, 1, 1), shared_mem=128] on device 1, 2 buffers (96 B)");
    replay_bundle::remove_folder(folder);
    EXPECT_NE(::access(folder.c_str(), F_OK), 0);
}

TEST(replay_bundle, a_folder_or_file_others_could_write_is_refused)
{
    replay_bundle written = sample_bundle();
    std::string folder = replay_bundle::make_folder();
    written.write(folder);
    ::chmod((folder + "/module.cubin").c_str(), 0666);
    try
    {
        replay_bundle::read(folder);
        ADD_FAILURE() << "a world-writable CUBIN was read";
    }
    catch (const usage_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("module.cubin is missing, or is not a private file"), std::string::npos)
            << e.what();
    }
    ::chmod((folder + "/module.cubin").c_str(), 0600);
    ::chmod(folder.c_str(), 0777);
    EXPECT_THROW(replay_bundle::read(folder), usage_error);
    ::chmod(folder.c_str(), 0700);
    // A file planted under a bundle's name is not written through.
    EXPECT_THROW(written.write(folder), tool_error);
    replay_bundle::remove_folder(folder);
}

TEST(replay_bundle, a_malformed_manifest_says_which_line)
{
    std::string folder = replay_bundle::make_folder();
    sample_bundle().write(folder);
    std::string manifest = folder + "/launch";
    {
        std::ofstream out(manifest, std::ios::app);
        out << "pointer 9 0 0\n";
    }
    EXPECT_THROW(replay_bundle::read(folder), usage_error);
    {
        std::ofstream out(manifest, std::ios::trunc);
        out << "xcuda-replay 1\nkernel k\ngrid 1 x 1\n";
    }
    try
    {
        replay_bundle::read(folder);
        ADD_FAILURE() << "a malformed grid was read";
    }
    catch (const usage_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    }
    replay_bundle::remove_folder(folder);
}

TEST(replay_bundle, module_variables_and_the_cooperative_flag_read_back)
{
    // A kernel that reads a __constant__ table, or syncs its grid, replays wrongly without them.
    replay_bundle written = sample_bundle();
    written.globals = {{"c_Kernel", std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8)},
                       {"_ZN6tables7d_tableE", std::string(16, '\x07')}};
    written.cooperative = true;
    std::string folder = replay_bundle::make_folder();
    written.write(folder);
    EXPECT_EQ(mode_of(folder + "/global-1.bin"), 0600u);
    replay_bundle read = replay_bundle::read(folder);
    ASSERT_EQ(read.globals.size(), 2u);
    EXPECT_EQ(read.globals[0].symbol, "c_Kernel");
    EXPECT_EQ(read.globals[0].contents, written.globals[0].contents);  // binary, zero bytes included
    EXPECT_EQ(read.globals[1].symbol, "_ZN6tables7d_tableE");
    EXPECT_EQ(read.globals[1].contents, std::string(16, '\x07'));
    EXPECT_TRUE(read.cooperative);
    EXPECT_FALSE(replay_bundle::read([&] {
                     replay_bundle plain = sample_bundle();
                     std::string other = replay_bundle::make_folder();
                     plain.write(other);
                     return other;
                 }()).cooperative);
    // A variable's file that is not the size its record says is refused, naming the line.
    {
        std::ofstream out(folder + "/global-1.bin", std::ios::trunc | std::ios::binary);
        out << "short";
    }
    try
    {
        replay_bundle::read(folder);
        ADD_FAILURE() << "a global file of the wrong size was read";
    }
    catch (const usage_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("global-1.bin has 5 bytes, the variable 16"), std::string::npos) << e.what();
    }
    replay_bundle::remove_folder(folder);
}

TEST(replay_bundle, launch_attributes_read_back_and_bad_ones_are_refused_by_line)
{
    // kernel.configure(..., cluster=, priority=, programmatic=): a replay without them would be another launch.
    replay_bundle written = sample_bundle();
    written.dims.grid = {4, 2, 1};
    written.dims.cluster = {2, 2, 1};
    written.dims.priority = -3;
    written.dims.has_priority = true;
    written.dims.programmatic = true;
    std::string folder = replay_bundle::make_folder();
    written.write(folder);
    replay_bundle read = replay_bundle::read(folder);
    EXPECT_EQ(read.dims.cluster, (std::array<unsigned, 3>{2, 2, 1}));
    EXPECT_TRUE(read.dims.has_priority);
    EXPECT_EQ(read.dims.priority, -3);
    EXPECT_TRUE(read.dims.programmatic);
    EXPECT_NE(read.describe().find("cluster=(2, 2, 1)"), std::string::npos) << read.describe();
    replay_bundle plain = replay_bundle::read([&] {
        std::string other = replay_bundle::make_folder();
        sample_bundle().write(other);
        return other;
    }());
    EXPECT_FALSE(plain.dims.has_attributes());
    for (const char* bad : {"cluster 2 0 1", "cluster 2 1", "cluster 4096 1 1", "priority high", "programmatic 2"})
    {
        {
            std::ofstream out(folder + "/launch", std::ios::trunc);
            out << "xcuda-replay 1\nkernel k\n" << bad << "\n";
        }
        try
        {
            replay_bundle::read(folder);
            ADD_FAILURE() << "'" << bad << "' was read";
        }
        catch (const usage_error& e)
        {
            EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
        }
    }
    replay_bundle::remove_folder(folder);
}
