#pragma once
// TMA tensor maps (CUtensorMap, 128 opaque bytes) over device memory: what xcuda.tensor_map encodes for a
// `const __grid_constant__ CUtensorMap` parameter, read on the device by cp.async.bulk.tensor.
//
// Why the checks here: cuTensorMapEncodeTiled answers any broken rule with a bare CUDA_ERROR_INVALID_VALUE.
// Each documented rule (the driver API's cuTensorMapEncodeTiled) is checked first, in numpy's terms (shape,
// strides and box outermost first, as the array is indexed), and named with what to do:
//   rank 1..5 (3..5 when interleaved); the address 16-byte aligned (32 for interleave '32B'); every extent
//   1..2^32; the innermost dimension contiguous; every other stride a multiple of 16 bytes (32 for '32B')
//   below 2^40; box extents 1..256, the box's inner row (box[-1] x itemsize) a multiple of 16 bytes without
//   interleave, and no wider than the swizzle's span (32, 64, 128 bytes) with one; element strides 1..8;
//   interleave '32B' needs swizzle '32B'; the NaN out-of-bounds fill only for float types.
// The driver then does the rest (it may refuse what the documentation does not say: that is its cuda_error).
// An im2col map (cuTensorMapEncodeIm2col) has no box: its spatial bounding box (lower and upper corner, one
// offset per spatial dimension D, H, W: rank - 2 of them, within +-2^15, +-2^7, +-2^4 for rank 3, 4, 5, the
// box not empty), channels per pixel 1..256 (its row a multiple of 16 bytes without interleave, within the
// swizzle span) and pixels per column 1..1024 say what one copy gathers; rank 3..5.
// Stateless; the encoding needs a current context (the caller's session).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace xcuda
{
    struct tensor_map_request
    {
        std::uint64_t address = 0;
        std::string dtype;                      // numpy's name: uint8 .. float64, float16, bfloat16
        std::vector<std::uint64_t> shape;       // elements, outermost first
        std::vector<std::int64_t> strides;      // bytes, outermost first
        std::vector<std::uint64_t> box;         // elements, outermost first
        std::vector<std::uint64_t> element_strides;  // empty: all 1
        std::string interleave = "none";        // none, 16B, 32B
        std::string swizzle = "none";           // none, 32B, 64B, 128B
        std::string l2_promotion = "none";      // none, 64B, 128B, 256B
        std::string oob_fill = "none";          // none, nan (NAN_REQUEST_ZERO_FMA)
        // im2col (box empty): the spatial corners, outermost first (D, H, W), channels and pixels per copy
        bool im2col = false;
        std::vector<std::int64_t> lower_corner, upper_corner;
        std::uint64_t channels_per_pixel = 0, pixels_per_column = 0;
    };

    // What cuTensorMapEncodeTiled takes, in its order (innermost dimension first).
    struct tensor_map_arguments
    {
        int data_type = 0;
        unsigned rank = 0;
        std::vector<std::uint64_t> global_dim;
        std::vector<std::uint64_t> global_strides;  // rank - 1 of them
        std::vector<std::uint32_t> box_dim;
        std::vector<std::uint32_t> element_strides;
        int interleave = 0, swizzle = 0, l2_promotion = 0, oob_fill = 0;
        // cuTensorMapEncodeIm2col's (box_dim empty): the corners innermost first (W, H, D)
        bool im2col = false;
        std::vector<int> lower_corner, upper_corner;
        std::uint32_t channels_per_pixel = 0, pixels_per_column = 0;
    };

    class tensor_map
    {
    public:
        // The documented rules above; argument_value_error / argument_type_error naming the broken one.
        static tensor_map_arguments checked(const tensor_map_request& request);
        // cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col (optional driver entries: cuda_unavailable_error
        // without them) on the current context; the 128 bytes.
        static std::array<std::uint8_t, 128> encode(const tensor_map_request& request);
    };
}
