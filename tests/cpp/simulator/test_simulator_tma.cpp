// The PTX simulator's TMA (warp_tensor_operations.cpp, tensor_copy_decoder.cpp, tensor_map_descriptor.cpp):
// cp.async.bulk.tensor loads and stores through tensor maps made as the shim's cuTensorMapEncodeTiled/Im2col make
// them (tensor_map_descriptor::write; the kernels are tests/cpp/fixtures/tma_kernels.cu), against values computed here: the CUDA Programming Guide's TMA example (a
// tile loaded, changed, stored back), a tile at the edge (zeros, or NaN with the OOB fill), the swizzle modes
// read back through their inverse, an im2col load against a plain im2col, the bulk copies to global memory.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fixture.hpp"
#include "simulated.hpp"
#include "tensor_map_descriptor.hpp"
#include "tma_test_maps.hpp"

namespace
{
    using xcuda_tests::tma_map_bytes;
    using xcuda_tests::tiled_map;
    using xcuda_tests::k_tma_float32;
    using xcuda_tests::k_tma_float16;
    std::string tma_kernels() { return xcuda_tests::fixture("tma_kernels.cu"); }


    // A swizzled address (the hardware's pattern, as the CUDA guide draws it): in every 128-byte row r of the
    // shared window, the 16-byte chunk j of a span of `span` bytes moves to chunk j ^ (r % (span / 16)).
    std::uint32_t swizzled_by_rows(std::uint32_t a, unsigned span)
    {
        std::uint32_t chunk = (a >> 4) & (span / 16 - 1);
        std::uint32_t row = (a >> 7) % (span / 16);
        return (a & ~((span / 16 - 1) << 4)) | ((chunk ^ row) << 4);
    }
}

TEST(simulator_tma, the_programming_guides_tile_load_change_store_covers_the_array_and_drops_what_lies_outside)
{
    simulated sim(tma_kernels());
    // 20 x 72 floats (rows of 288 bytes) inside a larger buffer: 3 x 3 tiles of 8 x 32 reach past both edges,
    // and nothing past the array may change.
    const std::size_t rows = 20, cols = 72;
    std::vector<float> a(rows * cols + 512);
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        a[i] = static_cast<float>(i % 97) - 40.0f;
    }
    const std::vector<float> before = a;
    float* base = sim.buffer(a);
    sim.launch("tile_add", {3, 3, 1}, {64, 1, 1}, 0, tiled_map(base, k_tma_float32, rows, cols, cols * 4, 8, 32));
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        ASSERT_EQ(a[i], i < rows * cols ? 2.0f * before[i] + 1.0f : before[i]) << "element " << i;
    }
}

TEST(simulator_tma, a_tile_at_the_edge_is_filled_with_zeros_or_nan_where_it_leaves_the_tensor)
{
    simulated sim(tma_kernels());
    std::vector<float> a(10 * 40);
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        a[i] = static_cast<float>(i) + 1.0f;
    }
    float* base = sim.buffer(a);
    for (unsigned oob : {0u, 1u})
    {
        std::vector<unsigned> out(8 * 32, 0xdeadbeef);
        // the box at (x, y) = (24, 6) (and (-4, -3) below): rows 6..13 and columns 24..55 of a 10 x 40 array
        for (int corner = 0; corner < 2; ++corner)
        {
            const int x = corner ? -4 : 24, y = corner ? -3 : 6;
            sim.launch("raw_tile", {1, 1, 1}, {64, 1, 1}, 0, tiled_map(base, k_tma_float32, 10, 40, 160, 8, 32, 0, oob), x, y,
                       8u * 32u * 4u, sim.buffer(out));
            for (int r = 0; r < 8; ++r)
            {
                for (int c = 0; c < 32; ++c)
                {
                    float got;
                    std::memcpy(&got, &out[static_cast<std::size_t>(r * 32 + c)], 4);
                    const int gy = y + r, gx = x + c;
                    const bool inside = gy >= 0 && gy < 10 && gx >= 0 && gx < 40;
                    if (inside)
                    {
                        ASSERT_EQ(got, a[static_cast<std::size_t>(gy * 40 + gx)]) << r << "," << c;
                    }
                    else if (oob)
                    {
                        ASSERT_TRUE(std::isnan(got)) << "NaN fill at " << r << "," << c;
                    }
                    else
                    {
                        ASSERT_EQ(out[static_cast<std::size_t>(r * 32 + c)], 0u) << "zero fill at " << r << "," << c;
                    }
                }
            }
            sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
        }
    }
}

