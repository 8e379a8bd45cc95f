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
// expect. Every core exception is an xcuda::error; which Python class each becomes, and the classes'
// names, bases and docstrings, are the core's (base/python_error_class); here the classes are made and
// the attributes set. The text a KernelFault adds about lost device arrays is base/lost_buffers'; here
// only the namespace is read.

#include "py_common.hpp"

#include "diagnostics.hpp"
#include "diagnostics_view.hpp"
#include "errors.hpp"
#include "lost_buffers.hpp"
#include "python_error_class.hpp"

#include <map>

namespace xcuda::python
{
    namespace
    {
        // The Python class of each name: the xcuda classes (core python_error_class) and the builtins it names.
        // Filled by register_errors; read only after it.
        std::map<std::string, PyObject*> exception_types;

        PyObject* type(const std::string& name) { return exception_types.at(name); }

        // The user's namespace: IPython's when a shell runs, else __main__'s (xcuda/shell.py asks IPython).
        py::dict user_namespace() { return py::module_::import("xcuda.shell").attr("user_namespace")(); }

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
        exception_types = {{"RuntimeError", PyExc_RuntimeError}, {"ValueError", PyExc_ValueError},
                           {"TypeError", PyExc_TypeError}, {"IndexError", PyExc_IndexError},
                           {"BufferError", PyExc_BufferError}, {"MemoryError", PyExc_MemoryError},
                           {"KeyboardInterrupt", PyExc_KeyboardInterrupt}};
        // IPython renders an exception through _render_traceback_ when it has one: every xcuda exception
        // shows its message and the notebook cell lines it passed through, no frames of IPython's or
        // xcuda's machinery (xcuda/short_traceback.py says how). Subclasses inherit it from the roots.
        for (const python_error_class::entry& e : python_error_class::defined())
        {
            PyObject* made = PyErr_NewExceptionWithDoc((std::string("xcuda.") + e.name).c_str(), e.doc, type(e.base), nullptr);
            if (!made)
            {
                throw py::error_already_set();
            }
            m.add_object(e.name, py::handle(made));
            exception_types[e.name] = made;
            if (python_error_class::is_root(e))
            {
                py::handle cls(made);
                py::setattr(cls, "_render_traceback_",
                            py::cpp_function([](py::object self) {
                                return py::module_::import("xcuda.short_traceback").attr("render")(self);
                            }, py::name("_render_traceback_"), py::is_method(cls),
                            py::doc("The traceback lines IPython shows: the message and the cell lines "
                                    "(xcuda.short_traceback.render).")));
            }
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
                raise_with(type("KernelFault"), e.what() + lost.describe(),
                           py::dict(py::arg("call") = e.call(), py::arg("code") = e.code(),
                                    py::arg("name") = e.name(), py::arg("kernels") = e.kernels(),
                                    py::arg("device") = e.device(), py::arg("lost") = lost_list(lost)));
            }
            catch (const session_lost_error& e)
            {
                raise_without_call(type("SessionLostError"), e.what(), "SessionLost");
            }
            catch (const out_of_memory_error& e)
            {
                raise_with(type("OutOfMemoryError"), e.what(),
                           py::dict(py::arg("call") = e.call(), py::arg("code") = e.code(),
                                    py::arg("name") = e.name(), py::arg("requested") = e.requested(),
                                    py::arg("free") = e.free_bytes()));
            }
            catch (const cuda_error& e)
            {
                // _editor_marks: the cell lines the JupyterLab extension marks (short_traceback publishes them).
                py::list marks;
                for (const cuda_error::editor_mark& m : e.marks())
                {
                    marks.append(py::dict(py::arg("cell") = m.cell, py::arg("line") = m.line,
                                          py::arg("severity") = "error", py::arg("message") = m.message));
                }
                raise_with(type("CudaError"), e.what(),
                           py::dict(py::arg("call") = e.call(), py::arg("code") = e.code(),
                                    py::arg("name") = e.name(), py::arg("_editor_marks") = marks));
            }
            catch (const cuda_unavailable_error& e)
            {
                raise_without_call(type("CudaUnavailableError"), e.what(), "CudaUnavailable");
            }
            catch (const compile_error& e)
            {
                raise_with(type("CompileError"), e.what(),
                           py::dict(py::arg("log") = e.log(), py::arg("options") = e.options(),
                                    py::arg("diagnostics") = diagnostics_list(e.parsed()),
                                    py::arg("html") = diagnostics_view::html(e.parsed()), py::arg("_shown") = false));
            }
            catch (const signature_error& e)
            {
                raise_with(type("SignatureError"), e.what(), py::dict(py::arg("line") = e.line()));
            }
            catch (const program_error& e)
            {
                raise_with(type("ProgramError"), e.what(), py::dict(py::arg("returncode") = e.status()));
            }
            catch (const nvrtc_error& e)
            {
                raise_with(type("NVRTCError"), e.what(), py::dict(py::arg("call") = e.call(), py::arg("code") = e.code()));
            }
            catch (const error& e)
            {
                // Exceptions without attributes of their own: the class the core names, with the message.
                PyErr_SetString(type(python_error_class::class_of(e)), e.what());
            }
        });
    }

    void raise_shown_compile_error(const compile_error& error, const std::vector<diagnostic>& shown, int line_offset,
                                   const std::string& summary)
    {
        raise_with(type("CompileError"), summary,
                   py::dict(py::arg("log") = diagnostics::shifted_log(error.log(), line_offset),
                            py::arg("options") = error.options(), py::arg("diagnostics") = diagnostics_list(shown),
                            py::arg("html") = diagnostics_view::html(shown), py::arg("_shown") = true));
        throw py::error_already_set();
    }
}
