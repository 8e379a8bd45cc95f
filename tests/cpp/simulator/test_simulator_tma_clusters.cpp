// The PTX simulator's TMA and mbarriers across a thread-block cluster (warp_cluster_copies.cpp, shared_window in
// warp_cluster_operations.cpp, the .shared::cluster forms of async_decoder.cpp and tensor_copy_decoder.cpp): a tile
// and plain bytes multicast to the blocks a ctaMask names, a ring of arrives on the next block's mbarrier, a bulk copy
// and a reduction into the next block's window, complete_tx on the next block's mbarrier, the f16/bf16/inc/dec
// reductions; checked against values computed here by hand. The kernels: tests/cpp/fixtures/tma_cluster_kernels.cu (the gpu tests of
// tests/runtime/test_tma_clusters.py launch the same ones).

#include <gtest/gtest.h>

#include <vector>

#include "fixture.hpp"
#include "simulated.hpp"
#include "tensor_map_descriptor.hpp"
#include "tma_test_maps.hpp"

namespace
{
    using map_bytes = xcuda_tests::tma_map_bytes;

    const unsigned k_uint32 = 2, k_float16 = 6, k_float32 = 7;

    // A tiled 2-D map over rows x cols elements of `data_type` at `base` (rows packed), with a box of box_rows x box_cols.
    map_bytes tiled(const void* base, unsigned data_type, std::uint64_t rows, std::uint64_t cols, unsigned box_rows, unsigned box_cols)
    {
        return xcuda_tests::tiled_map(base, data_type, rows, cols, cols * tensor_map_descriptor::element_bytes(data_type),
                                      box_rows, box_cols);
    }

    std::string kernels() { return xcuda_tests::fixture("tma_cluster_kernels.cu"); }

    // Misuses a GPU leaves undefined, and forms PTX does not have (each kernel refused or stopped, naming why).
    const char* k_misuses = R"(
__device__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ void cluster_sync() { asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory"); }
// An arrive on a .shared::cluster address made by hand, naming block rank `fake_rank`.
extern "C" __global__ void arrive_by_hand(unsigned fake_rank)
{
    __shared__ alignas(8) unsigned long long bar;
    unsigned b = smem(&bar);
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" :: "r"(b));
    cluster_sync();
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(b | ((fake_rank + 1u) << 24)) : "memory");
    cluster_sync();
}
// An arrive on a .shared::cluster barrier given the barrier's generic address.
extern "C" __global__ void arrive_generic()
{
    __shared__ alignas(8) unsigned long long bar;
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" :: "r"(smem(&bar)));
    cluster_sync();
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "l"(&bar) : "memory");
    cluster_sync();
}
// A wait on the next block's barrier (PTX's waits take the CTA's own).
extern "C" __global__ void wait_on_the_next_block()
{
    __shared__ alignas(8) unsigned long long bar;
    unsigned b = smem(&bar), rank, remote, done;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
    cluster_sync();
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(b), "r"((rank + 1) % 2));
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(remote));
    cluster_sync();
}
extern "C" __global__ void arrive_with_a_state()
{
    __shared__ alignas(8) unsigned long long bar;
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared::cluster.b64 %0, [%1];" : "=l"(state) : "r"(smem(&bar)));
}
extern "C" __global__ void half_add_without_noftz(void* out)
{
    __shared__ alignas(16) unsigned data[16];
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f16 [%0], [%1], 64;" :: "l"(out), "r"(smem(data)) : "memory");
}
// The pairs of operation and type ptxas refuses for sm_90 (`which` picks one).
extern "C" __global__ void reduction_ptx_lacks(void* out, int which)
{
    __shared__ alignas(16) unsigned data[16];
    __shared__ alignas(8) unsigned long long bar;
    unsigned s = smem(data), b = smem(&bar);
    if (which == 0) asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.s64 [%0], [%1], 16;" :: "l"(out), "r"(s) : "memory");
    if (which == 1) asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.min.f32 [%0], [%1], 16;" :: "l"(out), "r"(s) : "memory");
    if (which == 2) asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.and.u32 [%0], [%1], 16;" :: "l"(out), "r"(s) : "memory");
    if (which == 3) asm volatile("cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.min.s64 [%0], [%1], 16, [%2];" :: "r"(s), "r"(s), "r"(b) : "memory");
}
// mbarrier.arrive.noComplete: three arrivals expected, two of them without completing; then the third completes.
// With `count` 3 the noComplete arrive itself would complete the phase.
extern "C" __global__ void arrive_no_complete(unsigned* out, unsigned count)
{
    __shared__ alignas(8) unsigned long long bar;
    unsigned b = smem(&bar), done;
    unsigned long long state;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 3;" :: "r"(b));
    asm volatile("mbarrier.arrive.noComplete.shared::cta.b64 %0, [%1], %2;" : "=l"(state) : "r"(b), "r"(count) : "memory");
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(b), "l"(state));
    out[0] = done;
    asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(b) : "memory");
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(b), "l"(state));
    out[1] = done;
}
)";
}

