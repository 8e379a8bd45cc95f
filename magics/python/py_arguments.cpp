// Kernel arguments from Python objects, converted through the kernel's parsed C++ signature.
//
// This is the launch hot path. Two passes over the arguments: the first converts scalars and checks
// every pointer argument's type without touching the GPU (so a wrong count or type is a TypeError on
// any machine); the second resolves pointers, which may copy numpy arrays to the device. Exact-type
// checks come first (float, int, DeviceArray) so the common case costs a few comparisons. Which
// parameter an argument goes to, the checks that need no Python and every message are the core's
// (runtime/argument_completion, runtime/argument_problems); this file reads the Python objects.

#include "py_common.hpp"

#include "argument_completion.hpp"
#include "argument_problems.hpp"
#include "cuda_session.hpp"
#include "errors.hpp"
#include "launch_call.hpp"

namespace xcuda::python
{
    namespace
    {
        // xcuda.In / Out / InOut: a numpy array with the copies it needs around a launch spelled out
        // (as in PyCUDA). By default a numpy array for T* is copied in and out, for const T* only in.
        struct host_transfer
        {
            py::array array;
            bool copy_in = true;
            bool copy_out = true;
            const char* kind = "InOut";
        };

        PyTypeObject* g_transfer_type = nullptr;

        struct numpy_types
        {
            PyObject* bool_type = nullptr;
            PyObject* floating = nullptr;
            PyObject* integer = nullptr;
            PyObject* generic = nullptr;  // numpy.generic: ml_dtypes' scalars are its subclasses
            // numpy's float32 and float64 scalar types: a launch's common numpy scalars, told by their exact type.
            PyTypeObject* float32 = nullptr;
            PyTypeObject* float64 = nullptr;
        };

        const numpy_types& numpy()
        {
            static numpy_types types = [] {
                py::module_ np = py::module_::import("numpy");
                numpy_types t;
                // Leaked on purpose: module-lifetime references to numpy's type objects.
                t.bool_type = py::object(np.attr("bool_")).release().ptr();
                t.floating = py::object(np.attr("floating")).release().ptr();
                t.integer = py::object(np.attr("integer")).release().ptr();
                t.generic = py::object(np.attr("generic")).release().ptr();
                t.float32 = reinterpret_cast<PyTypeObject*>(py::object(np.attr("float32")).release().ptr());
                t.float64 = reinterpret_cast<PyTypeObject*>(py::object(np.attr("float64")).release().ptr());

                return t;
            }();
            return types;
        }

        void store_python_int(argument_block& block, std::size_t index, PyObject* integer)
        {
            int overflow = 0;
            long long value = PyLong_AsLongLongAndOverflow(integer, &overflow);
            if (value == -1 && PyErr_Occurred())
            {
                throw py::error_already_set();
            }
            if (!overflow)
            {
                block.store_signed(index, value);
                return;
            }
            if (overflow > 0)
            {
                unsigned long long big = PyLong_AsUnsignedLongLong(integer);
                if (!(big == static_cast<unsigned long long>(-1) && PyErr_Occurred()))
                {
                    block.store_unsigned(index, big);
                    return;
                }
                PyErr_Clear();
            }
            const parameter_slot& slot = block.plan().slots()[index];
            if (slot.kind == scalar_kind::f32 || slot.kind == scalar_kind::f64 || slot.kind == scalar_kind::f16 ||
                slot.kind == scalar_kind::bf16)
            {
                double as_double = PyLong_AsDouble(integer);
                if (as_double == -1.0 && PyErr_Occurred())
                {
                    PyErr_Clear();
                    argument_problems::integer_too_large_for_float(block.plan(), index);
                }
                block.store_float(index, as_double);
                return;
            }
            argument_problems::integer_too_large(block.plan(), index, py::repr(py::handle(integer)).cast<std::string>());
        }

