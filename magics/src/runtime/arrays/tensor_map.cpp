#include "tensor_map.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include <cuda.h>

#include "cuda_driver.hpp"
#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        struct data_type
        {
            CUtensorMapDataType value;
            unsigned bytes;
            bool floating;
        };

        const data_type& type_of(const std::string& dtype)
        {
            static const std::map<std::string, data_type> types = {
                {"uint8", {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, false}},     {"int8", {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, false}},
                {"uint16", {CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, false}},   {"int16", {CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, false}},
                {"uint32", {CU_TENSOR_MAP_DATA_TYPE_UINT32, 4, false}},   {"int32", {CU_TENSOR_MAP_DATA_TYPE_INT32, 4, false}},
                {"uint64", {CU_TENSOR_MAP_DATA_TYPE_UINT64, 8, false}},   {"int64", {CU_TENSOR_MAP_DATA_TYPE_INT64, 8, false}},
                {"float16", {CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, true}},  {"float32", {CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, true}},
                {"float64", {CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 8, true}},  {"bfloat16", {CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, true}},
            };
            auto it = types.find(dtype);
            if (it == types.end())
            {
                throw argument_type_error("a tensor map holds uint8/int8, (u)int16, (u)int32, (u)int64, float16, bfloat16, "
                                          "float32 or float64 elements, not " + dtype);
            }
            return it->second;
        }

        int choice(const std::string& what, const std::string& value, const std::vector<std::string>& names)
        {
            auto it = std::find(names.begin(), names.end(), value);
            if (it == names.end())
            {
                std::string known;
                for (const std::string& name : names)
                {
                    known += (known.empty() ? "'" : ", '") + name + "'";
                }
                throw argument_value_error("tensor_map's " + what + "='" + value + "' is not one of " + known);
            }
            return static_cast<int>(it - names.begin());
        }

        std::string n(std::uint64_t value) { return std::to_string(value); }

        void check_shape(const tensor_map_request& r, std::size_t rank, unsigned bytes)
        {
            if (r.strides.size() != rank || (!r.im2col && r.box.size() != rank) ||
                (!r.element_strides.empty() && r.element_strides.size() != rank))
            {
                throw argument_value_error("tensor_map: the array has " + n(rank) + " dimensions; give box (and "
                                           "element_strides) with one value per dimension, outermost first");
            }
            for (std::size_t i = 0; i < rank; ++i)
            {
                if (r.shape[i] == 0 || r.shape[i] > (1ull << 32))
                {
                    throw argument_value_error("tensor_map: dimension " + n(i) + " has " + n(r.shape[i]) +
                                               " elements; TMA takes 1 to 2^32");
                }
                if (!r.im2col && (r.box[i] == 0 || r.box[i] > 256))
                {
                    throw argument_value_error("tensor_map: box[" + n(i) + "] = " + n(r.box[i]) +
                                               "; each box extent is 1 to 256 elements");
                }
                std::uint64_t step = r.element_strides.empty() ? 1 : r.element_strides[i];
                if (step == 0 || step > 8)
                {
                    throw argument_value_error("tensor_map: element_strides[" + n(i) + "] = " + n(step) + "; each is 1 to 8");
                }
            }
            if (r.strides[rank - 1] != static_cast<std::int64_t>(bytes))
            {
                throw argument_value_error("tensor_map: the innermost dimension must be contiguous (stride " + n(bytes) +
                                           " bytes), not " + std::to_string(r.strides[rank - 1]) + ": pass a contiguous array");
            }
        }

        // cuTensorMapEncodeIm2col's rules: rank - 2 corners per side within the rank's range, a bounding box
        // that is not empty in any spatial dimension, channels 1..256 and pixels 1..1024 per copy.
        void check_im2col(const tensor_map_request& r, std::size_t rank)
        {
            if (r.lower_corner.size() != rank - 2 || r.upper_corner.size() != rank - 2)
            {
                throw argument_value_error("tensor_map: an im2col map of " + n(rank) + " dimensions takes " + n(rank - 2) +
                                           " corner offsets per side (the spatial dimensions " +
                                           (rank == 3 ? "W" : rank == 4 ? "H, W" : "D, H, W") + ", outermost first)");
            }
            const std::int64_t limit = rank == 3 ? 32768 : rank == 4 ? 128 : 16;
            for (std::size_t k = 0; k < rank - 2; ++k)
            {
                for (std::int64_t corner : {r.lower_corner[k], r.upper_corner[k]})
                {
                    if (corner < -limit || corner >= limit)
                    {
                        throw argument_value_error("tensor_map: an im2col corner offset of " + std::to_string(corner) +
                                                   "; with " + n(rank) + " dimensions each is " + std::to_string(-limit) +
                                                   " to " + std::to_string(limit - 1));
                    }
                }
                // the box spans lower .. extent - 1 + upper in spatial dimension k (array dimension k + 1)
                if (static_cast<std::int64_t>(r.shape[k + 1]) - 1 + r.upper_corner[k] < r.lower_corner[k])
                {
                    throw argument_value_error("tensor_map: the im2col bounding box is empty in spatial dimension " + n(k) +
                                               " (lower corner " + std::to_string(r.lower_corner[k]) + ", upper corner " +
                                               std::to_string(r.upper_corner[k]) + ", extent " + n(r.shape[k + 1]) + ")");
                }
            }
            if (r.channels_per_pixel == 0 || r.channels_per_pixel > 256)
            {
                throw argument_value_error("tensor_map: channels_per_pixel = " + n(r.channels_per_pixel) + "; it is 1 to 256");
            }
            if (r.pixels_per_column == 0 || r.pixels_per_column > 1024)
            {
                throw argument_value_error("tensor_map: pixels_per_column = " + n(r.pixels_per_column) + "; it is 1 to 1024");
            }
        }
    }

    tensor_map_arguments tensor_map::checked(const tensor_map_request& r)
    {
        const data_type& type = type_of(r.dtype);
        tensor_map_arguments a;
        a.interleave = choice("interleave", r.interleave, {"none", "16B", "32B"});
        a.swizzle = choice("swizzle", r.swizzle, {"none", "32B", "64B", "128B"});
        a.l2_promotion = choice("l2_promotion", r.l2_promotion, {"none", "64B", "128B", "256B"});
        a.oob_fill = choice("oob_fill", r.oob_fill, {"none", "nan"});
        std::size_t rank = r.shape.size();
        if (rank < (a.interleave || r.im2col ? 3u : 1u) || rank > 5)
        {
            throw argument_value_error("tensor_map: an array of " + n(rank) + " dimensions; TMA takes 1 to 5" +
                                       (r.im2col ? " (3 to 5 for im2col)" : a.interleave ? " (3 to 5 when interleaved)" : ""));
        }
        check_shape(r, rank, type.bytes);
        if (r.im2col)
        {
            check_im2col(r, rank);
        }
        unsigned align = a.interleave == 2 ? 32 : 16;
        if (r.address % align)
        {
            throw argument_value_error("tensor_map: the array's address 0x" + [&] {
                char text[32];
                std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(r.address));
                return std::string(text);
            }() + " is not " + n(align) + "-byte aligned; TMA needs it (an offset view d[k:] can break it)");
        }
        for (std::size_t i = 0; i + 1 < rank; ++i)
        {
            if (r.strides[i] <= 0 || r.strides[i] % align || static_cast<std::uint64_t>(r.strides[i]) >= (1ull << 40))
            {
                throw argument_value_error("tensor_map: the stride of dimension " + n(i) + " is " + std::to_string(r.strides[i]) +
                                           " bytes; TMA needs a positive multiple of " + n(align) +
                                           " bytes below 2^40 (pad the rows to a multiple of " + n(align) + " bytes)");
            }
        }
        std::uint64_t inner = (r.im2col ? r.channels_per_pixel : r.box[rank - 1]) * type.bytes;
        if (a.interleave == 0 && inner % 16)
        {
            throw argument_value_error("tensor_map: the box's inner row is " + n(inner) + " bytes (" +
                                       (r.im2col ? "channels_per_pixel = " + n(r.channels_per_pixel)
                                                 : "box[-1] = " + n(r.box[rank - 1])) +
                                       " x " + n(type.bytes) + "); without interleave it must be a multiple of 16 bytes");
        }
        if (a.interleave == 0 && a.swizzle && inner > (16u << a.swizzle))
        {
            throw argument_value_error("tensor_map: the box's inner row is " + n(inner) + " bytes, wider than swizzle='" +
                                       r.swizzle + "' spans (" + n(16u << a.swizzle) + " bytes): narrow the box or choose a wider swizzle");
        }
        if (a.interleave == 2 && a.swizzle != 1)
        {
            throw argument_value_error("tensor_map: interleave='32B' needs swizzle='32B'");
        }
        if (a.oob_fill && !type.floating)
        {
            throw argument_value_error("tensor_map: oob_fill='nan' is for float elements, not " + r.dtype);
        }
        a.data_type = type.value;
        a.rank = static_cast<unsigned>(rank);
        for (std::size_t k = 0; k < rank; ++k)  // the driver's order: innermost first
        {
            std::size_t i = rank - 1 - k;
            a.global_dim.push_back(r.shape[i]);
            if (!r.im2col)
            {
                a.box_dim.push_back(static_cast<std::uint32_t>(r.box[i]));
            }
            a.element_strides.push_back(static_cast<std::uint32_t>(r.element_strides.empty() ? 1 : r.element_strides[i]));
            if (k > 0)
            {
                a.global_strides.push_back(static_cast<std::uint64_t>(r.strides[i]));
            }
        }
        if (r.im2col)
        {
            a.im2col = true;
            a.lower_corner.assign(r.lower_corner.rbegin(), r.lower_corner.rend());
            a.upper_corner.assign(r.upper_corner.rbegin(), r.upper_corner.rend());
            a.channels_per_pixel = static_cast<std::uint32_t>(r.channels_per_pixel);
            a.pixels_per_column = static_cast<std::uint32_t>(r.pixels_per_column);
        }
        return a;
    }

    std::array<std::uint8_t, 128> tensor_map::encode(const tensor_map_request& request)
    {
        tensor_map_arguments a = checked(request);
        const cuda_driver& driver = cuda_driver::get();
        const char* call = a.im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled";
        if (a.im2col ? !driver.cuTensorMapEncodeIm2col : !driver.cuTensorMapEncodeTiled)
        {
            throw cuda_unavailable_error(std::string("xcuda.tensor_map needs ") + call +
                                         ", which this NVIDIA driver lacks (CUDA 12.0 or newer has it)");
        }
        alignas(64) CUtensorMap map{};
        void* address = reinterpret_cast<void*>(static_cast<std::uintptr_t>(request.address));
        auto type = static_cast<CUtensorMapDataType>(a.data_type);
        auto interleave = static_cast<CUtensorMapInterleave>(a.interleave);
        auto swizzle = static_cast<CUtensorMapSwizzle>(a.swizzle);
        auto l2 = static_cast<CUtensorMapL2promotion>(a.l2_promotion);
        auto oob = static_cast<CUtensorMapFloatOOBfill>(a.oob_fill);
        if (a.im2col)
        {
            check(driver.cuTensorMapEncodeIm2col(&map, type, a.rank, address, a.global_dim.data(), a.global_strides.data(),
                                                 a.lower_corner.data(), a.upper_corner.data(), a.channels_per_pixel,
                                                 a.pixels_per_column, a.element_strides.data(), interleave, swizzle, l2, oob),
                  call);
        }
        else
        {
            check(driver.cuTensorMapEncodeTiled(&map, type, a.rank, address, a.global_dim.data(), a.global_strides.data(),
                                                a.box_dim.data(), a.element_strides.data(), interleave, swizzle, l2, oob),
                  call);
        }
        std::array<std::uint8_t, 128> bytes{};
        std::memcpy(bytes.data(), &map, sizeof map);
        return bytes;
    }
}