TEST(simulator_tma_clusters, a_tile_multicast_lands_in_every_block_its_mask_names_and_nowhere_else)
{
    simulated sim(kernels());
    sim.cluster = {4, 1, 1};
    const std::size_t rows = 8, cols = 64;  // two clusters, each its own 32 columns
    std::vector<float> a(rows * cols);
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        a[i] = static_cast<float>(i) * 0.5f - 17.0f;
    }
    const map_bytes map = tiled(sim.buffer(a), k_float32, rows, cols, 8, 32);
    struct one { unsigned short mask; unsigned issuer; };
    for (one c : {one{0xb, 0}, one{0x6, 1}, one{0x5, 3}, one{0xf, 2}})  // the issuer in its mask, or not (3 with 0101)
    {
        std::vector<float> out(8 * 256, -1.0f);
        sim.launch("multicast_tile", {8, 1, 1}, {64, 1, 1}, 0, map, sim.buffer(out), c.mask, c.issuer);
        for (unsigned block = 0; block < 8; ++block)
        {
            const bool landed = (c.mask >> (block % 4)) & 1;
            for (unsigned i = 0; i < 256; ++i)
            {
                const float expected = landed ? a[(i / 32) * cols + (block / 4) * 32 + i % 32] : -1.0f;
                ASSERT_EQ(out[block * 256 + i], expected) << "mask " << c.mask << ", block " << block << ", element " << i;
            }
        }
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
    }
}

TEST(simulator_tma_clusters, a_bulk_multicast_lands_the_same_bytes_in_each_named_block)
{
    simulated sim(kernels());
    sim.cluster = {2, 1, 1};
    std::vector<int> in(128);
    for (int i = 0; i < 128; ++i)
    {
        in[static_cast<std::size_t>(i)] = 3 * i - 50;
    }
    for (unsigned short mask : {0x3, 0x2})
    {
        std::vector<int> out(4 * 64, 7777);
        sim.launch("multicast_bytes", {4, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out), mask, 0u);
        for (unsigned block = 0; block < 4; ++block)
        {
            for (unsigned i = 0; i < 64; ++i)
            {
                const int expected = (mask >> (block % 2)) & 1 ? in[(block / 2) * 64 + i] : 7777;
                ASSERT_EQ(out[block * 64 + i], expected) << "mask " << mask << ", block " << block;
            }
        }
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
    }
}

TEST(simulator_tma_clusters, arrives_on_the_next_blocks_barrier_complete_its_phases_round_after_round)
{
    simulated sim(kernels());
    sim.cluster = {4, 1, 1};
    const int rounds = 3;
    std::vector<int> out(rounds * 8 * 64, -1);
    sim.launch("remote_arrive_ring", {8, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), rounds);
    for (int k = 0; k < rounds; ++k)
    {
        for (int block = 0; block < 8; ++block)
        {
            const int previous = block / 4 * 4 + (block % 4 + 3) % 4;
            for (int t = 0; t < 64; ++t)
            {
                ASSERT_EQ(out[static_cast<std::size_t>((k * 8 + block) * 64 + t)], previous * 1000 + k * 100 + t)
                    << "round " << k << ", block " << block << ", thread " << t;
            }
        }
    }
}

