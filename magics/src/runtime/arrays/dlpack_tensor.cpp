#include "dlpack_tensor.hpp"

#include "device_buffer.hpp"
#include "device_session.hpp"
#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        // What an exported tensor keeps alive.
        struct export_context
        {
            std::shared_ptr<device_buffer> buffer;
            std::vector<std::int64_t> shape;
            std::vector<std::int64_t> strides;
            DLManagedTensor tensor{};
        };

        void delete_export(DLManagedTensor* tensor)
        {
            delete static_cast<export_context*>(tensor->manager_ctx);
        }
    }

    DLDataType dlpack_tensor::type_of_numpy(char kind, std::size_t itemsize, const std::string& dtype_name)
    {
        DLDataType type{0, static_cast<std::uint8_t>(itemsize * 8), 1};
        switch (kind)
        {
        case 'i': type.code = 0; break;
        case 'u': type.code = 1; break;
        case 'f': type.code = 2; break;
        case 'c': type.code = 5; break;
        case 'b': type.code = 6; break;
        default: throw export_error("DLPack cannot describe dtype " + dtype_name);
        }
        return type;
    }

    scalar_kind dlpack_tensor::kind_of(const DLDataType& type) noexcept
    {
        if (type.lanes != 1)
        {
            return scalar_kind::unknown;
        }
        switch (type.code)
        {
        case 0: return type.bits == 8 ? scalar_kind::i8 : type.bits == 16 ? scalar_kind::i16
                     : type.bits == 32 ? scalar_kind::i32 : type.bits == 64 ? scalar_kind::i64 : scalar_kind::unknown;
        case 1: return type.bits == 8 ? scalar_kind::u8 : type.bits == 16 ? scalar_kind::u16
                     : type.bits == 32 ? scalar_kind::u32 : type.bits == 64 ? scalar_kind::u64 : scalar_kind::unknown;
        case 2: return type.bits == 16 ? scalar_kind::f16 : type.bits == 32 ? scalar_kind::f32
                     : type.bits == 64 ? scalar_kind::f64 : scalar_kind::unknown;
        case 4: return type.bits == 16 ? scalar_kind::bf16 : scalar_kind::unknown;
        case 6: return type.bits == 8 ? scalar_kind::boolean : scalar_kind::unknown;
        default: return scalar_kind::unknown;
        }
    }

    void dlpack_tensor::check_export(int device, bool copy, bool has_wanted, int wanted_type, int wanted_id)
    {
        if (copy)
        {
            throw export_error("DeviceArray.__dlpack__ shares memory; copy=True is not supported "
                               "(make a copy first with xcuda.to_device(array))");
        }
        if (has_wanted && (wanted_type != kDLCUDA || wanted_id != device))
        {
            throw export_error("DeviceArray lives on CUDA device " + std::to_string(device) +
                               "; it cannot be exported to device (" + std::to_string(wanted_type) + ", " +
                               std::to_string(wanted_id) + ")");
        }
    }

    void dlpack_tensor::order_for_consumer(device_session& session, long long handle)
    {
        if (handle != -1 && handle != 0 && handle != 1)
        {
            // Without blocking the host (DLPack's and CUDA Array Interface's stream contract).
            session.waits().order_before(handle == 2 ? CU_STREAM_PER_THREAD : reinterpret_cast<CUstream>(handle));
        }
    }

    DLManagedTensor* dlpack_tensor::export_buffer(std::shared_ptr<device_buffer> buffer, std::uint64_t data,
                                                  int device, const std::vector<std::int64_t>& shape, DLDataType type)
    {
        auto* context = new export_context();
        context->buffer = std::move(buffer);
        context->shape = shape;
        context->strides.resize(shape.size());
        std::int64_t stride = 1;
        for (std::size_t d = shape.size(); d-- > 0;)
        {
            context->strides[d] = stride;
            stride *= shape[d];
        }
        DLTensor& t = context->tensor.dl_tensor;
        t.data = reinterpret_cast<void*>(data);
        t.device = DLDevice{kDLCUDA, device};
        t.ndim = static_cast<std::int32_t>(shape.size());
        t.dtype = type;
        t.shape = context->shape.data();
        t.strides = context->strides.data();
        t.byte_offset = 0;
        context->tensor.manager_ctx = context;
        context->tensor.deleter = &delete_export;
        return &context->tensor;
    }

    void dlpack_tensor::check_import_device(int device_type, const std::string& what)
    {
        if (device_type != kDLCUDA && device_type != kDLCUDAManaged)
        {
            throw argument_type_error(what + ": the array passed through DLPack is not in CUDA device memory (DLPack "
                                      "device type " + std::to_string(device_type) + "); move it to the GPU first");
        }
    }

    dlpack_tensor::extent dlpack_tensor::device_memory(const DLTensor& t, scalar_kind wanted, const std::string& what)
    {
        scalar_kind kind = kind_of(t.dtype);
        if (wanted != scalar_kind::unknown && kind != wanted)
        {
            throw argument_type_error(what + " needs " + scalar_kind_name(wanted) + " elements, got a DLPack array of " +
                                      scalar_kind_name(kind) + " (code " + std::to_string(t.dtype.code) + ", " +
                                      std::to_string(t.dtype.bits) + " bits)");
        }
        std::int64_t expected = 1;
        std::size_t elements = 1;
        for (int d = t.ndim; d-- > 0;)
        {
            if (t.strides && t.shape[d] > 1 && t.strides[d] != expected)
            {
                throw argument_value_error(what + ": the DLPack array is not C-contiguous; a kernel gets a plain "
                                           "pointer, so pass a contiguous copy");
            }
            expected *= t.shape[d];
            elements *= static_cast<std::size_t>(t.shape[d]);
        }
        return {reinterpret_cast<std::uint64_t>(t.data) + t.byte_offset,
                elements * (t.dtype.bits / 8u) * t.dtype.lanes};
    }
}
