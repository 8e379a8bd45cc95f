// The parts split out of cuda_session: the registry of what lives in device contexts
// (session_resources), how host memory moves (session_transfers) and the waits' printf capture
// (session_waits; its poll loop against the fake driver: test_launch_call.cpp). No GPU needed.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_session.hpp"
#include "errors.hpp"
#include "expect_error.hpp"
#include "session_resources.hpp"
#include "session_transfers.hpp"
#include "session_waits.hpp"

namespace xcuda
{
    namespace
    {
        struct counted_resource : session_resource
        {
            const char* what;
            std::size_t held;
            std::atomic<int>* released;
            counted_resource(const char* kind, std::size_t bytes, std::atomic<int>* count)
                : what(kind), held(bytes), released(count) {}
            void release() noexcept override { ++*released; }
            std::string describe() const override { return std::string(what) + " of " + std::to_string(held); }
            const char* kind() const noexcept override { return what; }
            std::size_t bytes() const noexcept override { return held; }
            int device() const noexcept override { return 0; }
        };
    }

    TEST(SessionResources, TotalsCountEachKindAndTakeAllEmptiesTheRegistry)
    {
        std::atomic<int> released{0};
        counted_resource a("buffer", 100, &released), b("buffer", 28, &released), m("module", 7, &released);
        session_resources registry;
        registry.add(&a);
        registry.add(&b);
        registry.add(&m);
        registry.add(&a);  // twice: still one
        EXPECT_EQ(registry.totals("buffer"), (std::pair<std::size_t, std::size_t>{2, 128}));
        EXPECT_EQ(registry.totals("module"), (std::pair<std::size_t, std::size_t>{1, 7}));
        EXPECT_EQ(registry.totals("graph"), (std::pair<std::size_t, std::size_t>{0, 0}));
        registry.remove(&b);
        EXPECT_EQ(registry.totals("buffer"), (std::pair<std::size_t, std::size_t>{1, 100}));
        std::vector<session_resource*> taken = registry.take_all();
        EXPECT_EQ(taken.size(), 2u);
        EXPECT_EQ(registry.totals("buffer").first, 0u);
        EXPECT_TRUE(registry.take_all().empty());
        EXPECT_EQ(released.load(), 0);  // the registry frees nothing itself
    }

    TEST(SessionResources, ThreadsAddingAndRemovingAtOnceLeaveExactTotals)
    {
        // Buffers are made and freed from several Python threads at once.
        constexpr int threads = 4, each = 500;
        std::atomic<int> released{0};
        std::vector<std::unique_ptr<counted_resource>> made;
        for (int i = 0; i < threads * each; ++i)
        {
            made.push_back(std::make_unique<counted_resource>("buffer", 1 + i % 3, &released));
        }
        session_resources registry;
        std::vector<std::thread> running;
        for (int t = 0; t < threads; ++t)
        {
            running.emplace_back([&, t] {
                for (int i = 0; i < each; ++i)
                {
                    counted_resource* r = made[t * each + i].get();
                    registry.add(r);
                    registry.totals("buffer");
                    if (i % 2)
                    {
                        registry.remove(r);  // every odd one leaves again
                    }
                }
            });
        }
        for (auto& thread : running)
        {
            thread.join();
        }
        std::size_t bytes = 0;
        for (int i = 0; i < threads * each; ++i)
        {
            if ((i % each) % 2 == 0)
            {
                bytes += made[i]->held;
            }
        }
        EXPECT_EQ(registry.totals("buffer"), (std::pair<std::size_t, std::size_t>{threads * each / 2, bytes}));
    }

    TEST(SessionTransfers, SettingsChangeWithoutAGpuAndABadOrdinalIsNamed)
    {
        cuda_session session;  // no device is touched: nothing here needs a driver
        session_transfers& transfers = session.transfers();
        transfer_settings changed = transfers.settings();
        changed.threshold = 12345;
        changed.temporary_cache_limit = 0;
        transfers.change(changed);
        EXPECT_EQ(session.transfers().settings().threshold, 12345u);
        EXPECT_EQ(session.transfers().settings().temporary_cache_limit, 0u);
        EXPECT_EQ(xcuda_tests::message_of<usage_error>([&] { transfers.staging(-2); }),
                  "device ordinal must be >= 0, got -2");
    }

    TEST(SessionWaits, PrintfIsCapturedOnlyWithASinkWhileAPrintfModuleIsLoaded)
    {
        cuda_session session;  // no device is touched
        session_waits& waits = session.waits();
        EXPECT_FALSE(waits.capturing_printf());
        waits.note_printf_module(+1);
        EXPECT_FALSE(waits.capturing_printf()) << "no sink: the output goes to stdout as usual";
        waits.set_output_sink([](const std::string&) {});
        EXPECT_TRUE(waits.capturing_printf());
        waits.note_printf_module(+1);
        waits.note_printf_module(-1);
        EXPECT_TRUE(waits.capturing_printf()) << "one printf module is still loaded";
        waits.note_printf_module(-1);
        EXPECT_FALSE(waits.capturing_printf());
        EXPECT_FALSE(waits.interrupted_work_running()) << "no wait was interrupted";
    }
}
