#include "texture_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace xcuda::sim
{
    namespace
    {
        std::uint32_t float_bits(float value)
        {
            std::uint32_t bits;
            std::memcpy(&bits, &value, 4);
            return bits;
        }

        // IEEE binary16 to float (exact: every half is a float).
        float half_value(std::uint16_t h)
        {
            int exponent = (h >> 10) & 0x1f;
            int mantissa = h & 0x3ff;
            float magnitude = exponent == 0    ? std::ldexp(static_cast<float>(mantissa), -24)
                              : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                               : std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
            return (h & 0x8000) ? -magnitude : magnitude;
        }

        // One channel as the fetch returns it: a float (float and half formats, and promoted 8/16-bit
        // integers), or the integer itself.
        struct channel
        {
            bool is_float = true;
            float real = 0;
            std::int64_t integer = 0;
        };

        bool returns_float(const texture_view& view)
        {
            texel_format f = view.array->format;
            if (!texel_format_is_integer(f))
            {
                return true;
            }
            // 32-bit integers are never promoted (the driver's rule for CU_TRSF_READ_AS_INTEGER).
            return !view.sampler.read_as_integer && texel_format_bytes(f) < 4;
        }

        channel read_channel(const texture_view& view, const std::uint8_t* texel, unsigned c)
        {
            const sim_array& a = *view.array;
            channel out;
            if (c >= a.channels)
            {
                // A channel the format does not have: x, y, z read 0 and w reads 1.
                out.is_float = returns_float(view);
                out.real = c == 3 ? 1.0f : 0.0f;
                out.integer = c == 3 ? 1 : 0;
                return out;
            }
            const std::uint8_t* p = texel + c * texel_format_bytes(a.format);
            switch (a.format)
            {
            case texel_format::f32: std::memcpy(&out.real, p, 4); return out;
            case texel_format::f16:
            {
                std::uint16_t h;
                std::memcpy(&h, p, 2);
                out.real = half_value(h);
                return out;
            }
            case texel_format::u8: out.integer = *p; break;
            case texel_format::s8: out.integer = static_cast<std::int8_t>(*p); break;
            case texel_format::u16: { std::uint16_t v; std::memcpy(&v, p, 2); out.integer = v; break; }
            case texel_format::s16: { std::int16_t v; std::memcpy(&v, p, 2); out.integer = v; break; }
            case texel_format::u32: { std::uint32_t v; std::memcpy(&v, p, 4); out.integer = v; break; }
            case texel_format::s32: { std::int32_t v; std::memcpy(&v, p, 4); out.integer = v; break; }
            }
            out.is_float = returns_float(view);
            if (out.is_float)
            {
                // cudaReadModeNormalizedFloat: unsigned to [0, 1], signed to [-1, 1] (the most negative clamps to -1).
                unsigned bits = texel_format_bytes(a.format) * 8;
                float scale = texel_format_is_signed(a.format) ? static_cast<float>((1u << (bits - 1)) - 1)
                                                               : static_cast<float>((1u << bits) - 1);
                out.real = std::max(static_cast<float>(out.integer) / scale, -1.0f);
            }
            return out;
        }

        // The texel at already addressed indices (any -1: a border texel), channel c.
        channel texel_channel(const texture_view& view, const long long index[3], unsigned c)
        {
            if (index[0] < 0 || index[1] < 0 || index[2] < 0)
            {
                channel border;
                border.is_float = returns_float(view);
                border.real = view.sampler.border[c];
                border.integer = static_cast<std::int64_t>(view.sampler.border[c]);
                return border;
            }
            const sim_array& a = *view.array;
            std::size_t offset = ((static_cast<std::size_t>(index[2]) * a.rows() + static_cast<std::size_t>(index[1])) *
                                      a.width + static_cast<std::size_t>(index[0])) * a.texel_bytes();
            return read_channel(view, a.bytes.data() + offset, c);
        }

        std::uint32_t bits_of(const channel& value)
        {
            return value.is_float ? float_bits(value.real) : static_cast<std::uint32_t>(value.integer);
        }

        // The extents a fetch of `dims` dimensions addresses: width, rows, and slices (a 3D array's depth;
        // 1 for a layered array, whose layer is chosen apart).
        void extents_of(const sim_array& a, long long n[3])
        {
            n[0] = static_cast<long long>(std::max<std::size_t>(a.width, 1));
            n[1] = static_cast<long long>(a.rows());
            n[2] = a.layered ? 1 : static_cast<long long>(a.slices());
        }

        // A layer index clamped into the array's layers; 0 for an array that has none.
        long long layer_of(const sim_array& a, int layer)
        {
            if (layer < 0 || !a.layered)
            {
                return 0;
            }
            return std::min<long long>(layer, static_cast<long long>(a.slices()) - 1);
        }

        // A float coordinate scaled to texels, kept finite and far from the integers' limits.
        double texel_coordinate(float coordinate, long long extent, bool normalized)
        {
            double u = normalized ? static_cast<double>(coordinate) * static_cast<double>(extent) : coordinate;
            if (std::isnan(u))
            {
                return 0;
            }
            return std::min(std::max(u, -1e12), 1e12);
        }
    }

    int texture_sampler::weight_units(double fraction)
    {
        return static_cast<int>(std::floor(fraction * 256.0 + 0.5));
    }

    void texture_sampler::corner_weights_2d(int a, int b, int out[4])
    {
        // p / 256 rounded to a whole number: ties up (p + 128) >> 8, ties down (p + 127) >> 8.
        out[0] = ((256 - a) * (256 - b) + 128) >> 8;
        out[1] = (a * (256 - b) + 127) >> 8;
        out[2] = ((256 - a) * b + 127) >> 8;
        out[3] = (a * b + 128) >> 8;
    }

    long long texture_sampler::address(long long i, long long n, address_mode mode, bool normalized)
    {
        if (!normalized && (mode == address_mode::wrap || mode == address_mode::mirror))
        {
            mode = address_mode::clamp;  // the GPU's rule: wrap and mirror need normalised coordinates
        }
        switch (mode)
        {
        case address_mode::wrap: return ((i % n) + n) % n;
        case address_mode::mirror:
        {
            long long m = ((i % (2 * n)) + 2 * n) % (2 * n);
            return m < n ? m : 2 * n - 1 - m;
        }
        case address_mode::border: return i < 0 || i >= n ? -1 : i;
        default: return std::min(std::max(i, 0ll), n - 1);
        }
    }

    texture_sampler::result texture_sampler::fetch(const texture_view& view, unsigned dims, const std::int32_t coords[3],
                                                   int layer)
    {
        const sim_array& a = *view.array;
        long long n[3];
        extents_of(a, n);
        long long index[3] = {0, 0, layer_of(a, layer)};
        for (unsigned d = 0; d < dims; ++d)
        {
            index[d] = address(coords[d], n[d], view.sampler.address[d], false);
        }
        if (index[0] < 0 || index[1] < 0 || index[2] < 0)
        {
            index[0] = -1;
        }
        result out;
        for (unsigned c = 0; c < 4; ++c)
        {
            out.bits[c] = bits_of(texel_channel(view, index, c));
        }
        return out;
    }

    texture_sampler::result texture_sampler::sample(const texture_view& view, unsigned dims, const float coords[3],
                                                    int layer)
    {
        const sim_array& a = *view.array;
        const sampler_state& s = view.sampler;
        long long n[3];
        extents_of(a, n);
        long long base[3] = {0, 0, layer_of(a, layer)};
        int fraction[3] = {0, 0, 0};  // 9-bit weights, 1/256 units
        for (unsigned d = 0; d < dims; ++d)
        {
            double u = texel_coordinate(coords[d], n[d], s.normalized_coordinates);
            if (s.linear)
            {
                double below = std::floor(u - 0.5);
                base[d] = static_cast<long long>(below);
                fraction[d] = weight_units(u - 0.5 - below);
            }
            else
            {
                base[d] = static_cast<long long>(std::floor(u));
            }
        }
        result out;
        unsigned corners = s.linear ? 1u << dims : 1u;
        int corner_2d[4] = {0, 0, 0, 0};
        if (s.linear && dims == 2)
        {
            corner_weights_2d(fraction[0], fraction[1], corner_2d);
        }
        for (unsigned c = 0; c < 4; ++c)
        {
            float sum = 0;
            channel value;
            for (unsigned k = 0; k < corners; ++k)
            {
                long long index[3] = {base[0], base[1], base[2]};
                float w = 1.0f;
                for (unsigned d = 0; d < dims; ++d)
                {
                    bool upper = s.linear && ((k >> d) & 1);
                    index[d] = address(base[d] + (upper ? 1 : 0), n[d], s.address[d], s.normalized_coordinates);
                    if (s.linear && dims != 2)
                    {
                        w *= static_cast<float>(upper ? fraction[d] : 256 - fraction[d]) / 256.0f;
                    }
                }
                if (s.linear && dims == 2)
                {
                    w = static_cast<float>(corner_2d[k]) / 256.0f;  // k: bit 0 the x corner, bit 1 the y corner
                }
                if (index[0] < 0 || index[1] < 0 || index[2] < 0)
                {
                    index[0] = -1;  // a border texel
                }
                value = texel_channel(view, index, c);
                sum += w * value.real;
            }
            out.bits[c] = s.linear ? float_bits(sum) : bits_of(value);
        }
        return out;
    }

    texture_sampler::result texture_sampler::gather(const texture_view& view, unsigned component, const float coords[2],
                                                    int layer)
    {
        const sim_array& a = *view.array;
        const sampler_state& s = view.sampler;
        long long n[3];
        extents_of(a, n);
        long long base[2];
        for (unsigned d = 0; d < 2; ++d)
        {
            base[d] = static_cast<long long>(std::floor(texel_coordinate(coords[d], n[d], s.normalized_coordinates) - 0.5));
        }
        // (i, j+1), (i+1, j+1), (i+1, j), (i, j)
        const int offsets[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};
        result out;
        for (unsigned k = 0; k < 4; ++k)
        {
            long long index[3] = {address(base[0] + offsets[k][0], n[0], s.address[0], s.normalized_coordinates),
                                  address(base[1] + offsets[k][1], n[1], s.address[1], s.normalized_coordinates),
                                  layer_of(a, layer)};
            if (index[0] < 0 || index[1] < 0)
            {
                index[0] = -1;
            }
            out.bits[k] = bits_of(texel_channel(view, index, component));
        }
        return out;
    }
}