TEST(simulator_tma_clusters, two_blocks_that_spin_in_turn_on_each_others_arrives_pass_a_token_back_and_forth)
{
    simulated sim(kernels());
    sim.cluster = {2, 1, 1};
    const int rounds = 4;
    std::vector<int> out(2 * 64, -1);
    sim.launch("ping_pong", {4, 1, 1}, {64, 1, 1}, 0, sim.buffer(out), rounds);
    for (int i = 0; i < 128; ++i)
    {
        ASSERT_EQ(out[static_cast<std::size_t>(i)], (i % 64) * 1000 + 2 * rounds) << i;
    }
}

TEST(simulator_tma_clusters, a_bulk_copy_and_a_reduction_into_the_next_blocks_window_complete_on_its_barrier)
{
    simulated sim(kernels());
    sim.cluster = {3, 1, 1};
    for (int reduce : {0, 1})
    {
        std::vector<int> out(6 * 32, -1);
        sim.launch("to_next_block", {6, 1, 1}, {32, 1, 1}, 0, sim.buffer(out), reduce);
        for (int block = 0; block < 6; ++block)
        {
            const int previous = block / 3 * 3 + (block % 3 + 2) % 3;
            for (int i = 0; i < 32; ++i)
            {
                const int expected = previous * 100 + i + (reduce ? (block % 3) * 7 + i : 0);
                ASSERT_EQ(out[static_cast<std::size_t>(block * 32 + i)], expected) << "reduce " << reduce << ", block " << block;
            }
        }
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
    }
}

TEST(simulator_tma_clusters, complete_tx_on_the_next_blocks_barrier_completes_exactly_the_bytes_that_block_expects)
{
    simulated sim(kernels());
    sim.cluster = {4, 1, 1};
    std::vector<int> out(8 * 16, -2);
    sim.launch("remote_complete_tx", {8, 1, 1}, {32, 1, 1}, 0, sim.buffer(out));
    for (int block = 0; block < 8; ++block)
    {
        const int rank = block % 4, previous = block / 4 * 4 + (rank + 3) % 4;
        for (int i = 0; i < 16; ++i)
        {
            // block rank r expects 16 * (r + 1) bytes: 4 * (r + 1) ints from the previous block, the rest untouched
            const int expected = i < 4 * (rank + 1) ? previous * 100 + i : -1;
            ASSERT_EQ(out[static_cast<std::size_t>(block * 16 + i)], expected) << "block " << block << ", int " << i;
        }
    }
}

TEST(simulator_tma_clusters, the_half_and_inc_dec_bulk_reductions_match_hand_computed_values)
{
    simulated sim(kernels());
    // Each case: the value in global memory, the one in shared memory, the result (16-bit halves, or u32 words).
    struct triple { std::uint32_t old, value, result; };
    const std::vector<std::vector<triple>> cases = {
        // add.noftz.f16: 1 + 2 = 3; 65504 + 65504 overflows to inf; 1 + 2^-11 is a tie, kept even (1); 1 + 1.5 * 2^-11
        // rounds up to 1 + 2^-10; 2^-24 + 2^-24 = 2^-23 (subnormals kept); -2 + 0.5 = -1.5
        {{0x3c00, 0x4000, 0x4200}, {0x7bff, 0x7bff, 0x7c00}, {0x3c00, 0x1000, 0x3c00}, {0x3c00, 0x1200, 0x3c01},
         {0x0001, 0x0001, 0x0002}, {0xc000, 0x3800, 0xbe00}},
        // min.f16: min(1, -2) = -2; min(NaN, 1.5) = 1.5; min(0.5, 2) = 0.5
        {{0x3c00, 0xc000, 0xc000}, {0x7e00, 0x3e00, 0x3e00}, {0x3800, 0x4000, 0x3800}},
        // max.f16: max(0.5, 2) = 2; max(-0, +0) = +0; max(1.5, NaN) = 1.5
        {{0x3800, 0x4000, 0x4000}, {0x8000, 0x0000, 0x0000}, {0x3e00, 0x7e00, 0x3e00}},
        // add.noftz.bf16: 1 + 2 = 3; 1 + 2^-8 is a tie (1); 1 + 1.5 * 2^-8 rounds up to 1 + 2^-7
        {{0x3f80, 0x4000, 0x4040}, {0x3f80, 0x3b80, 0x3f80}, {0x3f80, 0x3bc0, 0x3f81}},
        // min.bf16, max.bf16 of 1 and -2
        {{0x3f80, 0xc000, 0xc000}},
        {{0x3f80, 0xc000, 0x3f80}},
        // inc.u32: old >= v ? 0 : old + 1
        {{5, 10, 6}, {10, 10, 0}, {11, 3, 0}},
        // dec.u32: old == 0 || old > v ? v : old - 1
        {{0, 7, 7}, {5, 7, 4}, {9, 7, 7}},
    };
    for (int op = 0; op < 8; ++op)
    {
        const bool words = op >= 6;
        std::vector<std::uint32_t> out(16, 0), in(16, 0), expected(16, 0);
        auto put = [&](std::vector<std::uint32_t>& v, std::size_t k, std::uint32_t x) {
            if (words)
            {
                v[k] = x;
            }
            else
            {
                v[k / 2] |= x << (16 * (k % 2));
            }
        };
        const std::vector<triple>& c = cases[static_cast<std::size_t>(op)];
        for (std::size_t k = 0; k < c.size(); ++k)
        {
            put(out, k, c[k].old);
            put(in, k, c[k].value);
            put(expected, k, c[k].result);
        }
        if (words)  // the words no case sets: 0 and 0, inc gives 0 (0 >= 0), dec gives 0 (old == 0: v)
        {
            for (std::size_t k = c.size(); k < 16; ++k)
            {
                out[k] = in[k] = 4;
                expected[k] = op == 6 ? 0 : 3;
            }
        }
        sim.launch("bulk_reduce", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out), sim.buffer(in), op);
        for (std::size_t k = 0; k < 16; ++k)
        {
            ASSERT_EQ(out[k], expected[k]) << "op " << op << ", word " << k << std::hex << ": " << out[k] << " != " << expected[k];
        }
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(in.data()));
    }
}

