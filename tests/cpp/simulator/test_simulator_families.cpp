// The PTX simulator's integer families (prmt, bfe/bfi of 64 bits, dp4a/dp2a, carries, special registers) and
// its barriers beyond __syncthreads (bar.red, named barriers with a count, bar.arrive): each test compiles CUDA
// C++ with NVRTC, runs it in the simulator's core on host buffers, and compares with values computed here.

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "simulated.hpp"

TEST(simulator_integer_families, prmt_in_every_mode_picks_the_bytes_the_ptx_tables_name)
{
    simulated sim(R"(
extern "C" __global__ void permutes(const unsigned* in, unsigned* out)
{
    unsigned a = in[2 * threadIdx.x], b = in[2 * threadIdx.x + 1], s = threadIdx.x, r[7];
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r[0]) : "r"(a), "r"(b), "r"(s * 0x1234567u));
    asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(r[1]) : "r"(a), "r"(b), "r"(s));
    asm("prmt.b32.b4e %0, %1, %2, %3;" : "=r"(r[2]) : "r"(a), "r"(b), "r"(s));
    asm("prmt.b32.rc8 %0, %1, %2, %3;" : "=r"(r[3]) : "r"(a), "r"(b), "r"(s));
    asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(r[4]) : "r"(a), "r"(b), "r"(s));
    asm("prmt.b32.ecr %0, %1, %2, %3;" : "=r"(r[5]) : "r"(a), "r"(b), "r"(s));
    asm("prmt.b32.rc16 %0, %1, %2, %3;" : "=r"(r[6]) : "r"(a), "r"(b), "r"(s));
    for (int k = 0; k < 7; ++k) out[7 * threadIdx.x + k] = r[k];
})");
    // Bytes 0..7 of b:a are 0x10..0x17 (lane 0) and 0x80 + ... (lane 1, signs set), so each result reads as
    // the byte numbers the PTX ISA's tables list (d.b3 d.b2 d.b1 d.b0).
    std::vector<unsigned> in(64), out(7 * 32);
    for (unsigned i = 0; i < 32; ++i)
    {
        unsigned base = (i & 1) ? 0x80u + 0x10u * (i % 7) : 0x10u;
        in[2 * i] = (base + 0) | (base + 1) << 8 | (base + 2) << 16 | (base + 3) << 24;
        in[2 * i + 1] = (base + 4) | (base + 5) << 8 | (base + 6) << 16 | (base + 7) << 24;
    }
    sim.launch("permutes", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    // The tables, for selector bits 1..0 = 0, 1, 2, 3: result byte k is byte table[s][3 - k] of b:a.
    const char* tables[6][4] = {
        {"3210", "4321", "5432", "6543"},  // f4e
        {"5670", "6701", "7012", "0123"},  // b4e
        {"0000", "1111", "2222", "3333"},  // rc8
        {"3210", "3211", "3222", "3333"},  // ecl
        {"0000", "1110", "2210", "3210"},  // ecr
        {"1010", "3232", "1010", "3232"},  // rc16
    };
    for (unsigned i = 0; i < 32; ++i)
    {
        unsigned long long bytes = (static_cast<unsigned long long>(in[2 * i + 1]) << 32) | in[2 * i];
        auto byte = [&](unsigned n) { return static_cast<unsigned>((bytes >> (8 * n)) & 0xff); };
        unsigned selector = i * 0x1234567u, expected = 0;
        for (unsigned k = 0; k < 4; ++k)
        {
            unsigned nibble = (selector >> (4 * k)) & 0xf;
            unsigned value = byte(nibble & 7);
            expected |= ((nibble & 8) ? ((value & 0x80) ? 0xffu : 0u) : value) << (8 * k);
        }
        EXPECT_EQ(out[7 * i], expected) << "default mode, lane " << i;
        for (unsigned mode = 0; mode < 6; ++mode)
        {
            const char* table = tables[mode][i & 3];
            unsigned want = 0;
            for (unsigned k = 0; k < 4; ++k)
            {
                want |= byte(static_cast<unsigned>(table[3 - k] - '0')) << (8 * k);
            }
            EXPECT_EQ(out[7 * i + 1 + mode], want) << "mode " << mode << ", lane " << i;
        }
    }
}

