// xcuda.Launcher: what kernel[grid, block] returns, called with the kernel's arguments.
//
// Written against the CPython API with vectorcall (no argument tuple, no keyword dict, no pybind11
// dispatch) because its call is the launch hot path: the arguments go straight from the caller's
// stack into the kernel's launch plan and then to cuLaunchKernel.
//
// Ownership: a Launcher shares ownership of its cuda_kernel (std::shared_ptr, placement-constructed
// in the object) and holds a reference to its stream object, so both outlive it. The configuration's
// rules and messages and the timing result are the core's (runtime/launch_configuration, kernel_timing).

#include "py_common.hpp"
#include "py_fast_launch.hpp"

#include <algorithm>
#include <cmath>

#include "cuda_driver.hpp"
#include "cuda_session.hpp"
#include "errors.hpp"
#include "event_timer.hpp"
#include "kernel_timing.hpp"
#include "launch_configuration.hpp"
#include "module_report.hpp"

namespace xcuda::python
{
    namespace
    {
        struct launcher_object
        {
            PyObject_HEAD
            vectorcallfunc vectorcall;
            std::shared_ptr<cuda_kernel> owner;
            cuda_kernel* kernel;
            launch_dims dims;
            PyObject* stream_object;
            std::shared_ptr<fast_launch_cache> fast;
            std::atomic<const void*> validated;  // cuda_kernel::launch's memo for dims
        };

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
        // A static type, filled in by register_launcher (C++17 has no designated initialisers).
        PyTypeObject launcher_type{PyVarObject_HEAD_INIT(nullptr, 0)};
#pragma GCC diagnostic pop

        // Sets the Python error for the C++ exception being handled, through pybind11's translators
        // (ours first), exactly as a pybind11-bound function would.
        void set_error_from_current_exception()
        {
            auto& translators = py::detail::get_internals().registered_exception_translators;
            std::exception_ptr last = std::current_exception();
            for (auto& translator : translators)
            {
                try
                {
                    translator(last);
                    return;
                }
                catch (...)
                {
                    last = std::current_exception();
                }
            }
            PyErr_SetString(PyExc_SystemError, "xcuda: an unknown C++ exception escaped a launch");
        }

        void launch(launcher_object* self, PyObject* const* args, std::size_t nargs)
        {
            if (self->kernel->module()->stale())
            {
                std::string message = module_report::stale_warning(*self->kernel);
                if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0)
                {
                    throw py::error_already_set();
                }
            }
            const cuda_session& session = self->kernel->module()->session();
            CUstream stream = stream_from_object(session, self->stream_object);
            launch_call call(*self->kernel, self->dims, stream);
            call_objects objects;
            bind_arguments(call, args, nargs, objects);
            run_call(call, objects);
            // A launch on a capturing stream, from whichever thread, is that graph's node (the default stream,
            // the hot path, never captures: on_stream answers at once).
            if (cuda_graph* capture = session.captures().on_stream(stream))
            {
                note_captured_launch(*capture, self->owner, self->dims, args, nargs);
            }
            if (!self->kernel->module()->fallback_note().empty())
            {
                std::string note = self->kernel->module()->fallback_note();
                self->kernel->module()->clear_fallback_note();
                if (PyErr_WarnEx(PyExc_UserWarning, note.c_str(), 1) < 0)
                {
                    throw py::error_already_set();
                }
            }
        }

        PyObject* launcher_vectorcall(PyObject* callable, PyObject* const* args, std::size_t nargsf, PyObject* kwnames)
        {
            auto* self = reinterpret_cast<launcher_object*>(callable);
            std::size_t nargs = PyVectorcall_NARGS(nargsf);
            try
            {
                if ((kwnames == nullptr || PyTuple_GET_SIZE(kwnames) == 0) && nargs >= self->kernel->plan().arity())
                {
                    // Every argument positional: the hot path, first the types seen before (py_fast_launch).
                    if (!self->fast->launch(*self->kernel, self->dims, self->stream_object, args, nargs, &self->validated))
                    {
                        launch(self, args, nargs);
                        self->fast->learn(*self->kernel, args, nargs);
                    }
                }
                else
                {
                    completed_arguments completed;  // by name, or left to their defaults
                    complete_arguments(*self->kernel, args, nargs, kwnames, completed);
                    launch(self, completed.pointers.data(), completed.pointers.size());
                }
            }
            catch (py::error_already_set& e)
            {
                e.restore();
                return nullptr;
            }
            catch (...)
            {
                set_error_from_current_exception();
                return nullptr;
            }
            Py_RETURN_NONE;
        }

