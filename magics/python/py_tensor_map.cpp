// xcuda.tensor_map and xcuda.TensorMap: a TMA tensor map (CUtensorMap) over a device array, for a
// `const __grid_constant__ CUtensorMap` parameter. The binding reads the array's __cuda_array_interface__
// and the keywords; the rules and the encoding are the core's (runtime/arrays/tensor_map). A TensorMap keeps
// its array alive (the map holds its address) and exposes its 128 bytes through the buffer protocol, which is
// how a by-value parameter takes its bytes (raw 128 bytes are accepted the same way).

#include "py_common.hpp"

#include "cuda_session.hpp"
#include "tensor_map.hpp"

namespace xcuda::python
{
    namespace
    {
        struct tensor_map_object
        {
            alignas(64) std::array<std::uint8_t, 128> bytes{};
            py::object array;
            tensor_map_request request;
        };

        // Signed corner offsets of an im2col map: an int or a tuple of ints.
        std::vector<std::int64_t> offsets(py::handle value, const char* what)
        {
            std::vector<std::int64_t> result;
            py::tuple items = py::isinstance<py::int_>(value) ? py::make_tuple(value) : py::tuple();
            if (items.empty() && !py::isinstance<py::tuple>(value) && !py::isinstance<py::list>(value))
            {
                throw py::type_error(std::string("tensor_map's ") + what + " must be an int or a tuple of ints, not " +
                                     type_name(value));
            }
            for (py::handle item : items.empty() ? py::tuple(py::reinterpret_borrow<py::object>(value)) : items)
            {
                if (!py::isinstance<py::int_>(item))
                {
                    throw py::type_error(std::string("tensor_map's ") + what + " must hold ints, not " +
                                         py::repr(item).cast<std::string>());
                }
                result.push_back(item.cast<std::int64_t>());
            }
            return result;
        }

        std::vector<std::uint64_t> numbers(py::handle value, const char* what)
        {
            std::vector<std::uint64_t> result;
            if (py::isinstance<py::int_>(value))
            {
                result.push_back(value.cast<std::uint64_t>());
                return result;
            }
            if (!py::isinstance<py::tuple>(value) && !py::isinstance<py::list>(value))
            {
                throw py::type_error(std::string("tensor_map's ") + what + " must be an int or a tuple of ints, not " +
                                     type_name(value));
            }
            for (py::handle item : value)
            {
                if (!py::isinstance<py::int_>(item) || item.cast<long long>() < 0)
                {
                    throw py::type_error(std::string("tensor_map's ") + what + " must hold non-negative ints, not " +
                                         py::repr(item).cast<std::string>());
                }
                result.push_back(item.cast<std::uint64_t>());
            }
            return result;
        }

        // The array's address, dtype name, shape and byte strides, from __cuda_array_interface__.
        void read_array(py::handle array, tensor_map_request& r)
        {
            if (!py::hasattr(array, "__cuda_array_interface__"))
            {
                throw py::type_error("xcuda.tensor_map takes device memory (an xcuda.DeviceArray, or an array with "
                                     "__cuda_array_interface__), not " + type_name(array) + ": xcuda.to_device(x) first");
            }
            py::dict cai = array.attr("__cuda_array_interface__");
            py::module_ numpy = py::module_::import("numpy");
            py::object dtype = py::hasattr(array, "dtype") ? numpy.attr("dtype")(array.attr("dtype"))
                                                           : numpy.attr("dtype")(cai["typestr"]);
            r.dtype = dtype.attr("name").cast<std::string>();
            long long itemsize = dtype.attr("itemsize").cast<long long>();
            r.address = py::tuple(cai["data"])[0].cast<std::uint64_t>();
            for (py::handle extent : py::tuple(cai["shape"]))
            {
                r.shape.push_back(extent.cast<std::uint64_t>());
            }
            py::object strides = cai.contains("strides") ? py::object(cai["strides"]) : py::object(py::none());
            if (!strides.is_none())
            {
                for (py::handle stride : py::tuple(strides))
                {
                    r.strides.push_back(stride.cast<std::int64_t>());
                }
                return;
            }
            r.strides.assign(r.shape.size(), itemsize);  // C order
            for (std::size_t i = r.shape.size(); i-- > 1;)
            {
                r.strides[i - 1] = r.strides[i] * static_cast<std::int64_t>(r.shape[i]);
            }
        }

        // im2col: all four of the corners, channels_per_pixel and pixels_per_column, and no box.
        void read_im2col(py::dict im2col, py::object box, tensor_map_request& r)
        {
            const char* names[] = {"lower_corner", "upper_corner", "channels_per_pixel", "pixels_per_column"};
            int given = 0;
            for (const char* name : names)
            {
                given += im2col[name].is_none() ? 0 : 1;
            }
            if (given == 0)
            {
                if (box.is_none())
                {
                    throw py::type_error("xcuda.tensor_map needs box=(...) (a tiled map), or lower_corner, upper_corner, "
                                         "channels_per_pixel and pixels_per_column (an im2col map)");
                }
                r.box = numbers(box, "box");
                return;
            }
            if (given != 4 || !box.is_none())
            {
                throw py::type_error("an im2col tensor_map takes lower_corner, upper_corner, channels_per_pixel and "
                                     "pixels_per_column, all four, and no box");
            }
            r.im2col = true;
            r.lower_corner = offsets(im2col["lower_corner"], "lower_corner");
            r.upper_corner = offsets(im2col["upper_corner"], "upper_corner");
            r.channels_per_pixel = numbers(im2col["channels_per_pixel"], "channels_per_pixel").at(0);
            r.pixels_per_column = numbers(im2col["pixels_per_column"], "pixels_per_column").at(0);
        }