TEST(simulator_tma, element_strides_take_every_kth_row_and_dimension_0_ignores_its_stride_without_interleave)
{
    simulated sim(tma_kernels());
    std::vector<float> a(16 * 32);
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        a[i] = static_cast<float>(i);
    }
    tensor_map_descriptor d;
    d.data_type = k_tma_float32;
    d.rank = 2;
    d.address = reinterpret_cast<std::uintptr_t>(sim.buffer(a));
    d.dims[0] = 32, d.dims[1] = 16;
    d.strides[0] = 4, d.strides[1] = 128;
    d.box[0] = 32, d.box[1] = 8;
    d.element_strides[0] = 2;  // ignored (PTX: no stride in dimension 0 without interleave)
    d.element_strides[1] = 3;  // ceil(8 / 3) = 3 rows: y, y + 3, y + 6
    ASSERT_EQ(d.check(), "");
    tma_map_bytes map;
    d.write(map.bytes);
    std::vector<unsigned> out(3 * 32);
    sim.launch("raw_tile", {1, 1, 1}, {32, 1, 1}, 0, map, 0, 5, 3u * 32u * 4u, sim.buffer(out));
    for (int r = 0; r < 3; ++r)
    {
        for (int c = 0; c < 32; ++c)
        {
            float got;
            std::memcpy(&got, &out[static_cast<std::size_t>(r * 32 + c)], 4);
            const int y = 5 + 3 * r;
            ASSERT_EQ(got, y < 16 ? a[static_cast<std::size_t>(y * 32 + c)] : 0.0f) << r << "," << c;
        }
    }
}

TEST(simulator_tma, each_swizzle_mode_places_16_byte_chunks_as_the_hardware_does_and_its_inverse_reads_the_tile)
{
    simulated sim(tma_kernels());
    std::vector<std::uint16_t> a(16 * 64);  // halves as raw 16-bit words: 16 rows of 128 bytes
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        a[i] = static_cast<std::uint16_t>(i * 3 + 1);
    }
    std::uint16_t* base = sim.buffer(a);
    for (unsigned swizzle : {1u, 2u, 3u})
    {
        const unsigned span = 16u << swizzle, box_cols = span / 2, box_rows = 16, bytes = box_rows * span;
        std::vector<unsigned> out(bytes / 4);
        sim.launch("raw_tile", {1, 1, 1}, {64, 1, 1}, 0, tiled_map(base, k_tma_float16, 16, 64, 128, box_rows, box_cols, swizzle),
                   0, 0, bytes, sim.buffer(out));
        const auto* shared = reinterpret_cast<const std::uint16_t*>(out.data());
        for (unsigned r = 0; r < box_rows; ++r)
        {
            for (unsigned c = 0; c < box_cols; ++c)
            {
                const std::uint32_t dense = r * span + c * 2;  // where the element lies without swizzle
                ASSERT_EQ(shared[swizzled_by_rows(dense, span) / 2], a[r * 64 + c])
                    << "swizzle " << span << "B, row " << r << ", column " << c;
            }
        }
        sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
        if (swizzle == 3)
        {
            // Hand-computed: 128-byte rows; row 1's first chunk (elements 64..71 of the box) moves to chunk 1,
            // row 3's chunk 2 to chunk 1 (2 ^ 3), row 8's chunk 5 stays (8 % 8 = 0).
            EXPECT_EQ(shared[(128 + 16) / 2], a[1 * 64 + 0]);
            EXPECT_EQ(shared[(3 * 128 + 16) / 2], a[3 * 64 + 16]);
            EXPECT_EQ(shared[(8 * 128 + 5 * 16) / 2], a[8 * 64 + 40]);
        }
    }
}

