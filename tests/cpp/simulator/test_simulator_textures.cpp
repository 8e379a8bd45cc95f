// The PTX simulator's texture and surface family (tex, tld4, suld, sust, txq, suq; texture_sampler,
// texture_decoder, warp_texture_operations.cpp): CUDA C++ with texture and surface objects compiled by NVRTC,
// run in the simulator's core over arrays of its texture_registry, compared with values computed here by the
// Programming Guide's formulas (linear filtering with 9-bit weights, the address modes, normalised reads).

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "simulated.hpp"
#include "texture_decoder.hpp"
#include "texture_sampler.hpp"

namespace
{
    const char* k_kernels = R"(
extern "C" __global__ void sample1d(cudaTextureObject_t t, const float* x, float4* out, int n)
{
    int i = threadIdx.x; if (i < n) out[i] = tex1D<float4>(t, x[i]);
}
extern "C" __global__ void sample2d(cudaTextureObject_t t, const float* xy, float4* out, int n)
{
    int i = threadIdx.x; if (i < n) out[i] = tex2D<float4>(t, xy[2 * i], xy[2 * i + 1]);
}
extern "C" __global__ void sample3d(cudaTextureObject_t t, const float* xyz, float* out, int n)
{
    int i = threadIdx.x; if (i < n) out[i] = tex3D<float>(t, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]);
}
extern "C" __global__ void integers2d(cudaTextureObject_t t, const float* xy, int4* out, int n)
{
    int i = threadIdx.x; if (i < n) out[i] = tex2D<int4>(t, xy[2 * i], xy[2 * i + 1]);
}
extern "C" __global__ void layered2d(cudaTextureObject_t t, const float* xy, int layer, float* out, int n)
{
    int i = threadIdx.x; if (i < n) out[i] = tex2DLayered<float>(t, xy[2 * i], xy[2 * i + 1], layer);
}
extern "C" __global__ void gather2d(cudaTextureObject_t t, float x, float y, float4* out)
{
    out[0] = tex2Dgather<float4>(t, x, y, 0);
    out[1] = tex2Dgather<float4>(t, x, y, 1);
}
extern "C" __global__ void queries(cudaTextureObject_t t, cudaSurfaceObject_t s, unsigned* out)
{
    asm("txq.width.b32 %0, [%1];" : "=r"(out[0]) : "l"(t));
    asm("txq.height.b32 %0, [%1];" : "=r"(out[1]) : "l"(t));
    asm("txq.normalized_coords.b32 %0, [%1];" : "=r"(out[2]) : "l"(t));
    asm("txq.filter_mode.b32 %0, [%1];" : "=r"(out[3]) : "l"(t));
    asm("suq.width.b32 %0, [%1];" : "=r"(out[4]) : "l"(s));
    asm("suq.height.b32 %0, [%1];" : "=r"(out[5]) : "l"(s));
}
// simpleSurfaceWrite's shape: read a surface, write another.
extern "C" __global__ void negate_surface(cudaSurfaceObject_t in, cudaSurfaceObject_t out, int w, int h)
{
    int x = threadIdx.x + blockIdx.x * blockDim.x, y = threadIdx.y + blockIdx.y * blockDim.y;
    if (x < w && y < h)
    {
        float v = surf2Dread<float>(in, x * 4, y);
        surf2Dwrite(-v, out, x * 4, y);
    }
}
extern "C" __global__ void write_outside(cudaSurfaceObject_t s, int x, int y, int mode)
{
    if (mode == 0) surf2Dwrite(1.0f, s, x * 4, y, cudaBoundaryModeTrap);
    if (mode == 1) surf2Dwrite(1.0f, s, x * 4, y, cudaBoundaryModeClamp);
    if (mode == 2) surf2Dwrite(1.0f, s, x * 4, y, cudaBoundaryModeZero);
}
extern "C" __global__ void volume_write(cudaSurfaceObject_t s, int w, int h, int d)
{
    int x = threadIdx.x, y = threadIdx.y, z = blockIdx.x;
    if (x < w && y < h && z < d) surf3Dwrite(x + 10 * y + 100 * z, s, x * 4, y, z);
}
)";

    // A CUDA array of floats (or other texels) in the registry, filled from `bytes`.
    std::shared_ptr<sim_array> array_of(const void* bytes, std::size_t w, std::size_t h, std::size_t d, unsigned channels,
                                        texel_format format, bool surface = false, bool layered = false)
    {
        auto a = std::make_shared<sim_array>();
        a->width = w;
        a->height = h;
        a->depth = d;
        a->channels = channels;
        a->format = format;
        a->surface = surface;
        a->layered = layered;
        a->bytes.resize(a->row_bytes() * a->rows() * a->slices());
        if (bytes)
        {
            std::memcpy(a->bytes.data(), bytes, a->bytes.size());
        }
        return a;
    }

    std::uint64_t texture_of(simulated& sim, std::shared_ptr<sim_array> a, sampler_state s)
    {
        texture_view v;
        v.array = std::move(a);
        v.sampler = s;
        return sim.textures.add_view(v);
    }

    std::uint64_t surface_of(simulated& sim, std::shared_ptr<sim_array> a)
    {
        texture_view v;
        v.array = std::move(a);
        v.surface = true;
        return sim.textures.add_view(v);
    }

    // The Guide's weight: the fraction in 1.8 fixed point, as an integer of 256ths (coordinates here avoid ties).
    long weight256(double fraction) { return static_cast<long>(std::floor(fraction * 256.0 + 0.5)); }
}