        void launcher_dealloc(PyObject* object)
        {
            auto* self = reinterpret_cast<launcher_object*>(object);
            self->owner.~shared_ptr();
            self->fast.~shared_ptr();
            Py_XDECREF(self->stream_object);
            Py_TYPE(object)->tp_free(object);
        }

        PyObject* launcher_repr(PyObject* object)
        {
            auto* self = reinterpret_cast<launcher_object*>(object);
            std::string text = launch_configuration::launcher_text(self->kernel->signature().name, self->dims);
            return PyUnicode_FromString(text.c_str());
        }

        PyObject* launcher_time(PyObject* object, PyObject* args, PyObject* kwargs)
        {
            auto* self = reinterpret_cast<launcher_object*>(object);
            try
            {
                int repeat = 100;
                int warmup = 5;
                py::object nbytes = py::none();
                if (kwargs)
                {
                    py::dict options = py::reinterpret_borrow<py::dict>(kwargs);
                    for (auto item : options)
                    {
                        std::string key = item.first.cast<std::string>();
                        if (key == "repeat")
                            repeat = item.second.cast<int>();
                        else if (key == "warmup")
                            warmup = item.second.cast<int>();
                        else if (key == "nbytes")
                            nbytes = py::reinterpret_borrow<py::object>(item.second);
                        else
                            launch_configuration::unknown_timing_keyword(key);
                    }
                }
                py::object result = time_launch(*self->kernel, self->dims,
                                                py::reinterpret_borrow<py::object>(self->stream_object),
                                                py::reinterpret_borrow<py::args>(args), repeat, warmup, nbytes);
                return result.release().ptr();
            }
            catch (py::error_already_set& e)
            {
                e.restore();
                return nullptr;
            }
            catch (...)
            {
                set_error_from_current_exception();
                return nullptr;
            }
        }

        // Launcher.profile / .sanitize / .replay_bundle: the same C++ work as Kernel's, with this
        // launcher's configuration.
        template <class F>
        PyObject* replay_method(PyObject* object, PyObject* args, PyObject* kwargs, F run)
        {
            auto* self = reinterpret_cast<launcher_object*>(object);
            try
            {
                py::dict keywords = kwargs ? py::reinterpret_borrow<py::dict>(kwargs) : py::dict();
                py::object result = run(self->owner, self->dims, py::handle(self->stream_object),
                                        py::reinterpret_borrow<py::args>(args), keywords);
                return result.release().ptr();
            }
            catch (py::error_already_set& e)
            {
                e.restore();
                return nullptr;
            }
            catch (...)
            {
                set_error_from_current_exception();
                return nullptr;
            }
        }

        PyObject* launcher_profile(PyObject* object, PyObject* args, PyObject* kwargs)
        {
            return replay_method(object, args, kwargs,
                                 [](const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims, py::handle stream,
                                    py::args a, py::dict keywords) {
                                     return profile_launch(kernel, dims, stream, a, profile_options_from(keywords));
                                 });
        }

        PyObject* launcher_sanitize(PyObject* object, PyObject* args, PyObject* kwargs)
        {
            return replay_method(object, args, kwargs,
                                 [](const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims, py::handle stream,
                                    py::args a, py::dict keywords) {
                                     sanitize_options o = sanitize_options_from(keywords, "tool and keep");
                                     return sanitize_launch(kernel, dims, stream, a, o.tool, o.keep);
                                 });
        }