TEST(simulator_tma, an_im2col_load_gathers_the_column_a_padded_convolution_reads)
{
    simulated sim(tma_kernels());
    const int N = 2, H = 5, W = 6, C = 16;  // NHWC floats: a pixel's channels are 64 bytes
    std::vector<float> x(static_cast<std::size_t>(N * H * W * C));
    for (std::size_t i = 0; i < x.size(); ++i)
    {
        x[i] = static_cast<float>(i % 251) + 0.5f;
    }
    float* base = sim.buffer(x);
    tensor_map_descriptor d;
    d.data_type = k_tma_float32;
    d.rank = 4;
    d.im2col = true;
    d.address = reinterpret_cast<std::uintptr_t>(base);
    const std::uint64_t dims[] = {C, W, H, N};
    for (unsigned i = 0; i < 4; ++i)
    {
        d.dims[i] = dims[i];
    }
    d.strides[0] = 4;
    d.strides[1] = C * 4;
    d.strides[2] = C * W * 4;
    d.strides[3] = C * W * H * 4;
    d.lower[0] = d.lower[1] = -1;  // a 3 x 3 filter with padding 1: the column's pixels start at -1 .. extent - 2
    d.upper[0] = d.upper[1] = -1;
    d.channels = 16;
    d.pixels = 32;  // the 30 output pixels of image 0, then 2 of image 1
    ASSERT_EQ(d.check(), "");
    tma_map_bytes map;
    d.write(map.bytes);
    for (unsigned short r : {0, 1, 2})
    {
        for (unsigned short s : {0, 2})
        {
            std::vector<float> out(32 * 16, -7.0f);
            sim.launch("im2col", {1, 1, 1}, {64, 1, 1}, 0, map, -1, -1, 0, s, r, 32u * 16u * 4u, sim.buffer(out));
            // the plain im2col: output pixel p = (n, oh, ow) in order reads x[n, oh - 1 + r, ow - 1 + s, :], zero outside
            int p = 0;
            for (int n = 0; n < N && p < 32; ++n)
                for (int oh = 0; oh < H && p < 32; ++oh)
                    for (int ow = 0; ow < W && p < 32; ++ow, ++p)
                        for (int c = 0; c < C; ++c)
                        {
                            const int ih = oh - 1 + r, iw = ow - 1 + s;
                            const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                            const float want = inside ? x[static_cast<std::size_t>(((n * H + ih) * W + iw) * C + c)] : 0.0f;
                            ASSERT_EQ(out[static_cast<std::size_t>(p * C + c)], want)
                                << "tap (" << r << ", " << s << "), pixel " << p << ", channel " << c;
                        }
            sim.memory.remove(reinterpret_cast<std::uintptr_t>(out.data()));
        }
    }
}

TEST(simulator_tma, the_bulk_copies_to_global_memory_write_and_reduce)
{
    simulated sim(tma_kernels());
    std::vector<int> out(64, 1000);
    sim.launch("bulk_out", {1, 1, 1}, {32, 1, 1}, 0, sim.buffer(out));
    for (int i = 0; i < 64; ++i)
    {
        EXPECT_EQ(out[static_cast<std::size_t>(i)], (3 * i - 50) * (i < 32 ? 2 : 1)) << i;
    }
}