TEST(simulator_textures, point_filtering_reads_the_texel_under_the_coordinate_with_missing_channels_0_0_1)
{
    simulated sim(k_kernels);
    const std::size_t w = 5, h = 3;
    std::vector<float> texels(w * h);
    for (std::size_t i = 0; i < texels.size(); ++i)
    {
        texels[i] = static_cast<float>(i * i) + 0.25f;
    }
    std::uint64_t t = texture_of(sim, array_of(texels.data(), w, h, 0, 1, texel_format::f32), {});
    std::vector<float> xy = {0.5f, 0.5f, 4.99f, 2.2f, 2.0f, 1.0f, 1.7f, 0.1f, -3.0f, 7.5f, 9.0f, 1.5f};
    std::size_t n = xy.size() / 2;
    std::vector<float> out(4 * n);
    sim.launch("sample2d", {1, 1, 1}, {32, 1, 1}, 0, t, sim.buffer(xy), sim.buffer(out), static_cast<int>(n));
    for (std::size_t i = 0; i < n; ++i)
    {
        // floor(x), floor(y), clamped (the default address mode)
        long x = std::min<long>(std::max<long>(static_cast<long>(std::floor(xy[2 * i])), 0), w - 1);
        long y = std::min<long>(std::max<long>(static_cast<long>(std::floor(xy[2 * i + 1])), 0), h - 1);
        EXPECT_EQ(out[4 * i], texels[static_cast<std::size_t>(y) * w + static_cast<std::size_t>(x)]) << "sample " << i;
        EXPECT_EQ(out[4 * i + 1], 0.0f);
        EXPECT_EQ(out[4 * i + 2], 0.0f);
        EXPECT_EQ(out[4 * i + 3], 1.0f);
    }
}

