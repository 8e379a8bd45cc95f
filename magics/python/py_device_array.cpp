// xcuda.DeviceArray: a typed, C-contiguous array in device memory, and the functions that make one
// (to_device, empty, zeros, empty_like, zeros_like).
//
// It exports __cuda_array_interface__ (v3) so CuPy, PyTorch and Numba can view it without a copy,
// and __array__ so numpy.asarray(buf) copies it to the host. Freed when the last reference goes.

#include "py_common.hpp"

#include <cstring>
#include <numeric>

#include "array_layout.hpp"
#include "cuda_session.hpp"
#include "numpy_dtype.hpp"
#include "pinned_memory.hpp"
#include "errors.hpp"

namespace xcuda::python
{
    std::atomic<std::uint64_t> g_device_arrays_gone{0};

    namespace
    {
        PyTypeObject* g_device_array_type = nullptr;

        std::vector<py::ssize_t> shape_from(py::handle shape)
        {
            std::vector<std::int64_t> result;
            if (PyLong_Check(shape.ptr()) || py::hasattr(shape, "__index__"))
            {
                result.push_back(py::cast<std::int64_t>(py::reinterpret_steal<py::object>(PyNumber_Index(shape.ptr()))));
            }
            else
            {
                for (auto item : py::iter(shape))
                {
                    result.push_back(py::cast<std::int64_t>(item));
                }
            }
            result = array_layout::checked_shape(result);
            return std::vector<py::ssize_t>(result.begin(), result.end());
        }

        array_layout layout_of(const device_array& array)
        {
            return array_layout(std::vector<std::int64_t>(array.shape.begin(), array.shape.end()),
                                static_cast<std::size_t>(array.dtype.itemsize()));
        }

        const py::dtype& plain(const py::dtype& dtype)
        {
            array_layout::check_plain_dtype(dtype.attr("hasobject").cast<bool>(), str_of(dtype));
            return dtype;
        }

        device_array make_array(cuda_session& session, const std::vector<py::ssize_t>& shape, const py::dtype& dtype)
        {
            plain(dtype);
            device_array array;
            array.shape = shape;
            array.dtype = dtype;
            array.kind = kind_of_dtype(dtype);
            array.buffer = device_buffer::allocate(session, array.nbytes());
            return array;
        }

        py::array contiguous(py::handle object, py::object dtype)
        {
            py::module_ numpy = py::module_::import("numpy");
            return numpy.attr("ascontiguousarray")(object, py::arg("dtype") = dtype);
        }

        device_array to_device(cuda_session& session, py::handle object, py::object dtype)
        {
            if (Py_TYPE(object.ptr()) == g_device_array_type && dtype.is_none())
            {
                // A device array already: a device-to-device copy.
                const device_array& source = unchecked_instance<device_array>(object.ptr());
                device_array copy = make_array(session, source.shape, source.dtype);
                if (capture_device_copy(copy, source))
                {
                    return copy;
                }
                // On the current device; from another device through xcuda.copy's peer or staged path.
                device_buffer::copy(*copy.buffer, *source.buffer, copy.nbytes(), "", false);
                return copy;
            }
            refuse_while_capturing(session, graph_refusal::to_device_of_host_data);
            py::array host = contiguous(object, dtype);
            std::vector<py::ssize_t> shape(host.shape(), host.shape() + host.ndim());
            device_array array = make_array(session, shape, host.dtype());
            std::shared_ptr<host_memory_owner> owner = memory_owner(session, host, object);
            py::gil_scoped_release release;
            array.buffer->copy_from_host(host.data(), array.nbytes(), 0, std::move(owner));
            return array;
        }

        // A numpy array whose memory is page-locked: the array owns the pinned_memory through a capsule.
        py::array empty_pinned(cuda_session& session, py::handle shape, py::object dtype_like)
        {
            py::dtype dtype = py::dtype::from_args(dtype_like);
            std::vector<py::ssize_t> extents = shape_from(shape);
            std::size_t bytes = array_layout(std::vector<std::int64_t>(extents.begin(), extents.end()),
                                             static_cast<std::size_t>(dtype.itemsize())).nbytes();
            auto* owner = new std::shared_ptr<pinned_memory>(pinned_memory::allocate(session, bytes));
            py::capsule base(owner, [](void* pointer) { delete static_cast<std::shared_ptr<pinned_memory>*>(pointer); });
            return py::array(dtype, extents, (*owner)->data(), base);
        }

