// The PTX simulator's matrix operations (warp_matrix_operations.cpp, matrix_decoder.cpp): mma.sync with the
// fragment layouts of the PTX ISA's "Matrix Fragments" sections, ldmatrix, and wmma load/mma/store. Inputs are
// small integers (or halves of them), so every product and sum is exact and the host's product is the
// reference, element for element. tests/simulator/exact_kernels.py checks random inputs against numpy.

#include <gtest/gtest.h>

#include <vector>

#include "simulated.hpp"

namespace
{
    // Integer values of an m x k matrix, from a seed: -4..4 (exact in f16, bf16, tf32 and s8).
    std::vector<int> small(int count, int seed)
    {
        std::vector<int> v(static_cast<std::size_t>(count));
        for (int i = 0; i < count; ++i)
        {
            v[static_cast<std::size_t>(i)] = (i * 7 + seed * 13 + (i / 5) * 3) % 9 - 4;
        }
        return v;
    }

    // Small integers as the bits of f16 (sign, exponent, 10 bits) and of bf16 (a float's high half).
    std::vector<std::uint16_t> halves(const std::vector<int>& v)
    {
        std::vector<std::uint16_t> h(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
        {
            int x = std::abs(v[i]), e = 0;
            while (x >> (e + 1))
            {
                ++e;
            }
            h[i] = static_cast<std::uint16_t>((v[i] < 0 ? 0x8000 : 0) | (x ? ((e + 15) << 10) | ((x << (10 - e)) & 0x3ff) : 0));
        }
        return h;
    }

    std::vector<std::uint16_t> brains(const std::vector<int>& v)
    {
        std::vector<std::uint16_t> h(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
        {
            float f = static_cast<float>(v[i]);
            std::uint32_t b;
            std::memcpy(&b, &f, 4);
            h[i] = static_cast<std::uint16_t>(b >> 16);
        }
        return h;
    }

    // Host memory for a wmma matrix: 32-byte aligned, as load_matrix_sync needs, registered with the simulator.
    struct aligned_buffers
    {
        std::vector<std::vector<std::uint8_t>> storage;
        template <class T>
        T* of(simulated& sim, const std::vector<T>& values)
        {
            storage.emplace_back(values.size() * sizeof(T) + 32);
            auto at = (reinterpret_cast<std::uintptr_t>(storage.back().data()) + 31) / 32 * 32;
            std::memcpy(reinterpret_cast<void*>(at), values.data(), values.size() * sizeof(T));
            sim.memory.add(at, values.size() * sizeof(T), "aligned buffer");
            return reinterpret_cast<T*>(at);
        }
    };

    std::vector<int> product(const std::vector<int>& a, const std::vector<int>& b, const std::vector<int>& c, int m, int n, int k)
    {
        std::vector<int> d(static_cast<std::size_t>(m * n));
        for (int i = 0; i < m; ++i)
        {
            for (int j = 0; j < n; ++j)
            {
                int sum = c[static_cast<std::size_t>(i * n + j)];
                for (int x = 0; x < k; ++x)
                {
                    sum += a[static_cast<std::size_t>(i * k + x)] * b[static_cast<std::size_t>(x * n + j)];
                }
                d[static_cast<std::size_t>(i * n + j)] = sum;
            }
        }
        return d;
    }
}

TEST(simulator_matrix, mma_sync_of_f16_bf16_tf32_and_s8_uses_the_isa_fragment_layouts)
{
    // Each lane fills its fragment registers from row-major A (m x k), B (k x n) and C (m x n) at the positions
    // the ISA's formulas give, runs mma.sync, and writes D back at the positions of C: D must be A B + C.
    simulated sim(R"(
__device__ unsigned h2(unsigned short lo, unsigned short hi) { return lo | (unsigned)hi << 16; }
__device__ unsigned s4(const int* p) { return (p[0] & 255) | (p[1] & 255) << 8 | (p[2] & 255) << 16 | (unsigned)(p[3] & 255) << 24; }

// A and B: the bits of f16 or bf16 elements (brain), made on the host.
extern "C" __global__ void f16(const unsigned short* A, const unsigned short* B, const int* C, float* D, int brain)
{
    unsigned l = threadIdx.x, g = l >> 2, t = l % 4, a[4], b[2];
    for (int r = 0; r < 4; ++r) {  // a_i: row g + 8 ((i >> 1) & 1), col 2t + (i & 1) + 8 (i >> 2); register r holds a_2r, a_2r+1
        int i = 2 * r, row = g + 8 * ((i >> 1) & 1), col = t * 2 + 8 * (i >> 2);
        a[r] = h2(A[row * 16 + col], A[row * 16 + col + 1]);
    }
    for (int r = 0; r < 2; ++r) {  // b_i: row 2t + (i & 1) + 8 (i >> 1), col g
        int row = t * 2 + 8 * r;
        b[r] = h2(B[row * 8 + g], B[(row + 1) * 8 + g]);
    }
    float c[4], d[4];
    for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)];
    if (brain)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
              "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
              "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; ++i) D[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)] = d[i];
}

extern "C" __global__ void tf32(const int* A, const int* B, const int* C, float* D)
{
    unsigned l = threadIdx.x, g = l >> 2, t = l % 4, a[4], b[2];
    for (int i = 0; i < 4; ++i) a[i] = __float_as_uint((float)A[(g + 8 * (i & 1)) * 8 + t + 4 * (i >> 1)]);
    for (int i = 0; i < 2; ++i) b[i] = __float_as_uint((float)B[(t + 4 * i) * 8 + g]);
    float c[4], d[4];
    for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)];
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
          "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; ++i) D[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)] = d[i];
}

