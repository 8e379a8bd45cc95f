// The PTX simulator's float families of round 2 (half precision, set, the conversions' and arithmetic's
// roundings) from inline PTX, each against values worked out by hand from the PTX ISA's definitions. The
// exhaustive comparisons against exact references are tests/simulator/test_float_families.py.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "simulated.hpp"

TEST(simulator_float_families, half_set_setp_of_pairs_min_nan_sat_and_bf16_packing_give_the_isas_bits)
{
    simulated sim(R"(
extern "C" __global__ void halves(const unsigned* in, unsigned* out)
{
    unsigned a = in[0], b = in[1], r[8];
    unsigned short h = (unsigned short)a, g = (unsigned short)b, s;
    asm("set.lt.f16.f16 %0, %1, %2;" : "=h"(s) : "h"(h), "h"(g)); r[0] = s;
    asm("set.ge.u32.f16x2 %0, %1, %2;" : "=r"(r[1]) : "r"(a), "r"(b));
    asm("{ .reg .pred p, q; .reg .b32 t; setp.lt.f16x2 p|q, %1, %2; selp.u32 %0, 1, 0, p; selp.u32 t, 2, 0, q; or.b32 %0, %0, t; }"
        : "=r"(r[2]) : "r"(a), "r"(b));
    asm("min.NaN.f16 %0, %1, %2;" : "=h"(s) : "h"(h), "h"((unsigned short)0x7e00)); r[3] = s;
    asm("min.f16 %0, %1, %2;" : "=h"(s) : "h"(h), "h"((unsigned short)0x7e00)); r[4] = s;
    asm("add.sat.f16 %0, %1, %2;" : "=h"(s) : "h"(h), "h"(h)); r[5] = s;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r[6]) : "f"(1.0f), "f"(-2.0f));
    asm("cvt.rz.f16.f32 %0, %1;" : "=h"(s) : "f"(65519.0f)); r[7] = s;
    for (int k = 0; k < 8; ++k) out[k] = r[k];
})");
    // h = 0.75 (0x3a00) and 2.0 (0x4000) in a; g = 1.0 (0x3c00) and 1.0 in b
    std::vector<unsigned> in = {0x40003a00u, 0x3c003c00u}, out(8);
    sim.launch("halves", {1, 1, 1}, {1, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    EXPECT_EQ(out[0], 0x3c00u) << "set.lt.f16.f16: 0.75 < 1 writes 1.0 as a half";
    EXPECT_EQ(out[1], 0xffff0000u) << "set.ge.u32.f16x2: low 0.75 >= 1 false, high 2 >= 1 true";
    EXPECT_EQ(out[2], 1u) << "setp.f16x2: p takes the low halves (0.75 < 1), q the high (2 < 1 false)";
    EXPECT_EQ(out[3], 0x7fffu) << "min.NaN: a NaN operand gives the canonical NaN";
    EXPECT_EQ(out[4], 0x3a00u) << "min: a NaN operand is ignored";
    EXPECT_EQ(out[5], 0x3c00u) << "add.sat: 1.5 clamps to 1.0";
    EXPECT_EQ(out[6], 0x3f80c000u) << "cvt.rn.bf16x2.f32 d, a, b: a (1.0) in the high half, b (-2.0) in the low";
    EXPECT_EQ(out[7], 0x7bffu) << "cvt.rz.f16.f32 of 65519: the largest half (65504), not infinity";
}

TEST(simulator_float_families, directed_roundings_of_f32_and_f64_step_toward_zero_down_and_up)
{
    simulated sim(R"(
extern "C" __global__ void directed(const double* d, const float* f, double* out, float* fout)
{
    double one = d[0], tiny = d[1];
    double r[6];
    asm("add.rz.f64 %0, %1, %2;" : "=d"(r[0]) : "d"(one), "d"(tiny));
    asm("add.rp.f64 %0, %1, %2;" : "=d"(r[1]) : "d"(one), "d"(tiny));
    asm("add.rm.f64 %0, %1, %2;" : "=d"(r[2]) : "d"(-one), "d"(-tiny));
    asm("fma.rp.f64 %0, %1, %2, %3;" : "=d"(r[3]) : "d"(one), "d"(one), "d"(tiny));
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r[4]) : "d"(d[2]));
    asm("sqrt.rm.f64 %0, %1;" : "=d"(r[5]) : "d"(2.0));
    for (int k = 0; k < 6; ++k) out[k] = r[k];
    float x = f[0], y = f[1], g[4];
    asm("mul.rz.f32 %0, %1, %2;" : "=f"(g[0]) : "f"(x), "f"(y));
    asm("mul.rp.f32 %0, %1, %2;" : "=f"(g[1]) : "f"(x), "f"(y));
    asm("div.rm.f32 %0, %1, %2;" : "=f"(g[2]) : "f"(1.0f), "f"(3.0f));
    asm("div.rp.f32 %0, %1, %2;" : "=f"(g[3]) : "f"(1.0f), "f"(3.0f));
    for (int k = 0; k < 4; ++k) fout[k] = g[k];
})");
    std::vector<double> d = {1.0, std::ldexp(1.0, -60), std::ldexp(1.0, -1070)}, out(6);
    std::vector<float> f = {1.0f + std::ldexp(1.0f, -23), 1.0f + std::ldexp(1.0f, -23)}, fout(4);
    sim.launch("directed", {1, 1, 1}, {1, 1, 1}, 0, sim.buffer(d), sim.buffer(f), sim.buffer(out), sim.buffer(fout));
    EXPECT_EQ(out[0], 1.0) << "1 + 2^-60 toward zero";
    EXPECT_EQ(out[1], 1.0 + std::ldexp(1.0, -52)) << "1 + 2^-60 up: the next double";
    EXPECT_EQ(out[2], -1.0 - std::ldexp(1.0, -52)) << "-1 - 2^-60 down";
    EXPECT_EQ(out[3], 1.0 + std::ldexp(1.0, -52)) << "fma.rp: 1*1 + 2^-60 up";
    EXPECT_TRUE(std::isinf(out[4]) && out[4] > 0) << "rcp.approx.ftz.f64 of a subnormal: flushed to 0, 1/0";
    EXPECT_EQ(out[5], std::nextafter(std::sqrt(2.0), 0.0)) << "the nearest double lies above sqrt(2): down is the one below";
    // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46: toward zero 1 + 2^-22, up the float after it
    EXPECT_EQ(fout[0], 1.0f + std::ldexp(1.0f, -22));
    EXPECT_EQ(fout[1], 1.0f + std::ldexp(1.0f, -22) + std::ldexp(1.0f, -23));
    EXPECT_EQ(fout[2], 0x1.555554p-2f) << "1/3 down";
    EXPECT_EQ(fout[3], 0x1.555556p-2f) << "1/3 up";
}

