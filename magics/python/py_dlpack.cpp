// DLPack: DeviceArray exports __dlpack__ / __dlpack_device__ (so torch.from_dlpack(buf),
// cupy.from_dlpack(buf) and jax.dlpack share its memory), and kernel arguments accept any object that
// exports DLPack but no __cuda_array_interface__.
//
// The structures are DLPack's stable C ABI (v0.8, the unversioned "dltensor" capsule every consumer
// accepts), declared here because no DLPack header ships with the build's dependencies.
//
// Ownership: an exported tensor's manager context holds the DeviceArray's device_buffer (a shared_ptr),
// so the memory lives until the consumer calls the deleter. An imported tensor is released by calling
// its producer's deleter after the launch has finished with it.

#include "py_common.hpp"

#include "cuda_session.hpp"
#include "errors.hpp"

namespace xcuda::python
{
    namespace
    {
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
        constexpr std::int32_t kDLCUDA = 2;
        constexpr std::int32_t kDLCUDAManaged = 13;

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
            delete static_cast<export_context*>(tensor->manager_ctx);  // no Python state: safe without the GIL
        }

        void capsule_destructor(PyObject* capsule)
        {
            // A capsule no consumer took ("dltensor", not renamed "used_dltensor") still owns its tensor.
            if (PyCapsule_IsValid(capsule, "dltensor"))
            {
                auto* tensor = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
                if (tensor && tensor->deleter)
                {
                    tensor->deleter(tensor);
                }
            }
        }

        DLDataType dl_type_of(const py::dtype& dtype)
        {
            DLDataType type{0, static_cast<std::uint8_t>(dtype.itemsize() * 8), 1};
            switch (dtype.kind())
            {
            case 'i': type.code = 0; break;
            case 'u': type.code = 1; break;
            case 'f': type.code = 2; break;
            case 'c': type.code = 5; break;
            case 'b': type.code = 6; break;
            default:
                throw py::buffer_error("DLPack cannot describe dtype " + str_of(dtype));
            }
            return type;
        }

        scalar_kind kind_of_dl_type(const DLDataType& type)
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

        // Orders the session's default stream before `consumer` (DLPack's and CUDA Array Interface's
        // stream contract), without blocking the host.
        void order_before(CUstream consumer)
        {
            process_session().order_before(consumer);
        }