extern "C" __global__ void s8(const int* A, const int* B, const int* C, int* D)
{
    unsigned l = threadIdx.x, g = l >> 2, t = l % 4, a[4], b[2];
    for (int r = 0; r < 4; ++r) {  // a_i: row g + 8 ((i >> 2) & 1), col 4t + (i & 3) + 16 (i >> 3); register r holds a_4r..a_4r+3
        int i = 4 * r;
        a[r] = s4(&A[(g + 8 * ((i >> 2) & 1)) * 32 + t * 4 + 16 * (i >> 3)]);
    }
    for (int r = 0; r < 2; ++r) {  // b_i: row 4t + (i & 3) + 16 (i >> 2), col g
        int col[4];
        for (int q = 0; q < 4; ++q) col[q] = B[(t * 4 + q + 16 * r) * 8 + g];
        b[r] = s4(col);
    }
    int c[4], d[4];
    for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)];
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
          "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; ++i) D[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)] = d[i];
}
)");
    for (int brain = 0; brain < 2; ++brain)
    {
        std::vector<int> a = small(16 * 16, 1), b = small(16 * 8, 2), c = small(16 * 8, 3);
        std::vector<std::uint16_t> ah = brain ? brains(a) : halves(a), bh = brain ? brains(b) : halves(b);
        std::vector<float> d(16 * 8, -1);
        sim.launch("f16", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(ah), sim.buffer(bh), sim.buffer(c), sim.buffer(d), brain);
        std::vector<int> expected = product(a, b, c, 16, 8, 16);
        for (int i = 0; i < 16 * 8; ++i)
        {
            EXPECT_EQ(d[static_cast<std::size_t>(i)], static_cast<float>(expected[static_cast<std::size_t>(i)]))
                << (brain ? "bf16" : "f16") << ", row " << i / 8 << ", col " << i % 8;
        }
    }
    {
        std::vector<int> a = small(16 * 8, 4), b = small(8 * 8, 5), c = small(16 * 8, 6);
        std::vector<float> d(16 * 8, -1);
        sim.launch("tf32", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(a), sim.buffer(b), sim.buffer(c), sim.buffer(d));
        std::vector<int> expected = product(a, b, c, 16, 8, 8);
        for (int i = 0; i < 16 * 8; ++i)
        {
            EXPECT_EQ(d[static_cast<std::size_t>(i)], static_cast<float>(expected[static_cast<std::size_t>(i)])) << "tf32, element " << i;
        }
    }
    std::vector<int> a = small(16 * 32, 7), b = small(32 * 8, 8), c = small(16 * 8, 9), d(16 * 8, -1);
    sim.launch("s8", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(a), sim.buffer(b), sim.buffer(c), sim.buffer(d));
    std::vector<int> expected = product(a, b, c, 16, 8, 32);
    for (int i = 0; i < 16 * 8; ++i)
    {
        EXPECT_EQ(d[static_cast<std::size_t>(i)], expected[static_cast<std::size_t>(i)]) << "s8, element " << i;
    }
}