TEST(simulator_tma_clusters, tensor_reductions_of_an_f16_map_and_inc_of_a_u32_map_match_hand_computed_values)
{
    simulated sim(kernels());
    std::vector<std::uint16_t> halves(8 * 32, 0x3c00);  // 1.0 everywhere
    std::vector<std::uint16_t> tile(8 * 32, 0x4000);     // 2.0
    tile[5] = 0xc400;                                    // -4.0
    const map_bytes half_map = tiled(sim.buffer(halves), k_float16, 8, 32, 8, 32);
    sim.launch("tensor_reduce", {1, 1, 1}, {32, 1, 1}, 0, half_map, sim.buffer(tile), 512u, 0);  // add: 3, and -3 at 5
    EXPECT_EQ(halves[0], 0x4200);
    EXPECT_EQ(halves[5], 0xc200);
    EXPECT_EQ(halves[255], 0x4200);
    sim.launch("tensor_reduce", {1, 1, 1}, {32, 1, 1}, 0, half_map, tile.data(), 512u, 1);  // min(3, 2) = 2, min(-3, -4)
    EXPECT_EQ(halves[0], 0x4000);
    EXPECT_EQ(halves[5], 0xc400);
    std::vector<std::uint32_t> counters(8 * 32), limits(8 * 32, 3);
    for (std::size_t i = 0; i < counters.size(); ++i)
    {
        counters[i] = static_cast<std::uint32_t>(i % 5);  // 0..4 against a limit of 3: 1, 2, 3, 0, 0
    }
    const map_bytes word_map = tiled(sim.buffer(counters), k_uint32, 8, 32, 8, 32);
    sim.launch("tensor_reduce", {1, 1, 1}, {32, 1, 1}, 0, word_map, sim.buffer(limits), 1024u, 3);
    const std::uint32_t after_inc[5] = {1, 2, 3, 0, 0};
    for (std::size_t i = 0; i < counters.size(); ++i)
    {
        ASSERT_EQ(counters[i], after_inc[i % 5]) << i;
    }
    // A bitwise reduction of a float map has no PTX form: the launch stops naming the data type.
    const std::string message = error_of([&] { sim.launch("tensor_reduce", {1, 1, 1}, {32, 1, 1}, 0, half_map, tile.data(), 512u, 3); });
    EXPECT_NE(message.find("reduces elements of data type 6"), std::string::npos) << message;
}

