// Unit tests of how numpy arrays travel: the registration cache's bookkeeping (with fake register and
// unregister hooks that record the calls, so no GPU is needed) and the transfer settings. The rules
// under test are in runtime/host_registration_cache.hpp: whole inner pages only, an entry holds its
// owner until it is unregistered, nothing in use is unregistered, the limits, and the policies.

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

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "errors.hpp"
#include "expect_error.hpp"
#include "host_registration_cache.hpp"
#include "transfer_report.hpp"
#include "transfer_settings.hpp"
#include "cuda_session.hpp"
#include "copy_pool.hpp"
#include "host_pages.hpp"
#include "page_preparer.hpp"

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
        EXPECT_EQ(defaults.threads_for(16), 8u);
        EXPECT_EQ(defaults.threads_for(2), 1u);
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
        EXPECT_EQ(names(report.copies), "staged registered page_locked driver zero_chunks known_zero_pieces prepared scanned");
        EXPECT_EQ(names(report.registrations),
                  "entries bytes hits registrations unregistrations failures staged_first_use staged_same_use evictions "
                  "abandoned");
        EXPECT_EQ(names(report.temporaries), "entries bytes hits misses evictions");
        transfer_report::counters copies = transfer_report::copies_of(1, 2, 3, 4);
        EXPECT_EQ(copies[2].second, 3u);
        EXPECT_STREQ(copies[3].first, "driver");
    }

    // ---- copy_pool: the staging's memcpy, shared by the caller and its copy threads ---------------------

    namespace
    {
        // No watching (the threads sleep after each copy), the session's default, and longer than any
        // gap between these tests' copies (the threads never sleep between them).
        const std::chrono::microseconds spins[] = {std::chrono::microseconds(0), std::chrono::microseconds(200),
                                                   std::chrono::microseconds(20000)};

        std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed)
        {
            std::vector<unsigned char> data(bytes);
            for (std::size_t i = 0; i < bytes; ++i)
            {
                data[i] = static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
            }
            return data;
        }
    }

    TEST(CopyPool, CopiesEverySizeExactlyWithAnyNumberOfParticipants)
    {
        const std::size_t piece = copy_pool::piece_bytes;
        const std::size_t sizes[] = {0, 1, 4095, piece - 1, piece, piece + 1, copy_pool::min_parallel - 1,
                                     copy_pool::min_parallel, copy_pool::min_parallel + 1, 7 * piece + 13,
                                     (8u << 20) + 3};
        for (std::size_t participants : {1u, 2u, 3u, 8u})
        for (std::chrono::microseconds spin : spins)
        {
            copy_pool pool(participants, spin);
            EXPECT_EQ(pool.participants(), participants);
            for (std::size_t bytes : sizes)
            {
                std::vector<unsigned char> source = pattern(bytes + 1, static_cast<unsigned>(bytes));
                std::vector<unsigned char> destination(bytes + 2, 0xee);
                // Unaligned on both sides, and the byte after the copy must stay as it was.
                pool.copy(destination.data() + 1, source.data() + 1, bytes);
                EXPECT_EQ(destination[0], 0xee) << bytes << " bytes, " << participants << " participants";
                EXPECT_EQ(destination[bytes + 1], 0xee) << bytes << " bytes, " << participants << " participants";
                EXPECT_EQ(std::memcmp(destination.data() + 1, source.data() + 1, bytes), 0)
                    << bytes << " bytes, " << participants << " participants";
            }
        }
    }

    TEST(CopyPool, AllZeroFindsAnyNonZeroByte)
    {
        std::vector<unsigned char> data(1001, 0);  // one byte past the longest range
        for (std::size_t start : {0u, 1u, 7u, 63u})
        for (std::size_t bytes : {0u, 1u, 63u, 64u, 65u, 127u, 128u, 500u, 1000u - 63u})
        {
            ASSERT_LT(start + bytes, data.size());
            EXPECT_TRUE(copy_pool::all_zero(data.data() + start, bytes)) << start << " + " << bytes;
            for (std::size_t at = 0; at < bytes; ++at)
            {
                data[start + at] = 0x80;
                EXPECT_FALSE(copy_pool::all_zero(data.data() + start, bytes)) << "byte " << at << " of " << start
                                                                                << " + " << bytes;
                data[start + at] = 0;
            }
            // A byte just outside the range is not read as part of it.
            if (start > 0)
            {
                data[start - 1] = 1;
            }
            data[start + bytes] = 1;
            EXPECT_TRUE(copy_pool::all_zero(data.data() + start, bytes)) << start << " + " << bytes;
            std::fill(data.begin(), data.end(), 0);
        }
    }

    TEST(CopyPool, CopyUnlessZeroWritesNothingForZerosAndEverythingOtherwise)
    {
        const std::size_t piece = copy_pool::piece_bytes;
        const std::size_t sizes[] = {1, piece - 1, copy_pool::min_parallel - 1, copy_pool::min_parallel + 1,
                                     7 * piece + 13, (8u << 20) + 3};
        for (std::size_t participants : {1u, 3u, 8u})
        for (std::chrono::microseconds spin : spins)
        {
            copy_pool pool(participants, spin);
            for (std::size_t bytes : sizes)
            {
                SCOPED_TRACE(std::to_string(participants) + " participants, " + std::to_string(bytes) + " bytes");
                std::vector<unsigned char> source(bytes, 0);
                std::vector<unsigned char> destination(bytes, 0xab);
                EXPECT_TRUE(pool.copy_unless_zero(destination.data(), source.data(), bytes));
                EXPECT_TRUE(std::all_of(destination.begin(), destination.end(), [](unsigned char c) { return c == 0xab; }))
                    << "a zero source wrote its destination";
                // One byte of data in the middle (and, next, in the last byte): every byte is copied, the
                // zero pieces as zeros over what the destination held.
                for (std::size_t at : {bytes / 2, bytes - 1})
                {
                    std::fill(destination.begin(), destination.end(), 0xab);
                    source[at] = 7;
                    EXPECT_FALSE(pool.copy_unless_zero(destination.data(), source.data(), bytes));
                    EXPECT_TRUE(destination == source) << "data at byte " << at;
                    source[at] = 0;
                }
            }
        }
    }

    TEST(CopyPool, PiecesLieOnTheDestinationsBoundariesAndCoverTheCopyOnce)
    {
        const std::uintptr_t page = copy_pool::page_bytes;
        const std::size_t piece = copy_pool::piece_bytes;
        // Destinations at a 2 MiB page's start, just after it, mid-piece, and just before the next page.
        for (copy_pool::order claims : {copy_pool::order::by_address, copy_pool::order::across_pages})
        for (std::uintptr_t start : {64 * page, 64 * page + 1, 64 * page + 4096 + 16, 65 * page - 1, 65 * page - piece})
        for (std::size_t bytes : {std::size_t(1), piece - 1, piece + 1, std::size_t(page), page + 3,
                                  std::size_t(8u << 20), (8u << 20) + piece / 2, std::size_t(5 * page - 7)})
        {
            SCOPED_TRACE(std::string(claims == copy_pool::order::by_address ? "by address" : "across pages") +
                         ", destination page offset " + std::to_string(start % page) + ", " + std::to_string(bytes) +
                         " bytes");
            copy_pool::layout cut = copy_pool::cut(reinterpret_cast<void*>(start), bytes, claims);
            ASSERT_EQ(cut.slots, claims == copy_pool::order::by_address ? cut.pieces
                                                                         : cut.pages * copy_pool::pieces_per_page);
            EXPECT_EQ(cut.pages, (start + bytes - 1) / page - start / page + 1);
            std::vector<std::pair<std::size_t, std::size_t>> ranges;
            for (std::uint32_t slot = 0; slot < cut.slots + 3; ++slot)
            {
                std::size_t offset = 0;
                std::size_t length = 0;
                if (!copy_pool::slot_range(cut, slot, offset, length))
                {
                    continue;
                }
                ASSERT_LT(slot, cut.slots);
                ASSERT_GT(length, 0u);
                if (claims == copy_pool::order::across_pages)
                {
                    // Within one 256 KiB block of the destination's addresses.
                    EXPECT_EQ((start + offset) / piece, (start + offset + length - 1) / piece) << "slot " << slot;
                }
                else
                {
                    // 256 KiB from the copy's start, in order (as before the order across pages existed).
                    EXPECT_EQ(offset, slot * piece) << "slot " << slot;
                }
                ranges.emplace_back(offset, length);
            }
            EXPECT_EQ(ranges.size(), cut.pieces);
            std::sort(ranges.begin(), ranges.end());
            std::size_t covered = 0;
            for (const auto& range : ranges)
            {
                ASSERT_EQ(range.first, covered) << "a gap or an overlap";
                covered += range.second;
            }
            EXPECT_EQ(covered, bytes);
        }
    }

    TEST(CopyPool, ClaimsTakeOnePieceOfEachPageInTurn)
    {
        // 8 MiB into a page-aligned destination: four pages; the first four claims start the four pages,
        // the next four take each page's second piece.
        const std::uintptr_t page = copy_pool::page_bytes;
        copy_pool::layout cut = copy_pool::cut(reinterpret_cast<void*>(100 * page), 4 * page,
                                               copy_pool::order::across_pages);
        ASSERT_EQ(cut.pages, 4u);
        const std::size_t expected[] = {0, page, 2 * page, 3 * page, copy_pool::piece_bytes,
                                        page + copy_pool::piece_bytes, 2 * page + copy_pool::piece_bytes};
        for (std::uint32_t slot = 0; slot < 7; ++slot)
        {
            std::size_t offset = 0;
            std::size_t length = 0;
            ASSERT_TRUE(copy_pool::slot_range(cut, slot, offset, length));
            EXPECT_EQ(offset, expected[slot]) << "slot " << slot;
            EXPECT_EQ(length, copy_pool::piece_bytes);
        }
        // Unaligned: the first claims still fall on different pages (the first page's piece is its first).
        copy_pool::layout shifted = copy_pool::cut(reinterpret_cast<void*>(100 * page + 12345), 4 * page,
                                                   copy_pool::order::across_pages);
        ASSERT_EQ(shifted.pages, 5u);
        std::vector<std::uintptr_t> pages;
        for (std::uint32_t slot = 0; slot < shifted.pages; ++slot)
        {
            std::size_t offset = 0;
            std::size_t length = 0;
            if (copy_pool::slot_range(shifted, slot, offset, length))
            {
                pages.push_back((100 * page + 12345 + offset) / page);
            }
        }
        std::sort(pages.begin(), pages.end());
        EXPECT_EQ(std::unique(pages.begin(), pages.end()), pages.end()) << "two early claims on one page";
        EXPECT_GE(pages.size(), 4u);
        // By address, the claims go piece after piece from the copy's start.
        copy_pool::layout in_order = copy_pool::cut(reinterpret_cast<void*>(100 * page + 12345), 4 * page,
                                                    copy_pool::order::by_address);
        std::size_t next = 0;
        for (std::uint32_t slot = 0; slot < in_order.slots; ++slot)
        {
            std::size_t offset = 0;
            std::size_t length = 0;
            ASSERT_TRUE(copy_pool::slot_range(in_order, slot, offset, length)) << "slot " << slot;
            EXPECT_EQ(offset, next) << "slot " << slot;
            next = offset + length;
        }
        EXPECT_EQ(next, 4 * page);
        EXPECT_EQ(in_order.slots, 32u);
    }

    TEST(CopyPool, CopiesIntoEveryPositionOfAPage)
    {
        // Real copies whose first and last pages are partial, into a 2 MiB-aligned buffer.
        const std::size_t page = copy_pool::page_bytes;
        const std::size_t bytes = 5 * page + 3;
        void* raw = std::aligned_alloc(page, 8 * page);
        ASSERT_NE(raw, nullptr);
        std::unique_ptr<void, void (*)(void*)> owned(raw, std::free);
        unsigned char* aligned = static_cast<unsigned char*>(raw);
        std::vector<unsigned char> source = pattern(bytes, 11);
        copy_pool pool(8, std::chrono::microseconds(200));
        for (copy_pool::order claims : {copy_pool::order::by_address, copy_pool::order::across_pages})
        for (std::size_t shift : {std::size_t(0), std::size_t(1), copy_pool::piece_bytes - 1, page - 4096, page - 1})
        {
            SCOPED_TRACE(claims == copy_pool::order::by_address ? "by address" : "across pages");
            std::memset(aligned, 0xee, 8 * page);
            pool.copy(aligned + shift, source.data(), bytes, claims);
            EXPECT_EQ(std::memcmp(aligned + shift, source.data(), bytes), 0) << "shift " << shift;
            EXPECT_EQ(aligned[shift + bytes], 0xee) << "shift " << shift;
            if (shift)
            {
                EXPECT_EQ(aligned[shift - 1], 0xee) << "shift " << shift;
            }
        }
    }

    namespace
    {
        // The VmFlags line of /proc/self/smaps for the mapping that holds `address` ("" if none).
        std::string mapping_flags(const void* address)
        {
            std::FILE* smaps = std::fopen("/proc/self/smaps", "r");
            if (!smaps)
            {
                return "";
            }
            char line[512];
            bool inside = false;
            std::string flags;
            auto at = reinterpret_cast<std::uintptr_t>(address);
            while (std::fgets(line, sizeof line, smaps))
            {
                unsigned long begin = 0;
                unsigned long end = 0;
                if (std::sscanf(line, "%lx-%lx ", &begin, &end) == 2 && std::strchr(line, ':') != line)
                {
                    inside = begin <= at && at < end;
                }
                else if (inside && std::strncmp(line, "VmFlags:", 8) == 0)
                {
                    flags = line;
                    break;
                }
            }
            std::fclose(smaps);
            return flags;
        }

        struct mapping
        {
            explicit mapping(std::size_t bytes) : bytes(bytes)
            {
                void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                data = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
            }
            ~mapping()
            {
                if (data)
                {
                    ::munmap(data, bytes);
                }
            }
            std::size_t bytes;
            unsigned char* data = nullptr;
        };
    }

    TEST(CopyPool, NeverWrittenMemoryIsToldFromWrittenMemory)
    {
        const std::size_t bytes = 16u << 20;
        mapping fresh(bytes);
        ASSERT_NE(fresh.data, nullptr);
        EXPECT_TRUE(copy_pool::never_written(fresh.data + 100, bytes - 200));
        // Written at the start, around the middle (a megabyte: some page near it is sampled) or at the end.
        mapping started(bytes);
        started.data[0] = 1;
        EXPECT_FALSE(copy_pool::never_written(started.data, bytes));
        mapping middle(bytes);
        std::memset(middle.data + bytes / 2 - (512u << 10), 1, 1u << 20);
        EXPECT_FALSE(copy_pool::never_written(middle.data, bytes));
        mapping ended(bytes);
        ended.data[bytes - 1] = 1;
        EXPECT_FALSE(copy_pool::never_written(ended.data, bytes));
        // Written all over (what np.zeros_like gives), a range inside one page, and memory no mapping holds.
        std::vector<unsigned char> written(bytes, 1);
        EXPECT_FALSE(copy_pool::never_written(written.data(), bytes));
        EXPECT_FALSE(copy_pool::never_written(fresh.data + 10, 100));
        EXPECT_FALSE(copy_pool::never_written(reinterpret_cast<void*>(std::uintptr_t(4096)), bytes));
        // The test itself looked without writing: still never written.
        EXPECT_TRUE(copy_pool::never_written(fresh.data, bytes));
    }

    TEST(CopyPool, HugePagesAreAllowedOnTheWholePagesOfANeverWrittenDestination)
    {
        std::FILE* thp = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
        if (!thp)
        {
            GTEST_SKIP() << "this kernel has no transparent huge pages (no /sys/kernel/mm/transparent_hugepage)";
        }
        std::fclose(thp);
        const std::size_t page = copy_pool::page_bytes;
        mapping fresh(8 * page);
        ASSERT_NE(fresh.data, nullptr);
        unsigned char* aligned = reinterpret_cast<unsigned char*>(
            (reinterpret_cast<std::uintptr_t>(fresh.data) + page - 1) & ~(page - 1));
        EXPECT_EQ(mapping_flags(aligned + page).find(" hg"), std::string::npos) << mapping_flags(aligned + page);
        // From 100 bytes into one 2 MiB page to 100 bytes into the fourth after it: the three whole pages
        // between get the flag, the partial ones at either end do not.
        copy_pool::allow_huge_pages(aligned + 100, 4 * page);
        EXPECT_NE(mapping_flags(aligned + page).find(" hg"), std::string::npos) << mapping_flags(aligned + page);
        EXPECT_NE(mapping_flags(aligned + 3 * page + 1).find(" hg"), std::string::npos);
        EXPECT_EQ(mapping_flags(aligned).find(" hg"), std::string::npos) << mapping_flags(aligned);
        EXPECT_EQ(mapping_flags(aligned + 4 * page).find(" hg"), std::string::npos);
        // The data is untouched and reads as zeros.
        EXPECT_TRUE(copy_pool::never_written(aligned + page, page));
        EXPECT_EQ(aligned[page + 5], 0u);
    }

    // ---- host_pages and page_preparer: memory never touched, and faulting destinations in ahead -------

    namespace
    {
        // Whether the page holding `address` is in memory (mincore), without touching it.
        bool resident(const void* address)
        {
            const std::uintptr_t page = host_pages::page_size();
            unsigned char in = 0;
            void* start = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(address) & ~(page - 1));
            return ::mincore(start, page, &in) == 0 && (in & 1);
        }
    }

    TEST(HostPages, PiecesInPagesNeverTouchedAreKnownZeroAndEveryOtherPieceIsRead)
    {
        const std::size_t piece = copy_pool::piece_bytes;
        const std::size_t bytes = 16 * piece;
        mapping fresh(bytes + 2 * piece);
        ASSERT_NE(fresh.data, nullptr);
        unsigned char* data = fresh.data + 100;  // not on a page boundary, like calloc's data after its header
        std::vector<bool> pieces = host_pages::untouched_pieces(data, bytes, piece);
        ASSERT_EQ(pieces.size(), 16u) << "a private anonymous mapping can be told";
        EXPECT_TRUE(std::all_of(pieces.begin(), pieces.end(), [](bool b) { return b; }));
        // A byte written in a page of piece 5, one read in a page of piece 9 (the zero page mapped: present),
        // one written in the page the first piece shares with the bytes before the range: those pieces are
        // read, no other.
        data[5 * piece + 2 * host_pages::page_size()] = 1;
        volatile unsigned char sink = data[9 * piece + 3 * host_pages::page_size()];
        (void)sink;
        fresh.data[0] = 1;
        pieces = host_pages::untouched_pieces(data, bytes, piece);
        ASSERT_EQ(pieces.size(), 16u);
        for (std::size_t k = 0; k < pieces.size(); ++k)
        {
            EXPECT_EQ(pieces[k], k != 0 && k != 5 && k != 9) << "piece " << k;
        }
        // The last piece shorter; a byte written in the page the range ends in, past its end, counts too.
        mapping tail(4 * piece);
        ASSERT_NE(tail.data, nullptr);
        pieces = host_pages::untouched_pieces(tail.data, 2 * piece + 10, piece);
        ASSERT_EQ(pieces.size(), 3u);
        EXPECT_TRUE(pieces[2]);
        tail.data[2 * piece + 100] = 1;
        pieces = host_pages::untouched_pieces(tail.data, 2 * piece + 10, piece);
        EXPECT_TRUE(pieces[0] && pieces[1] && !pieces[2]);
        // Looking touched nothing.
        EXPECT_FALSE(resident(fresh.data + 12 * piece));
        // A piece size that is not a whole number of pages, and an empty range: nothing can be told.
        EXPECT_TRUE(host_pages::untouched_pieces(data, bytes, piece + 1).empty());
        EXPECT_TRUE(host_pages::untouched_pieces(data, 0, piece).empty());
    }

    TEST(HostPages, MemoryWithAFileOrSharedBehindItIsNeverTakenForZero)
    {
        const std::size_t bytes = 4u << 20;
        // A file of non-zero bytes mapped privately (np.memmap's mode 'c'), its pages not yet faulted in
        // this mapping: they hold the file's bytes, not zeros.
        char path[] = "/tmp/xcuda-host-pages-XXXXXX";
        int fd = ::mkstemp(path);
        ASSERT_GE(fd, 0);
        ::unlink(path);
        std::vector<unsigned char> ones(bytes, 1);
        ASSERT_EQ(::write(fd, ones.data(), bytes), static_cast<ssize_t>(bytes));
        void* file = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        ::close(fd);
        ASSERT_NE(file, MAP_FAILED);
        EXPECT_FALSE(host_pages::private_anonymous(file, bytes));
        EXPECT_TRUE(host_pages::untouched_pieces(file, bytes, copy_pool::piece_bytes).empty());
        ::munmap(file, bytes);
        // Shared anonymous memory (another process may have written it).
        void* shared = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(shared, MAP_FAILED);
        EXPECT_FALSE(host_pages::private_anonymous(shared, bytes));
        EXPECT_TRUE(host_pages::untouched_pieces(shared, bytes, copy_pool::piece_bytes).empty());
        ::munmap(shared, bytes);
        // A range running past its mapping into memory no mapping holds.
        mapping fresh(bytes);
        ASSERT_NE(fresh.data, nullptr);
        EXPECT_TRUE(host_pages::private_anonymous(fresh.data, bytes));
        ::munmap(fresh.data + bytes / 2, bytes / 2);
        EXPECT_FALSE(host_pages::private_anonymous(fresh.data, bytes));
        fresh.bytes = bytes / 2;
    }

    TEST(HostPages, PopulatingForWriteBringsThePagesInAndKeepsTheirBytes)
    {
        const std::size_t page = host_pages::page_size();
        const std::size_t bytes = 64 * page;
        mapping fresh(bytes);
        ASSERT_NE(fresh.data, nullptr);
        fresh.data[10 * page + 7] = 42;
        if (!host_pages::populate_for_write(fresh.data + 1, bytes - 2, false))
        {
            GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)";
        }
        // The whole pages inside the range are in; the partial first and last are not brought in.
        EXPECT_FALSE(resident(fresh.data));
        EXPECT_TRUE(resident(fresh.data + page));
        EXPECT_TRUE(resident(fresh.data + 40 * page));
        EXPECT_FALSE(resident(fresh.data + bytes - 1));
        EXPECT_EQ(fresh.data[10 * page + 7], 42);
        EXPECT_TRUE(copy_pool::all_zero(fresh.data + page, 9 * page));
        EXPECT_TRUE(copy_pool::all_zero(fresh.data + 10 * page + 8, 20 * page));
        // Faulted in for writing: no longer untouched.
        std::vector<bool> pieces = host_pages::untouched_pieces(fresh.data, bytes, copy_pool::piece_bytes);
        ASSERT_FALSE(pieces.empty());
        EXPECT_FALSE(pieces[0]);
    }

    TEST(PagePreparer, EveryRangeStartedFromSeveralThreadsIsFaultedInOnceItsTicketIsDone)
    {
        mapping probe(host_pages::page_size() * 4);
        ASSERT_NE(probe.data, nullptr);
        if (!host_pages::populate_for_write(probe.data, host_pages::page_size() * 4, false))
        {
            GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)";
        }
        for (bool huge : {false, true})
        {
            page_preparer preparer(3, huge);
            EXPECT_EQ(preparer.threads(), 3u);
            const std::size_t bytes = (13u << 20) + 12345;  // a part of about 4 MiB a thread, the last one longer
            std::vector<std::unique_ptr<mapping>> ranges;
            for (int i = 0; i < 8; ++i)
            {
                ranges.push_back(std::make_unique<mapping>(bytes + 4096));
                ASSERT_NE(ranges.back()->data, nullptr);
            }
            std::vector<std::thread> threads;
            for (int t = 0; t < 4; ++t)
            {
                threads.emplace_back([&, t] {
                    for (int i = t; i < 8; i += 4)
                    {
                        unsigned char* data = ranges[i]->data + 100;
                        auto ticket = preparer.start(data, bytes);
                        ticket->wait();
                        EXPECT_TRUE(ticket->done());
                        const std::size_t page = host_pages::page_size();
                        for (std::size_t at = page; at + page < bytes; at += 64 * page)
                        {
                            EXPECT_TRUE(resident(data + at)) << "range " << i << " byte " << at << (huge ? " huge" : "");
                        }
                        EXPECT_TRUE(resident(data + bytes - page - 200)) << "the last part of range " << i;
                        EXPECT_TRUE(copy_pool::all_zero(data, bytes));
                    }
                });
            }
            for (std::thread& thread : threads)
            {
                thread.join();
            }
            EXPECT_EQ(preparer.parts_done(), 8u * 3u) << "13 MiB: a part for each of the 3 threads";
        }
        // A range too short for a part of its own is one part; an empty one has none and is done at once.
        page_preparer preparer(4, false);
        mapping small(1u << 20);
        ASSERT_NE(small.data, nullptr);
        preparer.start(small.data, 1u << 20)->wait();
        EXPECT_TRUE(resident(small.data + 4096));
        EXPECT_EQ(preparer.parts_done(), 1u);
        EXPECT_TRUE(preparer.start(small.data, 0)->done());
    }

    TEST(PagePreparer, ScansFromSeveralThreadsFindEveryZeroPiece)
    {
        const std::size_t piece = copy_pool::piece_bytes;
        page_preparer preparer(3, false);
        const std::size_t bytes = 57 * piece + 1000;  // the last piece shorter
        std::vector<std::vector<unsigned char>> ranges;
        for (int i = 0; i < 8; ++i)
        {
            ranges.emplace_back(bytes + 64, 0);
        }
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
        {
            threads.emplace_back([&, t] {
                for (int i = t; i < 8; i += 4)
                {
                    unsigned char* data = ranges[i].data() + 3;  // not aligned
                    // A byte of data in every (i + 2)-th piece, at its start, middle or last byte in turn,
                    // and in the last (short) piece's last byte for odd i.
                    std::vector<bool> expected((bytes + piece - 1) / piece, true);
                    for (std::size_t k = 0; k < expected.size(); k += i + 2)
                    {
                        std::size_t length = std::min(piece, bytes - k * piece);
                        std::size_t at = (k % 3 == 0) ? 0 : (k % 3 == 1) ? length / 2 : length - 1;
                        data[k * piece + at] = 1;
                        expected[k] = false;
                    }
                    if (i % 2)
                    {
                        data[bytes - 1] = 1;
                        expected.back() = false;
                    }
                    auto ticket = preparer.start_scan(data, bytes, piece);
                    EXPECT_EQ(ticket->zero_pieces(), expected) << "range " << i;
                    EXPECT_TRUE(ticket->done());
                }
            });
        }
        for (std::thread& thread : threads)
        {
            thread.join();
        }
        EXPECT_EQ(preparer.parts_done(), 8u * 3u) << "about 14 MiB: a part for each of the 3 threads";
        // A range shorter than a part a thread: one part; an empty range: no piece, done at once.
        std::vector<unsigned char> small(piece + 5, 0);
        EXPECT_EQ(preparer.start_scan(small.data(), small.size(), piece)->zero_pieces(), std::vector<bool>(2, true));
        auto none = preparer.start_scan(small.data(), 0, piece);
        EXPECT_TRUE(none->done());
        EXPECT_TRUE(none->zero_pieces().empty());
    }

    TEST(CopyPool, PiecesKnownZeroAreNeverRead)
    {
        // The pieces said to be zero are made unreadable: a read of one would end the test with a fault.
        const std::size_t piece = copy_pool::piece_bytes;
        for (std::size_t participants : {1u, 3u, 8u})
        for (std::size_t bytes : {3 * piece + 100, 16 * piece, 2 * piece})
        {
            SCOPED_TRACE(std::to_string(participants) + " participants, " + std::to_string(bytes) + " bytes");
            copy_pool pool(participants, std::chrono::microseconds(200));
            mapping source(bytes + piece);
            ASSERT_NE(source.data, nullptr);
            const std::size_t pieces = (bytes + piece - 1) / piece;
            std::vector<bool> known(pieces, false);
            for (std::size_t k = 1; k < pieces; k += 2)
            {
                known[k] = true;
                ASSERT_EQ(::mprotect(source.data + k * piece, piece, PROT_NONE), 0);
            }
            std::vector<unsigned char> destination(bytes, 0xab);
            // All zero elsewhere too: nothing written.
            EXPECT_TRUE(pool.copy_unless_zero(destination.data(), source.data, bytes, &known));
            EXPECT_TRUE(std::all_of(destination.begin(), destination.end(), [](unsigned char c) { return c == 0xab; }));
            // Data in the first piece: it arrives, and the known pieces arrive as zeros, unread.
            source.data[7] = 9;
            EXPECT_FALSE(pool.copy_unless_zero(destination.data(), source.data, bytes, &known));
            EXPECT_EQ(destination[7], 9);
            destination[7] = 0;
            EXPECT_TRUE(std::all_of(destination.begin(), destination.end(), [](unsigned char c) { return c == 0; }));
            ::mprotect(source.data, bytes + piece, PROT_READ | PROT_WRITE);
        }
    }

    TEST(CopyPool, EveryPieceOfEveryJobIsCopiedOnceIntoThatJobsDestination)
    {
        // Many short jobs in a row: a thread that wakes late must not take a piece of a newer job with an
        // older job's pointers (that piece of the newer copy would be missing). Five sources and three
        // destinations in turn: a destination never already holds the source it is given next.
        for (std::chrono::microseconds spin : spins)
        {
            SCOPED_TRACE("spin " + std::to_string(spin.count()) + " us");
            copy_pool pool(8, spin);
            const std::size_t bytes = copy_pool::min_parallel + copy_pool::piece_bytes / 2;
            std::vector<std::vector<unsigned char>> sources;
            for (unsigned k = 0; k < 5; ++k)
            {
                sources.push_back(pattern(bytes, k));
            }
            std::vector<std::vector<unsigned char>> destinations(3, std::vector<unsigned char>(bytes));
            // Seven threads that never sleep share two cores with the caller on a small machine: fewer jobs.
            const int jobs = spin.count() > 1000 ? 300 : 2000;
            std::uint64_t pieces = 0;
            for (int job = 0; job < jobs; ++job)
            {
                const std::vector<unsigned char>& source = sources[static_cast<std::size_t>(job) % 5];
                std::vector<unsigned char>& destination = destinations[static_cast<std::size_t>(job) % 3];
                pool.copy(destination.data(), source.data(), bytes);
                ASSERT_EQ(std::memcmp(destination.data(), source.data(), bytes), 0) << "job " << job;
                pieces += copy_pool::cut(destination.data(), bytes, copy_pool::order::by_address).pieces;
            }
            EXPECT_EQ(pool.pieces_by_caller() + pool.pieces_by_threads(), pieces);
        }
    }

    TEST(CopyPool, SleepingThreadsAreWokenForTheNextCopy)
    {
        // Between these copies the threads have gone to sleep (a pause far longer than the spin), so they
        // take part only if posting a copy wakes the sleepers. A copy of 16 MiB is 64 pieces: a thread
        // woken at all takes some of them unless the caller copies all 64 before it runs; on a busy
        // machine that may happen for a few copies, not for 200.
        for (std::chrono::microseconds spin : {std::chrono::microseconds(0), std::chrono::microseconds(200)})
        {
            SCOPED_TRACE("spin " + std::to_string(spin.count()) + " us");
            copy_pool pool(4, spin);
            std::vector<unsigned char> source = pattern(16u << 20, 5), destination(16u << 20);
            for (int copy = 0; copy < 200 && pool.pieces_by_threads() == 0; ++copy)
            {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                pool.copy(destination.data(), source.data(), source.size());
                ASSERT_EQ(destination, source);
            }
            EXPECT_GT(pool.pieces_by_threads(), 0u) << "no copy thread took part in 200 copies: they were never woken";
        }
    }

    TEST(CopyPool, TheCallerAloneCopiesWhenThereAreNoThreads)
    {
        copy_pool pool(1, std::chrono::microseconds(200));
        std::vector<unsigned char> source = pattern(4u << 20, 3), destination(4u << 20);
        pool.copy(destination.data(), source.data(), source.size());
        EXPECT_EQ(destination, source);
        EXPECT_EQ(pool.pieces_by_threads(), 0u);
    }
}