TEST(simulator_matrix, ldmatrix_gives_each_lane_the_pairs_the_isa_names_and_trans_their_transpose)
{
    simulated sim(R"(
extern "C" __global__ void rows(unsigned* out, int trans)
{
    __shared__ alignas(16) unsigned short m[4][8][8];
    for (int i = threadIdx.x; i < 256; i += 32) (&m[0][0][0])[i] = (unsigned short)(i * 3 + 1);
    __syncwarp();
    unsigned l = threadIdx.x, address = (unsigned)__cvta_generic_to_shared(&m[l / 8][l % 8][0]), r[4];
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
    for (int j = 0; j < 4; ++j) out[l * 4 + j] = r[j];
}
)");
    for (int trans = 0; trans < 2; ++trans)
    {
        std::vector<unsigned> out(128);
        sim.launch("rows", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out), trans);
        for (unsigned l = 0; l < 32; ++l)
        {
            for (unsigned j = 0; j < 4; ++j)
            {
                unsigned r = l / 4, c = 2 * (l % 4);
                auto value = [&](unsigned row, unsigned col) { return (j * 64 + row * 8 + col) * 3 + 1; };
                unsigned lo = trans ? value(c, r) : value(r, c), hi = trans ? value(c + 1, r) : value(r, c + 1);
                EXPECT_EQ(out[l * 4 + j], lo | hi << 16) << (trans ? ".trans" : "") << " lane " << l << ", matrix " << j;
            }
        }
    }
}

TEST(simulator_matrix, wmma_loads_multiplies_and_stores_whole_tiles_in_either_layout)
{
    simulated sim(R"(
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
template <class Layout>
__device__ void tile(const half* a, const half* b, const float* c, float* d, int ld_b)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, Layout> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, ld_b);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_col_major);
    wmma::mma_sync(fc, fa, fb, fc);
    for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = 2.0f * fc.x[i];  // element-wise, whatever the layout
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}
extern "C" __global__ void rows(const half* a, const half* b, const float* c, float* d) { tile<wmma::row_major>(a, b, c, d, 16); }
extern "C" __global__ void cols(const half* a, const half* b, const float* c, float* d) { tile<wmma::col_major>(a, b, c, d, 16); }
extern "C" __global__ void bytes(const signed char* a, const signed char* b, int* d)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::fill_fragment(fc, 3);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}
)");
    std::vector<int> ai = small(256, 11), bi = small(256, 12), ci = small(256, 13);
    std::vector<std::uint16_t> a = halves(ai), b = halves(bi);
    std::vector<float> c(256);
    for (int i = 0; i < 256; ++i)
    {
        c[static_cast<std::size_t>(i)] = static_cast<float>(ci[static_cast<std::size_t>(i)]);
    }
    // C is read column-major: the accumulator's element (r, col) is c[col * 16 + r].
    std::vector<int> c_rows(256), b_cols(256);
    for (int r = 0; r < 16; ++r)
    {
        for (int col = 0; col < 16; ++col)
        {
            c_rows[static_cast<std::size_t>(r * 16 + col)] = ci[static_cast<std::size_t>(col * 16 + r)];
            b_cols[static_cast<std::size_t>(r * 16 + col)] = bi[static_cast<std::size_t>(col * 16 + r)];
        }
    }
    aligned_buffers memory;
    for (const char* kernel : {"rows", "cols"})
    {
        float* d = memory.of(sim, std::vector<float>(256, -1));
        sim.launch(kernel, {1, 1, 1}, {32, 1, 1}, 0, memory.of(sim, a), memory.of(sim, b), memory.of(sim, c), d);
        std::vector<int> expected = product(ai, std::string(kernel) == "rows" ? bi : b_cols, c_rows, 16, 16, 16);
        for (int i = 0; i < 256; ++i)
        {
            EXPECT_EQ(d[i], 2.0f * static_cast<float>(expected[static_cast<std::size_t>(i)])) << kernel << ", element " << i;
        }
    }
    std::vector<signed char> as(ai.begin(), ai.end()), bs(bi.begin(), bi.end());
    std::vector<int> threes(256, 3);
    int* d = memory.of(sim, std::vector<int>(256, -1));
    sim.launch("bytes", {1, 1, 1}, {32, 1, 1}, 0, memory.of(sim, as), memory.of(sim, bs), d);
    std::vector<int> expected = product(ai, bi, threes, 16, 16, 16);
    for (int i = 0; i < 256; ++i)
    {
        EXPECT_EQ(d[i], expected[static_cast<std::size_t>(i)]) << "s8, element " << i;
    }
    // A matrix 16 bytes off the 32-byte alignment load_matrix_sync needs: refused, naming the rule.
    std::uint16_t* shifted = memory.of(sim, std::vector<std::uint16_t>(256 + 8)) + 8;
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("bytes", {1, 1, 1}, {32, 1, 1}, 0, shifted, memory.of(sim, bs), d); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(message.find("the pointer is not 256-bit (32-byte) aligned (wmma::load_matrix_sync / store_matrix_sync need both)"),
              std::string::npos) << message;
}