TEST(simulator_tma, a_tensor_reduction_adds_each_tile_inside_the_tensor_and_drops_the_rest)
{
    simulated sim(tma_kernels());
    const std::size_t rows = 6, cols = 20;  // 2 x 2 tiles of 4 x 16 pass both edges
    std::vector<int> a(rows * cols + 64, 5);
    int* base = sim.buffer(a);
    tensor_map_descriptor d;
    d.data_type = 3;  // INT32
    d.rank = 2;
    d.address = reinterpret_cast<std::uintptr_t>(base);
    d.dims[0] = cols, d.dims[1] = rows;
    d.strides[0] = 4, d.strides[1] = 80;
    d.box[0] = 16, d.box[1] = 4;
    tma_map_bytes map;
    d.write(map.bytes);
    sim.launch("tile_reduce", {2, 2, 1}, {32, 1, 1}, 0, map);
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        const std::size_t r = i / cols, c = i % cols;
        const int want = i < rows * cols ? 5 + 100 * static_cast<int>(r / 4) + static_cast<int>(c / 16) +
                                               static_cast<int>((r % 4) * 16 + c % 16)
                                         : 5;
        ASSERT_EQ(a[i], want) << "element " << i;
    }
}

TEST(simulator_tma, a_map_the_simulator_did_not_make_and_a_map_of_another_rank_are_named)
{
    simulated sim(tma_kernels());
    std::vector<float> a(16 * 64);
    std::vector<unsigned> out(1024);
    tma_map_bytes junk{};
    std::memset(junk.bytes, 0x5a, sizeof junk.bytes);
    std::string message = error_of([&] { sim.launch("raw_tile", {1, 1, 1}, {32, 1, 1}, 0, junk, 0, 0, 1024u, sim.buffer(out)); });
    EXPECT_NE(message.find("is not one: its 128 bytes were not written by the simulator's cuTensorMapEncodeTiled"),
              std::string::npos) << message;
    tensor_map_descriptor d;
    d.data_type = k_tma_float32;
    d.rank = 3;
    d.address = reinterpret_cast<std::uintptr_t>(sim.buffer(a));
    d.dims[0] = 64, d.dims[1] = 4, d.dims[2] = 4;
    d.strides[0] = 4, d.strides[1] = 256, d.strides[2] = 1024;
    d.box[0] = 32, d.box[1] = 2, d.box[2] = 2;
    tma_map_bytes three;
    d.write(three.bytes);
    message = error_of([&] { sim.launch("raw_tile", {1, 1, 1}, {32, 1, 1}, 0, three, 0, 0, 1024u, out.data()); });
    EXPECT_NE(message.find("copies a 2d tile box through a tiled tensor map of rank 3"), std::string::npos) << message;
}

TEST(simulator_tma, the_descriptor_refuses_what_the_driver_documents_as_invalid)
{
    tensor_map_descriptor d;
    d.data_type = k_tma_float32;
    d.rank = 2;
    d.address = 0x1000;
    d.dims[0] = 64, d.dims[1] = 8;
    d.strides[0] = 4, d.strides[1] = 256;
    d.box[0] = 32, d.box[1] = 8;
    EXPECT_EQ(d.check(), "");
    auto broken = [&](auto change) {
        tensor_map_descriptor b = d;
        change(b);
        return b.check();
    };
    EXPECT_NE(broken([](auto& b) { b.address = 0x1008; }).find("16-byte aligned"), std::string::npos);
    EXPECT_NE(broken([](auto& b) { b.strides[1] = 200; }).find("globalStrides[0] = 200"), std::string::npos);
    EXPECT_NE(broken([](auto& b) { b.box[1] = 257; }).find("boxDim[1] = 257"), std::string::npos);
    EXPECT_NE(broken([](auto& b) { b.box[0] = 3; }).find("multiple of 16"), std::string::npos);
    EXPECT_NE(broken([](auto& b) { b.swizzle = 1; }).find("wider than the swizzle's 32"), std::string::npos);
    EXPECT_NE(broken([](auto& b) { b.element_strides[1] = 9; }).find("elementStrides[1] = 9"), std::string::npos);
    EXPECT_NE(broken([](auto& b) { b.data_type = 3, b.oob_fill = 1; }).find("NaN OOB fill"), std::string::npos);
    EXPECT_NE(broken([](auto& b) { b.im2col = true; }).find("rank of 2"), std::string::npos);
}