        PyObject* launcher_replay_bundle(PyObject* object, PyObject* args, PyObject* kwargs)
        {
            return replay_method(object, args, kwargs,
                                 [](const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims, py::handle stream,
                                    py::args a, py::dict keywords) {
                                     if (py::len(keywords))
                                     {
                                         throw py::type_error("replay_bundle() takes the kernel's arguments only");
                                     }
                                     return replay_bundle_of(kernel, dims, stream, a);
                                 });
        }

        PyObject* get_grid(PyObject* object, void*)
        {
            return dims_tuple(reinterpret_cast<launcher_object*>(object)->dims.grid).release().ptr();
        }
        PyObject* get_block(PyObject* object, void*)
        {
            return dims_tuple(reinterpret_cast<launcher_object*>(object)->dims.block).release().ptr();
        }
        PyObject* get_shared_mem(PyObject* object, void*)
        {
            return PyLong_FromUnsignedLong(reinterpret_cast<launcher_object*>(object)->dims.shared_mem);
        }
        PyObject* get_stream(PyObject* object, void*)
        {
            PyObject* stream = reinterpret_cast<launcher_object*>(object)->stream_object;
            Py_INCREF(stream);
            return stream;
        }
        PyObject* get_signature(PyObject* object, void*)
        {
            return PyUnicode_FromString(reinterpret_cast<launcher_object*>(object)->kernel->signature().to_string().c_str());
        }

