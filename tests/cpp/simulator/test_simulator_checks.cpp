// The simulator's checks (docs/simulator.md, "Checks"): which checks a launch runs (check_options: the defaults and
// XCUDA_SIM_CHECKS/RACECHECK/INITCHECK), reads of uninitialised shared and global memory (init_check,
// written_memory), races between lanes of one warp (warp_race_check). Races between warps are tested in
// test_simulator.cpp (simulator_shared_memory). Each report names the thread, the block and the cell line.

#include <stdexcept>

#include "check_options.hpp"
#include "simulated.hpp"

namespace
{
    std::string refusal(const char* checks, const char* racecheck, const char* initcheck)
    {
        try
        {
            check_options::parse(checks, racecheck, initcheck);
        }
        catch (const std::invalid_argument& e)
        {
            return e.what();
        }
        return "";
    }
}

TEST(simulator_checks, by_default_a_launch_checks_races_between_warps_and_async_copy_hazards_only)
{
    check_options o = check_options::parse(nullptr, nullptr, nullptr);
    EXPECT_TRUE(o.race);
    EXPECT_TRUE(o.async_copy);
    EXPECT_FALSE(o.init_shared);
    EXPECT_FALSE(o.warp_race);
    EXPECT_FALSE(o.init_global);
    EXPECT_EQ(o.names(), "race, async-copy");
}

TEST(simulator_checks, xcuda_sim_checks_turns_checks_on_and_off_over_the_defaults)
{
    EXPECT_EQ(check_options::parse("warp-race,init-global", nullptr, nullptr).names(), "race, warp-race, init-global, async-copy");
    EXPECT_EQ(check_options::parse("-race,-init-shared,-async-copy", nullptr, nullptr).names(), "none");
    EXPECT_EQ(check_options::parse("none,warp-race", nullptr, nullptr).names(), "warp-race");
    EXPECT_EQ(check_options::parse("all,-init-global", nullptr, nullptr).names(), "race, warp-race, init-shared, async-copy");
    EXPECT_EQ(check_options::parse("none,default", nullptr, nullptr).names(), "race, async-copy");
    EXPECT_EQ(check_options::parse("-async-copy", nullptr, nullptr).names(), "race");
}

TEST(simulator_checks, racecheck_and_initcheck_win_over_xcuda_sim_checks_for_their_checks)
{
    EXPECT_EQ(check_options::parse("all", "0", nullptr).names(), "init-shared, init-global, async-copy");
    EXPECT_EQ(check_options::parse(nullptr, "warp", nullptr).names(), "race, warp-race, async-copy");
    EXPECT_EQ(check_options::parse("none", nullptr, "global").names(), "init-global");
    EXPECT_EQ(check_options::parse(nullptr, nullptr, "1").names(), "race, init-shared, init-global, async-copy");
    EXPECT_EQ(check_options::parse(nullptr, "1", "0").names(), "race, async-copy");
}

TEST(simulator_checks, a_value_the_simulator_cannot_read_is_refused_naming_the_variable_and_what_it_takes)
{
    std::string message = refusal("race,initcheck", nullptr, nullptr);
    EXPECT_NE(message.find("XCUDA_SIM_CHECKS='race,initcheck' is not a value the simulator reads"), std::string::npos)
        << message;
    EXPECT_NE(message.find("race, warp-race, init-shared, init-global, async-copy"), std::string::npos) << message;
    message = refusal(nullptr, "yes", nullptr);
    EXPECT_NE(message.find("XCUDA_SIM_RACECHECK='yes'"), std::string::npos) << message;
    message = refusal(nullptr, nullptr, "local");
    EXPECT_NE(message.find("XCUDA_SIM_INITCHECK='local'"), std::string::npos) << message;
    EXPECT_NE(message.find("shared, global, or all"), std::string::npos) << message;
}

// ---- uninitialised shared memory ----

const char* k_partial_fill = R"(
extern "C" __global__ void partial_fill(int* out, int n)
{
    __shared__ int s[64];
    if (threadIdx.x < n) s[threadIdx.x] = threadIdx.x * 2;
    __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x];
})";

