// The simulator's resilience (issue 46): a launch stops when its cancel flag is set, between blocks and
// inside a block that never ends; the blocks done are counted for progress; a function whose PTX cannot be
// read is refused alone, at its launch, and the module's other kernels run.

#include <atomic>
#include <thread>

#include "simulated.hpp"

namespace
{
    // A kernel that says it started (started[0] = 1) and spins until stop[0] is set (never, here).
    const char* k_spin = R"(
extern "C" __global__ void spin(volatile int* started, volatile int* stop, int* out)
{
    if (threadIdx.x == 0) started[0] = 1;
    int n = 0;
    while (stop[0] == 0) { ++n; }
    out[threadIdx.x] = n;
})";

    // Runs spin on `threads` host threads in another thread, sets the cancel flag once a block runs, and
    // returns the launch's error and its kind.
    std::string cancel_a_running_spin(unsigned threads, unsigned blocks, sim_error::kind& kind)
    {
        simulated sim(k_spin);
        std::vector<int> started(1, 0), stop(1, 0), out(64, 0);
        int* s = sim.buffer(started, "started");
        int* t = sim.buffer(stop, "stop");
        int* o = sim.buffer(out, "out");
        std::atomic<bool> cancel{false};
        sim.cancel = &cancel;
        sim.threads = threads;
        sim.step_limit = 20000000;  // a cancel that does not work ends the test with the step limit's error
        std::string error;
        std::thread launch([&] { error = error_of([&] { sim.launch("spin", {blocks, 1, 1}, {64, 1, 1}, 0, s, t, o); }, &kind); });
        while (__atomic_load_n(&started[0], __ATOMIC_SEQ_CST) == 0)
        {
            std::this_thread::yield();
        }
        cancel.store(true);
        launch.join();
        return error;
    }
}

TEST(simulator_resilience, a_cancel_stops_a_block_that_never_ends_on_one_host_thread)
{
    sim_error::kind kind = sim_error::kind::launch_failed;
    std::string error = cancel_a_running_spin(1, 1, kind);
    EXPECT_EQ(kind, sim_error::kind::interrupted) << error;
    EXPECT_NE(error.find("kernel 'spin' was interrupted in block (0,0,0)"), std::string::npos) << error;
}

TEST(simulator_resilience, a_cancel_stops_every_host_thread_of_the_pool)
{
    sim_error::kind kind = sim_error::kind::launch_failed;
    std::string error = cancel_a_running_spin(3, 8, kind);
    EXPECT_EQ(kind, sim_error::kind::interrupted) << error;
    EXPECT_NE(error.find("was interrupted"), std::string::npos) << error;
}