TEST(simulator_textures, linear_filtering_weighs_four_texels_with_9_bit_fixed_point_fractions)
{
    simulated sim(k_kernels);
    const std::size_t w = 4, h = 4;
    std::vector<float> texels(w * h);
    for (std::size_t i = 0; i < texels.size(); ++i)
    {
        texels[i] = static_cast<float>((i * 37) % 11) * 100.0f;
    }
    sampler_state s;
    s.linear = true;
    std::uint64_t t = texture_of(sim, array_of(texels.data(), w, h, 0, 1, texel_format::f32), s);
    // x = 1.8 puts xB = 1.3 (a = 0.3: 77/256, not 0.3); the others are arbitrary, the last two clamp.
    std::vector<float> xy = {1.8f, 2.5f, 0.9f, 1.13f, 2.71f, 3.33f, 0.2f, 0.6f, 3.9f, 3.7f, 1.0f, 1.0f};
    std::size_t n = xy.size() / 2;
    std::vector<float> out(4 * n);
    sim.launch("sample2d", {1, 1, 1}, {32, 1, 1}, 0, t, sim.buffer(xy), sim.buffer(out), static_cast<int>(n));
    auto at = [&](long x, long y) {
        x = std::min<long>(std::max<long>(x, 0), w - 1);
        y = std::min<long>(std::max<long>(y, 0), h - 1);
        return static_cast<double>(texels[static_cast<std::size_t>(y) * w + static_cast<std::size_t>(x)]);
    };
    for (std::size_t i = 0; i < n; ++i)
    {
        double xb = xy[2 * i] - 0.5, yb = xy[2 * i + 1] - 0.5;
        long x0 = static_cast<long>(std::floor(xb)), y0 = static_cast<long>(std::floor(yb));
        long a = weight256(xb - x0), b = weight256(yb - y0);
        // Each corner's product in whole 256ths, ties up on the diagonal and down off it (as an H100 does,
        // tests/gpu_host/texture_filter_probe.py): the weights sum to exactly 256.
        auto up = [](long p) { return static_cast<double>((p + 128) >> 8); };
        auto down = [](long p) { return static_cast<double>((p + 127) >> 8); };
        double expected = (up((256 - a) * (256 - b)) * at(x0, y0) + down(a * (256 - b)) * at(x0 + 1, y0) +
                           down((256 - a) * b) * at(x0, y0 + 1) + up(a * b) * at(x0 + 1, y0 + 1)) / 256.0;
        EXPECT_NEAR(out[4 * i], expected, 1e-3) << "sample " << i << " at (" << xy[2 * i] << ", " << xy[2 * i + 1] << ")";
    }

    // The first sample's weight is 77/256, not 0.3: exactly representable results tell them apart.
    double exact_fraction = ((1 - 0.3) * (1 - 0.0) * at(1, 2) + 0.3 * at(2, 2));
    EXPECT_GT(std::fabs(out[0] - exact_fraction), 0.05) << "the weights are not quantised to 1/256";

    // Every corner's product a tie: (x, y) = (2, 1.5 + 1/256) puts a = 128, b = 1; 128 * 255 / 256 = 127.5 rounds up
    // to 128 at (1, 1) and down to 127 at (2, 1), 128 * 1 / 256 = 0.5 down to 0 at (1, 2) and up to 1 at (2, 2).
    // Texels 900, 200, 300, 700: (128 * 900 + 127 * 200 + 0 * 300 + 1 * 700) / 256 = 141300 / 256.
    ASSERT_EQ(at(1, 1) + at(2, 1) * 10 + at(1, 2) * 100 + at(2, 2) * 1000, 900 + 2000 + 30000 + 700000);
    std::vector<float> tie = {2.0f, 1.5f + 1.0f / 256.0f};
    sim.launch("sample2d", {1, 1, 1}, {32, 1, 1}, 0, t, sim.buffer(tie), sim.buffer(out), 1);
    EXPECT_EQ(out[0], 141300.0f / 256.0f) << "the corner weights' ties: up on the diagonal, down off it";
}

