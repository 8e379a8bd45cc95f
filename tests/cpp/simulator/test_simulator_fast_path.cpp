// The warp interpreter's fast path (warp_fast_operations.cpp, warp_load_store.cpp): the handlers that run an
// instruction for all 32 lanes in one loop must give what PTX says, with every lane active and with some, and
// every check of an access (faults with the thread, alignment, the race check through a generic pointer) must
// still be made when a whole warp's access takes the one-pass check.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "simulated.hpp"

namespace
{
    // Each form the fast path specialises, written as inline PTX so that the operand kinds (an immediate, a register)
    // are the ones named. Row r of the output for thread i is out[r * n + i].
    const char* const fast_forms = R"(
extern "C" __global__ void forms(const int* a, const int* b, const unsigned* shift, const float* f,
                                 long long* out, int n, int odd_only)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || (odd_only && (i & 1) == 0)) return;
    int x = a[i], y = b[i];
    unsigned s = shift[i];
    long long wide = (long long)x * 3 - y;
    int r32; long long r64; unsigned u32; float g; int k = 0;
#define OUT(v) out[(k++) * n + i] = (long long)(v)
    asm("add.s32 %0, %1, 7;" : "=r"(r32) : "r"(x)); OUT(r32);
    asm("sub.s32 %0, %1, %2;" : "=r"(r32) : "r"(x), "r"(y)); OUT(r32);
    asm("mul.lo.s32 %0, %1, %2;" : "=r"(r32) : "r"(x), "r"(y)); OUT(r32);
    asm("mul.wide.s32 %0, %1, %2;" : "=l"(r64) : "r"(x), "r"(y)); OUT(r64);
    asm("mul.wide.u32 %0, %1, 40000;" : "=l"(r64) : "r"(x)); OUT(r64);
    asm("mad.lo.s32 %0, %1, %2, -5;" : "=r"(r32) : "r"(x), "r"(y)); OUT(r32);
    asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(r64) : "r"(x), "r"(y), "l"(wide)); OUT(r64);
    asm("shl.b32 %0, %1, %2;" : "=r"(r32) : "r"(x), "r"(s)); OUT(r32);
    asm("shr.s32 %0, %1, %2;" : "=r"(r32) : "r"(x), "r"(s)); OUT(r32);
    asm("shr.u32 %0, %1, %2;" : "=r"(u32) : "r"(x), "r"(s)); OUT(u32);
    asm("shl.b64 %0, %1, %2;" : "=l"(r64) : "l"(wide), "r"(s + 24)); OUT(r64);
    asm("shr.s64 %0, %1, %2;" : "=l"(r64) : "l"(wide), "r"(s + 24)); OUT(r64);
    asm("xor.b32 %0, %1, 0x5a5a;" : "=r"(r32) : "r"(x)); OUT(r32);
    asm("and.b32 %0, %1, %2;" : "=r"(r32) : "r"(x), "r"(y)); OUT(r32);
    asm("cvt.s64.s32 %0, %1;" : "=l"(r64) : "r"(x)); OUT(r64);
    asm("cvt.u64.u32 %0, %1;" : "=l"(r64) : "r"(x)); OUT(r64);
    asm("cvt.u32.u64 %0, %1;" : "=r"(u32) : "l"(wide)); OUT(u32);
    asm("{ .reg .pred p; setp.lo.u32 p, %1, %2; selp.s32 %0, 11, -3, p; }" : "=r"(r32) : "r"(x), "r"(y)); OUT(r32);
    asm("{ .reg .pred p; setp.lt.s32 p, %1, 100; selp.s32 %0, %1, %2, p; }" : "=r"(r32) : "r"(x), "r"(y)); OUT(r32);
    asm("{ .reg .pred p; setp.ge.s64 p, %1, 0; selp.s32 %0, 1, 0, p; }" : "=r"(r32) : "l"(wide)); OUT(r32);
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(g) : "f"(f[i]), "f"(f[n - 1 - i]), "f"(f[(i + 5) % n])); OUT(__float_as_uint(g));
    asm("add.f32 %0, %1, 0f3F800000;" : "=f"(g) : "f"(f[i])); OUT(__float_as_uint(g));
    asm("mov.u32 %0, %%laneid;" : "=r"(u32)); OUT(u32);
    short h;  // 16-bit forms: the general path (warp_operations.cpp)
    asm("shr.s16 %0, %1, %2;" : "=h"(h) : "h"((short)x), "r"(s)); OUT(h);
    asm("shl.b16 %0, %1, %2;" : "=h"(h) : "h"((short)y), "r"(s)); OUT(h);
}
)";

    struct forms_input
    {
        std::vector<int> a, b;
        std::vector<unsigned> shift;
        std::vector<float> f;
    };

    forms_input inputs(int n)
    {
        forms_input in{std::vector<int>(n), std::vector<int>(n), std::vector<unsigned>(n), std::vector<float>(n)};
        for (int i = 0; i < n; ++i)
        {
            in.a[i] = static_cast<int>(static_cast<unsigned>(i) * 2654435761u);  // both signs, large
            in.b[i] = (i % 7) * 1000 - 2500 + i;
            in.shift[i] = static_cast<unsigned>(i % 41);  // past 32 too: a shift by the width or more
            in.f[i] = 0.37f * static_cast<float>(i) - 5.0f;
        }
        return in;
    }

    std::uint32_t float_bits(float v)
    {
        std::uint32_t b;
        std::memcpy(&b, &v, 4);
        return b;
    }

    // What PTX says each form gives, on the host.
    std::vector<long long> expected_forms(const forms_input& in, int i, int n)
    {
        const int x = in.a[i], y = in.b[i];
        const unsigned ux = static_cast<unsigned>(x), uy = static_cast<unsigned>(y), s = in.shift[i];
        const long long wide = static_cast<long long>(x) * 3 - y;
        const unsigned long long uwide = static_cast<unsigned long long>(wide);
        const unsigned s64 = s + 24;
        auto as_int = [](unsigned v) { return static_cast<long long>(static_cast<int>(v)); };
        return {
            as_int(ux + 7u),
            as_int(ux - uy),
            as_int(ux * uy),
            static_cast<long long>(x) * y,
            static_cast<long long>(static_cast<unsigned long long>(ux) * 40000ull),
            as_int(ux * uy - 5u),
            static_cast<long long>(static_cast<unsigned long long>(static_cast<long long>(x) * y) + uwide),
            s >= 32 ? 0 : as_int(ux << s),
            s >= 32 ? (x < 0 ? -1 : 0) : static_cast<long long>(x >> s),
            static_cast<long long>(s >= 32 ? 0u : ux >> s),
            static_cast<long long>(s64 >= 64 ? 0ull : uwide << s64),
            s64 >= 64 ? (wide < 0 ? -1 : 0) : wide >> s64,
            as_int(ux ^ 0x5a5au),
            as_int(ux & uy),
            static_cast<long long>(x),
            static_cast<long long>(ux),
            static_cast<long long>(static_cast<unsigned>(uwide)),
            ux < uy ? 11 : -3,
            x < 100 ? x : y,
            wide >= 0 ? 1 : 0,
            static_cast<long long>(float_bits(std::fma(in.f[i], in.f[n - 1 - i], in.f[(i + 5) % n]))),
            static_cast<long long>(float_bits(in.f[i] + 1.0f)),
            static_cast<long long>(i % 32),
            static_cast<long long>(s >= 16 ? (static_cast<short>(x) < 0 ? -1 : 0) : static_cast<short>(x) >> s),
            static_cast<long long>(static_cast<short>(s >= 16 ? 0u : (static_cast<unsigned>(static_cast<unsigned short>(y)) << s) & 0xffffu)),
        };
    }

}

