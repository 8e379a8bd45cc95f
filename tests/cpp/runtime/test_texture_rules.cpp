// Unit tests of what the textures room decides without a GPU (runtime/textures): which arrays a CUDA array
// holds (cuda_array::check), which texture settings the GPU takes (texture_settings::check) and the driver
// descriptor they make, and how cudaTextureObject_t / cudaSurfaceObject_t parameters are typed and planned
// (signature, launch_plan).

#include <gtest/gtest.h>

#include <memory>

#include "cuda_array.hpp"
#include "errors.hpp"
#include "expect_error.hpp"
#include "kernel_signature.hpp"
#include "launch_plan.hpp"
#include "session_resources.hpp"
#include "texture_settings.hpp"

namespace xcuda
{
    namespace
    {
        using xcuda_tests::message_of;

        cuda_array::description array_of(std::vector<std::size_t> shape, scalar_kind kind, unsigned channels = 1,
                                         bool layered = false)
        {
            cuda_array::description d;
            d.shape = std::move(shape);
            d.kind = kind;
            d.channels = channels;
            d.layered = layered;
            return d;
        }

        texture_settings settings(texture_settings::filter_mode filter, texture_settings::read_mode read,
                                  texture_settings::address_mode address = texture_settings::address_mode::clamp,
                                  bool normalized = false)
        {
            texture_settings s;
            s.filter = filter;
            s.read = read;
            s.address[0] = s.address[1] = s.address[2] = address;
            s.normalized_coordinates = normalized;
            return s;
        }
    }

    TEST(texture_rules, a_cuda_array_holds_floats_halves_and_8_to_32_bit_integers_in_1_2_or_4_channels)
    {
        for (scalar_kind kind : {scalar_kind::f32, scalar_kind::f16, scalar_kind::i8, scalar_kind::u8, scalar_kind::i16,
                                 scalar_kind::u16, scalar_kind::i32, scalar_kind::u32})
        {
            for (unsigned channels : {1u, 2u, 4u})
            {
                EXPECT_NO_THROW(cuda_array::check(array_of({4, 5}, kind, channels))) << scalar_kind_name(kind);
            }
        }
        for (scalar_kind kind : {scalar_kind::f64, scalar_kind::i64, scalar_kind::u64, scalar_kind::boolean, scalar_kind::bf16})
        {
            EXPECT_NE(message_of<usage_error>([&] { cuda_array::check(array_of({4}, kind)); })
                          .find("holds float32, float16 or 8-, 16- or 32-bit integers, not " + std::string(scalar_kind_name(kind))),
                      std::string::npos);
        }
        EXPECT_NE(message_of<usage_error>([] { cuda_array::check(array_of({4}, scalar_kind::f32, 3)); }).find("pad the last axis to 4"),
                  std::string::npos);
        EXPECT_NE(message_of<usage_error>([] { cuda_array::check(array_of({2, 2, 2, 2}, scalar_kind::f32)); })
                      .find("1, 2 or 3 dimensions"),
                  std::string::npos);
        EXPECT_NE(message_of<usage_error>([] { cuda_array::check(array_of({4}, scalar_kind::f32, 1, true)); })
                      .find("a layered one: its layers, then 1 or 2"),
                  std::string::npos);
        EXPECT_NE(message_of<usage_error>([] { cuda_array::check(array_of({3, 0}, scalar_kind::u8)); }).find("an extent 0"),
                  std::string::npos);
        EXPECT_NE(message_of<usage_error>([] { cuda_array::check(array_of({std::size_t(1) << 40}, scalar_kind::u8)); })
                      .find("larger than any device holds"),
                  std::string::npos);
        EXPECT_NE(message_of<usage_error>([] { cuda_array::check(array_of({1u << 30, 1u << 30, 1u << 20}, scalar_kind::f32, 4)); })
                      .find("larger than any device holds"),
                  std::string::npos);  // the product, not one extent, is too large: no overflow on the way
        EXPECT_EQ(array_of({3, 4, 5}, scalar_kind::u8, 4, true).dimensions(), 2u);
        EXPECT_EQ(array_of({3, 4, 5}, scalar_kind::u16, 2).nbytes(), 3u * 4 * 5 * 2 * 2);
        EXPECT_EQ(array_of({7}, scalar_kind::u8, 4).text(), "(7,) uint8, 4 channels");
    }

    TEST(texture_rules, linear_filtering_needs_floats_and_normalised_reads_promote_only_narrow_integers)
    {
        using f = texture_settings::filter_mode;
        using r = texture_settings::read_mode;
        EXPECT_NO_THROW(settings(f::linear, r::element).check(scalar_kind::f32, 2));
        EXPECT_NO_THROW(settings(f::linear, r::element).check(scalar_kind::f16, 3));
        EXPECT_NO_THROW(settings(f::linear, r::normalized).check(scalar_kind::u8, 2));
        EXPECT_NO_THROW(settings(f::linear, r::normalized).check(scalar_kind::i16, 1));
        EXPECT_NO_THROW(settings(f::point, r::element).check(scalar_kind::i32, 2));
        EXPECT_NE(message_of<usage_error>([&] { settings(f::linear, r::element).check(scalar_kind::u8, 2); })
                      .find("filter='linear' needs a texture that returns floats"),
                  std::string::npos);
        EXPECT_NE(message_of<usage_error>([&] { settings(f::point, r::normalized).check(scalar_kind::i32, 2); })
                      .find("read='normalized' promotes 8- and 16-bit integers"),
                  std::string::npos);
    }

