// xcuda.ModuleVariable and xcuda.Pointer: a cell's __constant__/__device__ variables from Python
// (module.get_global(name), module.globals.name), and a raw device address for a pointer parameter.
//
// A ModuleVariable holds its module (std::shared_ptr) and the variable's declaration as the signature
// reader read it: its numpy dtype and shape come from there. Its address is asked of the driver on each
// use (cuModuleGetGlobal, cached per device by the module), so it follows the current device and a
// reload of the module. set() writes every device the module is loaded on and is written again at later
// loads (cuda_module::write_global); get() reads the current device. Called with the GIL held; the
// module's mutex orders calls from several threads.

#include "py_common.hpp"

#include "cuda_module.hpp"
#include "global_variable.hpp"
#include "raw_pointer.hpp"

namespace xcuda::python
{
    namespace
    {
        struct py_module_variable
        {
            std::shared_ptr<cuda_module> module;
            global_variable checks;  // the declaration, its shape and the checks of set()
            py::object dtype;        // of one element
            const module_variable& variable() const { return checks.variable(); }
            std::size_t nbytes() const { return checks.nbytes(); }
        };

        py::array get(const py_module_variable& self)
        {
            py::array result = py::module_::import("numpy").attr("empty")(py::tuple(py::cast(self.checks.shape())), self.dtype);
            self.module->read_global(self.variable(), result.mutable_data(), self.nbytes());
            return result;
        }

        // numpy's view of what set() was given, as the variable's dtype and shape; a wrong size names both.
        py::array host_value(const py_module_variable& self, py::handle value)
        {
            py::module_ np = py::module_::import("numpy");
            py::array array;
            if (py::isinstance<py::array>(value))
            {
                array = py::reinterpret_borrow<py::array>(value);
                self.checks.check_array_dtype(array.dtype().equal(py::dtype::from_args(self.dtype)), str_of(array.dtype()),
                                              str_of(array.attr("shape")), static_cast<std::size_t>(array.nbytes()),
                                              str_of(py::dtype::from_args(self.dtype).attr("name")));
            }
            else
            {
                try
                {
                    array = np.attr("asarray")(value, self.dtype);
                }
                catch (py::error_already_set& e)
                {
                    self.checks.refuse_conversion(type_name(value), str_of(value), e.what());
                }
            }
            self.checks.check_size(static_cast<std::size_t>(array.size()), static_cast<std::size_t>(array.nbytes()));
            return np.attr("ascontiguousarray")(array);
        }

        void set(const py_module_variable& self, py::handle value)
        {
            py::array host = host_value(self, value);
            self.module->write_global(self.variable(), host.data(), self.nbytes());
        }

        py::dict variable_array_interface(const py_module_variable& self)
        {
            cuda_module::global_region region = self.module->global(self.variable());
            py::dtype dtype = py::dtype::from_args(self.dtype);
            py::dict interface;
            std::vector<std::int64_t> shape = self.checks.shape();
            interface["shape"] = py::tuple(py::cast(shape.empty() ? std::vector<std::int64_t>{1} : shape));
            interface["typestr"] = dtype.attr("str");
            if (!dtype.attr("fields").is_none())
            {
                interface["descr"] = dtype.attr("descr");
            }
            interface["data"] = py::make_tuple(region.pointer, false);
            interface["strides"] = py::none();
            interface["version"] = 3;
            interface["stream"] = 1;
            return interface;
        }

        struct py_module_globals
        {
            std::shared_ptr<cuda_module> module;
        };

        PyTypeObject* g_pointer_type = nullptr;
    }

    py::object wrap_module_variable(const std::shared_ptr<cuda_module>& module, const std::string& name)
    {
        const module_variable* found = module->variable(name);
        if (!found)
        {
            throw py::key_error(global_variable::missing_message(module->name(), module->variables(), name));
        }
        py::object dtype = dtype_of_layout(found->layout);
        return py::cast(py_module_variable{module, global_variable(*found, str_of(dtype), !dtype.is_none()), dtype});
    }

    py::object module_globals(const std::shared_ptr<cuda_module>& module)
    {
        return py::cast(py_module_globals{module});
    }

