// xcuda.CudaArray, xcuda.Texture and xcuda.Surface, and the functions that make them (cuda_array, texture,
// surface): CUDA arrays, texture objects and surface objects of the core's runtime/textures room
// (docs/textures.md). This file turns numpy and device arrays, dtypes and words into core values and back; the
// rules (which dtypes, channels and settings a texture takes, and what to do otherwise) are the core's.
// A Texture or Surface passes to a kernel's cudaTextureObject_t / cudaSurfaceObject_t parameter as its handle
// (object_handle, read by py_arguments.cpp).

#include "py_common.hpp"

#include "cuda_array.hpp"
#include "surface_object.hpp"
#include "texture_object.hpp"

namespace xcuda::python
{
    namespace
    {
        PyTypeObject* g_texture_type = nullptr;
        PyTypeObject* g_surface_type = nullptr;

        // Arrays are made and copied synchronously, which a CUDA graph's capture cannot hold.
        void refuse_in_capture(const device_session& session, const char* what)
        {
            refuse_while_capturing(cuda_session::of(const_cast<device_session&>(session)), what,
                                   "make and fill CUDA arrays and textures before the `with xcuda.graph()` block; the "
                                   "launches that read them can be captured");
        }

        // The dtype of a CUDA array's elements, with its channels as numpy's last axis.
        py::tuple host_shape(const cuda_array::description& d)
        {
            py::list shape;
            for (std::size_t extent : d.shape)
            {
                shape.append(extent);
            }
            if (d.channels > 1)
            {
                shape.append(d.channels);
            }
            return py::tuple(shape);
        }

        // A description of an array of `dtype` and numpy shape `shape` (channels taken from its last axis when
        // there are several).
        cuda_array::description description_of(py::tuple shape, const py::dtype& dtype, unsigned channels, bool surface,
                                               bool layered)
        {
            cuda_array::description d;
            d.kind = kind_of_dtype(dtype);
            d.dtype = str_of(dtype);
            d.channels = channels;
            d.surface = surface;
            d.layered = layered;
            std::size_t n = shape.size();
            if (channels > 1)
            {
                if (n == 0 || shape[n - 1].cast<std::size_t>() != channels)
                {
                    throw usage_error("an array of " + std::to_string(channels) + " channels has them as its last axis: "
                                      "its shape " + str_of(shape) + " does not end in " + std::to_string(channels));
                }
                --n;
            }
            for (std::size_t i = 0; i < n; ++i)
            {
                long long extent = py::int_(shape[i]).cast<long long>();
                if (extent < 0)
                {
                    throw usage_error("a CUDA array's shape " + str_of(shape) + " has a negative extent");
                }
                d.shape.push_back(static_cast<std::size_t>(extent));
            }
            return d;
        }

        texture_settings settings_of(const std::string& filter, py::handle address, bool normalized, const std::string& read,
                                     py::handle border)
        {
            texture_settings s;
            s.filter = texture_settings::filter_named(filter);
            s.read = texture_settings::read_named(read);
            s.normalized_coordinates = normalized;
            if (py::isinstance<py::str>(address))
            {
                auto mode = texture_settings::address_named(address.cast<std::string>());
                s.address[0] = s.address[1] = s.address[2] = mode;
            }
            else
            {
                std::vector<std::string> words = address.cast<std::vector<std::string>>();
                if (words.empty() || words.size() > 3)
                {
                    throw usage_error("address takes one mode or one per dimension (x, y, z): 1 to 3 words, not " +
                                      std::to_string(words.size()));
                }
                for (std::size_t d = 0; d < 3; ++d)
                {
                    s.address[d] = texture_settings::address_named(words[std::min(d, words.size() - 1)]);
                }
            }
            if (!border.is_none())
            {
                std::vector<float> colour = border.cast<std::vector<float>>();
                if (colour.empty() || colour.size() > 4)
                {
                    throw usage_error("border takes 1 to 4 values (the colour read outside with address='border'), not " +
                                      std::to_string(colour.size()));
                }
                std::copy(colour.begin(), colour.end(), s.border);
            }
            return s;
        }