        py::object make_tensor_map(cuda_session& session, py::object array, py::object box, py::object element_strides,
                                   const std::string& interleave, const std::string& swizzle,
                                   const std::string& l2_promotion, const std::string& oob_fill, py::dict im2col)
        {
            tensor_map_object map;
            read_array(array, map.request);
            read_im2col(im2col, box, map.request);
            if (!element_strides.is_none())
            {
                map.request.element_strides = numbers(element_strides, "element_strides");
            }
            map.request.interleave = interleave;
            map.request.swizzle = swizzle;
            map.request.l2_promotion = l2_promotion;
            map.request.oob_fill = oob_fill;
            tensor_map::checked(map.request);  // the rules first, without the GPU
            session.make_current();
            map.bytes = tensor_map::encode(map.request);
            map.array = std::move(array);
            return py::cast(std::move(map));
        }
    }

    void register_tensor_maps(py::module_& m, notebook_session& notebook)
    {
        py::class_<tensor_map_object>(m, "TensorMap", py::buffer_protocol(),
                                      R"(A TMA tensor map (CUtensorMap) over a device array, made by xcuda.tensor_map.

Pass it for a `const __grid_constant__ CUtensorMap` parameter (its 128 bytes; raw 128 bytes are
accepted there too). It keeps its array alive. mode is 'tiled' or 'im2col' (box is None for im2col).)")
            .def_buffer([](tensor_map_object& self) {
                return py::buffer_info(self.bytes.data(), 1, py::format_descriptor<std::uint8_t>::format(), 1, {128},
                                       {1}, true);
            })
            .def_readonly("array", &tensor_map_object::array)
            .def_property_readonly("box", [](const tensor_map_object& self) -> py::object {
                return self.request.im2col ? py::object(py::none()) : py::object(py::tuple(py::cast(self.request.box)));
            })
            .def_property_readonly("mode", [](const tensor_map_object& self) { return self.request.im2col ? "im2col" : "tiled"; })
            .def_property_readonly("dtype", [](const tensor_map_object& self) { return self.request.dtype; })
            .def("__bytes__", [](const tensor_map_object& self) {
                return py::bytes(reinterpret_cast<const char*>(self.bytes.data()), self.bytes.size());
            })
            .def("__repr__", [](const tensor_map_object& self) {
                const tensor_map_request& r = self.request;
                std::string box;
                for (std::uint64_t b : r.box)
                {
                    box += (box.empty() ? "" : ", ") + std::to_string(b);
                }
                std::string shape = r.im2col ? "im2col " + std::to_string(r.pixels_per_column) + " pixels x " +
                                                   std::to_string(r.channels_per_pixel) + " channels"
                                             : "box=(" + box + ")";
                return "<xcuda.TensorMap " + r.dtype + " " + shape + " swizzle=" + r.swizzle + ">";
            });
        m.def("tensor_map",
              [&notebook](py::object array, py::object box, py::object element_strides, const std::string& interleave,
                          const std::string& swizzle, const std::string& l2_promotion, const std::string& oob_fill,
                          py::object lower_corner, py::object upper_corner, py::object channels_per_pixel,
                          py::object pixels_per_column) {
                  py::dict im2col;
                  im2col["lower_corner"] = lower_corner;
                  im2col["upper_corner"] = upper_corner;
                  im2col["channels_per_pixel"] = channels_per_pixel;
                  im2col["pixels_per_column"] = pixels_per_column;
                  return make_tensor_map(notebook.session, std::move(array), std::move(box), std::move(element_strides),
                                         interleave, swizzle, l2_promotion, oob_fill, im2col);
              },
              py::arg("array"), py::arg("box") = py::none(), py::kw_only(), py::arg("element_strides") = py::none(),
              py::arg("interleave") = "none", py::arg("swizzle") = "none", py::arg("l2_promotion") = "none",
              py::arg("oob_fill") = "none", py::arg("lower_corner") = py::none(), py::arg("upper_corner") = py::none(),
              py::arg("channels_per_pixel") = py::none(), py::arg("pixels_per_column") = py::none(),
              R"(A TMA tensor map over a device array: tiled (cuTensorMapEncodeTiled) or im2col (cuTensorMapEncodeIm2col).

box: the tile each cp.async.bulk.tensor copies, one extent per dimension, outermost first (as the
array is indexed); element_strides: 1..8 per dimension; interleave 'none', '16B', '32B'; swizzle
'none', '32B', '64B', '128B'; l2_promotion 'none', '64B', '128B', '256B'; oob_fill 'none' (zeros)
or 'nan'. An im2col map (an NWC, NHWC or NDHWC array) takes, instead of box, lower_corner and
upper_corner (one offset per spatial dimension, outermost first: the bounding box runs from
lower_corner to extent - 1 + upper_corner), channels_per_pixel (1..256) and pixels_per_column
(1..1024). The driver's documented rules are checked first (alignment, strides multiple of 16 bytes,
box extents up to 256, the box's inner row a multiple of 16 bytes and within the swizzle span...),
each refusal naming the rule. Runs on a GPU of compute capability 9.0 or newer, and on the PTX
simulator (XCUDA_DEVICE=simulator).)");
    }
}