    namespace
    {
        // The types PyCUDA-style code spells a device address with, besides xcuda.Pointer: numpy.uintp
        // (PyCUDA's kernels take np.uintp(int(ptr)); on LP64 it is numpy.uint64, so any numpy.uint64
        // scalar reads as an address) and ctypes.c_void_p (None: the null pointer). A plain int stays refused.
        struct address_types
        {
            PyTypeObject* uintp = nullptr;
            PyTypeObject* void_p = nullptr;
        };

        // Looked up once, under the GIL, without a C++ static guard (an import may let another thread take the
        // GIL, which would then wait on the guard while holding it). Leaked on purpose: module-lifetime
        // references to the type objects.
        const address_types& explicit_address_types()
        {
            static address_types types;
            if (types.void_p == nullptr)
            {
                address_types t;
                t.uintp = reinterpret_cast<PyTypeObject*>(py::object(py::module_::import("numpy").attr("uintp")).release().ptr());
                t.void_p = reinterpret_cast<PyTypeObject*>(py::object(py::module_::import("ctypes").attr("c_void_p")).release().ptr());
                if (types.void_p == nullptr)
                {
                    types = t;
                }
            }
            return types;
        }

        // An address given as numpy.uintp or ctypes.c_void_p, into `address`; false for other types.
        bool foreign_address(PyObject* object, std::uint64_t& address)
        {
            const address_types& types = explicit_address_types();
            if (Py_TYPE(object) == types.uintp)
            {
                address = py::handle(object).cast<std::uint64_t>();
                return true;
            }
            if (Py_TYPE(object) == types.void_p)
            {
                py::object value = py::handle(object).attr("value");
                address = value.is_none() ? 0 : value.cast<std::uint64_t>();
                return true;
            }
            return false;
        }
    }

    bool pointer_address(PyObject* object, std::uint64_t& address, std::size_t& nbytes)
    {
        if (!g_pointer_type || Py_TYPE(object) != g_pointer_type)
        {
            nbytes = 0;
            return foreign_address(object, address);
        }
        const raw_pointer& p = unchecked_instance<raw_pointer>(object);
        address = p.address;
        nbytes = p.nbytes;
        return true;
    }