TEST(simulator_textures, address_modes_wrap_mirror_clamp_and_border_with_normalised_coordinates_and_clamp_without)
{
    simulated sim(k_kernels);
    std::vector<float> texels = {10, 20, 30, 40};
    std::vector<float> x = {-0.1f, 1.1f, 0.3f, 1.6f, -0.6f};
    std::vector<float> out(4 * x.size());
    const address_mode modes[4] = {address_mode::wrap, address_mode::mirror, address_mode::clamp, address_mode::border};
    // floor(x * 4) = -1, 4, 1, 6, -3 -> each mode's texel index (border: -1 for outside)
    const long long expected_index[4][5] = {{3, 0, 1, 2, 1}, {0, 3, 1, 1, 2}, {0, 3, 1, 3, 0}, {-1, -1, 1, -1, -1}};
    for (int m = 0; m < 4; ++m)
    {
        sampler_state s;
        s.normalized_coordinates = true;
        s.address[0] = modes[m];
        s.border[0] = -7.0f;
        std::uint64_t t = texture_of(sim, array_of(texels.data(), 4, 0, 0, 1, texel_format::f32), s);
        sim.launch("sample1d", {1, 1, 1}, {32, 1, 1}, 0, t, sim.buffer(x), sim.buffer(out), static_cast<int>(x.size()));
        for (std::size_t i = 0; i < x.size(); ++i)
        {
            long long k = expected_index[m][i];
            EXPECT_EQ(out[4 * i], k < 0 ? -7.0f : texels[static_cast<std::size_t>(k)]) << "mode " << m << ", x " << x[i];
            EXPECT_EQ(texture_sampler::address(static_cast<long long>(std::floor(x[i] * 4)), 4, modes[m], true), k);
        }
    }
    // Wrap and mirror with texel coordinates clamp (the Guide: they take normalised coordinates only).
    std::vector<float> texel_x = {-0.5f, 4.5f, 5.5f, 2.5f};  // floor: -1, 4, 5, 2
    const long long clamped[4] = {0, 3, 3, 2};
    for (address_mode mode : {address_mode::wrap, address_mode::mirror})
    {
        sampler_state s;
        s.address[0] = mode;
        std::uint64_t t = texture_of(sim, array_of(texels.data(), 4, 0, 0, 1, texel_format::f32), s);
        sim.launch("sample1d", {1, 1, 1}, {32, 1, 1}, 0, t, sim.buffer(texel_x), sim.buffer(out), 4);
        for (std::size_t i = 0; i < 4; ++i)
        {
            EXPECT_EQ(out[4 * i], texels[static_cast<std::size_t>(clamped[i])]) << "texel coordinate " << texel_x[i];
        }
    }
}

TEST(simulator_textures, normalised_float_reads_promote_unsigned_and_signed_bytes)
{
    simulated sim(k_kernels);
    std::vector<std::uint8_t> rgba = {0, 51, 255, 128, 1, 2, 3, 4};
    std::uint64_t t = texture_of(sim, array_of(rgba.data(), 2, 1, 0, 4, texel_format::u8), {});
    std::vector<float> xy = {0.5f, 0.5f, 1.5f, 0.5f};
    std::vector<float> out(8);
    sim.launch("sample2d", {1, 1, 1}, {32, 1, 1}, 0, t, sim.buffer(xy), sim.buffer(out), 2);
    for (std::size_t i = 0; i < 8; ++i)
    {
        EXPECT_FLOAT_EQ(out[i], rgba[i] / 255.0f) << "channel " << i;
    }
    std::vector<std::int8_t> signed_bytes = {-128, -127, 127, 0};
    sampler_state element;
    std::uint64_t s = texture_of(sim, array_of(signed_bytes.data(), 1, 1, 0, 4, texel_format::s8), element);
    std::vector<float> one(4);
    sim.launch("sample2d", {1, 1, 1}, {32, 1, 1}, 0, s, sim.buffer(xy), sim.buffer(one), 1);
    EXPECT_EQ(one[0], -1.0f);  // -128 clamps to -1
    EXPECT_EQ(one[1], -1.0f);
    EXPECT_EQ(one[2], 1.0f);
    EXPECT_EQ(one[3], 0.0f);
    // Read as integers (CU_TRSF_READ_AS_INTEGER): the signed bytes themselves, sign-extended.
    element.read_as_integer = true;
    std::uint64_t i = texture_of(sim, array_of(signed_bytes.data(), 1, 1, 0, 4, texel_format::s8), element);
    std::vector<int> ints(4);
    sim.launch("integers2d", {1, 1, 1}, {32, 1, 1}, 0, i, sim.buffer(xy), sim.buffer(ints), 1);
    EXPECT_EQ(ints, (std::vector<int>{-128, -127, 127, 0}));
}