TEST(simulator_fast_path, each_specialised_form_gives_what_ptx_says_with_every_lane_active_and_with_half)
{
    simulated sim(fast_forms);
    const int n = 100;  // a last warp with 4 lanes: a partial mask even in the uniform run
    const int rows = 25;
    forms_input in = inputs(n);
    for (int odd_only = 0; odd_only < 2; ++odd_only)
    {
        std::vector<long long> out(static_cast<std::size_t>(rows) * n, -77);
        sim.launch("forms", {2, 1, 1}, {64, 1, 1}, 0, sim.buffer(in.a, "a"), sim.buffer(in.b, "b"),
                   sim.buffer(in.shift, "shift"), sim.buffer(in.f, "f"), sim.buffer(out, "out"), n, odd_only);
        for (int i = 0; i < n; ++i)
        {
            std::vector<long long> want = expected_forms(in, i, n);
            ASSERT_EQ(want.size(), static_cast<std::size_t>(rows));
            for (int r = 0; r < rows; ++r)
            {
                const long long got = out[static_cast<std::size_t>(r) * n + i];
                if (odd_only && i % 2 == 0)
                {
                    ASSERT_EQ(got, -77) << "an inactive lane wrote row " << r << " of thread " << i;
                }
                else
                {
                    ASSERT_EQ(got, want[static_cast<std::size_t>(r)]) << "row " << r << ", thread " << i
                                                                      << (odd_only ? " (odd lanes only)" : "");
                }
            }
        }
        for (auto* p : {static_cast<void*>(out.data()), static_cast<void*>(in.a.data()), static_cast<void*>(in.b.data()),
                        static_cast<void*>(in.shift.data()), static_cast<void*>(in.f.data())})
        {
            sim.memory.remove(reinterpret_cast<std::uintptr_t>(p));
        }
    }
}