TEST(simulator_integer_families, bfe_and_bfi_of_64_bits_extract_sign_extend_and_insert_as_the_host_shifts_do)
{
    simulated sim(R"(
extern "C" __global__ void fields(const unsigned long long* in, const unsigned* where, unsigned long long* out)
{
    unsigned long long x = in[threadIdx.x], y = in[63 - threadIdx.x], r[3];
    unsigned pos = where[2 * threadIdx.x], len = where[2 * threadIdx.x + 1];
    asm("bfe.s64 %0, %1, %2, %3;" : "=l"(r[0]) : "l"(x), "r"(pos), "r"(len));
    asm("bfe.u64 %0, %1, %2, %3;" : "=l"(r[1]) : "l"(x), "r"(pos), "r"(len));
    asm("bfi.b64 %0, %1, %2, %3, %4;" : "=l"(r[2]) : "l"(y), "l"(x), "r"(pos), "r"(len));
    for (int k = 0; k < 3; ++k) out[3 * threadIdx.x + k] = r[k];
})");
    std::vector<unsigned long long> in(64), out(3 * 64);
    std::vector<unsigned> where(2 * 64);
    for (unsigned i = 0; i < 64; ++i)
    {
        in[i] = 0x9e3779b97f4a7c15ull * (i + 1) ^ (static_cast<unsigned long long>(i) << 58);
        where[2 * i] = (i * 7) % 60;          // pos
        where[2 * i + 1] = 1 + (i * 5) % 30;  // len: pos + len <= 89, some fields run past bit 63
    }
    // by hand: a field that runs past the top takes the sign from bit 63 (PTX: min(pos + len - 1, msb))
    in[60] = 0x8000000000000000ull;
    where[2 * 60] = 62;
    where[2 * 60 + 1] = 10;
    // len 0: zero for bfe (even signed), base unchanged for bfi
    where[2 * 61 + 1] = 0;
    sim.launch("fields", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(where), sim.buffer(out));
    for (unsigned i = 0; i < 64; ++i)
    {
        unsigned long long x = in[i], y = in[63 - i];
        unsigned pos = where[2 * i], len = where[2 * i + 1];
        unsigned kept = std::min(len, 64 - pos);  // the bits of the field inside the word
        unsigned long long mask = kept == 64 ? ~0ull : ((1ull << kept) - 1);
        unsigned long long field = (x >> pos) & mask;
        unsigned long long sign = len == 0 ? 0 : (x >> std::min(pos + len - 1, 63u)) & 1;
        unsigned long long signed_field = sign ? field | ~mask : field;
        EXPECT_EQ(out[3 * i], len == 0 ? 0 : signed_field) << i;
        EXPECT_EQ(out[3 * i + 1], len == 0 ? 0 : field) << i;
        unsigned long long place = kept == 0 ? 0 : mask << pos;
        EXPECT_EQ(out[3 * i + 2], (x & ~place) | ((y << pos) & place)) << i;
    }
    EXPECT_EQ(out[3 * 60], ~1ull) << "bits 63, 62 = 0b10 (2), sign-extended from bit 63: -2";
    EXPECT_EQ(out[3 * 60 + 1], 2ull);
    EXPECT_EQ(out[3 * 61], 0ull);
    EXPECT_EQ(out[3 * 61 + 2], in[61]);
}