        py::array copy_to_host(const device_array& array, py::object out)
        {
            py::array host;
            if (out.is_none())
            {
                refuse_while_capturing(cuda_session::of(array.buffer->session()),
                                       graph_refusal::copy_to_new_host_array);
                host = py::array(array.dtype, array.shape);
            }
            else
            {
                host = py::reinterpret_borrow<py::array>(out);
                layout_of(array).check_host_destination(
                    py::isinstance<py::array>(out) && (host.flags() & py::array::c_style) && host.writeable() &&
                        static_cast<std::size_t>(host.nbytes()) == array.nbytes() && host.dtype().equal(array.dtype),
                    str_of(array.dtype));
            }
            if (capture_host_copy(array, host, false))
            {
                return host;
            }
            // Work queued on the default stream (launches) finishes before a synchronous copy returns.
            std::shared_ptr<host_memory_owner> owner =
                memory_owner(cuda_session::of(array.buffer->session()), host, host);
            py::gil_scoped_release release;
            array.buffer->copy_to_host(host.mutable_data(), array.nbytes(), 0, std::move(owner));
            return host;
        }

        void copy_from(device_array& array, py::handle object)
        {
            if (Py_TYPE(object.ptr()) == g_device_array_type)
            {
                const device_array& source = unchecked_instance<device_array>(object.ptr());
                layout_of(array).check_device_source(source.nbytes());
                if (capture_device_copy(array, source))
                {
                    return;
                }
                device_buffer::copy(*array.buffer, *source.buffer, array.nbytes(), "", false);
                return;
            }
            py::array host = contiguous(object, array.dtype);
            layout_of(array).check_host_source(static_cast<std::size_t>(host.size()));
            if (host.ptr() != object.ptr())
            {
                refuse_while_capturing(cuda_session::of(array.buffer->session()), graph_refusal::copy_from_converted);
            }
            if (capture_host_copy(array, host, true))
            {
                return;
            }
            std::shared_ptr<host_memory_owner> owner =
                memory_owner(cuda_session::of(array.buffer->session()), host, object);
            py::gil_scoped_release release;
            array.buffer->copy_from_host(host.data(), array.nbytes(), 0, std::move(owner));
        }

        py::dict cuda_array_interface(const device_array& array)
        {
            py::dict interface;
            interface["shape"] = py::tuple(py::cast(array.shape));
            interface["typestr"] = array.dtype.attr("str");
            interface["data"] = py::make_tuple(array.size() ? array.pointer() : 0, false);
            interface["strides"] = py::none();
            interface["version"] = 3;
            // Work on the array is ordered by the legacy default stream (CUDA_ARRAY_INTERFACE v3: 1).
            interface["stream"] = 1;
            return interface;
        }

        device_array slice_view(const device_array& array, py::object index)
        {
            array_layout layout = layout_of(array);
            layout.require_rows();
            if (!PySlice_Check(index.ptr()))
            {
                array_layout::refuse_index(type_name(index), str_of(index));
            }
            Py_ssize_t start = 0, stop = 0, step = 0;
            if (PySlice_Unpack(index.ptr(), &start, &stop, &step) < 0)
            {
                throw py::error_already_set();
            }
            array_layout::rows_view rows = layout.rows(start, stop, step);
            device_array view = array;
            view.shape.assign(rows.shape.begin(), rows.shape.end());
            view.buffer = device_buffer::view_of(array.buffer, rows.byte_offset, rows.nbytes);
            return view;
        }

        device_array dtype_view(const device_array& array, py::object dtype_object)
        {
            py::dtype dtype = plain(py::dtype::from_args(dtype_object));
            std::vector<std::int64_t> shape = layout_of(array).reinterpreted(static_cast<std::size_t>(dtype.itemsize()),
                                                                             str_of(array.dtype), str_of(dtype));
            device_array view = array;
            view.dtype = dtype;
            view.kind = kind_of_dtype(dtype);
            view.shape.assign(shape.begin(), shape.end());
            view.buffer = device_buffer::view_of(array.buffer, 0, array.buffer->size());
            return view;
        }

