// Unit tests of how numpy arrays travel: the registration cache's bookkeeping (with fake register and
// unregister hooks that record the calls, so no GPU is needed) and the transfer settings. The rules
// under test are in runtime/host_registration_cache.hpp: whole inner pages only, an entry holds its
// owner until it is unregistered, nothing in use is unregistered, the limits, and the policies. The copy
// pool, host_pages and page_preparer are in test_copy_pool.cpp.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/mman.h>

#include <gtest/gtest.h>

#include "errors.hpp"
#include "expect_error.hpp"
#include "host_registration_cache.hpp"
#include "transfer_report.hpp"
#include "transfer_settings.hpp"
#include "cuda_session.hpp"

namespace xcuda
{
    namespace
    {
        constexpr std::size_t page = 4096;
        constexpr std::size_t MiB = 1u << 20;

        // An owner whose abandonment the test decides; counts its own destruction.
        struct test_owner : host_memory_owner
        {
            explicit test_owner(int* destroyed, const void* id = nullptr) : destroyed(destroyed), id(id) {}
            ~test_owner() override { ++*destroyed; }
            bool abandoned() const noexcept override { return gone; }
            const void* identity() const noexcept override { return id ? id : this; }
            int* destroyed;
            const void* id;
            bool gone = false;
        };

        struct calls
        {
            std::vector<std::pair<char*, std::size_t>> registered;
            std::vector<std::pair<char*, std::size_t>> unregistered;
            bool refuse = false;
            // At each unregistration: how many owners had been destroyed by then (must not include the entry's).
            std::vector<int> destroyed_at_unregister;
            int* destroyed = nullptr;
        };

        host_registration_cache make_cache(calls& log, std::size_t max_bytes = 64 * MiB, std::size_t max_entries = 8)
        {
            host_registration_cache::limits limits;
            limits.max_bytes = max_bytes;
            limits.max_entries = max_entries;
            limits.page = page;
            limits.min_bytes = MiB;
            return host_registration_cache(
                host_registration_cache::hooks{
                    [&log](void* begin, std::size_t bytes) {
                        if (log.refuse)
                        {
                            return false;
                        }
                        log.registered.emplace_back(static_cast<char*>(begin), bytes);
                        return true;
                    },
                    [&log](void* begin, std::size_t bytes) {
                        log.unregistered.emplace_back(static_cast<char*>(begin), bytes);
                        log.destroyed_at_unregister.push_back(log.destroyed ? *log.destroyed : 0);
                    }},
                limits);
        }

        // A page-aligned block of host memory for addresses (never touched by the cache).
        struct block
        {
            explicit block(std::size_t bytes) : bytes(bytes) { data = static_cast<char*>(std::aligned_alloc(page, bytes)); }
            ~block() { std::free(data); }
            char* data;
            std::size_t bytes;
        };

        using policy = host_registration_cache::policy;
    }