TEST(simulator_matrix, float_to_tf32_rounds_ties_away_and_wmma_of_tf32_multiplies_what_it_rounded)
{
    simulated sim(R"(
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void rounded(const float* in, unsigned* out) { out[threadIdx.x] = __float_as_uint(wmma::__float_to_tf32(in[threadIdx.x])); }
extern "C" __global__ void tf32(const float* a, const float* b, float* d)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 16);
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}
)");
    ASSERT_NE(sim.ptx.find("cvt.rna.tf32.f32"), std::string::npos);
    // 1 + 2^-11 is half a tf32 ulp above 1: ties away from zero, either sign; one f32 ulp less rounds down; the
    // largest float rounds to infinity; infinity stays; a NaN is the canonical one.
    const std::uint32_t in_bits[6] = {0x3f801000u, 0xbf801000u, 0x3f800fffu, 0x7f7fffffu, 0xff800000u, 0x7fc00123u};
    const std::uint32_t expected[6] = {0x3f802000u, 0xbf802000u, 0x3f800000u, 0x7f800000u, 0xff800000u, 0x7fffffffu};
    std::vector<float> in(32, 0.0f);
    std::memcpy(in.data(), in_bits, sizeof in_bits);
    std::vector<unsigned> out(32, 1);
    sim.launch("rounded", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(in), sim.buffer(out));
    for (int i = 0; i < 6; ++i)
    {
        EXPECT_EQ(out[static_cast<std::size_t>(i)], expected[i]) << "input " << std::hex << in_bits[i];
    }
    // tf32 inputs of small integers plus an eighth (exact in tf32): the product as the host computes it.
    std::vector<int> ai = small(16 * 8, 21), bi = small(8 * 16, 22), zero(256, 0);
    std::vector<float> a(128), b(128);
    for (int i = 0; i < 128; ++i)
    {
        a[static_cast<std::size_t>(i)] = static_cast<float>(ai[static_cast<std::size_t>(i)]) * 0.125f;
        b[static_cast<std::size_t>(i)] = static_cast<float>(bi[static_cast<std::size_t>(i)]);
    }
    aligned_buffers memory;
    float* d = memory.of(sim, std::vector<float>(256, -1));
    sim.launch("tf32", {1, 1, 1}, {32, 1, 1}, 0, memory.of(sim, a), memory.of(sim, b), d);
    std::vector<int> expected_product = product(ai, bi, zero, 16, 16, 8);
    for (int i = 0; i < 256; ++i)
    {
        EXPECT_EQ(d[i], static_cast<float>(expected_product[static_cast<std::size_t>(i)]) * 0.125f) << "element " << i;
    }
}

TEST(simulator_matrix, an_mma_whose_fragment_has_the_wrong_register_count_is_refused_naming_the_operand)
{
    simulated sim(R"(
extern "C" __global__ void short_a(float* d)
{
    float c = 0.0f, r[4];
    unsigned a = 0, b = 0;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6,%7}, {%8,%8,%8,%8};"
                 : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]) : "r"(a), "r"(a), "r"(b), "r"(b), "f"(c));
    d[threadIdx.x] = r[0];
})");
    std::vector<float> d(32);
    sim_error::kind kind{};
    std::string message = error_of([&] { sim.launch("short_a", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(d)); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::unsupported);
    EXPECT_NE(message.find("operand 2 has 2 registers; the fragment has 4"), std::string::npos) << message;
}
