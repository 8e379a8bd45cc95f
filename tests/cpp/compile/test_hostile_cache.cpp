// Hostile input to the disk cache (issue 28): a FIFO at an entry's path, cache sizes that are no sizes, a
// cache path that is a file, and housekeeping (stale temporary files, the cap kept by several stores and
// processes). Each case must end at once with a miss or a warning, never block or crash.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <thread>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_cache.hpp"
#include "errors.hpp"
#include "hostile.hpp"

using namespace xcuda;
using xcuda_tests::fresh_folder;
using xcuda_tests::returns_without_blocking;

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
