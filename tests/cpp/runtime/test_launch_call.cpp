// The launch transaction of the core (runtime/launch_call) without Python, against the fake driver
// (tests/fake_driver: device memory is host memory, saxpy and fill run a host implementation). This
// program's main points XCUDA_LIBCUDA at the fake before anything loads a driver.
//
// What is checked: a call's argument values are its own (several threads launching one kernel at once
// each get their own results), host arrays are copied in and back and their device buffers kept for the
// next call, write-only arrays are not copied in, a conversion error leaves nothing behind.
//
// And the session's waits (runtime/session_waits), with the fake made busy (its queries never done) or
// printing at its next synchronising call: an interrupt ends each kind of wait, naming the launches, and
// device printf output goes to the output sink only while a printf module is loaded.

#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>
#include <functional>
#include <future>
#include <stdexcept>
#include <unistd.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "compiler.hpp"
#include "cuda_driver.hpp"
#include "cuda_graph.hpp"
#include "cuda_kernel.hpp"
#include "cuda_session.hpp"
#include "device_buffer.hpp"
#include "errors.hpp"
#include "expect_error.hpp"
#include "launch_call.hpp"
#include "module_registry.hpp"
#include "session_waits.hpp"
#include "temporary_cache.hpp"

namespace xcuda
{
    namespace
    {
        const char* source =
            "extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n"
            "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }\n"
            "extern \"C\" __global__ void fill(float* x, float value, unsigned n)\n"
            "{ unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = value; }\n";

        // One session, compiler and registry for the program, as the Python module has for its process.
        struct fixture_state
        {
            cuda_session session;
            compiler compile{disk_cache("", 0, false)};
            module_registry registry{session, compile};
            std::shared_ptr<cuda_module> module;
            std::shared_ptr<cuda_kernel> saxpy;
            std::shared_ptr<cuda_kernel> fill;

            fixture_state()
            {
                compile_options options;
                options.arch = "sm_90";
                module = registry.build("launch_call_tests", compile_recipe{source, options, {}}).module;
                for (const kernel_signature& signature : module->signatures())
                {
                    auto kernel = std::make_shared<cuda_kernel>(module, signature);
                    (signature.name == "saxpy" ? saxpy : fill) = kernel;
                }
            }
        };

        fixture_state& state()
        {
            static fixture_state* made = new fixture_state();
            return *made;
        }

        launch_dims dims_for(std::size_t n)
        {
            launch_dims dims;
            dims.block = {256, 1, 1};
            dims.grid = {static_cast<unsigned>((n + 255) / 256), 1, 1};
            return dims;
        }

        // saxpy(a, x, y, out, n) with host arrays: x and y copied in, out copied back.
        void saxpy_on_host(float a, std::vector<float>& x, std::vector<float>& y, std::vector<float>& out)
        {
            cuda_kernel& kernel = *state().saxpy;
            std::size_t n = x.size();
            launch_call call(kernel, dims_for(n), nullptr);
            call.arguments().store_float(0, a);
            call.pass_host_array(1, x.data(), n * sizeof(float), true, false, nullptr, "x");
            call.pass_host_array(2, y.data(), n * sizeof(float), true, false, nullptr, "y");
            call.pass_host_array(3, out.data(), n * sizeof(float), false, true, nullptr, "out");
            call.arguments().store_unsigned(4, n);
            call.run();
        }
    }