TEST(simulator_checks, a_read_of_shared_memory_no_thread_wrote_names_the_thread_the_variable_and_the_line)
{
    simulated sim(k_partial_fill);
    std::vector<int> out(128);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("partial_fill", {2, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), 40); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::uninitialised);
    EXPECT_NE(message.find("kernel 'partial_fill', thread (40,0,0) of block (0,0,0): a read of uninitialised shared "
                           "memory: byte 0 of the 4 it reads, 'partial_fill::s' (byte 160 of 256) at shared address 0xa0"),
              std::string::npos) << message;
    EXPECT_NE(message.find("has not been written by any thread of the block"), std::string::npos) << message;
    EXPECT_NE(message.find("at 'ld.shared"), std::string::npos) << message;
    EXPECT_NE(message.find("line 7 of"), std::string::npos) << message;
    EXPECT_NE(message.find("XCUDA_SIM_INITCHECK=0 turns this check off"), std::string::npos) << message;
}

TEST(simulator_checks, shared_memory_every_thread_wrote_before_the_barrier_is_read_without_a_report)
{
    simulated sim(k_partial_fill);
    std::vector<int> out(128, -1);
    sim.launch("partial_fill", {2, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), 64);
    for (int i = 0; i < 128; ++i)
    {
        EXPECT_EQ(out[i], (i % 64) * 2) << i;
    }
}

TEST(simulator_checks, with_the_shared_initcheck_off_an_unwritten_shared_read_sees_zero)
{
    simulated sim(k_partial_fill);
    sim.checks.init_shared = false;
    std::vector<int> out(128, -1);
    sim.launch("partial_fill", {2, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), 40);
    EXPECT_EQ(out[39], 78);
    EXPECT_EQ(out[40], 0);  // the simulator's shared memory starts zeroed; a GPU's holds what was there
}

TEST(simulator_checks, an_atomic_on_a_shared_counter_nobody_set_is_an_uninitialised_read)
{
    simulated sim(R"(
extern "C" __global__ void count(int* out)
{
    __shared__ int n;
    atomicAdd(&n, 1);
    __syncthreads();
    out[threadIdx.x] = n;
})");
    std::vector<int> out(64);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("count", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::uninitialised);
    EXPECT_NE(message.find("thread (0,0,0) of block (0,0,0): an atomic of uninitialised shared memory"), std::string::npos)
        << message;
    EXPECT_NE(message.find("line 5 of"), std::string::npos) << message;
}

// ---- uninitialised global memory ----

const char* k_copy = R"(
extern "C" __global__ void add_one(const int* in, int* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] + 1;
})";

TEST(simulator_checks, a_read_of_a_device_allocation_never_written_names_the_byte_the_argument_and_the_line)
{
    simulated sim(k_copy);
    written_memory written;
    sim.checks.init_global = true;
    sim.written = &written;
    std::vector<int> in(64, 7), out(64);
    int* device_in = sim.buffer(in);
    written.track(reinterpret_cast<std::uintptr_t>(device_in), in.size() * sizeof(int));
    written.written(reinterpret_cast<std::uintptr_t>(device_in), 48 * sizeof(int));  // a copy of the first 48
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("add_one", {2, 1, 1}, {32, 1, 1}, 0, device_in, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::uninitialised);
    EXPECT_NE(message.find("kernel 'add_one', thread (16,0,0) of block (1,0,0): a read of uninitialised global memory: "
                           "byte 0 of the 4 it reads at "),
              std::string::npos) << message;
    EXPECT_NE(message.find("byte 192 of the device allocation at"), std::string::npos) << message;
    EXPECT_NE(message.find("(256 bytes) (the array of the kernel's parameter 0, add_one_param_0), has never been written"),
              std::string::npos) << message;
    EXPECT_NE(message.find("line 5 of"), std::string::npos) << message;
    EXPECT_EQ(out[31], 8) << "the block before ran";
}

TEST(simulator_checks, bytes_a_kernel_stored_count_as_written_in_the_next_launch)
{
    simulated sim(k_copy);
    written_memory written;
    sim.checks.init_global = true;
    sim.written = &written;
    std::vector<int> in(64, 7), middle(64), out(64);
    int* device_in = sim.buffer(in);
    int* device_middle = sim.buffer(middle);
    written.track(reinterpret_cast<std::uintptr_t>(device_in), 256);
    written.track(reinterpret_cast<std::uintptr_t>(device_middle), 256);
    written.written(reinterpret_cast<std::uintptr_t>(device_in), 256);
    sim.launch("add_one", {2, 1, 1}, {32, 1, 1}, 0, device_in, device_middle);
    sim.launch("add_one", {2, 1, 1}, {32, 1, 1}, 0, device_middle, sim.buffer(out));
    EXPECT_EQ(out[63], 9);
}