        std::shared_ptr<texture_object> texture_of(notebook_session& notebook, py::handle source, const texture_settings& s,
                                                   unsigned channels, bool layered, bool surface)
        {
            if (py::isinstance<cuda_array>(source))
            {
                return texture_object::make(source.cast<std::shared_ptr<cuda_array>>(), s);
            }
            refuse_in_capture(notebook.session, "xcuda.texture of a numpy or device array (a copy into a new CUDA array)");
            if (Py_TYPE(source.ptr()) == device_array_type())
            {
                const device_array& array = unchecked_instance<device_array>(source.ptr());
                py::tuple shape = py::cast(array.shape);
                cuda_array::description d = description_of(shape, array.dtype, channels, surface, layered);
                CUdeviceptr pointer = array.nbytes() ? array.pointer() : 0;
                py::gil_scoped_release release;
                return texture_object::filled(notebook.session, d, nullptr, pointer, array.nbytes(), s);
            }
            py::array host = py::module_::import("numpy").attr("ascontiguousarray")(source);
            cuda_array::description d = description_of(host.attr("shape"), host.dtype(), channels, surface, layered);
            auto bytes = static_cast<std::size_t>(host.nbytes());
            py::gil_scoped_release release;
            return texture_object::filled(notebook.session, d, host.data(), 0, bytes, s);
        }

        py::array copy_to_host(const cuda_array& array)
        {
            const cuda_array::description& d = array.desc();
            refuse_in_capture(array.session(), "CudaArray.copy_to_host");
            py::array host(py::dtype::from_args(dtype_of_kind(d.kind)), host_shape(d).cast<std::vector<py::ssize_t>>());
            py::gil_scoped_release release;
            array.copy_to_host(host.mutable_data(), d.nbytes());
            return host;
        }

        void copy_from(cuda_array& array, py::handle source)
        {
            refuse_in_capture(array.session(), "CudaArray.copy_from");
            if (Py_TYPE(source.ptr()) == device_array_type())
            {
                const device_array& from = unchecked_instance<device_array>(source.ptr());
                CUdeviceptr pointer = from.nbytes() ? from.pointer() : 0;
                py::gil_scoped_release release;
                array.copy_from_device(pointer, from.nbytes());
                return;
            }
            py::object dtype = dtype_of_kind(array.desc().kind);
            py::array host = py::module_::import("numpy").attr("ascontiguousarray")(source, dtype);
            auto bytes = static_cast<std::size_t>(host.nbytes());
            py::gil_scoped_release release;
            array.copy_from_host(host.data(), bytes);
        }