    TEST(cuda_graph, keeps_what_each_node_uses_until_replaced_forgotten_or_the_graph_goes)
    {
        auto first = std::make_shared<int>(1);
        auto second = std::make_shared<int>(2);
        std::weak_ptr<int> first_alive = first, second_alive = second;
        {
            cuda_graph graph(state().session);
            EXPECT_EQ(graph.kept_count(), 0u);
            graph.keep(0, std::move(first));
            graph.keep(2, std::move(second));
            EXPECT_EQ(graph.kept_count(), 3u);
            EXPECT_FALSE(first_alive.expired()) << "the graph let go of node 0's objects";
            graph.keep(0, nullptr);  // an update's new arguments replace the old
            EXPECT_TRUE(first_alive.expired());
            EXPECT_FALSE(second_alive.expired());
            graph.release();  // a session's close drops the graph's driver objects, not what its owner kept
            EXPECT_FALSE(second_alive.expired());
        }
        EXPECT_TRUE(second_alive.expired()) << "kept after the graph went";
        auto third = std::make_shared<int>(3);
        std::weak_ptr<int> third_alive = third;
        cuda_graph graph(state().session);
        graph.keep_for_last(std::move(third));
        graph.forget_kept();
        EXPECT_TRUE(third_alive.expired());
    }

    TEST(launch_call, host_arrays_are_copied_in_and_the_output_back)
    {
        std::vector<float> x{1, 2, 3, 4}, y{10, 20, 30, 40}, out(4, -1.0f);
        saxpy_on_host(2.0f, x, y, out);
        EXPECT_EQ(out, (std::vector<float>{12, 24, 36, 48}));
        EXPECT_EQ(x, (std::vector<float>{1, 2, 3, 4}));  // const float*: never copied back
    }

    // What the launch fast path's memo of addresses relies on (magics/python/py_fast_launch.hpp): a released
    // or abandoned buffer answers 0 from pointer_in(), and the process-wide count of releases grows.
    TEST(device_buffer, a_release_or_abandon_zeroes_the_address_and_is_counted)
    {
        cuda_session& session = state().session;
        for (bool abandon : {false, true})
        {
            auto buffer = device_buffer::allocate(session, 256);
            std::uint64_t generation = session.generation(), before = device_buffer::releases();
            CUdeviceptr address = buffer->pointer_in(session, generation);
            ASSERT_NE(address, 0u);
            abandon ? buffer->abandon() : buffer->release();
            EXPECT_EQ(buffer->pointer_in(session, generation), 0u);
            EXPECT_EQ(device_buffer::releases(), before + 1) << (abandon ? "abandon" : "release");
            if (abandon)
            {
                cuda_driver::get().cuMemFree(address);  // what abandon leaves to the lost context (ASan's leak check)
            }
        }
    }

    TEST(launch_call, a_call_gives_its_device_buffers_to_the_next_call_of_the_same_sizes)
    {
        std::vector<float> x(1000, 1.0f), y(1000, 2.0f), out(1000);
        saxpy_on_host(1.0f, x, y, out);
        std::size_t reused_before = state().session.transfers().temporaries().stats().hits;
        saxpy_on_host(3.0f, x, y, out);
        EXPECT_EQ(state().session.transfers().temporaries().stats().hits, reused_before + 3);
        EXPECT_EQ(out[999], 5.0f);
    }

    TEST(launch_call, a_write_only_array_is_not_copied_in)
    {
        // fill(x, value, n) with x write-only: its device buffer starts as whatever it held; the kernel
        // writes every element, and only then is it copied back.
        std::vector<float> x(300, 7.0f);
        launch_call call(*state().fill, dims_for(x.size()), nullptr);
        call.pass_host_array(0, x.data(), x.size() * sizeof(float), false, true, nullptr, "x");
        call.arguments().store_float(1, 0.5);
        call.arguments().store_unsigned(2, x.size());
        call.run();
        EXPECT_EQ(x, std::vector<float>(300, 0.5f));
    }

    TEST(launch_call, a_conversion_error_names_the_parameter_and_leaves_the_kernel_launchable)
    {
        std::vector<float> x{1}, y{1}, out{0};
        {
            launch_call call(*state().fill, dims_for(1), nullptr);
            try
            {
                call.arguments().store_signed(2, -1);  // unsigned n
                FAIL() << "a negative unsigned was stored";
            }
            catch (const argument_value_error& e)
            {
                EXPECT_NE(std::string(e.what()).find("parameter 2 'n'"), std::string::npos) << e.what();
            }
        }
        saxpy_on_host(1.0f, x, y, out);
        EXPECT_EQ(out[0], 2.0f);
    }

