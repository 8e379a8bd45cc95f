// libxcuda-sim.so's TMA tensor maps: cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col check the driver's
// documented rules (tensor_map_descriptor::check: CUDA_ERROR_INVALID_VALUE naming the rule broken, as
// cuGetErrorString's description) and write the simulator's descriptor into the 128 opaque bytes, which the
// interpreter's cp.async.bulk.tensor reads back (warp_tensor_operations.cpp). The CUDA enum values are the
// descriptor's numbers. Stateless: nothing is kept (a map is its bytes), so any thread may call them.

#include <cuda.h>

#include <cstdint>

#include "tensor_map_descriptor.hpp"
#include "xcuda_sim_shared.hpp"

using xcuda::sim::tensor_map_descriptor;
using xcuda_sim::failed_with;

namespace
{
    CUresult encoded(CUtensorMap* map, tensor_map_descriptor& d, const char* call)
    {
        if (!map || reinterpret_cast<std::uintptr_t>(map) % 64)
        {
            return failed_with(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": the map's address is not 64-byte aligned");
        }
        std::string broken = d.check();
        if (!broken.empty())
        {
            return failed_with(CUDA_ERROR_INVALID_VALUE, std::string(call) + ": " + broken);
        }
        d.write(reinterpret_cast<std::uint8_t*>(map));
        return CUDA_SUCCESS;
    }

    // The fields both encodings take.
    bool common(tensor_map_descriptor& d, CUtensorMapDataType type, cuuint32_t rank, void* address, const cuuint64_t* dims,
                const cuuint64_t* strides, const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
    {
        if (rank == 0 || rank > 5 || !dims || (rank > 1 && !strides) || !element_strides)
        {
            return false;
        }
        d.data_type = static_cast<std::uint8_t>(type);
        d.rank = static_cast<std::uint8_t>(rank);
        d.interleave = static_cast<std::uint8_t>(interleave);
        d.swizzle = static_cast<std::uint8_t>(swizzle);
        d.l2_promotion = static_cast<std::uint8_t>(l2);
        d.oob_fill = static_cast<std::uint8_t>(oob);
        d.address = reinterpret_cast<std::uintptr_t>(address);
        d.strides[0] = tensor_map_descriptor::element_bytes(d.data_type);
        for (cuuint32_t i = 0; i < rank; ++i)
        {
            d.dims[i] = dims[i];
            d.element_strides[i] = element_strides[i];
            if (i > 0)
            {
                d.strides[i] = strides[i - 1];
            }
        }
        return true;
    }
}

extern "C"
{
    CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                            const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                            const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                            CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
    {
        tensor_map_descriptor d;
        if (!box || !common(d, type, rank, address, dims, strides, element_strides, interleave, swizzle, l2, oob))
        {
            return failed_with(CUDA_ERROR_INVALID_VALUE, "cuTensorMapEncodeTiled: a rank of 1 to 5 and every array");
        }
        for (cuuint32_t i = 0; i < rank; ++i)
        {
            d.box[i] = box[i];
        }
        return encoded(map, d, "cuTensorMapEncodeTiled");
    }

    CUresult CUDAAPI cuTensorMapEncodeIm2col(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                             const cuuint64_t* dims, const cuuint64_t* strides, const int* lower,
                                             const int* upper, cuuint32_t channels, cuuint32_t pixels,
                                             const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                             CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
    {
        tensor_map_descriptor d;
        if (rank < 3 || !lower || !upper ||
            !common(d, type, rank, address, dims, strides, element_strides, interleave, swizzle, l2, oob))
        {
            return failed_with(CUDA_ERROR_INVALID_VALUE, "cuTensorMapEncodeIm2col: a rank of 3 to 5 and every array");
        }
        d.im2col = true;
        d.channels = channels;
        d.pixels = pixels;
        for (cuuint32_t k = 0; k + 2 < rank; ++k)
        {
            d.lower[k] = lower[k];
            d.upper[k] = upper[k];
        }
        return encoded(map, d, "cuTensorMapEncodeIm2col");
    }
}
