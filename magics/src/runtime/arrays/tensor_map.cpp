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
            if (r.strides.size() != rank || r.box.size() != rank ||
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
                if (r.box[i] == 0 || r.box[i] > 256)
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
        if (rank < (a.interleave ? 3u : 1u) || rank > 5)
        {
            throw argument_value_error("tensor_map: an array of " + n(rank) + " dimensions; TMA takes 1 to 5" +
                                       (a.interleave ? " (3 to 5 when interleaved)" : ""));
        }
        check_shape(r, rank, type.bytes);
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
        std::uint64_t inner = r.box[rank - 1] * type.bytes;
        if (a.interleave == 0 && inner % 16)
        {
            throw argument_value_error("tensor_map: the box's inner row is " + n(inner) + " bytes (box[-1] = " +
                                       n(r.box[rank - 1]) + " x " + n(type.bytes) + "); without interleave it must be a multiple of 16 bytes");
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
            a.box_dim.push_back(static_cast<std::uint32_t>(r.box[i]));
            a.element_strides.push_back(static_cast<std::uint32_t>(r.element_strides.empty() ? 1 : r.element_strides[i]));
            if (k > 0)
            {
                a.global_strides.push_back(static_cast<std::uint64_t>(r.strides[i]));
            }
        }
        return a;
    }

    std::array<std::uint8_t, 128> tensor_map::encode_tiled(const tensor_map_request& request)
    {
        tensor_map_arguments a = checked(request);
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuTensorMapEncodeTiled)
        {
            throw cuda_unavailable_error("xcuda.tensor_map needs cuTensorMapEncodeTiled, which this NVIDIA driver lacks "
                                         "(CUDA 12.0 or newer has it)");
        }
        alignas(64) CUtensorMap map{};
        check(driver.cuTensorMapEncodeTiled(&map, static_cast<CUtensorMapDataType>(a.data_type), a.rank,
                                            reinterpret_cast<void*>(static_cast<std::uintptr_t>(request.address)),
                                            a.global_dim.data(), a.global_strides.data(), a.box_dim.data(),
                                            a.element_strides.data(), static_cast<CUtensorMapInterleave>(a.interleave),
                                            static_cast<CUtensorMapSwizzle>(a.swizzle),
                                            static_cast<CUtensorMapL2promotion>(a.l2_promotion),
                                            static_cast<CUtensorMapFloatOOBfill>(a.oob_fill)),
              "cuTensorMapEncodeTiled");
        std::array<std::uint8_t, 128> bytes{};
        std::memcpy(bytes.data(), &map, sizeof map);
        return bytes;
    }
}