TEST(simulator_checks, a_copy_between_allocations_carries_which_bytes_were_written)
{
    std::vector<std::uint8_t> a(100), b(100), host(100);
    written_memory written;
    const auto at = [](std::vector<std::uint8_t>& v) { return reinterpret_cast<std::uintptr_t>(v.data()); };
    written.track(at(a), 100);
    written.track(at(b), 100);
    written.written(at(a) + 10, 20);               // a: bytes 10..29
    written.copied(at(b), at(a), 100);              // b gets a's state
    written.copied(at(b) + 90, at(host), 10);       // from untracked host memory: written
    const written_memory::region* r = written.find(at(b) + 5);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(written_memory::first_unwritten(*r, 0, 100), 0);
    EXPECT_EQ(written_memory::first_unwritten(*r, 10, 20), -1);
    EXPECT_EQ(written_memory::first_unwritten(*r, 10, 21), 30);
    EXPECT_EQ(written_memory::first_unwritten(*r, 90, 10), -1);
    written.forget(at(b));
    EXPECT_EQ(written.find(at(b)), nullptr) << "an untracked allocation counts as written";
}

TEST(simulator_checks, an_atomic_on_a_global_counter_never_set_is_reported)
{
    simulated sim(R"(
extern "C" __global__ void tally(int* counter)
{
    atomicAdd(counter, 1);
})");
    written_memory written;
    sim.checks.init_global = true;
    sim.written = &written;
    std::vector<int> counter(1);
    int* device_counter = sim.buffer(counter);
    written.track(reinterpret_cast<std::uintptr_t>(device_counter), 4);
    std::string message = error_of([&] { sim.launch("tally", {1, 1, 1}, {32, 1, 1}, 0, device_counter); });
    EXPECT_NE(message.find("thread (0,0,0) of block (0,0,0): an atomic of uninitialised global memory"), std::string::npos)
        << message;
    written.written(reinterpret_cast<std::uintptr_t>(device_counter), 4);  // a memset
    sim.launch("tally", {1, 1, 1}, {32, 1, 1}, 0, device_counter);
    EXPECT_EQ(counter[0], 32);
}

TEST(simulator_checks, without_the_global_initcheck_a_never_written_allocation_is_read_without_a_report)
{
    simulated sim(k_copy);
    written_memory written;
    sim.written = &written;  // tracked, but the launch's checks leave init-global off
    std::vector<int> in(64, 7), out(64);
    int* device_in = sim.buffer(in);
    written.track(reinterpret_cast<std::uintptr_t>(device_in), 256);
    sim.launch("add_one", {2, 1, 1}, {32, 1, 1}, 0, device_in, sim.buffer(out));
    EXPECT_EQ(out[63], 8);
}

// ---- races between lanes of one warp ----

// The warp-synchronous sum of older CUDA samples (tests/cpp/fixtures/warp_sum.cu), with and without __syncwarp().
std::string warp_sum() { return xcuda_tests::fixture("warp_sum.cu"); }

TEST(simulator_checks, a_lane_reading_what_another_lane_of_its_warp_wrote_without_syncwarp_is_a_race)
{
    simulated sim(warp_sum());
    sim.checks.warp_race = true;
    std::vector<int> in(32, 1), out(1);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("warp_sum", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out), 0); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::shared_race);
    EXPECT_NE(message.find("a shared-memory race between lanes of one warp in block (0,0,0), warp 0, on 'warp_sum::s' "
                           "(byte 64 of 256), shared address 0x40: thread (0,0,0) reads it at 'ld.shared"),
              std::string::npos) << message;
    EXPECT_NE(message.find("line 14 of"), std::string::npos) << message;
    EXPECT_NE(message.find("and thread (16,0,0) wrote it before at 'st.shared"), std::string::npos) << message;
    EXPECT_NE(message.find("line 9 of"), std::string::npos) << message;
    EXPECT_NE(message.find("with no __syncwarp() or barrier between"), std::string::npos) << message;
}