TEST(simulator_textures, three_dimensional_linear_filtering_weighs_eight_texels)
{
    simulated sim(k_kernels);
    const std::size_t w = 3, h = 3, d = 3;
    std::vector<float> texels(w * h * d);
    for (std::size_t i = 0; i < texels.size(); ++i)
    {
        texels[i] = static_cast<float>(i);  // value = x + 3y + 9z: trilinear interpolation is exact
    }
    sampler_state s;
    s.linear = true;
    std::uint64_t t = texture_of(sim, array_of(texels.data(), w, h, d, 1, texel_format::f32), s);
    std::vector<float> xyz = {1.25f, 1.75f, 2.0f, 0.9f, 2.1f, 1.6f};
    std::vector<float> out(2);
    sim.launch("sample3d", {1, 1, 1}, {32, 1, 1}, 0, t, sim.buffer(xyz), sim.buffer(out), 2);
    for (std::size_t i = 0; i < 2; ++i)
    {
        double expected = 0;
        for (int k = 0; k < 3; ++k)
        {
            double b = xyz[3 * i + static_cast<std::size_t>(k)] - 0.5;  // inside: no clamping
            double below = std::floor(b);
            expected += (below + weight256(b - below) / 256.0) * (k == 0 ? 1 : k == 1 ? 3 : 9);
        }
        EXPECT_NEAR(out[i], expected, 1e-4) << "sample " << i;
    }
}

TEST(simulator_textures, layered_textures_read_the_layer_given_and_gather_returns_four_texels)
{
    simulated sim(k_kernels);
    std::vector<float> layers(2 * 2 * 3);
    for (std::size_t i = 0; i < layers.size(); ++i)
    {
        layers[i] = static_cast<float>(i) * 1.5f;
    }
    std::uint64_t t = texture_of(sim, array_of(layers.data(), 2, 2, 3, 1, texel_format::f32, false, true), {});
    std::vector<float> xy = {1.5f, 0.5f};
    std::vector<float> out(1);
    sim.launch("layered2d", {1, 1, 1}, {32, 1, 1}, 0, t, sim.buffer(xy), 2, sim.buffer(out), 1);
    EXPECT_EQ(out[0], layers[2 * 4 + 0 * 2 + 1]);

    std::vector<float> rg = {1, 2, 3, 4, 5, 6, 7, 8};  // 2 x 2 texels of (r, g)
    std::uint64_t g = texture_of(sim, array_of(rg.data(), 2, 2, 0, 2, texel_format::f32), {});
    std::vector<float> gathered(8);
    sim.launch("gather2d", {1, 1, 1}, {1, 1, 1}, 0, g, 1.0f, 1.0f, sim.buffer(gathered));
    // texels (i, j): (0,0) r1 g2, (1,0) r3 g4, (0,1) r5 g6, (1,1) r7 g8; order (0,1) (1,1) (1,0) (0,0)
    EXPECT_EQ(gathered, (std::vector<float>{5, 7, 3, 1, 6, 8, 4, 2}));
}

TEST(simulator_textures, surfaces_read_and_write_at_byte_coordinates_and_queries_answer_the_extents)
{
    simulated sim(k_kernels);
    const int w = 7, h = 5;
    std::vector<float> input(static_cast<std::size_t>(w * h));
    for (std::size_t i = 0; i < input.size(); ++i)
    {
        input[i] = static_cast<float>(i) - 3.5f;
    }
    auto in = array_of(input.data(), w, h, 0, 1, texel_format::f32, true);
    auto out = array_of(nullptr, w, h, 0, 1, texel_format::f32, true);
    std::uint64_t sin = surface_of(sim, in), sout = surface_of(sim, out);
    sim.launch("negate_surface", {2, 2, 1}, {4, 4, 1}, 0, sin, sout, w, h);
    std::vector<float> result(input.size());
    std::memcpy(result.data(), out->bytes.data(), out->bytes.size());
    for (std::size_t i = 0; i < input.size(); ++i)
    {
        EXPECT_EQ(result[i], -input[i]);
    }
    sampler_state s;
    s.linear = true;
    s.normalized_coordinates = true;
    std::uint64_t t = texture_of(sim, in, s);
    std::vector<unsigned> q(6);
    sim.launch("queries", {1, 1, 1}, {1, 1, 1}, 0, t, sout, sim.buffer(q));
    EXPECT_EQ(q, (std::vector<unsigned>{7, 5, 1, 1, 7, 5}));

    auto volume = array_of(nullptr, 3, 2, 4, 1, texel_format::s32, true);
    sim.launch("volume_write", {4, 1, 1}, {3, 2, 1}, 0, surface_of(sim, volume), 3, 2, 4);
    std::vector<int> cells(3 * 2 * 4);
    std::memcpy(cells.data(), volume->bytes.data(), volume->bytes.size());
    for (int z = 0; z < 4; ++z)
        for (int y = 0; y < 2; ++y)
            for (int x = 0; x < 3; ++x)
            {
                EXPECT_EQ(cells[static_cast<std::size_t>((z * 2 + y) * 3 + x)], x + 10 * y + 100 * z);
            }
}