TEST(simulator_fast_path, a_whole_warp_reading_past_its_arrays_end_faults_at_the_first_thread_outside)
{
    simulated sim(R"(
extern "C" __global__ void copy(const float* in, float* out)
{ int i = threadIdx.x; out[i] = in[i % 40] + in[i]; })");  // the first read inside: the warp's cache holds the array
    std::vector<float> in(40, 1.0f), out(64, 0.0f);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("copy", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out)); },
                                   &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address) << message;
    EXPECT_NE(message.find("thread (40,0,0)"), std::string::npos) << message;
    EXPECT_NE(message.find("past the end"), std::string::npos) << message;
}

TEST(simulator_fast_path, a_whole_warp_at_misaligned_addresses_is_a_fault_naming_the_alignment)
{
    simulated sim(R"(
extern "C" __global__ void skewed(const char* in, float* out)
{ int i = threadIdx.x; out[i] = ((const float*)in)[i] + *(const float*)(in + 2 + 4 * i); })");
    std::vector<char> in(4 * 40, 0);
    std::vector<float> out(32, 0.0f);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("skewed", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out)); },
                                   &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address) << message;
    EXPECT_NE(message.find("not aligned to 4 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("thread (0,0,0)"), std::string::npos) << message;
}

TEST(simulator_fast_path, a_race_through_a_generic_pointer_to_shared_memory_is_still_reported)
{
    simulated sim(R"(
extern "C" __global__ void racy(float* out)
{
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    float v;
    asm volatile("ld.f32 %0, [%1];" : "=f"(v) : "l"(&s[threadIdx.x ^ 32]));  // generic: the other warp's element
    out[threadIdx.x] = v;  // no __syncthreads() before the read
})");
    std::vector<float> out(64, 0.0f);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("racy", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::shared_race) << message;
    sim.checks.race = false;
    sim.checks.init_shared = false;  // warp 0 reads the words warp 1 has not written yet
    sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
    sim.launch("racy", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out[33], 1.0f) << "warp 1 reads s[1], which warp 0 wrote before it (warps run in order)";
}
