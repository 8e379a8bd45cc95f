// Kernel arguments from Python objects, converted through the kernel's parsed C++ signature.
//
// This is the launch hot path. Two passes over the arguments: the first converts scalars and checks
// every pointer argument's type without touching the GPU (so a wrong count or type is a TypeError on
// any machine); the second resolves pointers, which may copy numpy arrays to the device. Exact-type
// checks come first (float, int, DeviceArray) so the common case costs a few comparisons.

#include "py_common.hpp"

#include "constant_expression.hpp"
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

                return t;
            }();
            return types;
        }

        const char* kind_dtype_name(scalar_kind kind)
        {
            return scalar_kind_name(kind);
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
                    throw argument_value_error(block.plan().describe(index) + ": the integer is too large for a float");
                }
                block.store_float(index, as_double);
                return;
            }
            throw argument_value_error(block.plan().describe(index) + ": " +
                                       py::repr(py::handle(integer)).cast<std::string>() +
                                       " does not fit in any 64-bit integer");
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
            std::string hint;
            if (py::isinstance<py::array>(object))
            {
                hint = "; for a single value pass a scalar (array.item() or array[0])";
            }
            else if (Py_TYPE(object) == device_array_type())
            {
                hint = "; this parameter is a value, not a pointer";
            }
            throw argument_type_error(block.plan().describe(index) + " takes a number, got " + type_name(object) + hint);
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
                        throw argument_type_error(block.plan().describe(index) + ": " + str_of(py::handle(object)) +
                                                  " does not make a value of dtype " + str_of(dtype) + " (" +
                                                  e.what() + ")");
                    }
                    block.store_bytes(index, value.data(), static_cast<std::size_t>(value.nbytes()));
                    return;
                }
                std::string expected = dtype.is_none()
                                           ? std::string("a matching structured dtype")
                                           : "dtype " + str_of(dtype) + " (kernel.parameters[" + std::to_string(index) +
                                                 "]['dtype']), or a tuple of its fields";
                throw argument_type_error(block.plan().describe(index) +
                                          " is passed by value as raw bytes: give a numpy scalar or 0-d array of " +
                                          expected + ", or a bytes object of the type's size; got " +
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

        void check_element_kind(const launch_plan& plan, std::size_t index, scalar_kind have, const py::handle& dtype,
                                const char* what)
        {
            const parameter_slot& slot = plan.slots()[index];
            if (slot.kind == scalar_kind::unknown || slot.kind == have)
            {
                return;
            }
            throw argument_type_error(plan.describe(index) + " needs " + kind_dtype_name(slot.kind) +
                                      " elements, got " + what + " of " + str_of(dtype) +
                                      "; convert it first, for example with .astype(numpy." +
                                      kind_dtype_name(slot.kind) + ")");
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
                check_element_kind(plan, index, kind_of_dtype(transfer.array.dtype()), transfer.array.dtype(),
                                   (std::string("xcuda.") + transfer.kind + " of a numpy array").c_str());
                if (transfer.copy_out && plan.slots()[index].is_const)
                {
                    throw argument_value_error(plan.describe(index) + " is const: the kernel cannot write it, so "
                                               "xcuda." + transfer.kind + " would copy back nothing; use xcuda.In");
                }
                return;
            }
            if (py::isinstance<py::array>(object))
            {
                py::array array = py::reinterpret_borrow<py::array>(object);
                check_element_kind(plan, index, kind_of_dtype(array.dtype()), array.dtype(), "a numpy array");
                if (!plan.slots()[index].is_const && !array.writeable())
                {
                    throw argument_value_error(plan.describe(index) +
                                               " is written by the kernel, but the numpy array passed is read-only");
                }
                return;
            }
            if (PyObject_HasAttrString(object, "__cuda_array_interface__") || has_dlpack(object))
            {
                return;  // checked in pass 2, where the interface is read once
            }
            if (PyLong_Check(object) || PyIndex_Check(object))
            {
                throw argument_type_error(plan.describe(index) + " takes a device array, and an int is not taken for "
                                          "an address by accident; if " + str_of(py::handle(object)) +
                                          " is a device address, say so: xcuda.Pointer(" + str_of(py::handle(object)) +
                                          ")");
            }
            throw argument_type_error(plan.describe(index) +
                                      " takes a device array (xcuda.DeviceArray, or any object with "
                                      "__cuda_array_interface__ or __dlpack__, such as a CuPy array or a PyTorch CUDA "
                                      "tensor), a numpy array (copied to the device for the launch) or None; got " +
                                      type_name(object));
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
            std::shared_ptr<host_memory_owner> owner = call.for_replay() ? nullptr : memory_owner(host, original);
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
            check_element_kind(plan, index, kind_of_dtype(dtype), dtype, "an array (__cuda_array_interface__)");
            py::tuple shape = interface["shape"];
            std::size_t elements = 1;
            for (auto extent : shape)
            {
                elements *= extent.cast<std::size_t>();
            }
            if (interface.contains("strides") && !interface["strides"].is_none())
            {
                py::tuple strides = interface["strides"];
                std::size_t expected = static_cast<std::size_t>(dtype.itemsize());
                for (std::size_t d = shape.size(); d-- > 0;)
                {
                    std::size_t extent = shape[d].cast<std::size_t>();
                    if (extent > 1 && strides[d].cast<long long>() != static_cast<long long>(expected))
                    {
                        throw argument_value_error(plan.describe(index) +
                                                   ": the array is not C-contiguous (strides " +
                                                   str_of(strides) +
                                                   "); a kernel gets a plain pointer, so pass a contiguous copy");
                    }
                    expected *= extent;
                }
            }
            py::tuple data = interface["data"];
            if (data[1].cast<bool>() && !plan.slots()[index].is_const)
            {
                throw argument_value_error(plan.describe(index) +
                                           " is written by the kernel, but the array passed is read-only");
            }
            // v3: work on the producer's stream must finish before the consumer's uses the data.
            if (interface.contains("stream") && !interface["stream"].is_none())
            {
                auto producer = reinterpret_cast<CUstream>(interface["stream"].cast<std::uintptr_t>());
                if (producer != call.stream() && producer != reinterpret_cast<CUstream>(1) &&
                    producer != reinterpret_cast<CUstream>(2))
                {
                    refuse_while_capturing(plan.describe(index) + ", an array whose producer works on another stream",
                                           "its use would wait for that stream now; synchronize the producer before "
                                           "the `with xcuda.graph()` block");
                    call.wait_for(producer);
                }
            }
            call.pass_device_memory(index, data[0].cast<std::uint64_t>(),
                                    elements * static_cast<std::size_t>(dtype.itemsize()));
        }
    }

    [[noreturn]] void throw_device_mismatch(const cuda_kernel& kernel, std::size_t index, int owner, int current)
    {
        std::string o = std::to_string(owner);
        std::string c = std::to_string(current);
        throw device_mismatch_error(kernel.plan().describe(index) + " of kernel '" + kernel.signature().name +
                                    "' lives on device " + o + ", but the launch is on device " + c +
                                    " (the current device). Copy it over with xcuda.copy(xcuda.empty_like(arr), "
                                    "arr) made under `with xcuda.device(" + c + "):`, launch inside `with "
                                    "xcuda.device(" + o + "):`, or let device " + c + " read device " + o +
                                    "'s memory with xcuda.enable_peer_access(" + c + ", " + o + ")");
    }

    namespace
    {
        // The value of a parameter's default argument, or null when it is not a constant xcuda can read.
        py::object default_value(const kernel_parameter& parameter)
        {
            cxx::constant_value v = cxx::evaluate_constant(parameter.default_value);
            using type = cxx::constant_value::type;
            if (parameter.is_pointer)
            {
                bool null = v.kind == type::null_pointer || (v.kind == type::integer && v.value == 0);
                return null ? py::object(py::none()) : py::object();
            }
            switch (v.kind)
            {
            case type::integer:
                return v.is_unsigned ? py::object(py::int_(static_cast<unsigned long long>(v.value)))
                                     : py::object(py::int_(v.value));
            case type::floating: return py::float_(v.real);
            case type::boolean: return py::bool_(v.value != 0);
            default: return py::object();
            }
        }

        std::string names_of(const std::vector<std::string>& names)
        {
            std::string text;
            for (std::size_t i = 0; i < names.size(); ++i)
            {
                text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
            }
            return text;
        }
    }

    void complete_arguments(const cuda_kernel& kernel, PyObject* const* args, std::size_t nargs, PyObject* kwnames,
                            completed_arguments& out)
    {
        const kernel_signature& signature = kernel.signature();
        const std::vector<kernel_parameter>& parameters = signature.parameters;
        std::size_t keywords = kwnames ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
        if (signature.is_template() || nargs > parameters.size())
        {
            if (keywords != 0 && signature.is_template())
            {
                kernel.refuse_if_template();
            }
            out.pointers.assign(args, args + nargs);  // bind_arguments says what is wrong
            return;
        }
        out.pointers.assign(parameters.size(), nullptr);
        std::copy(args, args + nargs, out.pointers.begin());
        for (std::size_t k = 0; k < keywords; ++k)
        {
            const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k)));
            if (name == nullptr)
            {
                throw py::error_already_set();
            }
            std::size_t index = 0;
            while (index < parameters.size() && parameters[index].name != name)
            {
                ++index;
            }
            if (index == parameters.size())
            {
                std::vector<std::string> known;
                for (const auto& p : parameters)
                {
                    if (!p.name.empty())
                    {
                        known.push_back("'" + p.name + "'");
                    }
                }
                throw argument_type_error("kernel " + signature.to_string() + " has no parameter named '" + name +
                                          "'" + (known.empty() ? std::string() : "; its parameters are " + names_of(known)));
            }
            if (out.pointers[index] != nullptr)
            {
                throw argument_type_error("kernel " + signature.to_string() + " got parameter " +
                                          std::to_string(index) + " '" + name + "' twice: by position and by name");
            }
            out.pointers[index] = args[nargs + k];
        }
        std::vector<std::string> missing;
        for (std::size_t i = 0; i < parameters.size(); ++i)
        {
            if (out.pointers[i] != nullptr)
            {
                continue;
            }
            const kernel_parameter& parameter = parameters[i];
            std::string label = parameter.name.empty() ? "parameter " + std::to_string(i) : "'" + parameter.name + "'";
            if (parameter.default_value.empty())
            {
                missing.push_back(label);
                continue;
            }
            py::object value = default_value(parameter);
            if (!value)
            {
                throw argument_type_error("kernel " + signature.to_string() + ": " + label + " defaults to '" +
                                          parameter.default_value + "', which is not a constant xcuda can "
                                          "evaluate; pass it");
            }
            out.pointers[i] = value.ptr();
            out.owned.push_back(std::move(value));
        }
        if (!missing.empty())
        {
            std::size_t given = nargs + keywords;
            throw argument_type_error("kernel " + signature.to_string() + " takes " + std::to_string(parameters.size()) +
                                      " argument" + (parameters.size() == 1 ? "" : "s") + ", got " +
                                      std::to_string(given) + ": " + names_of(missing) + (missing.size() == 1 ? " has" : " have") +
                                      " no default argument");
        }
    }

    void bind_arguments(launch_call& call, PyObject* const* args, std::size_t nargs, call_objects& objects)
    {
        const cuda_kernel& kernel = call.kernel();
        const launch_plan& plan = call.plan();
        argument_block& block = call.arguments();
        const std::vector<parameter_slot>& slots = plan.slots();
        kernel.refuse_if_template();
        if (nargs != slots.size())
        {
            throw argument_type_error("kernel " + kernel.signature().to_string() + " takes " +
                                      std::to_string(slots.size()) + " argument" + (slots.size() == 1 ? "" : "s") +
                                      ", got " + std::to_string(nargs));
        }
        // Pass 1: scalars, and the type of every pointer argument. Device arrays (the common case) are
        // complete here.
        bool needs_second_pass = false;
        cuda_session& session = process_session();
        const int current_device = session.device_ordinal();
        PyTypeObject* array_type = device_array_type();
        for (std::size_t i = 0; i < nargs; ++i)
        {
            PyObject* object = args[i];
            switch (slots[i].cls)
            {
            case parameter_class::scalar: convert_scalar(block, i, object); break;
            case parameter_class::opaque: convert_opaque(block, i, object, kernel.signature().parameters[i]); break;
            case parameter_class::pointer:
                if (Py_TYPE(object) == array_type)
                {
                    const device_array& array = unchecked_instance<device_array>(object);
                    if (array.kind != slots[i].kind)
                    {
                        check_element_kind(plan, i, array.kind, array.dtype, "a DeviceArray");
                    }
                    int owner = array.buffer->device();
                    if (owner != current_device && !session.peer_enabled(current_device, owner))
                    {
                        throw_device_mismatch(kernel, i, owner, current_device);
                    }
                    call.pass_device_memory(i, array.size() ? array.pointer() : 0, array.nbytes());
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
            if (slots[i].cls != parameter_class::pointer || Py_TYPE(object) == array_type || object == Py_None)
            {
                continue;
            }
            if (Py_TYPE(object) == g_transfer_type)
            {
                const host_transfer& transfer = unchecked_instance<host_transfer>(object);
                if (!call.for_replay())
                {
                    refuse_host_argument(plan.describe(i), std::string("xcuda.") + transfer.kind + " of a numpy array");
                }
                bind_numpy(call, i, transfer.array.ptr(), transfer.copy_in, transfer.copy_out, objects);
            }
            else if (py::isinstance<py::array>(object))
            {
                if (!call.for_replay())
                {
                    refuse_host_argument(plan.describe(i), "a numpy array");
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
                refuse_host_argument(plan.describe(i), "an array with only __dlpack__ (its import waits for the "
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
                if (!py::isinstance<py::array>(object))
                {
                    throw py::type_error(std::string("xcuda.") + kind +
                                         " needs a numpy array to copy the result into, got " +
                                         type_name(object));
                }
                transfer.array = py::reinterpret_borrow<py::array>(object);
                if (!transfer.array.writeable())
                {
                    throw py::value_error(std::string("xcuda.") + kind + " needs a writeable array");
                }
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