        void convert_scalar(argument_block& block, std::size_t index, PyObject* object)
        {
            if (PyFloat_CheckExact(object))
            {
                block.store_float(index, PyFloat_AS_DOUBLE(object));
                return;
            }
            if (PyBool_Check(object))
            {
                block.store_bool(index, object == Py_True);
                return;
            }
            if (PyLong_CheckExact(object))
            {
                store_python_int(block, index, object);
                return;
            }
            const numpy_types& np = numpy();
            if (Py_TYPE(object) == np.float32 || Py_TYPE(object) == np.float64)
            {
                double value = PyFloat_AsDouble(object);
                if (value == -1.0 && PyErr_Occurred())
                {
                    throw py::error_already_set();
                }
                block.store_float(index, value);
                return;
            }
            if (PyObject_IsInstance(object, np.bool_type) == 1)
            {
                block.store_bool(index, PyObject_IsTrue(object) == 1);
                return;
            }
            if (PyFloat_Check(object) || PyObject_IsInstance(object, np.floating) == 1)
            {
                double value = PyFloat_AsDouble(object);
                if (value == -1.0 && PyErr_Occurred())
                {
                    throw py::error_already_set();
                }
                block.store_float(index, value);
                return;
            }
            if (PyLong_Check(object) || PyObject_IsInstance(object, np.integer) == 1 ||
                (PyIndex_Check(object) && !py::isinstance<py::array>(object)))
            {
                py::object integer = py::reinterpret_steal<py::object>(PyNumber_Index(object));
                if (!integer)
                {
                    throw py::error_already_set();
                }
                store_python_int(block, index, integer.ptr());
                return;
            }
            if (PyObject_IsInstance(object, np.generic) == 1 && Py_TYPE(object)->tp_as_number &&
                Py_TYPE(object)->tp_as_number->nb_float)
            {
                // A numpy scalar of a user dtype that is a number: ml_dtypes' bfloat16, float8_e4m3fn, ...
                double value = PyFloat_AsDouble(object);
                if (value == -1.0 && PyErr_Occurred())
                {
                    throw py::error_already_set();
                }
                block.store_float(index, value);
                return;
            }
            using hint = argument_problems::not_number_hint;
            argument_problems::not_a_number(block.plan(), index, type_name(object),
                                            py::isinstance<py::array>(object)       ? hint::array
                                            : Py_TYPE(object) == device_array_type() ? hint::device_array
                                                                                     : hint::none);
        }

        void convert_opaque(argument_block& block, std::size_t index, PyObject* object, const kernel_parameter& parameter)
        {
            Py_buffer view;
            if (PyObject_GetBuffer(object, &view, PyBUF_C_CONTIGUOUS) != 0)
            {
                PyErr_Clear();
                py::object dtype = dtype_of_parameter(parameter);
                if (!dtype.is_none() && (PyTuple_Check(object) || PyList_Check(object)))
                {
                    // float4 from (1, 2, 3, 4), a struct from a tuple of its fields: numpy packs it.
                    py::array value;
                    try
                    {
                        value = py::module_::import("numpy").attr("array")(py::handle(object), dtype);
                    }
                    catch (py::error_already_set& e)
                    {
                        argument_problems::value_not_packed(block.plan(), index, str_of(py::handle(object)),
                                                            str_of(dtype), e.what());
                    }
                    block.store_bytes(index, value.data(), static_cast<std::size_t>(value.nbytes()));
                    return;
                }
                argument_problems::value_without_bytes(block.plan(), index, dtype.is_none() ? "" : str_of(dtype),
                                                       type_name(object));
            }
            try
            {
                block.store_bytes(index, view.buf, static_cast<std::size_t>(view.len));
            }
            catch (...)
            {
                PyBuffer_Release(&view);
                throw;
            }
            PyBuffer_Release(&view);
        }