        void register_cuda_array(py::module_& m, notebook_session& notebook)
        {
            py::class_<cuda_array, std::shared_ptr<cuda_array>>(m, "CudaArray", R"(A CUDA array: the storage of textures and surfaces.

Made by xcuda.cuda_array(shape, dtype, channels=1, surface=False, layered=False), or by xcuda.texture from a
numpy or device array. Its memory is the GPU's own layout: copy in with copy_from, out with copy_to_host.
Freed when the last reference (and the last texture or surface over it) goes, or with the session.)")
                .def_property_readonly("shape", [](const cuda_array& a) { return host_shape(a.desc()); },
                                       "numpy's shape of its contents (the channels last when there are several).")
                .def_property_readonly("dtype", [](const cuda_array& a) { return dtype_of_kind(a.desc().kind); })
                .def_property_readonly("channels", [](const cuda_array& a) { return a.desc().channels; })
                .def_property_readonly("surface", [](const cuda_array& a) { return a.desc().surface; })
                .def_property_readonly("layered", [](const cuda_array& a) { return a.desc().layered; })
                .def_property_readonly("nbytes", [](const cuda_array& a) { return a.desc().nbytes(); })
                .def("copy_to_host", &copy_to_host, "A numpy array with the array's contents (after earlier work).")
                .def("copy_from", &copy_from, py::arg("source"),
                     "Copies a numpy array (converted to the array's dtype) or a DeviceArray of the same size in.")
                .def("__repr__", [](const cuda_array& a) { return "xcuda.CudaArray(" + a.desc().text() + ")"; });
            m.def(
                "cuda_array",
                [&notebook](py::handle shape, py::handle dtype, unsigned channels, bool surface, bool layered) {
                    py::tuple extents = py::isinstance<py::int_>(shape) ? py::make_tuple(shape) : py::tuple(py::iter(shape));
                    py::list numpy_shape(extents);
                    if (channels > 1)
                    {
                        numpy_shape.append(channels);
                    }
                    cuda_array::description d =
                        description_of(py::tuple(numpy_shape), py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype)),
                                       channels, surface, layered);
                    return cuda_array::make(notebook.session, d);
                },
                py::arg("shape"), py::arg("dtype") = py::str("float32"), py::arg("channels") = 1, py::arg("surface") = false,
                py::arg("layered") = false,
                R"(A new CUDA array (zeroed on the simulator, undefined on a GPU) of numpy shape `shape` ((width,), (height,
width) or (depth, height, width); a layered one starts with its layer count), each element `channels` values
(1, 2 or 4) of `dtype` (float32, float16, int8/16/32, uint8/16/32). surface=True lets xcuda.surface write it.)");
        }

        void register_texture(py::module_& m, notebook_session& notebook)
        {
            py::class_<texture_object, std::shared_ptr<texture_object>> texture(m, "Texture", R"(A texture object over a CUDA array.

Passes to a kernel's cudaTextureObject_t parameter (as its 64-bit handle; int(texture) is that handle).
Made by xcuda.texture. Keeps its array alive; freed when the last reference goes, or with the session.)");
            texture.def_property_readonly("handle", &texture_object::handle)
                .def_property_readonly("array", [](const texture_object& t) { return t.array(); })
                .def_property_readonly("filter", [](const texture_object& t) { return texture_settings::name_of(t.settings().filter); })
                .def_property_readonly("normalized", [](const texture_object& t) { return t.settings().normalized_coordinates; })
                .def_property_readonly("read", [](const texture_object& t) { return texture_settings::name_of(t.settings().read); })
                .def_property_readonly("address", [](const texture_object& t) {
                    const auto& a = t.settings().address;
                    return py::make_tuple(texture_settings::name_of(a[0]), texture_settings::name_of(a[1]),
                                          texture_settings::name_of(a[2]));
                })
                .def("__int__", &texture_object::handle)
                .def("__index__", &texture_object::handle)
                .def("__repr__", &texture_object::repr);
            g_texture_type = reinterpret_cast<PyTypeObject*>(texture.ptr());
            m.def(
                "texture",
                [&notebook](py::handle source, const std::string& filter, py::handle address, bool normalized,
                            const std::string& read, py::handle border, unsigned channels, bool layered, bool surface) {
                    texture_settings s = settings_of(filter, address, normalized, read, border);
                    return texture_of(notebook, source, s, channels, layered, surface);
                },
                py::arg("source"), py::arg("filter") = "point", py::arg("address") = py::str("clamp"),
                py::arg("normalized") = false, py::arg("read") = "element", py::arg("border") = py::none(),
                py::arg("channels") = 1, py::arg("layered") = false, py::arg("surface") = false,
                R"(A texture object, in one call, from a numpy array or a DeviceArray (copied into a new CUDA array of its
shape and dtype; with channels=2 or 4 its last axis is the channels) or over an xcuda.CudaArray.

filter: 'point' or 'linear'. address: 'clamp', 'border', 'wrap' or 'mirror', or one per dimension (x first;
wrap and mirror need normalized=True). normalized: coordinates in [0, 1) instead of texels. read: 'element'
(as stored) or 'normalized' (8/16-bit integers as floats in [0, 1] / [-1, 1]). border: the colour outside
with address='border'. layered: the first axis is a layer count. surface: the new array may also be a surface.)");
        }

        void register_surface(py::module_& m)
        {
            py::class_<surface_object, std::shared_ptr<surface_object>> surface(m, "Surface", R"(A surface object over a CUDA array.

Passes to a kernel's cudaSurfaceObject_t parameter (surf2Dread/surf2Dwrite, x in bytes). Made by
xcuda.surface(cuda_array) over an array made with surface=True; keeps the array alive.)");
            surface.def_property_readonly("handle", &surface_object::handle)
                .def_property_readonly("array", [](const surface_object& s) { return s.array(); })
                .def("__int__", &surface_object::handle)
                .def("__index__", &surface_object::handle)
                .def("__repr__", &surface_object::repr);
            g_surface_type = reinterpret_cast<PyTypeObject*>(surface.ptr());
            m.def("surface", [](std::shared_ptr<cuda_array> array) { return surface_object::make(std::move(array)); },
                  py::arg("array"), "A surface object over an xcuda.CudaArray made with surface=True.");
        }
    }

    bool object_handle(PyObject* object, std::uint64_t& handle, const char*& kind)
    {
        if (Py_TYPE(object) == g_texture_type)
        {
            handle = py::handle(object).cast<texture_object&>().handle();
            kind = "texture";
            return true;
        }
        if (Py_TYPE(object) == g_surface_type)
        {
            handle = py::handle(object).cast<surface_object&>().handle();
            kind = "surface";
            return true;
        }
        return false;
    }

    void register_textures(py::module_& m, notebook_session& notebook)
    {
        register_cuda_array(m, notebook);
        register_texture(m, notebook);
        register_surface(m);
    }
}
