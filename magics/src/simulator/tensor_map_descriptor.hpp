#pragma once
// A TMA tensor map as the simulator keeps it inside the 128 opaque bytes of a CUtensorMap: what the shim's
// cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col write and what cp.async.bulk.tensor reads back
// (warp_tensor_operations.cpp). The layout is the simulator's own (a GPU's is undocumented); a map made by a
// GPU's driver, or 128 bytes of anything else, is recognised as not one of these (the magic word) and the
// copy stops naming it.
//
// Layout (little-endian): [0] u32 magic 'XTMA'; [4] u8 data type (CUtensorMapDataType's number), [5] rank,
// [6] interleave, [7] swizzle, [8] L2 promotion, [9] OOB fill, [10] im2col; [12] u16 channels per pixel,
// [14] u16 pixels per column; [16] u64 global address; [24] u32 extent - 1 per dimension (5); [48] u64 byte
// strides of dimensions 1..4; [80] u16 box extents (5); [90] u8 element strides (5); [96] i16 lower corners
// (3), [102] i16 upper corners (3). Dimensions innermost first, as the driver takes them.
//
// Stateless, pure C++ (no CUDA header: the enum numbers are the driver's, written out here).

#include <cstdint>
#include <string>

namespace xcuda::sim
{
    struct tensor_map_descriptor
    {
        std::uint8_t data_type = 0;   // CU_TENSOR_MAP_DATA_TYPE_*: UINT8 0 .. TFLOAT32_FTZ 12
        std::uint8_t rank = 0;
        std::uint8_t interleave = 0;  // none, 16B, 32B
        std::uint8_t swizzle = 0;     // none, 32B, 64B, 128B
        std::uint8_t l2_promotion = 0;
        std::uint8_t oob_fill = 0;    // 0 zeros, 1 NaN (NAN_REQUEST_ZERO_FMA)
        bool im2col = false;
        std::uint64_t address = 0;
        std::uint64_t dims[5] = {};      // elements, innermost first
        std::uint64_t strides[5] = {};   // bytes; strides[0] is the element's size
        std::uint32_t box[5] = {};       // tiled
        std::uint32_t element_strides[5] = {1, 1, 1, 1, 1};
        std::int32_t lower[3] = {}, upper[3] = {};  // im2col: W, H, D
        std::uint32_t channels = 0, pixels = 0;     // im2col

        // Bytes of one element of `data_type` (0: not a type the simulator knows), and whether it is a float.
        static unsigned element_bytes(unsigned data_type);
        static bool floating(unsigned data_type);

        // The driver's documented rules (cuTensorMapEncodeTiled / Im2col): "" when the map is valid, else the
        // rule it breaks, as the description of CUDA_ERROR_INVALID_VALUE.
        std::string check() const;
        void write(std::uint8_t* bytes) const;  // 128 bytes
        // False when the 128 bytes are not a map the simulator wrote.
        static bool read(const std::uint8_t* bytes, tensor_map_descriptor& out);
    };
}