        // A texture or surface parameter: an xcuda.Texture / xcuda.Surface of the parameter's kind, or the integer
        // handle itself (a cudaTextureObject_t is an unsigned long long by definition), range-checked as one.
        void convert_handle(argument_block& block, std::size_t index, PyObject* object, const kernel_parameter& parameter)
        {
            std::uint64_t handle = 0;
            const char* given = "";
            if (object_handle(object, handle, given))
            {
                if (parameter.handle_object != given)
                {
                    argument_problems::wrong_handle_object(block.plan(), index, given, parameter.handle_object);
                }
                block.store_unsigned(index, handle);
                return;
            }
            if (PyBool_Check(object) || !(PyLong_Check(object) || PyObject_IsInstance(object, numpy().integer) == 1))
            {
                argument_problems::not_a_handle(block.plan(), index, type_name(object), parameter.handle_object);
            }
            convert_scalar(block, index, object);
        }

        // Elements of kind `have` for pointer parameter `index`; a packed pair's pointer (__half2*) also takes
        // its element with an even last extent (last_extent: -1 for a 0-d array).
        void check_element_kind(const launch_plan& plan, std::size_t index, scalar_kind have, const py::handle& dtype,
                                const char* what, long long last_extent)
        {
            if (!argument_problems::element_kind_fits(plan, index, have) &&
                !argument_problems::pairs_fit(plan, index, have, last_extent))
            {
                argument_problems::wrong_element_kind(plan, index, str_of(dtype), what, ml_dtypes_missing());
            }
        }

        // The same for an array of `dtype`, its kind read only when the parameter's element type is known (a
        // struct pointer takes any array, and reading a structured dtype's kind costs attribute lookups).
        void check_element_dtype(const launch_plan& plan, std::size_t index, const py::dtype& dtype, const char* what,
                                 long long last_extent)
        {
            if (plan.kinds()[index].kind != scalar_kind::unknown)
            {
                check_element_kind(plan, index, kind_of_dtype(dtype), dtype, what, last_extent);
            }
        }

        long long last_extent(const py::array& array)
        {
            return array.ndim() == 0 ? -1 : static_cast<long long>(array.shape(array.ndim() - 1));
        }

        // Pass 1 for a pointer argument other than a DeviceArray or None: is this a type we can pass,
        // with the right element type?
        void check_pointer(const launch_plan& plan, std::size_t index, PyObject* object)
        {
            std::uint64_t address = 0;
            std::size_t nbytes = 0;
            if (pointer_address(object, address, nbytes))
            {
                return;  // an explicit address: nothing to check
            }
            if (Py_TYPE(object) == g_transfer_type)
            {
                const host_transfer& transfer = unchecked_instance<host_transfer>(object);
                check_element_dtype(plan, index, transfer.array.dtype(),
                                    (std::string("xcuda.") + transfer.kind + " of a numpy array").c_str(),
                                    last_extent(transfer.array));
                argument_problems::check_copy_out(plan, index, transfer.copy_out, transfer.kind);
                return;
            }
            if (py::isinstance<py::array>(object))
            {
                py::array array = py::reinterpret_borrow<py::array>(object);
                check_element_dtype(plan, index, array.dtype(), "a numpy array", last_extent(array));
                argument_problems::check_writable(plan, index, !array.writeable(), "numpy array");
                return;
            }
            if (PyObject_HasAttrString(object, "__cuda_array_interface__") || has_dlpack(object))
            {
                return;  // checked in pass 2, where the interface is read once
            }
            if (PyLong_Check(object) || PyIndex_Check(object))
            {
                argument_problems::int_for_pointer(plan, index, str_of(py::handle(object)));
            }
            argument_problems::not_a_pointer(plan, index, type_name(object));
        }