    TEST(launch_call, a_replay_call_records_extents_and_copies_nothing)
    {
        std::vector<float> x{1, 2}, out{0, 0};
        launch_call call(*state().saxpy, dims_for(2), nullptr);
        call.record_for_replay();
        call.arguments().store_float(0, 1.0);
        call.pass_host_array(1, x.data(), 8, true, false, nullptr, "");
        call.pass_device_memory(2, 0x1000, 8);
        call.pass_host_array(3, out.data(), 8, false, true, nullptr, "");
        ASSERT_EQ(call.extents().size(), 3u);
        EXPECT_EQ(call.extents()[0].host, x.data());
        EXPECT_TRUE(call.extents()[0].initialised);
        EXPECT_EQ(call.extents()[1].address, 0x1000u);
        EXPECT_FALSE(call.extents()[2].initialised);  // write-only: the replay starts it uninitialised
        EXPECT_FALSE(call.has_host_arrays());
        EXPECT_EQ(call.array_bytes(), 24u);
    }

    // `threads` threads launching saxpy `launches` times each at once, each with its own values: every
    // result checked.
    void expect_threads_get_their_own_results(int threads, int launches)
    {
        constexpr std::size_t n = 4096;
        std::vector<std::string> failures(threads);
        std::vector<std::thread> running;
        for (int t = 0; t < threads; ++t)
        {
            running.emplace_back([t, launches, &failures] {
                std::vector<float> x(n), y(n), out(n);
                for (std::size_t i = 0; i < n; ++i)
                {
                    x[i] = static_cast<float>(i % 97) + t;
                    y[i] = static_cast<float>(t * 1000);
                }
                for (int launch = 0; launch < launches && failures[t].empty(); ++launch)
                {
                    float a = static_cast<float>(t + 1);
                    try
                    {
                        saxpy_on_host(a, x, y, out);
                    }
                    catch (const std::exception& e)
                    {
                        failures[t] = e.what();
                        break;
                    }
                    for (std::size_t i = 0; i < n; ++i)
                    {
                        if (out[i] != a * x[i] + y[i])
                        {
                            failures[t] = "thread " + std::to_string(t) + " launch " + std::to_string(launch) +
                                          ": element " + std::to_string(i) + " is " + std::to_string(out[i]) +
                                          ", expected " + std::to_string(a * x[i] + y[i]);
                            break;
                        }
                    }
                }
            });
        }
        for (auto& thread : running)
        {
            thread.join();
        }
        for (int t = 0; t < threads; ++t)
        {
            EXPECT_EQ(failures[t], "") << "thread " << t;
        }
    }

    TEST(launch_call, threads_launching_one_kernel_at_once_each_get_their_own_results)
    {
        expect_threads_get_their_own_results(4, 200);
    }
}

namespace xcuda
{
    namespace
    {
        // The fake driver's controls of its waits (tests/fake_driver), found in the library XCUDA_LIBCUDA names.
        void* fake_symbol(const char* name)
        {
            void* library = dlopen(std::getenv("XCUDA_LIBCUDA"), RTLD_NOW);
            void* symbol = library ? dlsym(library, name) : nullptr;
            if (!symbol)
            {
                throw std::runtime_error(std::string("the fake driver has no ") + name);
            }
            return symbol;
        }

        void fake_busy(bool busy)
        {
            reinterpret_cast<void (*)(int)>(fake_symbol("xcuda_fake_set_busy"))(busy ? 1 : 0);
        }

        void fake_print_at_sync(const char* text)
        {
            reinterpret_cast<void (*)(const char*)>(fake_symbol("xcuda_fake_print_at_sync"))(text);
        }

        // Ends the fake's busy state and the interrupt check however a test leaves.
        struct calm_waits
        {
            ~calm_waits()
            {
                fake_busy(false);
                state().session.waits().set_interrupt_check(nullptr);
            }
        };
    }

