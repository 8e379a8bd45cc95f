// The exception classes of `xcuda` and the one translator from the core's C++ exceptions to them.
//
//   CudaError(RuntimeError)          a driver call failed: .call, .code, .name
//     CudaUnavailableError           no driver or no GPU; compiling still works
//     OutOfMemoryError               .requested and .free bytes
//     KernelFault                    a kernel faulted: .kernels, .device, .lost (buffers and names)
//     SessionLostError               a GPU operation after a fault; %cuda_recover replaces the process
//   DeviceMismatchError(ValueError)  an argument or stream on another device than the launch
//   GraphCaptureError(RuntimeError)  what `with xcuda.graph():` cannot capture, or a graph misused
//   KeyboardInterrupt                an interrupted wait for the GPU (says what still runs)
//   CompileError(RuntimeError)       NVRTC rejected the cell: .log, .options, .diagnostics, .html
//   SignatureError(ValueError)       a __global__ declaration could not be read: .line
//   ToolNotFoundError(RuntimeError)  nvdisasm / cuobjdump missing for a SASS view
//   ToolError(RuntimeError)          a toolkit program failed (its message included)
//   NVRTCError(RuntimeError)         an NVRTC API call failed for another reason than the source
//   ProgramError(RuntimeError)       a %%cuda_program program exited with a non-zero status: .returncode
//   SessionClosedError(RuntimeError) an object of a CUDA session that was closed
// Argument and usage problems are TypeError / ValueError, host memory MemoryError, as Python users
// expect. Every core exception is an xcuda::error; the translator below maps each class once. The text
// a KernelFault adds about lost device arrays is base/lost_buffers'; here only the namespace is read.

#include "py_common.hpp"