        // A numpy array for pointer parameter `index`: its contiguous form (the array itself when it already
        // is) goes to the call, which copies it to a device buffer of its own; objects keeps it alive until
        // the call has run, and notes the user's array when the kernel's output must be written back to it.
        void bind_numpy(launch_call& call, std::size_t index, PyObject* object, bool copy_in, bool copy_out,
                        call_objects& objects)
        {
            py::array original = py::reinterpret_borrow<py::array>(object);
            py::array host = py::module_::import("numpy").attr("ascontiguousarray")(original);
            auto bytes = static_cast<std::size_t>(host.nbytes());
            std::shared_ptr<host_memory_owner> owner = call.for_replay() ? nullptr : memory_owner(call.kernel().module()->session(), host, original);
            // A const T* parameter's array may be read-only: the call never writes it (copy_out is false).
            void* data = const_cast<void*>(host.data());
            std::string label = call.for_replay() ? std::string()
                                                  : "copy of the numpy argument for " + call.plan().describe(index);
            call.pass_host_array(index, data, bytes, copy_in, copy_out, std::move(owner), std::move(label));
            if (copy_out && !host.is(original))
            {
                objects.write_back.emplace_back(original, host);
            }
            objects.hosts.push_back(std::move(host));
        }

        void bind_cuda_array_interface(launch_call& call, std::size_t index, PyObject* object)
        {
            const launch_plan& plan = call.plan();
            py::dict interface = py::handle(object).attr("__cuda_array_interface__");
            py::dtype dtype = py::dtype::from_args(interface["typestr"]);
            py::tuple shape = interface["shape"];
            check_element_dtype(plan, index, dtype, "an array (__cuda_array_interface__)",
                                shape.size() == 0 ? -1 : shape[shape.size() - 1].cast<long long>());
            std::size_t dimensions = argument_problems::check_dimensions(plan, index, shape.size());
            std::size_t extents[argument_problems::max_dimensions];
            std::size_t elements = 1;
            for (std::size_t d = 0; d < dimensions; ++d)
            {
                elements *= extents[d] = shape[d].cast<std::size_t>();
            }
            if (interface.contains("strides") && !interface["strides"].is_none())
            {
                py::tuple strides = interface["strides"];
                long long steps[argument_problems::max_dimensions];
                for (std::size_t d = 0; d < dimensions; ++d)
                {
                    steps[d] = strides[d].cast<long long>();
                }
                argument_problems::check_c_contiguous(plan, index, extents, steps, dimensions,
                                                      static_cast<std::size_t>(dtype.itemsize()), str_of(strides));
            }
            py::tuple data = interface["data"];
            argument_problems::check_writable(plan, index, data[1].cast<bool>(), "array");
            // v3: work on the producer's stream must finish before the consumer's uses the data.
            if (interface.contains("stream") && !interface["stream"].is_none())
            {
                auto producer = reinterpret_cast<CUstream>(interface["stream"].cast<std::uintptr_t>());
                if (producer != call.stream() && producer != reinterpret_cast<CUstream>(1) &&
                    producer != reinterpret_cast<CUstream>(2))
                {
                    refuse_while_capturing(call.kernel().module()->session(),
                                           plan.describe(index) + ", an array whose producer works on another stream",
                                           "its use would wait for that stream now; synchronize the producer before "
                                           "the `with xcuda.graph()` block");
                    call.wait_for(producer);
                }
            }
            call.pass_device_memory(index, data[0].cast<std::uint64_t>(),
                                    elements * static_cast<std::size_t>(dtype.itemsize()));
        }
    }

    namespace
    {
        // A default argument (argument_completion) as the Python object a caller would have passed.
        py::object python_default(const argument_completion::default_argument& value)
        {
            using type = argument_completion::default_argument::type;
            switch (value.kind)
            {
            case type::null_pointer: return py::none();
            case type::unsigned_integer: return py::int_(static_cast<unsigned long long>(value.integer));
            case type::floating: return py::float_(value.real);
            case type::boolean: return py::bool_(value.integer != 0);
            default: return py::int_(value.integer);
            }
        }
    }