TEST(simulator_textures, surface_accesses_outside_trap_clamp_or_drop_as_their_mode_says)
{
    simulated sim(k_kernels);
    auto a = array_of(nullptr, 4, 2, 0, 1, texel_format::f32, true);
    std::uint64_t s = surface_of(sim, a);
    sim_error::kind kind{};
    std::string error = error_of([&] { sim.launch("write_outside", {1, 1, 1}, {1, 1, 1}, 0, s, 4, 0, 0); }, &kind);
    EXPECT_EQ(kind, sim_error::kind::illegal_address);
    EXPECT_NE(error.find("outside it, at byte 16 of row 0"), std::string::npos) << error;
    EXPECT_NE(error.find("(.trap)"), std::string::npos) << error;
    sim.launch("write_outside", {1, 1, 1}, {1, 1, 1}, 0, s, 9, 5, 1);  // clamps to the last texel
    sim.launch("write_outside", {1, 1, 1}, {1, 1, 1}, 0, s, -1, 0, 2);  // dropped
    std::vector<float> cells(8);
    std::memcpy(cells.data(), a->bytes.data(), a->bytes.size());
    EXPECT_EQ(cells, (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 1}));
}

TEST(simulator_textures, a_handle_that_is_no_live_object_faults_naming_it)
{
    simulated sim(k_kernels);
    std::vector<float> texels = {1, 2, 3, 4};
    auto a = array_of(texels.data(), 2, 2, 0, 1, texel_format::f32, true);
    std::uint64_t t = texture_of(sim, a, {});
    std::uint64_t s = surface_of(sim, a);
    std::vector<float> xy = {0.5f, 0.5f};
    std::vector<float> out(4);
    sim.buffer(xy);
    sim.buffer(out);
    EXPECT_NE(error_of([&] { sim.launch("sample2d", {1, 1, 1}, {1, 1, 1}, 0, s, xy.data(), out.data(), 1); })
                  .find("which is no live texture object"),
              std::string::npos);  // a surface is not a texture
    sim.textures.remove_view(t);
    std::string error = error_of([&] { sim.launch("sample2d", {1, 1, 1}, {1, 1, 1}, 0, t, xy.data(), out.data(), 1); });
    EXPECT_NE(error.find("uses the handle 0x1, which is no live texture object"), std::string::npos) << error;
}

TEST(simulator_textures, forms_the_simulator_does_not_implement_are_refused_when_reached)
{
    ptx_program p = ptx_parser::parse(R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 t)
{
    .reg .b64 %rd<2>;
    .reg .f32 %f<8>;
    ld.param.u64 %rd1, [t];
    tex.level.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], %f7;
    suld.p.2d.v4.b32.trap {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];
    ret;
}
)");
    const ptx_function& f = p.functions[0];
    EXPECT_EQ(f.code[1].op, opcode::unsupported);
    EXPECT_NE(f.code[1].text.find("only tex.1d/2d/3d/a1d/a2d are implemented"), std::string::npos) << f.code[1].text;
    EXPECT_EQ(f.code[2].op, opcode::unsupported);
    EXPECT_NE(f.code[2].text.find("unformatted surface accesses"), std::string::npos) << f.code[2].text;
}