TEST(simulator_resilience, a_cancel_set_before_the_launch_runs_no_block)
{
    simulated sim(R"(extern "C" __global__ void one(int* out) { out[blockIdx.x] = 1; })");
    std::vector<int> out(4, 0);
    int* o = sim.buffer(out);
    std::atomic<bool> cancel{true};
    std::atomic<std::uint64_t> done{0};
    sim.cancel = &cancel;
    sim.blocks_progress = &done;
    sim_error::kind kind = sim_error::kind::launch_failed;
    std::string error = error_of([&] { sim.launch("one", {4, 1, 1}, {1, 1, 1}, 0, o); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::interrupted) << error;
    EXPECT_EQ(done.load(), 0u);
    EXPECT_EQ(out, std::vector<int>(4, 0));
}

TEST(simulator_resilience, every_finished_block_is_counted_on_one_and_on_several_host_threads)
{
    for (unsigned threads : {1u, 3u})
    {
        simulated sim(R"(extern "C" __global__ void one(int* out) { out[blockIdx.x] = blockIdx.x; })");
        std::vector<int> out(37, -1);
        int* o = sim.buffer(out);
        std::atomic<bool> cancel{false};
        std::atomic<std::uint64_t> done{0};
        sim.cancel = &cancel;
        sim.blocks_progress = &done;
        sim.threads = threads;
        sim.launch("one", {37, 1, 1}, {32, 1, 1}, 0, o);
        EXPECT_EQ(done.load(), 37u) << threads << " host threads";
        EXPECT_EQ(out[36], 36);
    }
}

TEST(simulator_resilience, without_a_step_limit_a_long_loop_ends_and_clock_still_counts)
{
    // step_limit 0 is no limit: a loop of 200,000 iterations (some 10^6 warp-instructions) ends normally,
    // and %clock still counts (it reads the launch's warp-instructions).
    simulated sim(R"(
extern "C" __global__ void loop(long long* out, int n)
{
    long long t0 = clock64();
    int s = 0;
    for (int i = 0; i < n; ++i) { s += i & 3; }
    out[0] = s;
    out[1] = clock64() - t0;
})");
    std::vector<long long> out(2, 0);
    long long* o = sim.buffer(out);
    sim.step_limit = 0;
    sim.launch("loop", {1, 1, 1}, {1, 1, 1}, 0, o, 200000);
    EXPECT_EQ(out[0], 300000);
    EXPECT_GT(out[1], 200000);
}

TEST(simulator_resilience, an_opt_in_step_limit_stops_a_loop_and_names_itself)
{
    simulated sim(k_spin);
    std::vector<int> started(1, 0), stop(1, 0), out(64, 0);
    sim.step_limit = 100000;
    sim_error::kind kind = sim_error::kind::interrupted;
    std::string error = error_of(
        [&] { sim.launch("spin", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(started), sim.buffer(stop), sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::launch_failed) << error;
    EXPECT_NE(error.find("ran more than 100000 warp-instructions"), std::string::npos) << error;
    EXPECT_NE(error.find("XCUDA_SIM_MAX_STEPS"), std::string::npos) << error;
}

namespace
{
    // Two kernels and a device function; `odd` and `helper` hold PTX the simulator cannot read (a vector
    // register, valid PTX that ptxas takes), which NVRTC passes through from inline asm.
    const char* k_partly_readable = R"(
__device__ __noinline__ int helper(int x)
{
    asm volatile("{ .reg .v2 .f32 vector; }");
    return x + 1;
}
extern "C" __global__ void odd(int* out)
{
    asm volatile("{ .reg .v4 .f32 vector; }");
    out[threadIdx.x] = 7;
}
extern "C" __global__ void calls_helper(int* out) { out[threadIdx.x] = helper(threadIdx.x); }
extern "C" __global__ void fine(int* out) { out[threadIdx.x] = 3 * threadIdx.x; }
)";
}

TEST(simulator_resilience, a_kernel_whose_ptx_cannot_be_read_is_refused_alone_at_its_launch)
{
    simulated sim(k_partly_readable);  // the module is read: parse() does not throw
    std::vector<int> out(32, -1);
    int* o = sim.buffer(out);
    sim.launch("fine", {1, 1, 1}, {32, 1, 1}, 0, o);
    EXPECT_EQ(out[31], 93);

    sim_error::kind kind = sim_error::kind::launch_failed;
    std::string error = error_of([&] { sim.launch("odd", {1, 1, 1}, {32, 1, 1}, 0, o); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::unsupported) << error;
    EXPECT_NE(error.find("cannot run kernel 'odd'"), std::string::npos) << error;
    EXPECT_NE(error.find("vector registers are not supported"), std::string::npos) << error;
    EXPECT_NE(error.find("PTX line "), std::string::npos) << error;       // the PTX line
    EXPECT_NE(error.find(".reg .v4 .f32 vector"), std::string::npos) << error;  // its text
    EXPECT_NE(error.find("(line 9 of "), std::string::npos) << error;   // the source line of the asm
    EXPECT_EQ(out[0], 0) << "nothing of the refused kernel ran";

    error = error_of([&] { sim.launch("calls_helper", {1, 1, 1}, {32, 1, 1}, 0, o); }, &kind);
    EXPECT_NE(error.find("cannot run kernel 'calls_helper': it calls '"), std::string::npos) << error;
    EXPECT_NE(error.find("helper"), std::string::npos) << error;

    sim.launch("fine", {1, 1, 1}, {32, 1, 1}, 0, o);  // and the module goes on
    EXPECT_EQ(out[5], 15);
}

TEST(simulator_resilience, a_body_that_never_ends_still_refuses_the_whole_module)
{
    const std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry broken()\n{\n  .reg .v2 .f32 v;\n";
    std::string error = error_of([&] { ptx_parser::parse(ptx); });
    EXPECT_NE(error.find("vector registers are not supported"), std::string::npos) << error;
}