        py::object export_dlpack(const device_array& array, py::object stream, py::object max_version,
                                 py::object dl_device, py::object copy)
        {
            (void)max_version;  // the unversioned capsule is what every consumer accepts
            if (!copy.is_none() && copy.cast<bool>())
            {
                throw py::buffer_error("DeviceArray.__dlpack__ shares memory; copy=True is not supported "
                                       "(make a copy first with xcuda.to_device(array))");
            }
            int device = array.buffer->device();
            if (!dl_device.is_none())
            {
                py::tuple wanted = dl_device;
                if (wanted[0].cast<int>() != kDLCUDA || wanted[1].cast<int>() != device)
                {
                    throw py::buffer_error("DeviceArray lives on CUDA device " + std::to_string(device) +
                                           "; it cannot be exported to device " + str_of(wanted));
                }
            }
            if (!stream.is_none())
            {
                auto handle = stream.cast<long long>();
                // -1: the consumer asks for no synchronisation; 1 and 0: the legacy default stream, which
                // the session's own work is on already.
                if (handle != -1 && handle != 0 && handle != 1)
                {
                    order_before(handle == 2 ? CU_STREAM_PER_THREAD : reinterpret_cast<CUstream>(handle));
                }
            }
            auto* context = new export_context();
            context->buffer = array.buffer;
            std::int64_t stride = 1;
            context->shape.assign(array.shape.begin(), array.shape.end());
            context->strides.resize(array.shape.size());
            for (std::size_t d = array.shape.size(); d-- > 0;)
            {
                context->strides[d] = stride;
                stride *= array.shape[d];
            }
            DLTensor& t = context->tensor.dl_tensor;
            t.data = reinterpret_cast<void*>(array.size() ? array.pointer() : 0);
            t.device = DLDevice{kDLCUDA, device};
            t.ndim = static_cast<std::int32_t>(array.shape.size());
            try
            {
                t.dtype = dl_type_of(array.dtype);
            }
            catch (...)
            {
                delete context;
                throw;
            }
            t.shape = context->shape.data();
            t.strides = context->strides.data();
            t.byte_offset = 0;
            context->tensor.manager_ctx = context;
            context->tensor.deleter = &delete_export;
            PyObject* capsule = PyCapsule_New(&context->tensor, "dltensor", &capsule_destructor);
            if (!capsule)
            {
                delete context;
                throw py::error_already_set();
            }
            return py::reinterpret_steal<py::object>(capsule);
        }
    }

    bool has_dlpack(PyObject* object)
    {
        return PyObject_HasAttrString(object, "__dlpack__") && PyObject_HasAttrString(object, "__dlpack_device__");
    }

    void bind_dlpack(launch_call& call, std::size_t index, PyObject* object)
    {
        const launch_plan& plan = call.plan();
        CUstream stream = call.stream();
        py::handle producer(object);
        py::tuple device = producer.attr("__dlpack_device__")();
        int type = device[0].cast<int>();
        if (type != kDLCUDA && type != kDLCUDAManaged)
        {
            throw argument_type_error(plan.describe(index) + ": the array passed through DLPack is not in CUDA device "
                                      "memory (DLPack device type " + std::to_string(type) + "); move it to the GPU first");
        }
        // Legacy default stream is 1 in DLPack's numbering.
        long long consumer = stream == nullptr ? 1 : static_cast<long long>(reinterpret_cast<std::uintptr_t>(stream));
        py::object capsule = producer.attr("__dlpack__")(py::arg("stream") = consumer);
        auto* tensor = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
        if (!tensor)
        {
            throw py::error_already_set();
        }
        // The tensor is ours now: mark the capsule consumed, and release it after the launch.
        PyCapsule_SetName(capsule.ptr(), "used_dltensor");
        // Released after the launch has completed, possibly on a thread without the GIL (the call runs
        // without it): a producer's deleter drops Python objects.
        call.keep_until_complete(std::shared_ptr<void>(tensor, [](void* pointer) {
            auto* t = static_cast<DLManagedTensor*>(pointer);
            if (t->deleter && Py_IsInitialized())
            {
                py::gil_scoped_acquire gil;
                t->deleter(t);
            }
        }));
        const DLTensor& t = tensor->dl_tensor;
        const parameter_slot& slot = plan.slots()[index];
        scalar_kind kind = kind_of_dl_type(t.dtype);
        if (slot.kind != scalar_kind::unknown && kind != slot.kind)
        {
            throw argument_type_error(plan.describe(index) + " needs " + scalar_kind_name(slot.kind) +
                                      " elements, got a DLPack array of " + scalar_kind_name(kind) +
                                      " (code " + std::to_string(t.dtype.code) + ", " + std::to_string(t.dtype.bits) +
                                      " bits)");
        }
        std::int64_t expected = 1;
        std::size_t elements = 1;
        for (int d = t.ndim; d-- > 0;)
        {
            if (t.strides && t.shape[d] > 1 && t.strides[d] != expected)
            {
                throw argument_value_error(plan.describe(index) + ": the DLPack array is not C-contiguous; a kernel "
                                           "gets a plain pointer, so pass a contiguous copy");
            }
            expected *= t.shape[d];
            elements *= static_cast<std::size_t>(t.shape[d]);
        }
        call.pass_device_memory(index, reinterpret_cast<std::uint64_t>(t.data) + t.byte_offset,
                                elements * (t.dtype.bits / 8u) * t.dtype.lanes);
    }

    void register_dlpack(py::class_<device_array>& cls)
    {
        cls.def("__dlpack__", &export_dlpack, py::kw_only(), py::arg("stream") = py::none(),
                py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
                "DLPack export (zero copy): torch.from_dlpack(buf), cupy.from_dlpack(buf).")
            .def("__dlpack_device__",
                 [](const device_array& array) { return py::make_tuple(kDLCUDA, array.buffer->device()); },
                 "(kDLCUDA, device ordinal).");
    }
}
