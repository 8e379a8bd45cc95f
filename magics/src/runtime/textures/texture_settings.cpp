#include "texture_settings.hpp"

#include <cstring>

#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        bool is_integer(scalar_kind kind)
        {
            return kind != scalar_kind::f32 && kind != scalar_kind::f16;
        }

        bool promotable(scalar_kind kind)
        {
            return kind == scalar_kind::i8 || kind == scalar_kind::u8 || kind == scalar_kind::i16 || kind == scalar_kind::u16;
        }
    }

    texture_settings::filter_mode texture_settings::filter_named(const std::string& word)
    {
        if (word == "point" || word == "linear")
        {
            return word == "point" ? filter_mode::point : filter_mode::linear;
        }
        throw usage_error("filter='" + word + "' is not a texture filter: use 'point' (the nearest texel) or 'linear' "
                          "(weighted neighbours)");
    }

    texture_settings::address_mode texture_settings::address_named(const std::string& word)
    {
        for (address_mode mode : {address_mode::wrap, address_mode::clamp, address_mode::mirror, address_mode::border})
        {
            if (word == name_of(mode))
            {
                return mode;
            }
        }
        throw usage_error("address='" + word + "' is not an address mode: use 'clamp', 'border', 'wrap' or 'mirror' "
                          "(one word, or one per dimension, x first)");
    }

    texture_settings::read_mode texture_settings::read_named(const std::string& word)
    {
        if (word == "element" || word == "normalized")
        {
            return word == "element" ? read_mode::element : read_mode::normalized;
        }
        throw usage_error("read='" + word + "' is not a read mode: use 'element' (the values as stored) or 'normalized' "
                          "(8- and 16-bit integers as floats in [0, 1], or [-1, 1] when signed)");
    }

    const char* texture_settings::name_of(filter_mode mode)
    {
        return mode == filter_mode::point ? "point" : "linear";
    }

    const char* texture_settings::name_of(address_mode mode)
    {
        switch (mode)
        {
        case address_mode::wrap: return "wrap";
        case address_mode::mirror: return "mirror";
        case address_mode::border: return "border";
        default: return "clamp";
        }
    }

    const char* texture_settings::name_of(read_mode mode)
    {
        return mode == read_mode::element ? "element" : "normalized";
    }

    void texture_settings::check(scalar_kind kind, unsigned dims) const
    {
        std::string dtype = scalar_kind_name(kind);
        if (read == read_mode::normalized && is_integer(kind) && !promotable(kind))
        {
            throw usage_error("read='normalized' promotes 8- and 16-bit integers to floats; a " + dtype +
                              " texture is read as integers (read='element'), or convert the array to float32");
        }
        bool floats = !is_integer(kind) || (promotable(kind) && read == read_mode::normalized);
        if (filter == filter_mode::linear && !floats)
        {
            throw usage_error("filter='linear' needs a texture that returns floats: a float32 or float16 array, or an 8- or "
                              "16-bit integer array with read='normalized'; a " + dtype + " texture read as its elements "
                              "takes filter='point'");
        }
        for (unsigned d = 0; d < dims && d < 3; ++d)
        {
            if ((address[d] == address_mode::wrap || address[d] == address_mode::mirror) && !normalized_coordinates)
            {
                throw usage_error(std::string("address='") + name_of(address[d]) + "' needs normalized=True: the GPU wraps "
                                  "and mirrors normalised coordinates only (with texel coordinates it would clamp); "
                                  "pass normalized=True, or address='clamp' or 'border'");
            }
        }
    }

    CUDA_TEXTURE_DESC texture_settings::descriptor(scalar_kind kind) const
    {
        CUDA_TEXTURE_DESC d;
        std::memset(&d, 0, sizeof d);
        for (int k = 0; k < 3; ++k)
        {
            d.addressMode[k] = address[k] == address_mode::wrap     ? CU_TR_ADDRESS_MODE_WRAP
                               : address[k] == address_mode::mirror ? CU_TR_ADDRESS_MODE_MIRROR
                               : address[k] == address_mode::border ? CU_TR_ADDRESS_MODE_BORDER
                                                                    : CU_TR_ADDRESS_MODE_CLAMP;
        }
        d.filterMode = filter == filter_mode::linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
        d.flags = (normalized_coordinates ? CU_TRSF_NORMALIZED_COORDINATES : 0u) |
                  (read == read_mode::element && is_integer(kind) ? CU_TRSF_READ_AS_INTEGER : 0u);
        for (int c = 0; c < 4; ++c)
        {
            d.borderColor[c] = border[c];
        }
        return d;
    }

    std::string texture_settings::text(unsigned dims) const
    {
        std::string modes;
        bool same = true;
        for (unsigned d = 1; d < dims && d < 3; ++d)
        {
            same = same && address[d] == address[0];
        }
        if (same)
        {
            modes = std::string("'") + name_of(address[0]) + "'";
        }
        else
        {
            for (unsigned d = 0; d < dims && d < 3; ++d)
            {
                modes += (d ? ", '" : "('") + std::string(name_of(address[d])) + "'";
            }
            modes += ")";
        }
        return std::string("filter='") + name_of(filter) + "', address=" + modes +
               ", normalized=" + (normalized_coordinates ? "True" : "False") + ", read='" + name_of(read) + "'";
    }
}