    TEST(texture_rules, wrap_and_mirror_need_normalised_coordinates_in_the_dimensions_sampled)
    {
        using f = texture_settings::filter_mode;
        using r = texture_settings::read_mode;
        using a = texture_settings::address_mode;
        EXPECT_NE(message_of<usage_error>([&] { settings(f::point, r::element, a::wrap).check(scalar_kind::f32, 2); })
                      .find("address='wrap' needs normalized=True"),
                  std::string::npos);
        EXPECT_NO_THROW(settings(f::point, r::element, a::mirror, true).check(scalar_kind::f32, 2));
        texture_settings s = settings(f::point, r::element);
        s.address[2] = a::wrap;  // z is not sampled by a 2D texture
        EXPECT_NO_THROW(s.check(scalar_kind::f32, 2));
        EXPECT_THROW(s.check(scalar_kind::f32, 3), usage_error);
        EXPECT_EQ(s.text(3), "filter='point', address=('clamp', 'clamp', 'wrap'), normalized=False, read='element'");
    }

    TEST(texture_rules, the_driver_descriptor_says_the_filter_addresses_flags_and_border)
    {
        texture_settings s = settings(texture_settings::filter_mode::linear, texture_settings::read_mode::normalized,
                                      texture_settings::address_mode::border, true);
        s.address[1] = texture_settings::address_mode::mirror;
        s.border[2] = 0.5f;
        CUDA_TEXTURE_DESC d = s.descriptor(scalar_kind::u8);
        EXPECT_EQ(d.filterMode, CU_TR_FILTER_MODE_LINEAR);
        EXPECT_EQ(d.addressMode[0], CU_TR_ADDRESS_MODE_BORDER);
        EXPECT_EQ(d.addressMode[1], CU_TR_ADDRESS_MODE_MIRROR);
        EXPECT_EQ(d.flags, static_cast<unsigned>(CU_TRSF_NORMALIZED_COORDINATES));
        EXPECT_EQ(d.borderColor[2], 0.5f);
        s.read = texture_settings::read_mode::element;
        EXPECT_EQ(s.descriptor(scalar_kind::u8).flags, static_cast<unsigned>(CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_READ_AS_INTEGER));
        EXPECT_EQ(s.descriptor(scalar_kind::f32).flags, static_cast<unsigned>(CU_TRSF_NORMALIZED_COORDINATES));
    }

    TEST(texture_rules, words_are_read_or_refused_naming_the_words_there_are)
    {
        EXPECT_EQ(texture_settings::filter_named("linear"), texture_settings::filter_mode::linear);
        EXPECT_EQ(texture_settings::address_named("mirror"), texture_settings::address_mode::mirror);
        EXPECT_EQ(texture_settings::read_named("normalized"), texture_settings::read_mode::normalized);
        EXPECT_NE(message_of<usage_error>([] { texture_settings::filter_named("bilinear"); }).find("use 'point'"),
                  std::string::npos);
        EXPECT_NE(message_of<usage_error>([] { texture_settings::address_named("Clamp"); }).find("'clamp', 'border'"),
                  std::string::npos);
        EXPECT_THROW(texture_settings::read_named(""), usage_error);
    }

    TEST(texture_rules, the_session_releases_textures_and_surfaces_before_the_arrays_they_view)
    {
        struct resource final : session_resource
        {
            int rank;
            explicit resource(int r) : rank(r) {}
            void release() noexcept override {}
            std::string describe() const override { return std::to_string(rank); }
            const char* kind() const noexcept override { return "test"; }
            int device() const noexcept override { return 0; }
            int release_rank() const noexcept override { return rank; }
        };
        std::vector<std::unique_ptr<resource>> made;
        session_resources resources;
        for (int rank : {1, 0, 1, 1, 0, 1, 0})
        {
            made.push_back(std::make_unique<resource>(rank));
            resources.add(made.back().get());
        }
        std::vector<session_resource*> taken = resources.take_all();
        ASSERT_EQ(taken.size(), 7u);
        for (std::size_t i = 0; i < taken.size(); ++i)
        {
            EXPECT_EQ(taken[i]->release_rank(), i < 3 ? 0 : 1) << i;
        }
    }

    TEST(texture_rules, texture_and_surface_parameters_are_planned_as_64_bit_handles)
    {
        auto signatures = parse_kernel_signatures(R"(
typedef cudaSurfaceObject_t Surf;
using Tex = cudaTextureObject_t;
__global__ void k(cudaTextureObject_t a, Surf b, Tex c, const cudaTextureObject_t* d, unsigned long long e,
                  CUsurfObject f) {}
)");
        ASSERT_EQ(signatures.size(), 1u);
        const auto& p = signatures[0].parameters;
        EXPECT_EQ(p[0].handle_object, "texture");
        EXPECT_EQ(p[1].handle_object, "surface");
        EXPECT_EQ(p[2].handle_object, "texture");
        EXPECT_EQ(p[3].handle_object, "");  // a pointer to handles
        EXPECT_EQ(p[4].handle_object, "");
        EXPECT_EQ(p[5].handle_object, "surface");
        EXPECT_EQ(p[0].kind, scalar_kind::u64);
        EXPECT_EQ(p[0].size, 8u);
        launch_plan plan(signatures[0]);
        EXPECT_EQ(plan.kinds()[0].cls, parameter_class::handle);
        EXPECT_EQ(plan.kinds()[1].cls, parameter_class::handle);
        EXPECT_EQ(plan.kinds()[3].cls, parameter_class::pointer);
        EXPECT_EQ(plan.kinds()[4].cls, parameter_class::scalar);
        EXPECT_EQ(plan.slots()[0].size, 8u);
    }
}