    TEST(session_waits, an_interrupt_ends_each_kind_of_wait_on_work_that_never_ends)
    {
        cuda_session& session = state().session;
        session_waits& waits = session.waits();
        session.make_current();
        CUevent event = nullptr;
        ASSERT_EQ(cuda_driver::get().cuEventCreate(&event, 0), CUDA_SUCCESS);
        calm_waits calm;
        waits.wait_idle(0);  // the launches of earlier tests waited for
        const std::pair<const char*, std::function<void()>> kinds[] = {
            {"wait", [&] { waits.wait(nullptr); }},
            {"wait_event", [&] { waits.wait_event(event); }},
            {"wait_idle", [&] { waits.wait_idle(0); }},
            {"synchronize", [&] { waits.synchronize(0); }},
        };
        for (const auto& [kind, call] : kinds)
        {
            const unsigned grid[3] = {4, 1, 1}, block[3] = {32, 1, 1};
            session.record_launch("spin", grid, block, 0, nullptr);
            fake_busy(true);
            int asked = 0;
            waits.set_interrupt_check([&] { return ++asked == 3; });  // the third check says: interrupted
            // A wait that the check never ends would hang: after 3 s the fake's work ends instead, the wait
            // returns and the expectations below fail.
            std::promise<void> finished;
            std::thread watchdog([done = finished.get_future()] {
                if (done.wait_for(std::chrono::seconds(3)) == std::future_status::timeout)
                {
                    fake_busy(false);
                }
            });
            auto start = std::chrono::steady_clock::now();
            std::string message = xcuda_tests::message_of<interrupted_error>(call);
            auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
            finished.set_value();
            watchdog.join();
            EXPECT_EQ(asked, 3) << kind;
            // Asked about every 20 ms: the third time after about 60 ms.
            EXPECT_GE(took.count(), 55) << kind;
            EXPECT_LT(took.count(), 2000) << kind;
            EXPECT_EQ(message.rfind("interrupted while waiting for device 0; launched there since the last wait:\n"
                                    "  spin[grid=(4, 1, 1), block=(32, 1, 1)] on device 0",
                                    0),
                      0u)
                << kind << ": " << message;
            EXPECT_NE(message.find("xcuda replaces the kernel process"), std::string::npos) << kind;
            EXPECT_TRUE(waits.interrupted_work_running()) << kind;
            EXPECT_TRUE(waits.interrupted_work_running()) << kind << ": still running, asked again";
            fake_busy(false);
            EXPECT_FALSE(waits.interrupted_work_running()) << kind << ": it ended";
            waits.set_interrupt_check([] { return true; });  // work that is done returns before any check
            waits.wait_idle(0);
            EXPECT_FALSE(session.unsynchronized_launches()) << kind;
        }
        cuda_driver::get().cuEventDestroy(event);
    }

    TEST(session_waits, device_printf_output_goes_to_the_sink_only_while_a_printf_module_is_loaded)
    {
        cuda_session& session = state().session;
        session_waits& waits = session.waits();
        session.make_current();
        std::vector<std::string> seen;
        waits.set_output_sink([&](const std::string& text) { seen.push_back(text); });
        EXPECT_FALSE(waits.capturing_printf());
        fake_print_at_sync("(not captured: no printf module is loaded)\n");
        waits.wait(nullptr);
        EXPECT_TRUE(seen.empty());
        waits.note_printf_module(+1);
        EXPECT_TRUE(waits.capturing_printf());
        fake_print_at_sync("hello from the device\n");
        waits.synchronize(0);
        fake_print_at_sync("from a stream\n");
        waits.wait(nullptr);
        waits.wait(nullptr);  // nothing printed: the sink is not called
        EXPECT_TRUE(waits.settle_stream(nullptr));  // no poll, no capture: the fake is done at once
        EXPECT_EQ(seen, (std::vector<std::string>{"hello from the device\n", "from a stream\n"}));
        waits.set_output_sink(nullptr);
        EXPECT_FALSE(waits.capturing_printf()) << "no sink: the output goes to stdout as usual";
        waits.note_printf_module(-1);
    }
}

