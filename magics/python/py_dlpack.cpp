// DLPack: DeviceArray exports __dlpack__ / __dlpack_device__ (so torch.from_dlpack(buf),
// cupy.from_dlpack(buf) and jax.dlpack share its memory), and kernel arguments accept any object that
// exports DLPack but no __cuda_array_interface__. The tensors, their checks and bookkeeping are the
// core's (runtime/dlpack_tensor); here they travel in "dltensor" capsules.
//
// Ownership: an exported tensor holds the DeviceArray's device_buffer until the consumer calls its
// deleter. An imported tensor is released by calling its producer's deleter after the launch has
// finished with it.

#include "py_common.hpp"

#include "dlpack_tensor.hpp"

namespace xcuda::python
{
    namespace
    {
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

        // max_version is not read: the unversioned capsule is what every consumer accepts.
        py::object export_dlpack(const device_array& array, py::object stream, py::object /*max_version*/,
                                 py::object dl_device, py::object copy)
        {
            int device = array.buffer->device();
            py::tuple wanted = dl_device.is_none() ? py::tuple() : py::tuple(dl_device);
            dlpack_tensor::check_export(device, !copy.is_none() && copy.cast<bool>(), !dl_device.is_none(),
                                        wanted.empty() ? 0 : wanted[0].cast<int>(),
                                        wanted.empty() ? 0 : wanted[1].cast<int>());
            if (!stream.is_none())
            {
                dlpack_tensor::order_for_consumer(array.buffer->session(), stream.cast<long long>());
            }
            std::uint64_t data = array.size() ? array.pointer() : 0;
            DLDataType type = dlpack_tensor::type_of_numpy(array.dtype.kind(), array.dtype.itemsize(), str_of(array.dtype));
            DLManagedTensor* tensor = dlpack_tensor::export_buffer(
                array.buffer, data, device, std::vector<std::int64_t>(array.shape.begin(), array.shape.end()), type);
            PyObject* capsule = PyCapsule_New(tensor, "dltensor", &capsule_destructor);
            if (!capsule)
            {
                tensor->deleter(tensor);
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
        dlpack_tensor::check_import_device(device[0].cast<int>(), plan.describe(index));
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
        dlpack_tensor::extent memory =
            dlpack_tensor::device_memory(tensor->dl_tensor, plan.slots()[index].kind, plan.describe(index));
        call.pass_device_memory(index, memory.address, memory.bytes);
    }

    void register_dlpack(py::class_<device_array>& cls)
    {
        cls.def("__dlpack__", &export_dlpack, py::kw_only(), py::arg("stream") = py::none(),
                py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
                "DLPack export (zero copy): torch.from_dlpack(buf), cupy.from_dlpack(buf).")
            .def("__dlpack_device__",
                 [](const device_array& array) { return py::make_tuple(dlpack_tensor::kDLCUDA, array.buffer->device()); },
                 "(kDLCUDA, device ordinal).");
    }
}