    void complete_arguments(const cuda_kernel& kernel, PyObject* const* args, std::size_t nargs, PyObject* kwnames,
                            completed_arguments& out)
    {
        const kernel_signature& signature = kernel.signature();
        std::size_t parameters = signature.parameters.size();
        std::size_t keywords = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
        if (argument_completion::passes_as_given(kernel, nargs, keywords))
        {
            out.pointers.assign(args, args + nargs);  // bind_arguments says what is wrong
            return;
        }
        out.pointers.assign(parameters, nullptr);
        std::copy(args, args + nargs, out.pointers.begin());
        for (std::size_t k = 0; k < keywords; ++k)
        {
            const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k)));
            if (name == nullptr)
            {
                throw py::error_already_set();
            }
            std::size_t index = argument_completion::parameter_named(signature, name);
            if (out.pointers[index] != nullptr)
            {
                argument_completion::given_twice(signature, index, name);
            }
            out.pointers[index] = args[nargs + k];
        }
        if (nargs + keywords < parameters)  // each keyword filled a parameter of its own: some are left
        {
            argument_completion::fill_defaults(
                signature, nargs + keywords, [&](std::size_t i) { return out.pointers[i] != nullptr; },
                [&](std::size_t i, const argument_completion::default_argument& value) {
                    out.owned.push_back(python_default(value));
                    out.pointers[i] = out.owned.back().ptr();
                });
        }
    }

    void bind_arguments(launch_call& call, PyObject* const* args, std::size_t nargs, call_objects& objects)
    {
        const cuda_kernel& kernel = call.kernel();
        const launch_plan& plan = call.plan();
        argument_block& block = call.arguments();
        const std::vector<parameter_slot>& slots = plan.slots();
        const slot_kind* kinds = plan.kinds();
        kernel.refuse_if_template();
        if (nargs != slots.size())
        {
            argument_completion::wrong_count(kernel.signature(), slots.size(), nargs);
        }
        // Pass 1: scalars, and the type of every pointer argument. Device arrays (the common case) are
        // complete here.
        bool needs_second_pass = false;
        const cuda_session& session = kernel.module()->session();
        const int current_device = session.device_ordinal();
        PyTypeObject* array_type = device_array_type();
        for (std::size_t i = 0; i < nargs; ++i)
        {
            PyObject* object = args[i];
            switch (kinds[i].cls)
            {
            case parameter_class::scalar: convert_scalar(block, i, object); break;
            case parameter_class::opaque: convert_opaque(block, i, object, kernel.signature().parameters[i]); break;
            case parameter_class::handle:
                if (call.for_replay())
                {
                    argument_problems::handle_in_replay(plan, i, kernel.signature().parameters[i].handle_object);
                }
                convert_handle(block, i, object, kernel.signature().parameters[i]);
                break;
            case parameter_class::pointer:
                if (Py_TYPE(object) == array_type)
                {
                    const device_array& array = unchecked_instance<device_array>(object);
                    if (array.kind != kinds[i].kind)
                    {
                        check_element_kind(plan, i, array.kind, array.dtype, "a DeviceArray",
                                           array.shape.empty() ? -1 : static_cast<long long>(array.shape.back()));
                    }
                    int owner = array.buffer->device();
                    if (owner != current_device && !session.peer_enabled(current_device, owner))
                    {
                        argument_problems::device_mismatch(kernel, i, owner, current_device);
                    }
                    std::size_t bytes = array.nbytes();
                    call.pass_device_memory(i, bytes ? array.pointer() : 0, bytes);
                }
                else if (object == Py_None)
                {
                    block.store_pointer(i, 0);
                }
                else
                {
                    check_pointer(plan, i, object);
                    needs_second_pass = true;
                }
                break;
            }
        }
        if (!needs_second_pass)
        {
            return;
        }
        // Pass 2: host arrays and the foreign interfaces. Nothing here touches the GPU: the call copies
        // host arrays and waits for producers when it runs.
        for (std::size_t i = 0; i < nargs; ++i)
        {
            PyObject* object = args[i];
            if (kinds[i].cls != parameter_class::pointer || Py_TYPE(object) == array_type || object == Py_None)
            {
                continue;
            }
            if (Py_TYPE(object) == g_transfer_type)
            {
                const host_transfer& transfer = unchecked_instance<host_transfer>(object);
                if (!call.for_replay())
                {
                    refuse_host_argument(call, plan.describe(i), std::string("xcuda.") + transfer.kind + " of a numpy array");
                }
                bind_numpy(call, i, transfer.array.ptr(), transfer.copy_in, transfer.copy_out, objects);
            }
            else if (py::isinstance<py::array>(object))
            {
                if (!call.for_replay())
                {
                    refuse_host_argument(call, plan.describe(i), "a numpy array");
                }
                bind_numpy(call, i, object, true, !slots[i].is_const, objects);
            }
            else if (std::uint64_t address = 0, nbytes = 0; pointer_address(object, address, nbytes))
            {
                call.pass_device_memory(i, address, nbytes);
            }
            else if (PyObject_HasAttrString(object, "__cuda_array_interface__"))
            {
                bind_cuda_array_interface(call, i, object);
            }
            else
            {
                refuse_host_argument(call, plan.describe(i), "an array with only __dlpack__ (its import waits for the "
                                     "producer's stream; give its __cuda_array_interface__ view instead)");
                bind_dlpack(call, i, object);
            }
        }
    }

    void bind_argument_tuple(launch_call& call, py::handle args, call_objects& objects)
    {
        std::vector<PyObject*> given;
        for (auto item : args)
        {
            given.push_back(item.ptr());
        }
        completed_arguments completed;
        complete_arguments(call.kernel(), given.data(), given.size(), nullptr, completed);
        bind_arguments(call, completed.pointers.data(), completed.pointers.size(), objects);
    }

    void write_back(call_objects& objects)
    {
        for (auto& [original, copy] : objects.write_back)
        {
            // The user's array was not contiguous: the kernel worked on a copy; write it back.
            original.attr("__setitem__")(py::ellipsis(), copy);
        }
    }

    void run_call(launch_call& call, call_objects& objects)
    {
        if (call.blocks())
        {
            py::gil_scoped_release release;
            call.run();
        }
        else
        {
            call.run();  // queues the kernel and returns: not worth two GIL switches
        }
        write_back(objects);
    }

    void register_transfers(py::module_& m)
    {
        py::class_<host_transfer> cls(m, "Transfer", "A numpy array marked with the copies a launch makes: see xcuda.In, Out, InOut.");
        cls.def_readonly("array", &host_transfer::array, "The numpy array.")
            .def_property_readonly("copy_in", [](const host_transfer& t) { return t.copy_in; },
                                   "Copied to the device before the launch.")
            .def_property_readonly("copy_out", [](const host_transfer& t) { return t.copy_out; },
                                   "Copied back to the array after the launch.")
            .def("__repr__", [](const host_transfer& t) {
                return std::string("xcuda.") + t.kind + "(<" + str_of(t.array.attr("shape")) + " " +
                       str_of(t.array.dtype()) + ">)";
            });
        g_transfer_type = reinterpret_cast<PyTypeObject*>(cls.ptr());

        auto make = [](py::handle object, bool copy_in, bool copy_out, const char* kind) {
            host_transfer transfer;
            if (copy_out)
            {
                bool is_array = py::isinstance<py::array>(object);
                if (is_array)
                {
                    transfer.array = py::reinterpret_borrow<py::array>(object);
                }
                argument_problems::check_copy_target(kind, is_array, is_array && transfer.array.writeable(),
                                                     type_name(object));
            }
            else
            {
                transfer.array = py::module_::import("numpy").attr("asarray")(object);
            }
            transfer.copy_in = copy_in;
            transfer.copy_out = copy_out;
            transfer.kind = kind;
            return transfer;
        };
        m.def("In", [make](py::handle array) { return make(array, true, false, "In"); }, py::arg("array"),
              "Pass a host array for a launch: copied to the device before it, never copied back.");
        m.def("Out", [make](py::handle array) { return make(array, false, true, "Out"); }, py::arg("array"),
              "Pass a numpy array the kernel only writes: not copied in (the device copy starts uninitialised), "
              "copied back after the launch.");
        m.def("InOut", [make](py::handle array) { return make(array, true, true, "InOut"); }, py::arg("array"),
              "Pass a numpy array copied to the device before the launch and back after it (the default for T*).");
    }
}