TEST(simulator_integer_families, dp4a_and_dp2a_sum_signed_and_unsigned_byte_products_as_the_host_does)
{
    simulated sim(R"(
extern "C" __global__ void dots(const int* in, int* out)
{
    int a = in[3 * threadIdx.x], b = in[3 * threadIdx.x + 1], c = in[3 * threadIdx.x + 2];
    int* o = out + 6 * threadIdx.x;
    o[0] = __dp4a(a, b, c);
    o[1] = (int)__dp4a((unsigned)a, (unsigned)b, (unsigned)c);
    o[2] = __dp2a_lo(a, b, c);
    o[3] = __dp2a_hi(a, b, c);
    o[4] = (int)__dp2a_lo((unsigned)a, (unsigned)b, (unsigned)c);
    int mixed;
    asm("dp4a.s32.u32 %0, %1, %2, %3;" : "=r"(mixed) : "r"(a), "r"(b), "r"(c));
    o[5] = mixed;
})");
    std::vector<int> in(3 * 64), out(6 * 64);
    for (unsigned i = 0; i < in.size(); ++i)
    {
        in[i] = static_cast<int>(i * 2654435761u ^ (i << 13));
    }
    // lane 0, by hand: bytes (-1, 2, -3, 4) . (5, -6, 7, -8) + 100 = -5 - 12 - 21 - 32 + 100 = 30
    in[0] = static_cast<int>(0x04fd02ffu);
    in[1] = static_cast<int>(0xf807fa05u);
    in[2] = 100;
    sim.launch("dots", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    auto field = [](int v, unsigned at, unsigned width, bool is_signed) -> long long {
        unsigned u = (static_cast<unsigned>(v) >> at) & ((1u << width) - 1);
        return is_signed && (u >> (width - 1)) ? static_cast<long long>(u) - (1ll << width) : u;
    };
    for (unsigned i = 0; i < 64; ++i)
    {
        int a = in[3 * i], b = in[3 * i + 1], c = in[3 * i + 2];
        auto dp4a = [&](bool sa, bool sb) {
            long long sum = static_cast<unsigned>(c);
            for (unsigned k = 0; k < 4; ++k)
            {
                sum += field(a, 8 * k, 8, sa) * field(b, 8 * k, 8, sb);
            }
            return static_cast<int>(static_cast<unsigned>(sum));
        };
        auto dp2a = [&](bool is_signed, unsigned first) {
            long long sum = static_cast<unsigned>(c);
            for (unsigned k = 0; k < 2; ++k)
            {
                sum += field(a, 16 * k, 16, is_signed) * field(b, 8 * (first + k), 8, is_signed);
            }
            return static_cast<int>(static_cast<unsigned>(sum));
        };
        const int* o = out.data() + 6 * i;
        EXPECT_EQ(o[0], dp4a(true, true)) << i;
        EXPECT_EQ(o[1], dp4a(false, false)) << i;
        EXPECT_EQ(o[2], dp2a(true, 0)) << i;
        EXPECT_EQ(o[3], dp2a(true, 2)) << i;
        EXPECT_EQ(o[4], dp2a(false, 0)) << i;
        EXPECT_EQ(o[5], dp4a(true, false)) << i;
    }
    EXPECT_EQ(out[0], 30);
}

TEST(simulator_integer_families, carries_chain_through_128_bit_add_sub_and_multiply)
{
    simulated sim(R"(
extern "C" __global__ void wide(const unsigned long long* in, unsigned long long* out)
{
    unsigned i = threadIdx.x;
    unsigned __int128 x = ((unsigned __int128)in[4 * i + 1] << 64) | in[4 * i];
    unsigned __int128 y = ((unsigned __int128)in[4 * i + 3] << 64) | in[4 * i + 2];
    unsigned __int128 r[3] = {x + y, x - y, x * y};
    for (int k = 0; k < 3; ++k)
    {
        out[6 * i + 2 * k] = (unsigned long long)r[k];
        out[6 * i + 2 * k + 1] = (unsigned long long)(r[k] >> 64);
    }
})", {"--device-int128"});
    EXPECT_NE(sim.ptx.find("add.cc"), std::string::npos) << "NVRTC's 128-bit add should use the carry chain";
    std::vector<unsigned long long> in(4 * 64), out(6 * 64);
    for (unsigned i = 0; i < in.size(); ++i)
    {
        in[i] = (i % 5 == 0) ? ~0ull - i : 0x9e3779b97f4a7c15ull * (i + 1) ^ (static_cast<unsigned long long>(i) << 60);
    }
    in[0] = in[1] = ~0ull;  // lane 0: all ones + 1 carries through every bit
    in[2] = 1;
    in[3] = 0;
    sim.launch("wide", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    for (unsigned i = 0; i < 64; ++i)
    {
        unsigned __int128 x = (static_cast<unsigned __int128>(in[4 * i + 1]) << 64) | in[4 * i];
        unsigned __int128 y = (static_cast<unsigned __int128>(in[4 * i + 3]) << 64) | in[4 * i + 2];
        unsigned __int128 want[3] = {x + y, x - y, x * y};
        for (unsigned k = 0; k < 3; ++k)
        {
            EXPECT_EQ(out[6 * i + 2 * k], static_cast<unsigned long long>(want[k])) << "lane " << i << " op " << k;
            EXPECT_EQ(out[6 * i + 2 * k + 1], static_cast<unsigned long long>(want[k] >> 64)) << "lane " << i << " op " << k;
        }
    }
    EXPECT_EQ(out[0], 0u);
    EXPECT_EQ(out[1], 0u);
}

TEST(simulator_integer_families, carry_flag_instructions_of_32_bits_from_inline_ptx_match_hand_computed_values)
{
    simulated sim(R"(
extern "C" __global__ void carries(const unsigned* in, unsigned* out)
{
    unsigned a = in[2 * threadIdx.x], b = in[2 * threadIdx.x + 1], r[8];
    // a 64-bit add and subtract of (a:b) and (b:a) as two 32-bit halves each
    asm("add.cc.u32 %0, %2, %3;\n\taddc.u32 %1, %3, %2;" : "=r"(r[0]), "=r"(r[1]) : "r"(a), "r"(b));
    asm("sub.cc.u32 %0, %2, %3;\n\tsubc.u32 %1, %3, %2;" : "=r"(r[2]), "=r"(r[3]) : "r"(a), "r"(b));
    // mad.lo.cc then madc.hi: (a * b) + (b:a), 64 bits
    asm("mad.lo.cc.u32 %0, %2, %3, %3;\n\tmadc.hi.u32 %1, %2, %3, %2;" : "=r"(r[4]), "=r"(r[5]) : "r"(a), "r"(b));
    // the carry out of addc.cc feeds a third word
    asm("add.cc.u32 %0, %3, %4;\n\taddc.cc.u32 %1, %3, %4;\n\taddc.u32 %2, 0, 0;" : "=r"(r[6]), "=r"(r[7]), "=r"(r[0]) : "r"(a), "r"(b));
    for (int k = 0; k < 8; ++k) out[8 * threadIdx.x + k] = r[k];
})");
    std::vector<unsigned> in(2 * 32), out(8 * 32);
    for (unsigned i = 0; i < in.size(); ++i)
    {
        in[i] = i % 3 == 0 ? 0xffffffffu - i : i * 2654435761u;
    }
    sim.launch("carries", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    for (unsigned i = 0; i < 32; ++i)
    {
        unsigned long long a = in[2 * i], b = in[2 * i + 1];
        unsigned long long x = (b << 32) | a, y = (a << 32) | b;
        const unsigned* o = out.data() + 8 * i;
        unsigned long long sum = x + y, difference = x - y;
        EXPECT_EQ(o[1], static_cast<unsigned>(sum >> 32)) << i;
        EXPECT_EQ(o[2], static_cast<unsigned>(difference)) << i;
        EXPECT_EQ(o[3], static_cast<unsigned>(difference >> 32)) << i;
        // mad.lo.cc: lo(a*b) + b; madc.hi: hi(a*b) + a + carry
        unsigned long long low = (a * b & 0xffffffffu) + b;
        EXPECT_EQ(o[4], static_cast<unsigned>(low)) << i;
        EXPECT_EQ(o[5], static_cast<unsigned>((a * b >> 32) + a + (low >> 32))) << i;
        unsigned long long pair = a + b;  // the same sum twice, the second with the first's carry
        unsigned long long second = a + b + (pair >> 32);
        EXPECT_EQ(o[6], static_cast<unsigned>(pair)) << i;
        EXPECT_EQ(o[7], static_cast<unsigned>(second)) << i;
        EXPECT_EQ(o[0], static_cast<unsigned>(second >> 32)) << i;
    }
}

TEST(simulator_integer_families, warp_sz_envregs_dynamic_smem_size_and_nanosleep_read_as_the_simulated_device_defines_them)
{
    simulated sim(R"(
extern "C" __global__ void specials(unsigned* out)
{
    extern __shared__ int dynamic[];
    unsigned warp, env1, env2, smem;
    asm("mov.u32 %0, WARP_SZ;" : "=r"(warp));
    asm("mov.u32 %0, %%envreg1;" : "=r"(env1));
    asm("mov.u32 %0, %%envreg2;" : "=r"(env2));
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(smem));
    __nanosleep(1000);
    dynamic[threadIdx.x] = threadIdx.x;
    out[5 * threadIdx.x + 0] = warp;
    out[5 * threadIdx.x + 1] = env1 + env2;
    out[5 * threadIdx.x + 2] = smem;
    out[5 * threadIdx.x + 3] = warpSize * 1000 + threadIdx.x % warpSize;
    out[5 * threadIdx.x + 4] = dynamic[threadIdx.x];
})");
    EXPECT_NE(sim.ptx.find("nanosleep"), std::string::npos);
    std::vector<unsigned> out(5 * 48, 7);
    sim.launch("specials", {1, 1, 1}, {48, 1, 1}, 1000, sim.buffer(out));
    for (unsigned i = 0; i < 48; ++i)
    {
        EXPECT_EQ(out[5 * i + 0], 32u) << i;
        EXPECT_EQ(out[5 * i + 1], 0u) << i;  // no cooperative grid workspace: the driver's envregs are 0
        EXPECT_EQ(out[5 * i + 2], 1000u) << i;
        EXPECT_EQ(out[5 * i + 3], 32000u + i % 32) << i;
        EXPECT_EQ(out[5 * i + 4], i) << i;
    }
}

TEST(simulator_integer_families, reserved_shared_memory_lies_past_the_kernels_own_shared_variables)
{
    // cooperative groups keep a scratch area there on sm_80+ (reserved_shared.hpp): 1 KiB after the block's
    // own shared memory, so that it aliases none of the kernel's variables, and usable through cvta.shared
    simulated sim(R"(
extern "C" __global__ void reserved(unsigned* out)
{
    __shared__ int mine[10];
    unsigned begin, end, cap, first, second;
    asm("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(begin));
    asm("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(end));
    asm("mov.u32 %0, %%reserved_smem_offset_cap;" : "=r"(cap));
    asm("mov.u32 %0, %%reserved_smem_offset_0;" : "=r"(first));
    asm("mov.u32 %0, %%reserved_smem_offset_1;" : "=r"(second));
    unsigned long long generic;
    asm("cvta.shared.u64 %0, %1;" : "=l"(generic) : "l"((unsigned long long)second));
    mine[threadIdx.x] = 7;
    ((volatile unsigned*)generic)[threadIdx.x] = 100 + threadIdx.x;
    __syncthreads();
    out[0] = begin; out[1] = end; out[2] = cap; out[3] = first; out[4] = second;
    out[5] = ((volatile unsigned*)generic)[9 - threadIdx.x];
    out[6] = (unsigned)(__cvta_generic_to_shared(mine));
})");
    std::vector<unsigned> out(7, 0);
    sim.launch("reserved", {1, 1, 1}, {10, 1, 1}, 0, sim.buffer(out));
    EXPECT_EQ(out[6], 0u);   // the kernel's own variable at the start of the window
    EXPECT_EQ(out[0], 48u);  // 40 bytes of it, then the region at the next 16 bytes
    EXPECT_EQ(out[1], 48u + 1024u);
    EXPECT_EQ(out[2], 1024u);
    EXPECT_EQ(out[3], 48u);
    EXPECT_EQ(out[4], 48u + 512u);
    EXPECT_GE(out[5], 100u);  // some thread's value came back through the region
    EXPECT_LE(out[5], 109u);
}

TEST(simulator_barriers, syncthreads_count_and_or_reduce_the_predicate_over_the_whole_block)
{
    simulated sim(R"(
extern "C" __global__ void votes(const int* in, int* out)
{
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    int* o = out + 3 * (blockIdx.x * blockDim.x + threadIdx.x);
    o[0] = __syncthreads_count(v > 0);
    o[1] = __syncthreads_and(v != 0);
    o[2] = __syncthreads_or(v < -100);
})");
    const unsigned blocks = 4, threads = 160;  // five warps; blocks differ in what holds
    std::vector<int> in(blocks * threads), out(3 * blocks * threads, -1);
    for (unsigned i = 0; i < in.size(); ++i)
    {
        unsigned b = i / threads;
        in[i] = b == 0 ? static_cast<int>(i % 7) - 3                    // some positive, some zero
                : b == 1 ? 1 + static_cast<int>(i % 5)                  // all positive, none zero
                : b == 2 ? (i % threads == 131 ? -500 : -1)             // one far below -100, in the fifth warp
                         : static_cast<int>(i * 2654435761u % 400) - 200;
    }
    sim.launch("votes", {blocks, 1, 1}, {threads, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    for (unsigned b = 0; b < blocks; ++b)
    {
        int count = 0, all = 1, any = 0;
        for (unsigned t = 0; t < threads; ++t)
        {
            int v = in[b * threads + t];
            count += v > 0;
            all &= v != 0;
            any |= v < -100;
        }
        for (unsigned t = 0; t < threads; ++t)
        {
            const int* o = out.data() + 3 * (b * threads + t);
            EXPECT_EQ(o[0], count) << "block " << b << " thread " << t;
            EXPECT_EQ(o[1], all) << "block " << b << " thread " << t;
            EXPECT_EQ(o[2], any) << "block " << b << " thread " << t;
        }
    }
    // by hand: block 0 counts the i with i % 7 in 4..6: 22 whole cycles (66) and i = 158, 159
    EXPECT_EQ(out[0], 68);
}

TEST(simulator_barriers, two_groups_of_warps_sync_on_their_own_named_barriers)
{
    // Warps 0-1 exchange through barrier 1 and warps 2-3 through barrier 2 (64 threads each); each group
    // reads what the other warp of its group wrote. Warps 1 and 3 first meet at barrier 3 and write only
    // after it, so a barrier 1 or 2 that let its first warp through would have it read zeros.
    simulated sim(R"(
extern "C" __global__ void groups(int* out)
{
    __shared__ int s[128];
    unsigned t = threadIdx.x;
    if ((t / 32) & 1) asm volatile("bar.sync 3, 64;" ::: "memory");
    s[t] = (int)(t * 3 + 1);
    if (t < 64) asm volatile("bar.sync 1, 64;" ::: "memory");
    else asm volatile("barrier.sync 2, 64;" ::: "memory");
    unsigned partner = t < 64 ? 63 - t : 64 + (127 - t);
    out[t] = s[partner];
    __syncthreads();
    out[128 + t] = s[127 - t];
})");
    std::vector<int> out(256, -1);
    sim.launch("groups", {2, 1, 1}, {128, 1, 1}, 0, sim.buffer(out));
    for (unsigned t = 0; t < 128; ++t)
    {
        unsigned partner = t < 64 ? 63 - t : 64 + (127 - t);
        EXPECT_EQ(out[t], static_cast<int>(partner * 3 + 1)) << t;
        EXPECT_EQ(out[128 + t], static_cast<int>((127 - t) * 3 + 1)) << t;
    }
}

TEST(simulator_barriers, a_producer_warp_hands_data_to_a_consumer_warp_through_bar_arrive_and_bar_sync)
{
    // The warp-specialised pattern: barrier 1 says "full", barrier 2 "empty" (64 threads each). The
    // consumer (warp 0) arrives at "empty" and waits at "full"; the producer (warp 1) waits at "empty",
    // fills the buffer and arrives at "full". Four rounds through one 32-int buffer.
    simulated sim(R"(
extern "C" __global__ void handoff(int* out)
{
    __shared__ int buffer[32];
    unsigned lane = threadIdx.x % 32;
    for (int round = 0; round < 4; ++round)
    {
        if (threadIdx.x < 32)
        {
            asm volatile("bar.arrive 2, 64;" ::: "memory");
            asm volatile("bar.sync 1, 64;" ::: "memory");
            out[blockIdx.x * 128 + round * 32 + lane] = buffer[31 - lane];
        }
        else
        {
            asm volatile("bar.sync 2, 64;" ::: "memory");
            buffer[lane] = (int)(blockIdx.x * 1000 + round * 100 + lane);
            asm volatile("bar.arrive 1, 64;" ::: "memory");
        }
    }
})");
    std::vector<int> out(3 * 128, -1);
    sim.launch("handoff", {3, 1, 1}, {64, 1, 1}, 0, sim.buffer(out));
    for (int b = 0; b < 3; ++b)
    {
        for (int round = 0; round < 4; ++round)
        {
            for (int lane = 0; lane < 32; ++lane)
            {
                EXPECT_EQ(out[b * 128 + round * 32 + lane], b * 1000 + round * 100 + (31 - lane)) << b << " " << round << " " << lane;
            }
        }
    }
}

TEST(simulator_barriers, a_named_barrier_whose_count_is_never_reached_is_reported_instead_of_hanging)
{
    simulated sim(R"(
extern "C" __global__ void stuck(int* out)
{
    if (threadIdx.x < 32) asm volatile("bar.sync 3, 96;" ::: "memory");
    out[threadIdx.x] = 1;
})");
    std::vector<int> out(64);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("stuck", {1, 1, 1}, {64, 1, 1}, 0, sim.buffer(out)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::barrier_divergence);
    EXPECT_NE(message.find("a barrier that can never complete in block (0,0,0)"), std::string::npos) << message;
    EXPECT_NE(message.find("warp 0 at 'bar.sync 3, 96' in stuck, line 4"), std::string::npos) << message;
    EXPECT_NE(message.find("(barrier 3, 96 threads)"), std::string::npos) << message;
}
