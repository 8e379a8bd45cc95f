#pragma once
// DLPack's stable C ABI (v0.8, the unversioned "dltensor" every consumer accepts), declared here because
// no DLPack header ships with the build's dependencies, and what xcuda does with it apart from the Python
// capsule: a device_buffer exported as a tensor (its dtype code, shape and C-contiguous strides), the
// checks of an export request, and a tensor imported as a launch argument (its device, element kind,
// contiguity and extent in bytes).
//
// Ownership: an exported tensor's manager context holds the device_buffer (a shared_ptr), so the memory
// lives until the consumer calls the tensor's deleter (which frees the context; no Python state, so any
// thread may call it). An imported tensor stays its producer's: the caller calls its deleter.
// Threading: none of its own.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "kernel_signature.hpp"

namespace xcuda
{
    class device_session;
    class device_buffer;

    struct DLDevice
    {
        std::int32_t device_type;  // kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13
        std::int32_t device_id;
    };
    struct DLDataType
    {
        std::uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool
        std::uint8_t bits;
        std::uint16_t lanes;
    };
    struct DLTensor
    {
        void* data;
        DLDevice device;
        std::int32_t ndim;
        DLDataType dtype;
        std::int64_t* shape;
        std::int64_t* strides;
        std::uint64_t byte_offset;
    };
    struct DLManagedTensor
    {
        DLTensor dl_tensor;
        void* manager_ctx;
        void (*deleter)(DLManagedTensor* self);
    };

    class dlpack_tensor
    {
    public:
        static constexpr std::int32_t kDLCUDA = 2;
        static constexpr std::int32_t kDLCUDAManaged = 13;

        // The DLPack type of a numpy dtype (kind letter, itemsize); export_error naming dtype_name when
        // DLPack has no code for it.
        static DLDataType type_of_numpy(char kind, std::size_t itemsize, const std::string& dtype_name);
        // The scalar kind of a DLPack type; unknown for vectors (lanes != 1) and codes xcuda has no kind for.
        static scalar_kind kind_of(const DLDataType& type) noexcept;

        // An export request of an array on `device`: copy=True is refused; a requested dl_device
        // (has_wanted: the consumer named one) must be (kDLCUDA, device). Throws export_error.
        static void check_export(int device, bool copy, bool has_wanted, int wanted_type, int wanted_id);
        // The consumer's stream of __dlpack__(stream=handle) ordered after the session's default stream:
        // -1 asks for nothing, 0 and 1 are the legacy default stream (the session's work is there already),
        // 2 the per-thread default stream.
        static void order_for_consumer(device_session& session, long long handle);
        // A tensor viewing `buffer` (address `data`, null for an empty array) as a C-contiguous array of
        // `shape`; its deleter frees it and lets the buffer go.
        static DLManagedTensor* export_buffer(std::shared_ptr<device_buffer> buffer, std::uint64_t data, int device,
                                              const std::vector<std::int64_t>& shape, DLDataType type);

        // An imported tensor's device type must be CUDA (or managed); `what` names the argument.
        static void check_import_device(int device_type, const std::string& what);
        // The device memory a kernel argument gets from an imported tensor: its address (with byte_offset)
        // and bytes. Raises argument_type_error when `wanted` (unknown: any) differs from its element kind,
        // argument_value_error when it is not C-contiguous.
        struct extent
        {
            std::uint64_t address = 0;
            std::size_t bytes = 0;
        };
        static extent device_memory(const DLTensor& tensor, scalar_kind wanted, const std::string& what);
    };
}