TEST(simulator_tma_clusters, a_cta_mask_past_the_cluster_is_a_fault_naming_the_rank)
{
    simulated sim(kernels());
    sim.cluster = {2, 1, 1};
    std::vector<float> a(8 * 64, 1.0f), out(4 * 256);
    const map_bytes map = tiled(sim.buffer(a), k_float32, 8, 64, 8, 32);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("multicast_tile", {4, 1, 1}, {32, 1, 1}, 0, map, sim.buffer(out), (unsigned short)0x5, 0u); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("multicasts with a ctaMask of 0x5, which names block rank 2, outside its cluster of 2 blocks (ranks 0 to 1)"),
              std::string::npos) << message;
    message = error_of([&] { sim.launch("multicast_tile", {4, 1, 1}, {32, 1, 1}, 0, map, out.data(), (unsigned short)0, 0u); });
    EXPECT_NE(message.find("a ctaMask of 0, which names no block"), std::string::npos) << message;
}

TEST(simulator_tma_clusters, remote_barrier_misuses_and_forms_ptx_lacks_are_named)
{
    simulated sim(k_misuses);
    sim.cluster = {2, 1, 1};
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("arrive_by_hand", {2, 1, 1}, {64, 1, 1}, 0, 4u); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("which names block rank 4 of a cluster of 2 blocks (ranks 0 to 1): another block's address comes "
                           "from mapa.shared::cluster"), std::string::npos) << message;
    message = error_of([&] { sim.launch("arrive_generic", {2, 1, 1}, {64, 1, 1}, 0); });
    EXPECT_NE(message.find("which is no .shared::cluster address (they are 32 bits: a generic pointer?"), std::string::npos)
        << message;
    message = error_of([&] { sim.launch("wait_on_the_next_block", {2, 1, 1}, {32, 1, 1}, 0); });
    EXPECT_NE(message.find("this operand is the executing block's own shared memory (.shared::cta"), std::string::npos) << message;
    message = error_of([&] { sim.launch("arrive_with_a_state", {2, 1, 1}, {32, 1, 1}, 0); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::unsupported);
    EXPECT_NE(message.find("an arrive on a .shared::cluster barrier returns no state"), std::string::npos) << message;
    std::vector<std::uint32_t> out(16);
    message = error_of([&] { sim.launch("half_add_without_noftz", {2, 1, 1}, {32, 1, 1}, 0, sim.buffer(out)); });
    EXPECT_NE(message.find(".add of .f16 and .bf16 is .add.noftz (PTX)"), std::string::npos) << message;
}

TEST(simulator_tma_clusters, reductions_ptxas_refuses_for_sm_90_are_refused_naming_the_pairs_ptx_has)
{
    simulated sim(k_misuses);
    std::vector<std::uint64_t> out(4);
    const char* expected[] = {".add into global memory takes .u32, .s32, .u64, .f32, .f64, .f16, .bf16, not .s64 (PTX)",
                              ".min into global memory takes .u32, .s32, .u64, .s64, .f16, .bf16, not .f32 (PTX)",
                              ".and into global memory takes .b32, .b64, not .u32 (PTX)",
                              ".min into shared::cluster memory takes .u32, .s32, not .s64 (PTX)"};
    for (int which = 0; which < 4; ++which)
    {
        sim_error::kind kind{};
        const std::string message =
            error_of([&] { sim.launch("reduction_ptx_lacks", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out), which); }, &kind);
        EXPECT_EQ(kind, sim_error::kind::unsupported) << message;
        EXPECT_NE(message.find(expected[which]), std::string::npos) << message;
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
    }
}

TEST(simulator_tma_clusters, an_arrive_with_no_complete_leaves_the_phase_open_and_one_that_would_complete_it_is_named)
{
    simulated sim(k_misuses);
    std::vector<std::uint32_t> out(2, 7);
    sim.launch("arrive_no_complete", {1, 1, 1}, {1, 1, 1}, 0, sim.buffer(out), 2u);
    EXPECT_EQ(out[0], 0u);  // 2 of 3 arrived: not complete
    EXPECT_EQ(out[1], 1u);  // the third completes phase 0
    const std::string message = error_of([&] { sim.launch("arrive_no_complete", {1, 1, 1}, {1, 1, 1}, 0, out.data(), 3u); });
    EXPECT_NE(message.find("an mbarrier.arrive.noComplete that completes the barrier's phase"), std::string::npos) << message;
}