TEST(simulator_float_families, ex2_and_tanh_approximations_of_halves_round_the_exact_value_once)
{
    simulated sim(R"(
extern "C" __global__ void approximations(unsigned* out)
{
    unsigned short s;
    unsigned r;
    asm("ex2.approx.f16 %0, %1;" : "=h"(s) : "h"((unsigned short)0x3c00)); out[0] = s;           // 2^1
    asm("ex2.approx.f16x2 %0, %1;" : "=r"(r) : "r"(0xbc003800u)); out[1] = r;                  // 2^0.5, 2^-1
    asm("tanh.approx.f16 %0, %1;" : "=h"(s) : "h"((unsigned short)0x8000)); out[2] = s;        // tanh(-0)
    asm("ex2.approx.ftz.bf16 %0, %1;" : "=h"(s) : "h"((unsigned short)0x4040)); out[3] = s;    // 2^3
})");
    std::vector<unsigned> out(4);
    sim.launch("approximations", {1, 1, 1}, {1, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out[0], 0x4000u) << "2.0";
    EXPECT_EQ(out[1], 0x38003da8u) << "low half sqrt(2) = 1.4142 (0x3da8), high half 0.5";
    EXPECT_EQ(out[2], 0x8000u) << "-0";
    EXPECT_EQ(out[3], 0x4100u) << "8.0 as a bfloat16";
}

TEST(simulator_float_families, an_operation_on_halves_the_simulator_does_not_implement_is_named_when_it_runs)
{
    simulated sim(R"(
extern "C" __global__ void halves(unsigned* out)
{
    unsigned short s;
    asm("rcp.approx.f16 %0, %1;" : "=h"(s) : "h"((unsigned short)0x3c00));
    out[0] = s;
})");
    std::vector<unsigned> out(1);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("halves", {1, 1, 1}, {1, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::unsupported);
    EXPECT_NE(message.find("this operation on .f16 is not implemented"), std::string::npos) << message;
}

// Not a float family, but the other half of issue 46's "trap/assert with the source line": a failed device assert
// fails the launch with the expression and the cell line, and prints each failing thread's line as a GPU does.
TEST(simulator_device_runtime, a_failed_assert_fails_the_launch_naming_the_expression_the_thread_and_the_line)
{
    simulated sim(R"(
extern "C" __global__ void checked(const int* v, int* out)
{
    int i = threadIdx.x;
    assert(v[i] >= 0 && "values must be non-negative");
    out[i] = v[i] * 2;
})");
    std::vector<int> v(64, 1), out(64);
    v[37] = -1;
    v[40] = -2;
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("checked", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(v), sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::assertion);
    EXPECT_NE(message.find("kernel 'checked', thread (37,0,0) of block (0,0,0): device assertion `v[i] >= 0 && "
                           "\"values must be non-negative\"` failed (and in 1 more threads of its warp), in checked, line 5 of"),
              std::string::npos) << message;
    EXPECT_NE(sim.printed.find("block: [0,0,0], thread: [37,0,0] Assertion `v[i] >= 0"), std::string::npos) << sim.printed;
    EXPECT_NE(sim.printed.find("block: [0,0,0], thread: [40,0,0] Assertion `"), std::string::npos) << sim.printed;
    EXPECT_NE(sim.printed.find(":5: void checked(const int *, int *): "), std::string::npos) << sim.printed;
    std::fill(v.begin(), v.end(), 3);
    sim.printed.clear();
    sim.launch("checked", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(v), sim.buffer(out));
    EXPECT_EQ(out, std::vector<int>(64, 6)) << "an assert that holds costs nothing";
    EXPECT_EQ(sim.printed, "");
}

TEST(simulator_device_runtime, trap_fails_the_launch_naming_the_thread_and_the_line)
{
    simulated sim(R"(
extern "C" __global__ void stop(int* out)
{
    if (threadIdx.x == 3)
        __trap();
    out[threadIdx.x] = 1;
})");
    std::vector<int> out(32);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("stop", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_instruction);
    EXPECT_NE(message.find("kernel 'stop', thread (3,0,0) of block (0,0,0): executed trap (__trap()), at 'trap' in stop, line 5 of"),
              std::string::npos) << message;
}

// The host rounding mode is per host thread, and the warnings of a launch are shared by the pool's threads: with
// blocks on four host threads, f64 directed roundings give the bits one thread gives, and a launch warns once.
TEST(simulator_parallel_blocks, directed_roundings_and_the_barrier_warning_hold_on_four_host_threads)
{
    const char* source = R"(
extern "C" __global__ void directed(const double* a, const double* b, double* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[4 * i] = __dadd_rz(a[i], b[i]); out[4 * i + 1] = __dmul_ru(a[i], b[i]);
    out[4 * i + 2] = __fma_rd(a[i], b[i], a[i]); out[4 * i + 3] = __ddiv_ru(a[i], b[i]);
    if (threadIdx.x < 32) { __syncthreads(); } else { __syncthreads(); }
})";
    const unsigned blocks = 64, n = blocks * 64;
    std::vector<double> a(n), b(n), one(4 * n), four(4 * n);
    for (unsigned i = 0; i < n; ++i)
    {
        a[i] = std::ldexp(1.0 + i * 0x1.23456789abcdp-13, static_cast<int>(i % 40) - 20);
        b[i] = 3.0 + i * 0x1.fedcba987p-11;
    }
    simulated sequential(source), parallel(source);
    parallel.threads = 4;
    sequential.launch("directed", {blocks, 1, 1}, {64, 1, 1}, 0, sequential.buffer(a), sequential.buffer(b), sequential.buffer(one));
    parallel.launch("directed", {blocks, 1, 1}, {64, 1, 1}, 0, parallel.buffer(a), parallel.buffer(b), parallel.buffer(four));
    EXPECT_EQ(0, std::memcmp(one.data(), four.data(), one.size() * sizeof(double)));
    EXPECT_NE(one[0], one[1]) << "the inputs exercise the roundings";
    for (unsigned i = 0; i < n; i += 97)
    {
        EXPECT_LE(one[4 * i], a[i] + b[i]) << "toward zero of a positive sum is at most the nearest";
        EXPECT_GE(one[4 * i + 1], a[i] * b[i]) << "up is at least the nearest";
    }
    EXPECT_EQ(parallel.warnings.messages.size(), 1u);
    EXPECT_EQ(sequential.warnings.messages.size(), 1u);
}