namespace xcuda
{
    TEST(session_waits, threads_waiting_launching_and_loading_printf_modules_at_once)
    {
        // Eight threads at once: two launch (host arrays: copies in, the launch, waits inside the call),
        // the others wait on the default stream, their own stream and event, the legacy stream (the idle
        // event, made once by whichever thread comes first), the device, order their stream after the
        // default one, and count a printf module in and out. Nothing may fail, every launch's result must
        // be right, and the printf count must come back to none.
        cuda_session& session = state().session;
        session_waits& waits = session.waits();
        session.make_current();
        waits.wait_idle(0);
        std::vector<std::string> seen;
        waits.set_output_sink([&](const std::string& text) { seen.push_back(text); });
        struct stat before {};
        ASSERT_EQ(::fstat(1, &before), 0);
        constexpr int threads = 8;
        constexpr int rounds = 200;
        std::vector<std::string> failures(threads);
        std::vector<std::thread> running;
        for (int t = 0; t < threads; ++t)
        {
            running.emplace_back([t, &failures, &session, &waits] {
                try
                {
                    session.make_current();
                    const cuda_driver& driver = cuda_driver::get();
                    if (t < 2)
                    {
                        constexpr std::size_t n = 1024;
                        std::vector<float> x(n, static_cast<float>(t)), y(n, 1.0f), out(n);
                        for (int round = 0; round < rounds / 4; ++round)
                        {
                            saxpy_on_host(2.0f, x, y, out);
                            if (out[n - 1] != 2.0f * static_cast<float>(t) + 1.0f)
                            {
                                failures[t] = "launch " + std::to_string(round) + ": " + std::to_string(out[n - 1]);
                                return;
                            }
                        }
                        return;
                    }
                    CUstream stream = nullptr;
                    CUevent event = nullptr;
                    if (driver.cuStreamCreate(&stream, 0) != CUDA_SUCCESS ||
                        driver.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
                    {
                        failures[t] = "no stream or event";
                        return;
                    }
                    for (int round = 0; round < rounds; ++round)
                    {
                        waits.note_printf_module(+1);
                        waits.wait(nullptr);
                        waits.wait(stream);
                        driver.cuEventRecord(event, stream);
                        waits.wait_event(event);
                        waits.wait_idle(0);
                        waits.order_before(stream);
                        if (round % 16 == t)
                        {
                            waits.synchronize(0);
                        }
                        waits.note_printf_module(-1);
                    }
                    driver.cuEventDestroy(event);
                    driver.cuStreamDestroy(stream);
                }
                catch (const std::exception& e)
                {
                    failures[t] = e.what();
                }
            });
        }
        for (auto& thread : running)
        {
            thread.join();
        }
        for (int t = 0; t < threads; ++t)
        {
            EXPECT_EQ(failures[t], "") << "thread " << t;
        }
        // Each wait captured file descriptor 1 around its synchronising call: after them all it must be the
        // process' stdout again, not one capture's redirection that another put back.
        struct stat after {};
        ASSERT_EQ(::fstat(1, &after), 0);
        EXPECT_TRUE(after.st_dev == before.st_dev && after.st_ino == before.st_ino)
            << "file descriptor 1 is no longer the process' stdout";
        EXPECT_FALSE(waits.capturing_printf()) << "every thread counted its printf module out again";
        EXPECT_TRUE(seen.empty()) << "the fake printed nothing";
        waits.set_output_sink(nullptr);
        waits.synchronize(0);
        EXPECT_FALSE(session.unsynchronized_launches());
    }
}

namespace xcuda
{
    namespace
    {
        long fake_counter(const char* name)
        {
            return reinterpret_cast<long (*)(const char*)>(fake_symbol("xcuda_fake_counter"))(name);
        }

        // Puts the way of passing arguments back however a test leaves.
        struct passing_restored
        {
            argument_passing before = cuda_kernel::passing();
            ~passing_restored() { cuda_kernel::set_passing(before); }
        };
    }