        PyMethodDef launcher_methods[] = {
            {"time", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&launcher_time)),
             METH_VARARGS | METH_KEYWORDS,
             "time(*args, repeat=100, warmup=5, nbytes=None)\n--\n\n"
             "Launch `repeat` times (after `warmup` launches), timing each with CUDA events.\n\n"
             "Returns a KernelTiming with the median kernel time and, when the byte count is known\n"
             "(`nbytes`, or by default the bytes of the array arguments), the achieved bandwidth."},
            {"profile", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&launcher_profile)),
             METH_VARARGS | METH_KEYWORDS,
             "profile(*args, full=False, source=True, keep=False)\n--\n\n"
             "Profile this launch with Nsight Compute (ncu) in a child process that makes it again from a copy\n"
             "of its buffers (xcuda-replay): the session is only read. Returns an xcuda.LaunchProfile: duration,\n"
             "DRAM and SM throughput, occupancy, registers, shared memory, a verdict, the lines the time goes\n"
             "to, ncu's advice. full: ncu's full section set; source: per-line figures; keep: keep the bundle\n"
             "and ncu's report (profile.ncu-rep) and name the folder."},
            {"sanitize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&launcher_sanitize)),
             METH_VARARGS | METH_KEYWORDS,
             "sanitize(*args, tool='memcheck', keep=False)\n--\n\n"
             "Run this launch under compute-sanitizer (memcheck, racecheck, initcheck or synccheck) in a child\n"
             "process that makes it again from a copy of its buffers: an out-of-bounds write or a race is found\n"
             "without a fault in the session. Returns an xcuda.SanitizerReport."},
            {"replay_bundle", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&launcher_replay_bundle)),
             METH_VARARGS | METH_KEYWORDS,
             "replay_bundle(*args)\n--\n\n"
             "Write this launch (CUBIN with line information, arguments, buffers' bytes) to a new private folder\n"
             "and return its path: `xcuda-replay FOLDER` (next to the xcuda module) makes the launch again, under\n"
             "any tool (cuda-gdb, nsys). Removing the folder is yours."},
            {nullptr, nullptr, 0, nullptr}};

        PyGetSetDef launcher_getset[] = {
            {"grid", get_grid, nullptr, "Grid dimensions (x, y, z).", nullptr},
            {"block", get_block, nullptr, "Block dimensions (x, y, z).", nullptr},
            {"shared_mem", get_shared_mem, nullptr, "Dynamic shared memory in bytes.", nullptr},
            {"stream", get_stream, nullptr, "The stream launched on (None: the default stream).", nullptr},
            {"signature", get_signature, nullptr, "The kernel's C++ signature.", nullptr},
            {nullptr, nullptr, nullptr, nullptr, nullptr}};

        // An int, or an object with __index__, as a long long; false past 64 bits (`negative` says which way).
        bool index_value(py::handle value, long long& result, bool& negative)
        {
            py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
            if (!index)
            {
                throw py::error_already_set();
            }
            int overflow = 0;
            result = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
            negative = overflow < 0;
            return overflow == 0;
        }

        unsigned dimension(py::handle value, const char* what, int axis)
        {
            if (!PyLong_Check(value.ptr()) && !PyIndex_Check(value.ptr()))
            {
                launch_configuration::dimension_not_int(what, axis, type_name(value));
            }
            long long number = 0;
            bool negative = false;
            if (!index_value(value, number, negative))
            {
                launch_configuration::dimension_out_of_range(what, axis, py::repr(value).cast<std::string>(), negative);
            }
            return launch_configuration::dimension(number, what, axis);
        }

        unsigned shared_mem_bytes(py::handle value)
        {
            if (!PyLong_Check(value.ptr()) && !PyIndex_Check(value.ptr()))
            {
                launch_configuration::shared_mem_not_int(type_name(value));
            }
            long long bytes = 0;
            bool negative = false;
            if (!index_value(value, bytes, negative))
            {
                launch_configuration::shared_mem_out_of_range(py::repr(value).cast<std::string>());
            }
            return launch_configuration::shared_mem(bytes);
        }

        std::array<unsigned, 3> dims_from(py::handle value, const char* what)
        {
            std::array<unsigned, 3> dims{1, 1, 1};
            if (py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value))
            {
                py::sequence sequence = py::reinterpret_borrow<py::sequence>(value);
                launch_configuration::check_dimension_count(what, sequence.size());
                for (std::size_t i = 0; i < sequence.size(); ++i)
                {
                    dims[i] = dimension(sequence[i], what, static_cast<int>(i));
                }
                return dims;
            }
            dims[0] = dimension(value, what, 0);
            return dims;
        }
    }

    void parse_launch_key(const cuda_session& session, py::handle key, launch_dims& dims, py::object& stream_object)
    {
        if (!py::isinstance<py::tuple>(key))
        {
            launch_configuration::key_not_tuple(py::repr(key).cast<std::string>());
        }
        py::tuple items = py::reinterpret_borrow<py::tuple>(key);
        launch_configuration::check_key_size(items.size());
        dims.grid = dims_from(items[0], "grid");
        dims.block = dims_from(items[1], "block");
        stream_object = items.size() > 2 ? py::reinterpret_borrow<py::object>(items[2]) : py::none();
        if (!stream_object.is_none())
        {
            stream_from_object(session, stream_object);  // a bad stream fails here, not at the call
        }
        dims.shared_mem = items.size() > 3 ? shared_mem_bytes(items[3]) : 0;
    }

    std::array<unsigned, 3> parse_dims(py::handle value, const char* what)
    {
        return dims_from(value, what);
    }

    py::object make_launcher(std::shared_ptr<cuda_kernel> kernel, const launch_dims& dims, py::object stream_object,
                             std::shared_ptr<fast_launch_cache> fast)
    {
        auto* self = PyObject_New(launcher_object, &launcher_type);
        if (!self)
        {
            throw py::error_already_set();
        }
        self->vectorcall = launcher_vectorcall;
        new (&self->owner) std::shared_ptr<cuda_kernel>(std::move(kernel));
        self->kernel = self->owner.get();
        new (&self->fast) std::shared_ptr<fast_launch_cache>(std::move(fast));
        new (&self->validated) std::atomic<const void*>(nullptr);
        self->dims = dims;
        self->stream_object = stream_object.release().ptr();
        return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
    }

    namespace
    {
        // The core's timing with the bytes as the caller gave them (an int stays an int in Python).
        struct python_timing : kernel_timing
        {
            py::object nbytes_object;
        };
    }

    py::object time_launch(cuda_kernel& kernel, const launch_dims& dims, py::object stream_object, py::args args,
                           int repeat, int warmup, py::object nbytes)
    {
        launch_configuration::check_timing(repeat, warmup);
        const cuda_session& session = kernel.module()->session();
        refuse_while_capturing(session, "timing a launch", "it waits for CUDA events; time g.launch() after the `with "
                               "xcuda.graph()` block instead");
        CUstream stream = stream_from_object(session, stream_object);
        launch_call call(kernel, dims, stream);
        call_objects objects;
        bind_argument_tuple(call, args, objects);
        std::optional<double> counted;
        if (!nbytes.is_none())
        {
            counted = nbytes.cast<double>();
        }
        python_timing timing;
        {
            py::gil_scoped_release release;
            static_cast<kernel_timing&>(timing) = kernel_timing::measure(call, repeat, warmup, counted);
        }
        write_back(objects);
        timing.nbytes_object = nbytes.is_none() && timing.nbytes ? py::int_(call.array_bytes()) : nbytes;
        return py::cast(std::move(timing));
    }

    namespace
    {
        py::dict launch_options(py::object arguments)
        {
            if (!arguments.is_none())
            {
                if (!py::isinstance<py::str>(arguments))
                {
                    throw usage_error("launch_options(arguments=...) takes 'pointers' or 'buffer', not a " +
                                      std::string(Py_TYPE(arguments.ptr())->tp_name));
                }
                cuda_kernel::set_passing(cuda_kernel::parse_passing(arguments.cast<std::string>()));
            }
            py::dict d;
            d["arguments"] = cuda_kernel::passing_name(cuda_kernel::passing());
            return d;
        }
    }

    void register_launcher(py::module_& m)
    {
        m.def("launch_options", &launch_options, py::kw_only(), py::arg("arguments") = py::none(),
              R"(How launches hand their arguments to the driver; returns the settings (a dict).

With no arguments it only reports. arguments chooses the way (XCUDA_LAUNCH_ARGUMENTS sets it at start):
  'pointers'  one pointer per parameter (cuLaunchKernel's kernelParams), as CuPy and cuda.core pass them
  'buffer'    the values packed in one buffer laid out as the compiled kernel lays out its parameters
              (CU_LAUNCH_PARAM_BUFFER_POINTER); a kernel whose layout the driver does not report, and a
              cooperative launch, still pass pointers
The kernel receives the same values either way; tests/bench/bench_gpu.py measures both. It applies to the
launches that start after the call, from every thread.)");

        launcher_type.tp_name = "xcuda.Launcher";
        launcher_type.tp_basicsize = sizeof(launcher_object);
        launcher_type.tp_dealloc = launcher_dealloc;
        launcher_type.tp_vectorcall_offset = offsetof(launcher_object, vectorcall);
        launcher_type.tp_call = PyVectorcall_Call;
        launcher_type.tp_repr = launcher_repr;
        launcher_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
        launcher_type.tp_doc = "A kernel with its launch configuration: call it with the kernel's arguments.";
        launcher_type.tp_methods = launcher_methods;
        launcher_type.tp_getset = launcher_getset;
        if (PyType_Ready(&launcher_type) < 0)
        {
            throw py::error_already_set();
        }
        m.add_object("Launcher", py::handle(reinterpret_cast<PyObject*>(&launcher_type)));

        py::class_<python_timing>(m, "KernelTiming", "Kernel times measured with CUDA events (milliseconds).")
            .def_readonly("kernel", &kernel_timing::kernel, "The kernel's name.")
            .def_readonly("samples_ms", &kernel_timing::samples_ms, "Each launch's time in milliseconds.")
            .def_readonly("median_ms", &kernel_timing::median_ms, "Median launch time in milliseconds.")
            .def_readonly("min_ms", &kernel_timing::min_ms, "Fastest launch in milliseconds.")
            .def_readonly("max_ms", &kernel_timing::max_ms, "Slowest launch in milliseconds.")
            .def_readonly("nbytes", &python_timing::nbytes_object, "Bytes counted for bandwidth, or None.")
            .def_property_readonly("bandwidth_gbs", &kernel_timing::bandwidth_gbs,
                                   "nbytes / median time, in GB/s (1e9 bytes per second), or None.")
            .def("__repr__", &kernel_timing::text);
    }
}