    void register_module_variables(py::module_& m)
    {
        py::class_<py_module_variable>(m, "ModuleVariable", R"(A __constant__, __device__ or __managed__ variable of a compiled cell.

From module.get_global(name) or module.globals.name. Typed by its declaration: dtype and shape
(`__constant__ float c_Kernel[17]` is float32, (17,)). get() reads it (the current device) into a new
numpy array; set(value) writes it on every device the module is loaded on, after checking the dtype
and size, and the module writes the value again when it is loaded anew (another device, a new
session). Passes to a kernel's pointer parameter as device memory (__cuda_array_interface__).)")
            .def("get", &get, "The variable's value on the current device, as a new numpy array (cudaMemcpyFromSymbol).")
            .def("copy_to_host", &get, "Same as get().")
            .def("set", &set, py::arg("value"),
                 R"(Write value (a numpy array of the variable's dtype and size, or anything numpy.asarray
makes one of: a list, a number) into the variable on every device the module is loaded on
(cudaMemcpyToSymbol). A numpy array of another dtype, or of another size, is refused naming both.)")
            .def("copy_from_host", &set, py::arg("value"), "Same as set(value).")
            .def("__array__",
                 [](const py_module_variable& self, py::object dtype, py::object) {
                     py::array value = get(self);
                     return dtype.is_none() ? py::object(value) : py::object(value.attr("astype")(dtype));
                 },
                 py::arg("dtype") = py::none(), py::arg("copy") = py::none())
            .def_property_readonly("__cuda_array_interface__", &variable_array_interface,
                                   "CUDA Array Interface (v3) of the variable on the current device.")
            .def_property_readonly("ptr", [](const py_module_variable& self) { return self.module->global(self.variable()).pointer; },
                                   "The device address on the current device (cudaGetSymbolAddress); loads the module.")
            .def_property_readonly("name", [](const py_module_variable& self) { return self.variable().name; })
            .def_property_readonly("qualified_name", [](const py_module_variable& self) { return self.variable().qualified_name; })
            .def_property_readonly("symbol", [](const py_module_variable& self) { return self.variable().symbol; },
                                   "The name in the binary (mangled inside a namespace).")
            .def_property_readonly("space", [](const py_module_variable& self) { return self.variable().space; },
                                   "'__constant__', '__device__' or '__managed__'.")
            .def_property_readonly("type", [](const py_module_variable& self) { return self.variable().type; },
                                   "The element type as declared.")
            .def_property_readonly("dtype", [](const py_module_variable& self) { return self.dtype; })
            .def_property_readonly("shape", [](const py_module_variable& self) { return py::tuple(py::cast(self.checks.shape())); },
                                   "() for a single value.")
            .def_property_readonly("size", [](const py_module_variable& self) { return self.checks.count(); })
            .def_property_readonly("nbytes", [](const py_module_variable& self) { return self.nbytes(); })
            .def("__repr__", [](const py_module_variable& self) { return self.checks.describe(self.module->name()); });

        py::class_<py_module_globals>(m, "ModuleGlobals", R"(The variables of a module by attribute: module.globals.c_Kernel is
module.get_global('c_Kernel'); module.globals.c_Kernel = array sets it.)")
            .def("__getattr__", [](const py_module_globals& self, const std::string& name) {
                try
                {
                    return wrap_module_variable(self.module, name);
                }
                catch (py::key_error& e)
                {
                    throw py::attribute_error(e.what());
                }
            })
            .def("__getitem__", [](const py_module_globals& self, const std::string& name) {
                return wrap_module_variable(self.module, name);
            })
            .def("__setattr__", [](const py_module_globals& self, const std::string& name, py::handle value) {
                set(wrap_module_variable(self.module, name).cast<const py_module_variable&>(), value);
            })
            .def("__setitem__", [](const py_module_globals& self, const std::string& name, py::handle value) {
                set(wrap_module_variable(self.module, name).cast<const py_module_variable&>(), value);
            })
            .def("__contains__", [](const py_module_globals& self, const std::string& name) {
                return self.module->variable(name) != nullptr;
            })
            .def("__iter__", [](const py_module_globals& self) {
                return py::iter(py::cast(global_variable::name_list(self.module->variables(), true)));
            })
            .def("__len__", [](const py_module_globals& self) { return self.module->variables().size(); })
            .def("__dir__", [](const py_module_globals& self) {
                return global_variable::name_list(self.module->variables(), false);
            })
            .def("__repr__", [](const py_module_globals& self) {
                return "<xcuda.ModuleGlobals of " + self.module->name() + ": " +
                       global_variable::names(self.module->variables()) + ">";
            });

        py::class_<raw_pointer> pointer(m, "Pointer", R"(A raw device address for a kernel's pointer parameter: xcuda.Pointer(addr).

addr is an int or numpy.uintp (for example from cuda.core, PyCUDA or d.ptr + offset). A plain int
for a pointer parameter is still refused: the wrapper says the address is meant. nbytes (optional)
is the extent the kernel may touch, for bandwidth figures and replays. Nothing is checked or kept
alive: the memory must stay allocated until the kernel has run.)");
        pointer
            .def(py::init([](py::object address, std::size_t nbytes) {
                     py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(address.ptr()));
                     if (!index)
                     {
                         PyErr_Clear();
                         raw_pointer::refuse_type(type_name(address));
                     }
                     int overflow = 0;
                     long long signed_value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
                     bool negative = overflow < 0 || (overflow == 0 && signed_value < 0);
                     unsigned long long value = negative ? 0 : PyLong_AsUnsignedLongLong(index.ptr());
                     bool too_wide = !negative && PyErr_Occurred();
                     PyErr_Clear();
                     return raw_pointer::of(negative, too_wide, value, nbytes,
                                            negative || too_wide ? str_of(address) : std::string());
                 }),
                 py::arg("address"), py::arg("nbytes") = 0)
            .def_readonly("address", &raw_pointer::address)
            .def_readonly("nbytes", &raw_pointer::nbytes)
            .def("__int__", [](const raw_pointer& p) { return p.address; })
            .def("__add__", &raw_pointer::plus)
            .def("__eq__", [](const raw_pointer& a, const raw_pointer& b) { return a.address == b.address; })
            .def("__hash__", [](const raw_pointer& p) { return std::hash<std::uint64_t>()(p.address); })
            .def("__repr__", &raw_pointer::describe);
        g_pointer_type = reinterpret_cast<PyTypeObject*>(pointer.ptr());
    }
}