    TEST(launch_call, arguments_passed_as_one_buffer_sit_at_the_offsets_the_driver_reports)
    {
        // This program's fake reports the known kernels' layouts (XCUDA_FAKE_PARAM_INFO=1, set in main):
        // saxpy's float, three pointers and size_t at 0, 8, 16, 24, 32.
        passing_restored restore;
        std::vector<float> x{1, 2, 3, 4}, y{10, 20, 30, 40}, out(4, -1.0f);
        // A kernel's first launch loads its function, and only a loaded function tells its parameters' layout:
        // launched once before (the whole program's earlier tests do that), so that this test alone
        // (ctest runs each test in a process of its own) sees what it does after them.
        saxpy_on_host(1.0f, x, y, out);
        cuda_kernel::set_passing(argument_passing::buffer);
        long before = fake_counter("buffer_launches");
        saxpy_on_host(2.0f, x, y, out);
        EXPECT_EQ(out, (std::vector<float>{12, 24, 36, 48}));
        EXPECT_EQ(fake_counter("buffer_launches"), before + 1);
        const launch_plan& packed = state().saxpy->plan();
        ASSERT_TRUE(packed.packed());
        EXPECT_TRUE(packed.has_offsets({0, 8, 16, 24, 32}));
        EXPECT_EQ(packed.block_bytes(), 40u);

        cuda_kernel::set_passing(argument_passing::pointers);
        EXPECT_FALSE(state().saxpy->plan().packed());
        saxpy_on_host(3.0f, x, y, out);
        EXPECT_EQ(out, (std::vector<float>{13, 26, 39, 52}));
        EXPECT_EQ(fake_counter("buffer_launches"), before + 1);  // pointers again

        cuda_kernel::set_passing(argument_passing::buffer);
        long threads_before = fake_counter("buffer_launches");
        expect_threads_get_their_own_results(4, 50);
        EXPECT_EQ(fake_counter("buffer_launches"), threads_before + 200);
    }

    TEST(launch_call, a_kernel_whose_layout_the_driver_does_not_report_passes_pointers_in_buffer_mode)
    {
        // The fake reports no layout for a kernel it does not know (CUDA_ERROR_NOT_SUPPORTED at parameter 0):
        // nothing is checked against it, no packed plan is made, and launches pass pointers.
        passing_restored restore;
        cuda_kernel::set_passing(argument_passing::buffer);
        compile_options options;
        options.arch = "sm_90";
        std::shared_ptr<cuda_module> module =
            state().registry.build("unknown_layout", compile_recipe{"extern \"C\" __global__ void unknown(float* x, int n) {}\n",
                                                                   options, {}}).module;
        cuda_kernel kernel(module, module->signatures().at(0));
        long before = fake_counter("buffer_launches");
        long launches = fake_counter("launches");
        std::vector<float> x(8, 1.0f);
        launch_call call(kernel, dims_for(x.size()), nullptr);
        call.pass_host_array(0, x.data(), x.size() * sizeof(float), true, true, nullptr, "x");
        call.arguments().store_signed(1, 8);
        EXPECT_NO_THROW(call.run());
        EXPECT_EQ(fake_counter("launches"), launches + 1);
        EXPECT_EQ(fake_counter("buffer_launches"), before);
        EXPECT_FALSE(kernel.plan().packed());
    }
}

int main(int argc, char** argv)
{
    // Before any driver call: this program runs against the fake driver only, the one built with it
    // (bin/../lib of this build tree, wherever the tree was copied), else where the build put it.
    std::string fake = XCUDA_FAKE_LIBCUDA;
    char self[4096];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length > 0)
    {
        std::string exe(self, static_cast<std::size_t>(length));
        std::string beside = exe.substr(0, exe.rfind('/')) + "/../lib/libxcuda_fake_cuda.so";
        if (access(beside.c_str(), R_OK) == 0)
        {
            fake = beside;
        }
    }
    setenv("XCUDA_LIBCUDA", fake.c_str(), 1);
    setenv("XCUDA_FAKE_PARAM_INFO", "1", 1);  // the known kernels' layouts, for the buffer way's test
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