#include "diagnostics.hpp"
#include "diagnostics_view.hpp"
#include "errors.hpp"
#include "lost_buffers.hpp"

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
        PyObject* kernel_fault_type = nullptr;
        PyObject* session_lost_type = nullptr;
        PyObject* device_mismatch_type = nullptr;
        PyObject* tool_error_type = nullptr;
        PyObject* nvrtc_error_type = nullptr;
        PyObject* session_closed_type = nullptr;
        PyObject* graph_capture_type = nullptr;
        PyObject* program_error_type = nullptr;

        // The user's namespace: IPython's when a shell runs, else __main__'s.
        py::dict user_namespace()
        {
            try
            {
                py::object shell = py::module_::import("IPython").attr("get_ipython")();
                if (!shell.is_none())
                {
                    return shell.attr("user_ns");
                }
            }
            catch (const py::error_already_set&)
            {
            }
            return py::module_::import("__main__").attr("__dict__");
        }

        // The lost buffers (base/lost_buffers) named by the user's variables that view them.
        lost_buffers name_lost_buffers(const kernel_fault& fault)
        {
            lost_buffers lost(fault);
            try
            {
                PyTypeObject* array_type = device_array_type();
                for (auto item : user_namespace())
                {
                    if (Py_TYPE(item.second.ptr()) == array_type && PyUnicode_Check(item.first.ptr()))
                    {
                        std::string name = item.first.cast<std::string>();
                        if (!name.empty() && name[0] != '_')
                        {
                            const device_array& array = unchecked_instance<device_array>(item.second.ptr());
                            lost.name(reinterpret_cast<std::uintptr_t>(array.buffer.get()), name);
                        }
                    }
                }
            }
            catch (const py::error_already_set&)
            {
                // A namespace that cannot be read only loses the names, not the report.
            }
            return lost;
        }

        py::list lost_list(const lost_buffers& lost)
        {
            py::list list;
            for (const auto& entry : lost.entries())
            {
                list.append(py::dict(py::arg("label") = entry.buffer.label, py::arg("bytes") = entry.buffer.bytes,
                                     py::arg("device") = entry.buffer.device, py::arg("names") = entry.names));
            }
            return list;
        }

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

        // A CudaError subclass raised without a failed driver call: call and code are None.
        void raise_without_call(PyObject* type, const std::string& message, const char* name)
        {
            raise_with(type, message, py::dict(py::arg("call") = py::none(), py::arg("code") = py::none(),
                                               py::arg("name") = name));
        }
    }

    py::list diagnostics_list(const std::vector<diagnostic>& messages, bool with_source_line)
    {
        py::list parsed;
        for (const auto& d : messages)
        {
            py::dict entry(py::arg("file") = d.file, py::arg("line") = d.line, py::arg("column") = d.column,
                           py::arg("severity") = d.severity, py::arg("message") = d.message);
            if (with_source_line)
            {
                entry["source_line"] = d.source_line;
            }
            entry["hint"] = d.hint;
            parsed.append(entry);
        }
        return parsed;
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
                                           "diagnostics (a dict per message: file ('' for the cell, else the "
                                           "header cell's name), line (in that file), column, severity, message, "
                                           "source_line, hint) and html (the messages with a caret under each).");
        signature_error_type = new_exception(m, "SignatureError", PyExc_ValueError,
                                             "A __global__ declaration could not be read. Attribute: line.");

        tool_not_found_type = new_exception(m, "ToolNotFoundError", PyExc_RuntimeError,
                                            "A CUDA toolkit program a view needs (nvdisasm, cuobjdump) is missing.");
        kernel_fault_type = new_exception(m, "KernelFault", cuda_error_type,
                                          "A kernel faulted (illegal address, trap, assert...). Attributes: kernels "
                                          "(the launches since the last wait, the likeliest last), device, lost (a "
                                          "dict per lost device buffer: label, bytes, device, names). CUDA refuses "
                                          "further GPU work in this process; %cuda_recover replaces it.");
        session_lost_type = new_exception(m, "SessionLostError", cuda_error_type,
                                          "A GPU operation after a kernel fault made the GPU unusable in this "
                                          "process; %cuda_recover replaces the process keeping your variables.");
        device_mismatch_type = new_exception(m, "DeviceMismatchError", PyExc_ValueError,
                                             "A launch argument or stream lives on another device than the launch.");
        tool_error_type = new_exception(m, "ToolError", PyExc_RuntimeError,
                                        "A CUDA toolkit program (nvdisasm, cuobjdump, ptxas) failed; the message "
                                        "carries what it said.");
        nvrtc_error_type = new_exception(m, "NVRTCError", PyExc_RuntimeError,
                                         "An NVRTC API call failed for another reason than the source (a bad name "
                                         "expression, out of memory, a broken installation). Attributes: call, code.");
        session_closed_type = new_exception(m, "SessionClosedError", PyExc_RuntimeError,
                                            "A buffer, stream or event of a CUDA session that was closed.");
        graph_capture_type = new_exception(m, "GraphCaptureError", PyExc_RuntimeError,
                                           "Inside `with xcuda.graph():` an operation a CUDA graph cannot hold (a "
                                           "synchronous numpy copy, a synchronize, an allocation), or a graph used "
                                           "before its capture ended; the message says what to do instead.");

        program_error_type = new_exception(m, "ProgramError", PyExc_RuntimeError,
                                           "A %%cuda_program program (or the profiler or sanitizer it ran under) "
                                           "ended with a non-zero exit status. Attribute: returncode.");

        // IPython renders an exception through _render_traceback_ when it has one: every xcuda exception
        // shows its message and the notebook cell lines it passed through, no frames of IPython's or
        // xcuda's machinery (xcuda/short_traceback.py says how). Subclasses inherit it from these.
        for (PyObject* type : {cuda_error_type, compile_error_type, signature_error_type, tool_not_found_type,
                               device_mismatch_type, tool_error_type, nvrtc_error_type, session_closed_type,
                               graph_capture_type, program_error_type})
        {
            py::handle cls(type);
            py::setattr(cls, "_render_traceback_",
                        py::cpp_function([](py::object self) {
                            return py::module_::import("xcuda.short_traceback").attr("render")(self);
                        }, py::name("_render_traceback_"), py::is_method(cls),
                        py::doc("The traceback lines IPython shows: the message and the cell lines "
                                "(xcuda.short_traceback.render).")));
        }

        py::register_exception_translator([](std::exception_ptr pointer) {
            try
            {
                if (pointer)
                {
                    std::rethrow_exception(pointer);
                }
            }
            catch (const kernel_fault& e)
            {
                lost_buffers lost = name_lost_buffers(e);
                raise_with(kernel_fault_type, e.what() + lost.describe(),
                           py::dict(py::arg("call") = e.call(), py::arg("code") = e.code(),
                                    py::arg("name") = e.name(), py::arg("kernels") = e.kernels(),
                                    py::arg("device") = e.device(), py::arg("lost") = lost_list(lost)));
            }
            catch (const session_lost_error& e)
            {
                raise_without_call(session_lost_type, e.what(), "SessionLost");
            }
            catch (const interrupted_error& e)
            {
                PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
            }
            catch (const device_mismatch_error& e)
            {
                PyErr_SetString(device_mismatch_type, e.what());
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
                raise_without_call(unavailable_type, e.what(), "CudaUnavailable");
            }
            catch (const compile_error& e)
            {
                raise_with(compile_error_type, e.what(),
                           py::dict(py::arg("log") = e.log(), py::arg("options") = e.options(),
                                    py::arg("diagnostics") = diagnostics_list(e.parsed()),
                                    py::arg("html") = diagnostics_view::html(e.parsed()), py::arg("_shown") = false));
            }
            catch (const signature_error& e)
            {
                raise_with(signature_error_type, e.what(), py::dict(py::arg("line") = e.line()));
            }
            catch (const tool_not_found_error& e)
            {
                PyErr_SetString(tool_not_found_type, e.what());
            }
            catch (const index_error& e)
            {
                PyErr_SetString(PyExc_IndexError, e.what());
            }
            catch (const export_error& e)
            {
                PyErr_SetString(PyExc_BufferError, e.what());
            }
            catch (const argument_type_error& e)
            {
                PyErr_SetString(PyExc_TypeError, e.what());
            }
            catch (const argument_value_error& e)
            {
                PyErr_SetString(PyExc_ValueError, e.what());
            }
            catch (const usage_error& e)
            {
                PyErr_SetString(PyExc_ValueError, e.what());
            }
            catch (const tool_error& e)
            {
                PyErr_SetString(tool_error_type, e.what());
            }
            catch (const program_error& e)
            {
                raise_with(program_error_type, e.what(), py::dict(py::arg("returncode") = e.status()));
            }
            catch (const nvrtc_error& e)
            {
                raise_with(nvrtc_error_type, e.what(), py::dict(py::arg("call") = e.call(), py::arg("code") = e.code()));
            }
            catch (const session_closed_error& e)
            {
                PyErr_SetString(session_closed_type, e.what());
            }
            catch (const graph_capture_error& e)
            {
                PyErr_SetString(graph_capture_type, e.what());
            }
            catch (const host_out_of_memory_error& e)
            {
                PyErr_SetString(PyExc_MemoryError, e.what());
            }
            catch (const error& e)
            {
                // A class added to the hierarchy without its own Python exception yet.
                PyErr_SetString(PyExc_RuntimeError, e.what());
            }
        });
    }

    void raise_shown_compile_error(const compile_error& error, const std::vector<diagnostic>& shown, int line_offset,
                                   const std::string& summary)
    {
        raise_with(compile_error_type, summary,
                   py::dict(py::arg("log") = diagnostics::shifted_log(error.log(), line_offset),
                            py::arg("options") = error.options(), py::arg("diagnostics") = diagnostics_list(shown),
                            py::arg("html") = diagnostics_view::html(shown), py::arg("_shown") = true));
        throw py::error_already_set();
    }
}
