#pragma once
// How a texture object reads its CUDA array (docs/textures.md): the filter, the address mode of each
// dimension, normalised coordinates, the read mode and the border colour, with the rules the GPU's driver
// applies decided here first, so that a refusal says what to do instead of CUDA_ERROR_INVALID_VALUE:
//   - linear filtering needs a texture that returns floats (float32/float16, or 8/16-bit integers read as
//     normalised floats);
//   - read='normalized' promotes 8- and 16-bit integers only (32-bit integers are never promoted);
//   - wrap and mirror need normalised coordinates (the GPU would clamp instead).
// Plain data; any thread.

#include <cuda.h>

#include <string>

#include "kernel_signature.hpp"

namespace xcuda
{
    struct texture_settings
    {
        enum class filter_mode { point, linear };
        enum class address_mode { wrap, clamp, mirror, border };
        enum class read_mode { element, normalized };

        filter_mode filter = filter_mode::point;
        address_mode address[3] = {address_mode::clamp, address_mode::clamp, address_mode::clamp};  // x, y, z
        bool normalized_coordinates = false;
        read_mode read = read_mode::element;
        float border[4] = {0, 0, 0, 0};

        // The words Python gives ("linear", "clamp", "normalized"); usage_error listing the words there are.
        static filter_mode filter_named(const std::string& word);
        static address_mode address_named(const std::string& word);
        static read_mode read_named(const std::string& word);
        static const char* name_of(filter_mode mode);
        static const char* name_of(address_mode mode);
        static const char* name_of(read_mode mode);

        // Refuses (usage_error) settings the GPU would refuse or change for an array of `kind` with `dims`
        // dimensions, saying what to do.
        void check(scalar_kind kind, unsigned dims) const;
        // The driver's texture descriptor for an array of `kind`.
        CUDA_TEXTURE_DESC descriptor(scalar_kind kind) const;
        // "filter='linear', address=('clamp', 'wrap'), normalized=True, read='element'": the repr's words.
        std::string text(unsigned dims) const;
    };
}
