// The async-copy check (async_hazard_check, docs/simulator.md "Asynchronous copies and mbarriers"): the simulator
// lands a cp.async at its thread's wait, so an access of its destination before the wait always sees the old
// bytes here, where a GPU may land the copy earlier. The check reports such an access by any thread of the block,
// naming both threads, both lines and the block; the same pipeline with the right wait runs without a report and
// gives the host's sums.

#include <algorithm>
#include <string>

#include "simulated.hpp"

namespace
{
    // A two-buffer pipeline of 64 threads (two warps): stage i+1's copy is issued into buffer (i+1)%2, then the
    // block waits with `cp.async.wait_group WAIT` and reads buffer i%2, each thread the element another warp's
    // thread copied. WAIT 1 leaves only stage i+1 pending (right); WAIT 2 may leave stage i pending too (the bug).
    std::string pipeline(int wait)
    {
        return R"(
__device__ void copy4(float* to, const float* from)
{
    unsigned d = (unsigned)__cvta_generic_to_shared(to);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(d), "l"(from) : "memory");
}
extern "C" __global__ void pipeline(const float* in, float* out, int tiles)
{
    __shared__ float buf[2][64];
    int t = threadIdx.x;
    float sum = 0.0f;
    copy4(&buf[0][t], in + t);
    asm volatile("cp.async.commit_group;" ::: "memory");
    for (int i = 0; i < tiles; ++i)
    {
        if (i + 1 < tiles) copy4(&buf[(i + 1) % 2][t], in + (i + 1) * 64 + t);
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group )" + std::to_string(wait) + R"(;" ::: "memory");
        __syncthreads();
        sum += buf[i % 2][63 - t];
        __syncthreads();
    }
    out[t] = sum;
})";
    }

    // 1-based line of the first line of `source` holding `text` (NVRTC's line numbers, which the reports name).
    std::string line_of(const std::string& source, const std::string& text)
    {
        std::size_t at = source.find(text);
        return "line " + std::to_string(std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1) + " of";
    }
}

TEST(simulator_async_hazards, a_pipeline_that_waits_for_too_few_stages_reads_a_pending_copy_and_is_reported)
{
    const std::string source = pipeline(2);
    simulated sim(source);
    std::vector<float> in(4 * 64, 1.0f), out(64);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("pipeline", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out), 4); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::shared_race);
    // Thread 0 reads buf[0][63], which thread 63's cp.async (in copy4, called from the line before the loop) has
    // pending: stage 0 is still in flight under wait_group 2.
    EXPECT_NE(message.find("kernel 'pipeline': a cp.async hazard in block (0,0,0) on 'pipeline::buf' (byte 252 of 512), "
                           "shared address 0xfc: thread (0,0,0) reads shared bytes at 'ld.shared"),
              std::string::npos) << message;
    EXPECT_NE(message.find(line_of(source, "sum += buf")), std::string::npos) << message;
    EXPECT_NE(message.find(", the destination of the cp.async at 'cp.async.ca.shared.global"), std::string::npos) << message;
    EXPECT_NE(message.find(line_of(source, "asm volatile(\"cp.async.ca")), std::string::npos) << message;
    EXPECT_NE(message.find("which thread (63,0,0) issued and has not waited for"), std::string::npos) << message;
    EXPECT_NE(message.find("on a GPU the copy may land before or after this read"), std::string::npos) << message;
    EXPECT_NE(message.find("XCUDA_SIM_CHECKS=-async-copy"), std::string::npos) << message;
}

TEST(simulator_async_hazards, the_same_pipeline_with_the_right_wait_runs_without_a_report_and_sums_every_stage)
{
    simulated sim(pipeline(1));
    const int tiles = 5;
    std::vector<float> in(tiles * 64), out(64);
    for (std::size_t k = 0; k < in.size(); ++k)
    {
        in[k] = static_cast<float>(k % 13);
    }
    sim.launch("pipeline", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out), tiles);
    for (int t = 0; t < 64; ++t)
    {
        float expected = 0.0f;
        for (int i = 0; i < tiles; ++i)
        {
            expected += in[static_cast<std::size_t>(i * 64 + 63 - t)];
        }
        EXPECT_EQ(out[static_cast<std::size_t>(t)], expected) << "thread " << t;
    }
}

TEST(simulator_async_hazards, with_the_check_off_the_short_wait_runs_silently_on_the_old_bytes)
{
    // What the check is for: without it the short wait reads buffers whose copies have not landed (zeros at the
    // first stage, the stage before at the others) and the launch succeeds, where a GPU gives either.
    simulated sim(pipeline(2));
    sim.checks = check_options::parse("-async-copy", nullptr, nullptr);
    std::vector<float> in(2 * 64, 1.0f), out(64, -1.0f);
    sim.launch("pipeline", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out), 2);
    EXPECT_EQ(out[0], 0.0f) << "both stages were read before they landed";
}

TEST(simulator_async_hazards, a_write_into_a_pending_destination_is_reported_as_the_copy_may_overwrite_it)
{
    const std::string source = R"(
extern "C" __global__ void overwrite(const int* in, int* out)
{
    __shared__ int s[32];
    int t = threadIdx.x;
    unsigned d = (unsigned)__cvta_generic_to_shared(&s[t]);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(d), "l"(in + t) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    s[t] = -1;
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    out[t] = s[t];
})";
    simulated sim(source);
    std::vector<int> in(32, 5), out(32);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("overwrite", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::shared_race);
    EXPECT_NE(message.find("thread (0,0,0) writes shared bytes at 'st.shared"), std::string::npos) << message;
    EXPECT_NE(message.find(line_of(source, "s[t] = -1")), std::string::npos) << message;
    EXPECT_NE(message.find(line_of(source, "asm volatile(\"cp.async.ca")), std::string::npos) << message;
    EXPECT_NE(message.find("which thread (0,0,0) issued and has not waited for"), std::string::npos) << message;
    EXPECT_NE(message.find("the copy may land before or after this write, overwriting it or not"), std::string::npos) << message;
}

TEST(simulator_async_hazards, a_second_copy_into_a_pending_destination_is_reported)
{
    simulated sim(R"(
extern "C" __global__ void twice(const int* in, int* out)
{
    __shared__ int s[32];
    int t = threadIdx.x;
    unsigned d = (unsigned)__cvta_generic_to_shared(&s[t]);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(d), "l"(in + t) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(d), "l"(in + 32 + t) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    out[t] = s[t];
})");
    std::vector<int> in(64, 5), out(32);
    std::string message = error_of([&] { sim.launch("twice", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out)); });
    EXPECT_NE(message.find("thread (0,0,0) copies into shared bytes at 'cp.async"), std::string::npos) << message;
    EXPECT_NE(message.find("the two copies may land in either order"), std::string::npos) << message;
}
