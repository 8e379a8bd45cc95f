// The exception classes of `xcuda` and the one translator from the core's C++ exceptions to them.
//
//   CudaError(RuntimeError)          a driver call failed: .call, .code, .name
//     CudaUnavailableError           no driver or no GPU; compiling still works
//     OutOfMemoryError               .requested and .free bytes
//   CompileError(RuntimeError)       NVRTC rejected the cell: .log, .options, .diagnostics, .html
//   SignatureError(ValueError)       a __global__ declaration could not be read: .line
//   ToolNotFoundError(RuntimeError)  nvdisasm / cuobjdump missing for a SASS view
// Argument problems are TypeError / ValueError, as Python users expect.

#include "py_common.hpp"

#include "errors.hpp"

namespace xcuda::python
{
    namespace
    {
        PyObject* cuda_error_type = nullptr;
        PyObject* unavailable_type = nullptr;
        PyObject* out_of_memory_type = nullptr;
        PyObject* compile_error_type = nullptr;
        PyObject* signature_error_type = nullptr;
        PyObject* tool_not_found_type = nullptr;

        PyObject* new_exception(py::module_& m, const char* name, PyObject* base, const char* doc)
        {
            std::string qualified = std::string("xcuda.") + name;
            PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
            if (!type)
            {
                throw py::error_already_set();
            }
            m.add_object(name, py::handle(type));
            return type;
        }

        // Raises `type(message)` with extra attributes set on the instance.
        void raise_with(PyObject* type, const std::string& message, const py::dict& attributes)
        {
            py::object instance = py::handle(type)(message);
            for (auto item : attributes)
            {
                py::setattr(instance, item.first, item.second);
            }
            PyErr_SetObject(type, instance.ptr());
        }
    }

    void register_errors(py::module_& m)
    {
        cuda_error_type = new_exception(m, "CudaError", PyExc_RuntimeError,
                                        "A CUDA driver call failed. Attributes: call (the driver function), code "
                                        "(the CUresult value), name (the CUresult name).");
        unavailable_type = new_exception(m, "CudaUnavailableError", cuda_error_type,
                                         "No NVIDIA driver or no CUDA device: GPU operations cannot run. "
                                         "Compiling %%cuda cells and inspecting PTX still work.");
        out_of_memory_type = new_exception(m, "OutOfMemoryError", cuda_error_type,
                                           "An allocation larger than the device's free memory. Attributes: "
                                           "requested, free (bytes).");
        compile_error_type = new_exception(m, "CompileError", PyExc_RuntimeError,
                                           "NVRTC could not compile the source. Attributes: log (NVRTC's log, "
                                           "with the cell's own line numbers), options (what NVRTC was given), "
                                           "diagnostics (a dict per message: line, column, severity, message, "
                                           "source_line, hint) and html (the messages with a caret under each).");
        signature_error_type = new_exception(m, "SignatureError", PyExc_ValueError,
                                             "A __global__ declaration could not be read. Attribute: line.");

        tool_not_found_type = new_exception(m, "ToolNotFoundError", PyExc_RuntimeError,
                                            "A CUDA toolkit program a view needs (nvdisasm, cuobjdump) is missing.");

        py::register_exception_translator([](std::exception_ptr pointer) {
            try
            {
                if (pointer)
                {
                    std::rethrow_exception(pointer);
                }
            }
            catch (const out_of_memory_error& e)
            {
                raise_with(out_of_memory_type, e.what(),
                           py::dict(py::arg("call") = e.call(), py::arg("code") = e.code(),
                                    py::arg("name") = e.name(), py::arg("requested") = e.requested(),
                                    py::arg("free") = e.free_bytes()));
            }
            catch (const cuda_error& e)
            {
                raise_with(cuda_error_type, e.what(),
                           py::dict(py::arg("call") = e.call(), py::arg("code") = e.code(),
                                    py::arg("name") = e.name()));
            }
            catch (const cuda_unavailable_error& e)
            {
                raise_with(unavailable_type, e.what(),
                           py::dict(py::arg("call") = py::none(), py::arg("code") = py::none(),
                                    py::arg("name") = "CudaUnavailable"));
            }
            catch (const compile_error& e)
            {
                py::list parsed;
                for (const auto& d : e.parsed())
                {
                    parsed.append(py::dict(py::arg("line") = d.line, py::arg("column") = d.column,
                                           py::arg("severity") = d.severity, py::arg("message") = d.message,
                                           py::arg("source_line") = d.source_line, py::arg("hint") = d.hint));
                }
                raise_with(compile_error_type, e.what(),
                           py::dict(py::arg("log") = e.log(), py::arg("options") = e.options(),
                                    py::arg("diagnostics") = parsed, py::arg("html") = diagnostics::html(e.parsed())));
            }
            catch (const signature_error& e)
            {
                raise_with(signature_error_type, e.what(), py::dict(py::arg("line") = e.line()));
            }
            catch (const tool_not_found_error& e)
            {
                PyErr_SetString(tool_not_found_type, e.what());
            }
            catch (const argument_type_error& e)
            {
                PyErr_SetString(PyExc_TypeError, e.what());
            }
            catch (const argument_value_error& e)
            {
                PyErr_SetString(PyExc_ValueError, e.what());
            }
        });
    }
}