        std::string array_repr(const device_array& array)
        {
            return layout_of(array).describe(str_of(array.dtype), array.buffer->valid(), array.buffer->device());
        }
    }

    std::size_t device_array::size_of_shape() const
    {
        return std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                               [](std::size_t a, py::ssize_t b) { return a * static_cast<std::size_t>(b); });
    }

    namespace
    {
        // ---- the dtypes of ml_dtypes (bfloat16, fp8) and the packed pairs (issue 45, item 5) ----
        // numpy's first number for user-defined dtypes (NPY_USERDEF): ml_dtypes' dtypes are such.
        constexpr int user_defined_dtypes = 256;

        // A dtype numpy's kind letter and itemsize do not say: one of ml_dtypes' by its name, or a structured
        // dtype of two fields that is a packed pair (__half2, __nv_bfloat162). Only reached for dtypes
        // kind_of_numpy does not know, never for the common ones.
        scalar_kind kind_of_other_dtype(const py::dtype& dtype)
        {
            if (dtype.attr("num").cast<int>() >= user_defined_dtypes)
            {
                return array_layout::kind_of_numpy_name(dtype.attr("name").cast<std::string>());
            }
            py::object names = dtype.attr("names");
            if (names.is_none() || py::len(names) != 2)
            {
                return scalar_kind::unknown;
            }
            py::dict fields = dtype.attr("fields");
            py::tuple first = fields[names[py::int_(0)]], second = fields[names[py::int_(1)]];
            py::dtype a = first[0].cast<py::dtype>(), b = second[0].cast<py::dtype>();
            return array_layout::pair_kind(kind_of_dtype(a), first[1].cast<std::size_t>(), kind_of_dtype(b),
                                           second[1].cast<std::size_t>(), static_cast<std::size_t>(dtype.itemsize()));
        }

        // ml_dtypes' dtype of this name, or None when the package is not installed.
        py::object ml_dtypes_dtype(const std::string& name)
        {
            // Looked up once, under the GIL, without a C++ static guard: an import may let another thread take
            // the GIL, which would then wait on the guard while holding it. Two threads may both import: the
            // same module. Leaked on purpose: a module-lifetime reference (null: not installed).
            static PyObject* module = nullptr;
            static bool looked = false;
            if (!looked)
            {
                PyObject* found = nullptr;
                try
                {
                    found = py::object(py::module_::import("ml_dtypes")).release().ptr();
                }
                catch (py::error_already_set&)
                {
                }
                if (!looked)
                {
                    module = found;
                    looked = true;
                }
                else
                {
                    Py_XDECREF(found);
                }
            }
            if (module == nullptr)
            {
                return py::none();
            }
            return py::module_::import("numpy").attr("dtype")(py::handle(module).attr(name.c_str()));
        }
        // ---- end of ml_dtypes and the packed pairs ----
    }

    scalar_kind kind_of_dtype(const py::dtype& dtype)
    {
        scalar_kind kind = array_layout::kind_of_numpy(dtype.kind(), static_cast<std::size_t>(dtype.itemsize()));
        return kind != scalar_kind::unknown ? kind : kind_of_other_dtype(dtype);
    }

    bool ml_dtypes_missing()
    {
        return ml_dtypes_dtype("bfloat16").is_none();
    }

    py::object dtype_of_kind(scalar_kind kind)
    {
        if (const char* name = array_layout::numpy_name(kind))
        {
            return py::dtype(name);
        }
        const char* ml_name = array_layout::ml_dtypes_name(kind);
        return ml_name ? ml_dtypes_dtype(ml_name) : py::object(py::none());
    }

    namespace
    {
        // numpy's dtype of d; a bfloat16 or fp8 without ml_dtypes installed: V<itemsize> inside a record
        // (`in_record`), None at the top.
        py::object dtype_from(const numpy_dtype& d, bool in_record = false)
        {
            if (d.from_ml_dtypes())
            {
                py::object ml = ml_dtypes_dtype(d.name());
                return !ml.is_none() ? ml : in_record ? py::object(py::dtype("V" + std::to_string(d.itemsize())))
                                                      : py::object(py::none());
            }
            if (!d.is_record())
            {
                return py::dtype(d.name());
            }
            py::list names, formats, offsets;
            for (const numpy_dtype::field& field : d.fields())
            {
                py::object format = dtype_from(*field.type, true);
                if (!field.extents.empty())
                {
                    format = py::dtype::from_args(py::make_tuple(format, py::tuple(py::cast(field.extents))));
                }
                names.append(field.name);
                formats.append(format);
                offsets.append(field.offset);
            }
            py::dict spec;
            spec["names"] = names;
            spec["formats"] = formats;
            spec["offsets"] = offsets;
            spec["itemsize"] = d.itemsize();
            return py::module_::import("numpy").attr("dtype")(spec);
        }
    }

    py::object dtype_of_layout(const std::shared_ptr<const value_layout>& layout)
    {
        std::optional<numpy_dtype> d = numpy_dtype::of(layout);
        return d ? dtype_from(*d) : py::none();
    }

    py::object dtype_of_parameter(const kernel_parameter& parameter)
    {
        if (parameter.layout)
        {
            py::object d = dtype_of_layout(parameter.layout);
            if (!d.is_none() || parameter.layout->kind != scalar_kind::unknown)
            {
                return d;
            }
        }
        return dtype_of_kind(parameter.kind);
    }

    PyTypeObject* device_array_type()
    {
        return g_device_array_type;
    }

    void register_device_array(py::module_& m, notebook_session& notebook)
    {
        py::class_<device_array> cls(m, "DeviceArray", R"(A typed, C-contiguous array in device memory.

Made by xcuda.to_device, empty, zeros, empty_like and zeros_like. Passes to kernels without copies;
CuPy, PyTorch and Numba can view it through __cuda_array_interface__. numpy.asarray(buf) and
buf.copy_to_host() copy it to the host. The memory is freed when the last reference goes.

Pickling copies: a DeviceArray pickles as its host contents and unpickles as a new DeviceArray on
the current device of the process that loads it (its own memory, not shared with the original), or,
where no GPU is usable (an ipyparallel client on a login node), as a numpy array with a
xcuda.HostFallbackWarning. So ipyparallel's push, pull, scatter and gather work on DeviceArrays,
each transfer copying device -> host -> network -> host -> device.)");
        cls.def_property_readonly("shape", [](const device_array& a) { return py::tuple(py::cast(a.shape)); },
                                  "Tuple of dimensions.")
            .def_property_readonly("dtype", [](const device_array& a) { return a.dtype; }, "numpy dtype.")
            .def_property_readonly("size", &device_array::size, "Number of elements.")
            .def_property_readonly("ndim", [](const device_array& a) { return a.shape.size(); }, "Number of dimensions.")
            .def_property_readonly("nbytes", &device_array::nbytes, "Bytes of device memory the elements occupy.")
            .def_property_readonly("itemsize", [](const device_array& a) { return a.dtype.itemsize(); },
                                   "Bytes per element.")
            .def_property_readonly("ptr", [](const device_array& a) { return a.size() ? a.pointer() : 0; },
                                   "The device address (an int).")
            .def_property_readonly("device", [](const device_array& a) { return a.buffer->device(); },
                                   "Ordinal of the device holding the memory.")
            .def_property_readonly("__cuda_array_interface__", &cuda_array_interface,
                                   "CUDA Array Interface, version 3.")
            .def("copy_to_host", &copy_to_host, py::arg("out") = py::none(),
                 R"(Copy to the host.

Parameters
----------
out : numpy.ndarray, optional
    A writeable C-contiguous array of the same dtype and size to copy into.

Returns
-------
numpy.ndarray
    A new array of the same shape and dtype, or `out`.)")
            .def("copy_from", &copy_from, py::arg("array"),
                 R"(Copy into this array: from a host array (anything numpy.asarray takes) with the same number of elements, or from a DeviceArray of the same size in bytes (on the device).)")
            .def("__array__",
                 [](const device_array& a, py::object dtype, py::object /*copy*/) {
                     refuse_while_capturing(cuda_session::of(a.buffer->session()), graph_refusal::asarray);
                     py::array host = copy_to_host(a, py::none());
                     return dtype.is_none() ? py::object(host) : host.attr("astype")(dtype);
                 },
                 py::arg("dtype") = py::none(), py::arg("copy") = py::none(),
                 "numpy.asarray(buf): a host copy.")
            .def("__reduce__",
                 [](const device_array& a) {
                     // A copy through the host, rebuilt by xcuda._from_host (a DeviceArray on the current
                     // device where a GPU is usable, else the numpy array): what ipyparallel's push,
                     // pull, scatter and gather send. Device memory cannot travel between processes.
                     return py::make_tuple(py::module_::import("xcuda").attr("_from_host"),
                                           py::make_tuple(copy_to_host(a, py::none())));
                 },
                 "Pickle as a copy of the contents (see the class docstring).")
            .def("__len__", [](const device_array& a) { return layout_of(a).length(); })
            .def("__getitem__", &slice_view, py::arg("index"),
                 R"(d[start:stop] (step 1, along the first axis): a DeviceArray viewing those rows of d's memory,
with no copy (what `ptr + offset` is in CUDA C++). The view keeps d's memory alive; writes
through either are seen by both. A single index or a step other than 1 is refused.)")
            .def("view", &dtype_view, py::arg("dtype"),
                 R"(The same memory as another dtype (numpy's ndarray.view): the last axis is rescaled by the
itemsizes (its bytes must divide by the new itemsize); no copy, keeps d's memory alive.)")
            .def_property_readonly("is_view", [](const device_array& a) { return static_cast<bool>(a.buffer->parent()); },
                                   "Whether it views another array's memory (d[n:], d.view(...)).")
            .def_property_readonly("byte_offset", [](const device_array& a) { return a.buffer->offset(); },
                                   "Where it starts in the allocation it views, in bytes (0 when not a view).")
            .def("__repr__", &array_repr);
        register_dlpack(cls);
        g_device_array_type = reinterpret_cast<PyTypeObject*>(cls.ptr());

        m.def("to_device",
              [&notebook](py::handle object, py::object dtype) { return to_device(notebook.session, object, dtype); }, py::arg("array"), py::arg("dtype") = py::none(),
              R"(Copy a host array to the device.

Parameters
----------
array : array_like
    A numpy array or anything numpy.asarray accepts (a DeviceArray is copied on the device).
dtype : numpy dtype, optional
    Convert to this dtype first.

Returns
-------
DeviceArray)");
        m.def("empty_pinned",
              [&notebook](py::handle shape, py::object dtype) { return empty_pinned(notebook.session, shape, dtype); },
              py::arg("shape"), py::arg("dtype") = "float32",
              R"(A numpy array in page-locked host memory: copies to and from the device run at the bus's full
speed. Freed when the array goes; it stays valid (no longer page-locked) if the session closes first.)");
        m.def("zeros_pinned",
              [&notebook](py::handle shape, py::object dtype) {
                  py::array array = empty_pinned(notebook.session, shape, dtype);
                  std::memset(array.mutable_data(), 0, static_cast<std::size_t>(array.nbytes()));
                  return array;
              },
              py::arg("shape"), py::arg("dtype") = "float32", "A zero-filled numpy array in page-locked host memory.");
        m.def("empty",
              [&notebook](py::handle shape, py::object dtype) {
                  return make_array(notebook.session, shape_from(shape), py::dtype::from_args(dtype));
              },
              py::arg("shape"), py::arg("dtype") = "float32",
              "Allocate an uninitialised DeviceArray of the given shape and dtype (default float32).");
        m.def("zeros",
              [&notebook](py::handle shape, py::object dtype) {
                  device_array array = make_array(notebook.session, shape_from(shape), py::dtype::from_args(dtype));
                  array.buffer->fill_zero(notebook.session.stream());
                  return array;
              },
              py::arg("shape"), py::arg("dtype") = "float32",
              "Allocate a zero-filled DeviceArray of the given shape and dtype (default float32).");
        m.def("empty_like",
              [&notebook](py::handle like) {
                  return make_array(notebook.session, shape_from(like.attr("shape")), py::dtype::from_args(like.attr("dtype")));
              },
              py::arg("array"), "An uninitialised DeviceArray with the shape and dtype of `array`.");
        m.def("zeros_like",
              [&notebook](py::handle like) {
                  device_array array =
                      make_array(notebook.session, shape_from(like.attr("shape")), py::dtype::from_args(like.attr("dtype")));
                  array.buffer->fill_zero(notebook.session.stream());
                  return array;
              },
              py::arg("array"), "A zero-filled DeviceArray with the shape and dtype of `array`.");
    }
}