    TEST(RegistrationCache, RegistersOnlyTheWholePagesInsideTheRange)
    {
        calls log;
        auto cache = make_cache(log);
        block memory(8 * MiB);
        int destroyed = 0;
        char* start = memory.data + 100;  // not page aligned: the first partial page is left out
        std::size_t bytes = 4 * MiB + 5;  // ends inside a page: that partial page is left out too
        auto lease = cache.acquire(start, bytes, std::make_shared<test_owner>(&destroyed), policy::cached);
        ASSERT_TRUE(lease);
        ASSERT_EQ(log.registered.size(), 1u);
        EXPECT_EQ(log.registered[0].first, memory.data + page);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(lease.begin()) % page, 0u);
        EXPECT_GE(lease.begin(), start);
        EXPECT_LE(lease.begin() + lease.bytes(), start + bytes);
        EXPECT_EQ(lease.bytes(), (4 * MiB + 100 + 5) / page * page - page);
    }

    TEST(RegistrationCache, ASecondCopyOfTheSameMemoryIsAHitAndASliceInsideItToo)
    {
        calls log;
        auto cache = make_cache(log);
        block memory(8 * MiB);
        int destroyed = 0;
        auto owner = std::make_shared<test_owner>(&destroyed);
        cache.acquire(memory.data, 8 * MiB, owner, policy::cached).reset();
        auto again = cache.acquire(memory.data, 8 * MiB, owner, policy::cached);
        auto slice = cache.acquire(memory.data + 3 * MiB + 17, 2 * MiB, owner, policy::cached);
        EXPECT_TRUE(again);
        EXPECT_TRUE(slice);
        EXPECT_EQ(log.registered.size(), 1u);
        EXPECT_EQ(cache.stats().hits, 2u);
        EXPECT_TRUE(cache.contains(memory.data + MiB, MiB));
        // The slice's lease is the slice's own whole pages, inside it, not the entry's start: the copy's
        // head (lease.begin() - start) must not underflow (it did, and copied past the device allocation).
        char* slice_start = memory.data + 3 * MiB + 17;
        EXPECT_EQ(slice.begin(), memory.data + 3 * MiB + page);
        EXPECT_GE(slice.begin(), slice_start);
        EXPECT_LE(slice.begin() + slice.bytes(), slice_start + 2 * MiB);
        EXPECT_EQ(slice.bytes(), 2 * MiB - page);
    }

    TEST(RegistrationCache, AnAbandonedOwnerIsUnregisteredBeforeItIsReleased)
    {
        calls log;
        int destroyed = 0;
        log.destroyed = &destroyed;
        auto cache = make_cache(log);
        block memory(8 * MiB);
        auto owner = std::make_shared<test_owner>(&destroyed);
        std::weak_ptr<test_owner> watch = owner;
        cache.acquire(memory.data, 8 * MiB, owner, policy::cached).reset();
        owner.reset();
        ASSERT_FALSE(watch.expired()) << "the cache must keep the memory's owner while it is registered";
        cache.sweep();
        EXPECT_TRUE(log.unregistered.empty()) << "unregistered although its array is still used";
        watch.lock()->gone = true;  // the user dropped every array viewing the memory
        cache.sweep();
        ASSERT_EQ(log.unregistered.size(), 1u);
        EXPECT_EQ(log.destroyed_at_unregister[0], 0) << "the owner went before the memory was unregistered";
        EXPECT_TRUE(watch.expired());
        EXPECT_EQ(destroyed, 1);
        EXPECT_EQ(cache.stats().abandoned, 1u);
        EXPECT_EQ(cache.stats().entries, 0u);
    }

    TEST(RegistrationCache, NothingInUseIsUnregistered)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log, 8 * MiB, 8);
        block memory(32 * MiB);
        auto first_owner = std::make_shared<test_owner>(&destroyed);
        auto in_use = cache.acquire(memory.data, 8 * MiB, first_owner, policy::cached);
        ASSERT_TRUE(in_use);
        first_owner->gone = true;
        cache.sweep();
        EXPECT_TRUE(log.unregistered.empty()) << "a range a copy still uses was unregistered";
        // The limits cannot make room either: the second array is staged.
        auto second = cache.acquire(memory.data + 16 * MiB, 8 * MiB, std::make_shared<test_owner>(&destroyed),
                                    policy::cached);
        EXPECT_FALSE(second);
        EXPECT_TRUE(log.unregistered.empty());
        in_use.reset();
        cache.sweep();
        EXPECT_EQ(log.unregistered.size(), 1u);
    }

    TEST(RegistrationCache, TheLimitsEvictTheLeastRecentlyUsed)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log, 20 * MiB, 8);
        block memory(64 * MiB);
        std::vector<std::shared_ptr<test_owner>> owners;
        for (int i = 0; i < 3; ++i)
        {
            owners.push_back(std::make_shared<test_owner>(&destroyed));
            cache.acquire(memory.data + i * 16 * MiB, 8 * MiB, owners.back(), policy::cached).reset();
        }
        // 3 x 8 MiB under a 20 MiB limit: the first (least recently used) went to make room for the third.
        ASSERT_EQ(log.unregistered.size(), 1u);
        EXPECT_EQ(log.unregistered[0].first, memory.data);
        EXPECT_EQ(cache.stats().evictions, 1u);
        EXPECT_LE(cache.stats().bytes, 20 * MiB);
        // Larger than the whole limit: never registered.
        EXPECT_FALSE(cache.acquire(memory.data + 32 * MiB, 24 * MiB, owners[0], policy::cached));

        calls few;
        auto by_count = make_cache(few, 1024 * MiB, 2);
        for (int i = 0; i < 3; ++i)
        {
            by_count.acquire(memory.data + i * 16 * MiB, 8 * MiB, owners[static_cast<std::size_t>(i)], policy::cached).reset();
        }
        EXPECT_EQ(by_count.stats().entries, 2u);
    }

    TEST(RegistrationCache, SecondUseStagesTheFirstCopyAndRegistersTheSecond)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log);
        block memory(16 * MiB);
        auto owner = std::make_shared<test_owner>(&destroyed);
        EXPECT_FALSE(cache.acquire(memory.data, 8 * MiB, owner, policy::second_use));
        EXPECT_TRUE(log.registered.empty());
        // Another object at the same address is not the same array: staged again.
        auto other = std::make_shared<test_owner>(&destroyed);
        EXPECT_FALSE(cache.acquire(memory.data, 8 * MiB, other, policy::second_use));
        EXPECT_TRUE(cache.acquire(memory.data, 8 * MiB, other, policy::second_use));
        EXPECT_EQ(log.registered.size(), 1u);
        EXPECT_EQ(cache.stats().staged_first_use, 2u);
    }

    TEST(RegistrationCache, OneCallsCopyInAndBackAreOneUse)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log);
        block memory(16 * MiB);
        auto owner = std::make_shared<test_owner>(&destroyed);
        // A launch copies the array in and back: one use, both staged.
        std::uint64_t first_call = cache.begin_use();
        EXPECT_FALSE(cache.acquire(memory.data, 8 * MiB, owner, policy::second_use, first_call));
        EXPECT_FALSE(cache.acquire(memory.data, 8 * MiB, owner, policy::second_use, first_call));
        EXPECT_TRUE(log.registered.empty()) << "a new array was registered for its copy back";
        EXPECT_EQ(cache.stats().staged_same_use, 1u);
        // The next launch with the same array is its second use: registered, and the copy back hits.
        std::uint64_t second_call = cache.begin_use();
        EXPECT_NE(second_call, first_call);
        EXPECT_NE(second_call, 0u);
        auto copy_in = cache.acquire(memory.data, 8 * MiB, owner, policy::second_use, second_call);
        ASSERT_TRUE(copy_in);
        EXPECT_TRUE(cache.acquire(memory.data, 8 * MiB, owner, policy::second_use, second_call));
        EXPECT_EQ(log.registered.size(), 1u);
        EXPECT_EQ(cache.stats().hits, 1u);
        // Copies without a token are each a use of their own (copy_from, then copy_to_host).
        block other(16 * MiB);
        auto second_owner = std::make_shared<test_owner>(&destroyed);
        EXPECT_FALSE(cache.acquire(other.data, 8 * MiB, second_owner, policy::second_use));
        EXPECT_TRUE(cache.acquire(other.data, 8 * MiB, second_owner, policy::second_use));
    }

    TEST(RegistrationCache, NewArraysEveryCallAreNeverRegistered)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log);
        block memory(64 * MiB);
        // The tutorial with new arrays every call: x and y copied in, out copied in and back, then dropped;
        // the allocator hands out the same addresses again.
        for (int call = 0; call < 6; ++call)
        {
            std::vector<std::shared_ptr<test_owner>> owners;
            std::uint64_t use = cache.begin_use();
            for (int array = 0; array < 3; ++array)
            {
                // Each a new object (a reused identity is the same-array case, tested above).
                auto id = reinterpret_cast<const void*>(std::uintptr_t(0x1000 + call * 16 + array));
                owners.push_back(std::make_shared<test_owner>(&destroyed, id));
                cache.acquire(memory.data + array * 16 * MiB, 8 * MiB, owners.back(), policy::second_use, use).reset();
            }
            cache.acquire(memory.data + 32 * MiB, 8 * MiB, owners.back(), policy::second_use, use).reset();
            for (auto& owner : owners)
            {
                owner->gone = true;
            }
            cache.sweep();
        }
        EXPECT_TRUE(log.registered.empty()) << log.registered.size() << " registrations for arrays used once";
        EXPECT_EQ(cache.stats().staged_same_use, 6u);
    }

    TEST(RegistrationCache, CallsOnSeveralThreadsEachHaveTheirOwnUse)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log, 256 * MiB, 64);
        constexpr int threads = 8;
        block memory(threads * 16 * MiB);
        std::vector<std::shared_ptr<test_owner>> owners;
        for (int t = 0; t < threads; ++t)
        {
            owners.push_back(std::make_shared<test_owner>(&destroyed));
        }
        std::vector<std::vector<std::uint64_t>> tokens(threads);
        std::vector<int> registered_at(threads, -1);
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t)
        {
            workers.emplace_back([&, t] {
                char* mine = memory.data + t * 16 * MiB;
                for (int call = 0; call < 20; ++call)
                {
                    std::uint64_t use = cache.begin_use();
                    tokens[t].push_back(use);
                    auto in = cache.acquire(mine, 8 * MiB, owners[t], policy::second_use, use);
                    auto back = cache.acquire(mine, 8 * MiB, owners[t], policy::second_use, use);
                    if (in && registered_at[t] < 0)
                    {
                        registered_at[t] = call;
                    }
                    EXPECT_EQ(bool(in), bool(back)) << "thread " << t << ", call " << call;
                }
            });
        }
        for (auto& worker : workers)
        {
            worker.join();
        }
        std::vector<std::uint64_t> all;
        for (int t = 0; t < threads; ++t)
        {
            EXPECT_EQ(registered_at[t], 1) << "thread " << t << ": its array's second call registers it";
            all.insert(all.end(), tokens[t].begin(), tokens[t].end());
        }
        std::sort(all.begin(), all.end());
        EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "two calls were given one token";
        EXPECT_EQ(log.registered.size(), std::size_t(threads));
        EXPECT_EQ(cache.stats().staged_same_use, std::size_t(threads));
    }

    TEST(RegistrationCache, SecondUseStopsRegisteringARangeWhoseArraysAreUsedOnce)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log);
        block memory(16 * MiB);
        // A loop that makes a new array at the same address each time and copies it twice.
        for (int i = 0; i < 5; ++i)
        {
            auto owner = std::make_shared<test_owner>(&destroyed);
            cache.acquire(memory.data, 8 * MiB, owner, policy::second_use).reset();
            cache.acquire(memory.data, 8 * MiB, owner, policy::second_use).reset();
            owner->gone = true;
        }
        cache.sweep();
        EXPECT_EQ(log.registered.size(), 1u) << "each new array paid for a registration it used once";
    }

    TEST(RegistrationCache, PerCopyRegistrationsEndWithTheirLease)
    {
        calls log;
        auto cache = make_cache(log);
        block memory(8 * MiB);
        {
            auto lease = cache.acquire(memory.data, 8 * MiB, nullptr, policy::per_copy);
            ASSERT_TRUE(lease);
            EXPECT_TRUE(log.unregistered.empty());
        }
        EXPECT_EQ(log.unregistered.size(), 1u);
        EXPECT_EQ(cache.stats().entries, 0u);
        // Without an owner nothing can be kept: cached and second_use stage.
        EXPECT_FALSE(cache.acquire(memory.data, 8 * MiB, nullptr, policy::cached));
        EXPECT_FALSE(cache.acquire(memory.data, 8 * MiB, nullptr, policy::second_use));
    }

    TEST(RegistrationCache, ARefusedRangeIsStagedAndNotTriedAgain)
    {
        calls log;
        log.refuse = true;
        int destroyed = 0;
        auto cache = make_cache(log);
        block memory(8 * MiB);
        auto owner = std::make_shared<test_owner>(&destroyed);
        EXPECT_FALSE(cache.acquire(memory.data, 8 * MiB, owner, policy::cached));
        log.refuse = false;
        EXPECT_FALSE(cache.acquire(memory.data, 8 * MiB, owner, policy::cached));
        EXPECT_TRUE(log.registered.empty());
        EXPECT_EQ(cache.stats().failures, 1u);
    }

    TEST(RegistrationCache, AnOverlappingRangeReplacesTheOneNotInUse)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log);
        block memory(16 * MiB);
        auto owner = std::make_shared<test_owner>(&destroyed);
        cache.acquire(memory.data, 4 * MiB, owner, policy::cached).reset();
        auto wider = cache.acquire(memory.data + 2 * MiB, 8 * MiB, owner, policy::cached);
        EXPECT_TRUE(wider);
        ASSERT_EQ(log.unregistered.size(), 1u);
        EXPECT_EQ(log.unregistered[0].first, memory.data);
        EXPECT_TRUE(cache.overlaps(memory.data + 3 * MiB, 1));
        EXPECT_FALSE(cache.overlaps(memory.data, MiB));
        // While the wider one is in use, an overlapping range is staged instead.
        EXPECT_FALSE(cache.acquire(memory.data + 8 * MiB, 8 * MiB, owner, policy::cached));
    }

    TEST(RegistrationCache, SmallRangesAreNotRegistered)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log);
        block memory(4 * MiB);
        EXPECT_FALSE(cache.acquire(memory.data + 1, MiB - 1, std::make_shared<test_owner>(&destroyed), policy::cached));
        EXPECT_TRUE(log.registered.empty());
    }

    TEST(RegistrationCache, ReleaseAllUnregistersAndForgetMakesNoCall)
    {
        calls log;
        int destroyed = 0;
        auto cache = make_cache(log);
        block memory(32 * MiB);
        auto owner = std::make_shared<test_owner>(&destroyed);
        cache.acquire(memory.data, 8 * MiB, owner, policy::cached).reset();
        cache.acquire(memory.data + 16 * MiB, 8 * MiB, owner, policy::cached).reset();
        cache.release_all();
        EXPECT_EQ(log.unregistered.size(), 2u);
        cache.acquire(memory.data, 8 * MiB, owner, policy::cached).reset();
        cache.forget();
        EXPECT_EQ(log.unregistered.size(), 2u);
        EXPECT_EQ(cache.stats().entries, 0u);
        owner.reset();
        EXPECT_EQ(destroyed, 1) << "forget() must let the owners go";
    }

    TEST(TransferSettings, ModesParseByNameAndABadNameSaysTheChoices)
    {
        using mode = transfer_settings::pageable_mode;
        for (mode m : {mode::automatic, mode::registered, mode::per_copy, mode::staged, mode::driver})
        {
            EXPECT_EQ(transfer_settings::parse_mode(transfer_settings::mode_name(m)), m);
        }
        try
        {
            transfer_settings::parse_mode("pinned");
            FAIL() << "no usage_error";
        }
        catch (const usage_error& e)
        {
            EXPECT_NE(std::string(e.what()).find("'registered'"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("'pinned'"), std::string::npos) << e.what();
        }
    }

    TEST(TransferSettings, TheEnvironmentSetsThemAndAMalformedValueIsKeptAsAProblem)
    {
        ::setenv("XCUDA_PAGEABLE", "staged", 1);
        ::setenv("XCUDA_STAGING_THREADS", "6", 1);
        ::setenv("XCUDA_STAGING_CHUNK_MB", "16", 1);
        ::setenv("XCUDA_STAGING_SPIN_US", "0", 1);
        ::setenv("XCUDA_REGISTER_LIMIT_MB", "abc", 1);
        transfer_settings s = transfer_settings::from_environment();
        ::unsetenv("XCUDA_STAGING_SPIN_US");
        ::unsetenv("XCUDA_PAGEABLE");
        ::unsetenv("XCUDA_STAGING_THREADS");
        ::unsetenv("XCUDA_STAGING_CHUNK_MB");
        ::unsetenv("XCUDA_REGISTER_LIMIT_MB");
        EXPECT_EQ(s.pageable, transfer_settings::pageable_mode::staged);
        EXPECT_EQ(s.threads_for(64), 6u);
        EXPECT_EQ(s.chunk_bytes, 16 * MiB);
        EXPECT_EQ(s.staging_spin_us, 0u);  // 0 is allowed: the copy threads sleep after each copy
        EXPECT_EQ(s.registration_limit, transfer_settings{}.registration_limit);
        EXPECT_NE(s.problem.find("XCUDA_REGISTER_LIMIT_MB='abc'"), std::string::npos) << s.problem;

        transfer_settings defaults = transfer_settings::from_environment();
        EXPECT_TRUE(defaults.problem.empty());
        EXPECT_EQ(defaults.chunk_bytes, 8 * MiB);
        EXPECT_EQ(defaults.registration_limit, std::size_t(4) << 30);
        EXPECT_EQ(defaults.threads_for(16), 12u);  // three quarters of the cores
        EXPECT_EQ(defaults.threads_for(64), 12u);  // at most 12
        EXPECT_EQ(defaults.threads_for(8), 6u);
        EXPECT_EQ(defaults.threads_for(2), 1u);
        EXPECT_EQ(defaults.threads_for(1), 1u);
        EXPECT_EQ(defaults.staging_spin_us, 200u);
        ::setenv("XCUDA_STAGING_SPIN_US", "-5", 1);
        transfer_settings negative = transfer_settings::from_environment();
        ::unsetenv("XCUDA_STAGING_SPIN_US");
        EXPECT_EQ(negative.staging_spin_us, 200u);
        EXPECT_NE(negative.problem.find("XCUDA_STAGING_SPIN_US='-5' is not a whole number (0 or more)"), std::string::npos)
            << negative.problem;
        ::setenv("XCUDA_STAGING", "0", 1);
        EXPECT_EQ(transfer_settings::from_environment().pageable, transfer_settings::pageable_mode::driver);
        ::unsetenv("XCUDA_STAGING");
        EXPECT_FALSE(defaults.stream_to_device);
        EXPECT_FALSE(defaults.stream_to_host);
        ::setenv("XCUDA_STAGING_STREAM", "1", 1);
        transfer_settings both = transfer_settings::from_environment();
        EXPECT_TRUE(both.stream_to_device && both.stream_to_host);
        ::setenv("XCUDA_STAGING_STREAM", "in", 1);
        transfer_settings in = transfer_settings::from_environment();
        EXPECT_TRUE(in.stream_to_device);
        EXPECT_FALSE(in.stream_to_host);
        ::setenv("XCUDA_STAGING_STREAM", "yes", 1);
        transfer_settings malformed = transfer_settings::from_environment();
        ::unsetenv("XCUDA_STAGING_STREAM");
        EXPECT_FALSE(malformed.stream_to_device || malformed.stream_to_host);
        EXPECT_NE(malformed.problem.find("XCUDA_STAGING_STREAM='yes' is not 0, 1 or in"), std::string::npos)
            << malformed.problem;
    }

    TEST(TransferSettings, TransferOptionsChangeOnlyWhatIsGivenAndClearTheEnvironmentsProblem)
    {
        transfer_settings before;
        before.problem = "XCUDA_REGISTER_LIMIT_MB='abc' is not a number";
        transfer_settings::changes c;
        c.pageable = "staged";
        c.staging_chunk_mb = 16;
        c.temporary_cache_mb = 0;
        transfer_settings after = before.with(c);
        EXPECT_EQ(after.pageable, transfer_settings::pageable_mode::staged);
        EXPECT_EQ(after.chunk_bytes, 16 * MiB);
        EXPECT_EQ(after.temporary_cache_limit, 0u);
        EXPECT_EQ(after.chunk_count, before.chunk_count);
        EXPECT_EQ(after.registration_limit, before.registration_limit);
        EXPECT_EQ(after.staging_threads, before.staging_threads);
        EXPECT_TRUE(after.problem.empty());
        transfer_settings::changes more;
        more.staging_threads = 3;
        more.staging_buffers = 2;
        more.registration_limit_mb = 512;
        more.registration_entries = 7;
        transfer_settings again = after.with(more);
        EXPECT_EQ(again.staging_threads, 3u);
        EXPECT_EQ(again.chunk_count, 2u);
        EXPECT_EQ(again.registration_limit, 512 * MiB);
        EXPECT_EQ(again.registration_entries, 7u);
        EXPECT_EQ(again.chunk_bytes, 16 * MiB) << "a value not given changed";
    }

    TEST(TransferSettings, TransferOptionsRefuseCountsBelowOneNamingTheOption)
    {
        auto refusal = [](transfer_settings::changes c) {
            return xcuda_tests::message_of<argument_value_error>([&] { transfer_settings{}.with(c); });
        };
        transfer_settings::changes threads;
        threads.staging_threads = 0;
        EXPECT_EQ(refusal(threads), "staging_threads must be at least 1, got 0");
        transfer_settings::changes chunk;
        chunk.staging_chunk_mb = -2;
        EXPECT_EQ(refusal(chunk), "staging_chunk_mb must be at least 1, got -2");
        transfer_settings::changes entries;
        entries.registration_entries = 0;
        EXPECT_EQ(refusal(entries), "registration_entries must be at least 1, got 0");
        transfer_settings::changes temporary;
        temporary.temporary_cache_mb = -1;
        EXPECT_EQ(refusal(temporary), "temporary_cache_mb must be 0 (keep none) or more, got -1");
        transfer_settings::changes mode;
        mode.pageable = "fast";
        EXPECT_THROW(transfer_settings{}.with(mode), usage_error);
    }

    TEST(TransferReport, NamesEveryCounterInTheOrderTransferStatsListsThem)
    {
        cuda_session session;  // not active: no driver call, every count 0
        transfer_report report = transfer_report::of(session);
        auto names = [](const transfer_report::counters& counters) {
            std::string text;
            for (const auto& counter : counters)
            {
                text += std::string(text.empty() ? "" : " ") + counter.first;
                EXPECT_EQ(counter.second, 0u) << counter.first;
            }
            return text;
        };
        EXPECT_EQ(names(report.copies), "staged registered page_locked driver zero_chunks known_zero_pieces prepared scanned scan_unread_pieces");
        EXPECT_EQ(names(report.registrations),
                  "entries bytes hits registrations unregistrations failures staged_first_use staged_same_use evictions "
                  "abandoned");
        EXPECT_EQ(names(report.temporaries), "entries bytes hits misses evictions");
        transfer_report::counters copies = transfer_report::copies_of(1, 2, 3, 4);
        EXPECT_EQ(copies[2].second, 3u);
        EXPECT_STREQ(copies[3].first, "driver");
    }
}