TEST(simulator_checks, warp_synchronous_code_with_syncwarp_is_no_race)
{
    simulated sim(warp_sum());
    sim.checks.warp_race = true;
    std::vector<int> in(32), out(1);
    for (int i = 0; i < 32; ++i)
    {
        in[i] = i * i;
    }
    sim.launch("warp_sum", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out), 1);
    EXPECT_EQ(out[0], 10416);  // the sum of i*i for i < 32
}

TEST(simulator_checks, without_the_warp_race_check_lockstep_lanes_give_the_pre_volta_result)
{
    simulated sim(warp_sum());
    std::vector<int> in(32, 3), out(1);
    sim.launch("warp_sum", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out), 0);
    EXPECT_EQ(out[0], 96);
}

TEST(simulator_checks, a_barrier_between_lanes_of_a_warp_orders_them_too)
{
    simulated sim(R"(
extern "C" __global__ void mirror(int* out)
{
    __shared__ int s[32];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[31 - threadIdx.x];
})");
    sim.checks.warp_race = true;
    std::vector<int> out(64);
    sim.launch("mirror", {2, 1, 1}, {32, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out[0], 31);
    EXPECT_EQ(out[31], 0);
}

TEST(simulator_checks, lanes_of_one_store_to_one_word_are_not_compared_with_each_other)
{
    simulated sim(R"(
extern "C" __global__ void pairs(int* out)
{
    __shared__ int s[16];
    s[threadIdx.x / 2] = threadIdx.x;
    __syncwarp();
    out[threadIdx.x] = s[threadIdx.x / 2];
})");
    sim.checks.warp_race = true;
    std::vector<int> out(32, -1);
    sim.launch("pairs", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out));
    for (int t = 0; t < 32; ++t)
    {
        EXPECT_EQ(out[t] / 2, t / 2) << "one of the two lanes' values, " << t;
    }
}

TEST(simulator_checks, the_global_initcheck_marks_and_reads_from_every_host_thread_of_the_pool)
{
    simulated sim(k_copy);
    written_memory written;
    sim.checks.init_global = true;
    sim.written = &written;
    sim.threads = 4;
    std::vector<int> in(64 * 256, 1), middle(64 * 256), out(64 * 256);
    int* device_in = sim.buffer(in);
    int* device_middle = sim.buffer(middle);
    written.track(reinterpret_cast<std::uintptr_t>(device_in), in.size() * sizeof(int));
    written.track(reinterpret_cast<std::uintptr_t>(device_middle), middle.size() * sizeof(int));
    written.written(reinterpret_cast<std::uintptr_t>(device_in), in.size() * sizeof(int));
    for (int round = 0; round < 3; ++round)  // blocks on four threads store; the next launch reads every word
    {
        sim.launch("add_one", {256, 1, 1}, {64, 1, 1}, 0, device_in, device_middle);
        sim.launch("add_one", {256, 1, 1}, {64, 1, 1}, 0, device_middle, sim.buffer(out));
        EXPECT_EQ(out[64 * 256 - 1], 3);
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
    }
    written.track(reinterpret_cast<std::uintptr_t>(device_middle), middle.size() * sizeof(int));  // unwritten again
    written.written(reinterpret_cast<std::uintptr_t>(device_middle), 100 * 64 * sizeof(int));   // blocks 0..99 only
    int* device_out = sim.buffer(out);
    std::string message = error_of([&] { sim.launch("add_one", {256, 1, 1}, {64, 1, 1}, 0, device_middle, device_out); });
    EXPECT_NE(message.find("thread (0,0,0) of block (100,0,0): a read of uninitialised global memory"), std::string::npos)
        << message;
}

TEST(simulator_checks, shared_memory_another_block_of_the_cluster_wrote_counts_as_written)
{
    simulated sim(R"(
extern "C" __global__ void handoff(unsigned* out)
{
    __shared__ unsigned s[1];
    unsigned rank, own = (unsigned)__cvta_generic_to_shared(&s[0]), there;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0)
    {
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(there) : "r"(own), "r"(rank ^ 1));
        asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(there), "r"(rank + 100));
    }
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;");
    out[blockIdx.x * 32 + threadIdx.x] = s[0];
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;");
})");
    sim.cluster = {2, 1, 1};
    std::vector<unsigned> out(64);
    sim.launch("handoff", {2, 1, 1}, {32, 1, 1}, 0, sim.buffer(out));  // each block's s[0] only the other block wrote
    EXPECT_EQ(out[0], 101u);
    EXPECT_EQ(out[32], 100u);
}
