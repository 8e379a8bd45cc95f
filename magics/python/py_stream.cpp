// xcuda.Stream, xcuda.Event and xcuda.synchronize().
//
// Ownership: a Stream or Event owns its driver handle and destroys it when garbage-collected, unless
// the session that made it has closed (the handle died with the context). Waits release the GIL.

#include "py_common.hpp"

#include "cuda_driver.hpp"
#include "cuda_session.hpp"
#include "errors.hpp"

namespace xcuda::python
{
    namespace
    {
        // A driver handle made in one device's context: remembers which, and refuses use after that
        // context is gone (session closed, or lost to a kernel fault).
        struct device_handle
        {
            int device = 0;
            std::uint64_t generation = 0;

            void made_here()
            {
                cuda_session& session = cuda_session::instance();
                session.make_current();
                device = session.device_ordinal();
                generation = session.generation();
            }
            bool alive() const noexcept { return cuda_session::instance().alive(device, generation); }
            void check_alive(const char* what) const
            {
                if (!alive())
                {
                    const std::string& lost = cuda_session::instance().lost_reason();
                    if (!lost.empty())
                    {
                        throw session_lost_error(std::string("this ") + what + " of device " + std::to_string(device) +
                                                 " was lost: " + lost);
                    }
                    throw session_closed_error(std::string("this ") + what +
                                             " belonged to a CUDA session that was closed; create a new one");
                }
            }
            void make_current() const { cuda_session::instance().make_current(device); }
        };

        struct stream : device_handle
        {
            CUstream handle = nullptr;

            stream()
            {
                made_here();
                // CU_STREAM_DEFAULT: ordered with the legacy default stream, which xcuda's own copies use.
                check(cuda_driver::get().cuStreamCreate(&handle, CU_STREAM_DEFAULT), "cuStreamCreate");
            }
            ~stream()
            {
                if (handle && cuda_session::instance().make_current_if_alive(device, generation))
                {
                    cuda_driver::get().cuStreamDestroy(handle);
                }
            }
            stream(const stream&) = delete;
            stream& operator=(const stream&) = delete;

            CUstream get() const
            {
                check_alive("Stream");
                return handle;
            }
        };

        struct event : device_handle
        {
            CUevent handle = nullptr;
            bool recorded = false;

            explicit event(bool timing)
            {
                made_here();
                check(cuda_driver::get().cuEventCreate(&handle, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
                      "cuEventCreate");
            }
            ~event()
            {
                if (handle && cuda_session::instance().make_current_if_alive(device, generation))
                {
                    cuda_driver::get().cuEventDestroy(handle);
                }
            }
            event(const event&) = delete;
            event& operator=(const event&) = delete;

            CUevent get() const
            {
                check_alive("Event");
                return handle;
            }
        };

        // Waits with the GIL released (other Python threads run), interruptibly (see cuda_session::wait).
        void wait_for_stream(CUstream handle, int device)
        {
            cuda_session& session = cuda_session::instance();
            session.make_current(device);
            py::gil_scoped_release release;
            session.wait(handle);
        }

        void wait_for_event(CUevent handle, int device)
        {
            cuda_session& session = cuda_session::instance();
            session.make_current(device);
            py::gil_scoped_release release;
            session.wait_event(handle);
        }
    }

    CUstream stream_from_object(py::handle object)
    {
        if (object.is_none())
        {
            return cuda_session::instance().stream();
        }
        if (py::isinstance<stream>(object))
        {
            const stream& s = object.cast<const stream&>();
            int current = cuda_session::instance().device_ordinal();
            if (s.device != current)
            {
                throw device_mismatch_error("the stream belongs to device " + std::to_string(s.device) +
                                            " but the current device is " + std::to_string(current) +
                                            "; use it inside `with xcuda.device(" + std::to_string(s.device) +
                                            "):`, or create a Stream on device " + std::to_string(current));
            }
            return s.get();
        }
        if (PyLong_Check(object.ptr()))
        {
            return reinterpret_cast<CUstream>(object.cast<std::uintptr_t>());
        }
        if (py::hasattr(object, "__cuda_stream__"))
        {
            py::tuple info = object.attr("__cuda_stream__")();
            return reinterpret_cast<CUstream>(info[1].cast<std::uintptr_t>());
        }
        for (const char* attribute : {"cuda_stream", "ptr", "handle"})
        {
            if (py::hasattr(object, attribute))
            {
                py::object value = object.attr(attribute);
                if (PyLong_Check(value.ptr()))
                {
                    return reinterpret_cast<CUstream>(value.cast<std::uintptr_t>());
                }
            }
        }
        throw py::type_error("a stream must be None (the default stream), an xcuda.Stream, an int handle, or an "
                             "object with __cuda_stream__ (cuda.core), .ptr (CuPy) or .cuda_stream (PyTorch); got " +
                             str_of(py::type::of(object)));
    }

    void register_streams(py::module_& m)
    {
        py::class_<stream>(m, "Stream", R"(A CUDA stream in the session's context.

Launch on it with kernel[grid, block, stream](...). It is ordered with the default stream, like
CuPy's and PyTorch's ordinary streams.)")
            .def(py::init<>())
            .def("synchronize",
                 [](const stream& s) { wait_for_stream(s.get(), s.device); },
                 "Wait until all work queued on the stream has finished (an interrupt ends the wait).")
            .def("query",
                 [](const stream& s) {
                     CUresult result = cuda_driver::get().cuStreamQuery(s.get());
                     if (result == CUDA_ERROR_NOT_READY)
                     {
                         return false;
                     }
                     check(result, "cuStreamQuery");
                     return true;
                 },
                 "True when all work queued on the stream has finished.")
            .def_property_readonly("handle", [](const stream& s) { return reinterpret_cast<std::uintptr_t>(s.get()); },
                                   "The CUstream handle (an int).")
            .def_property_readonly("device", [](const stream& s) { return s.device; },
                                   "The device whose context the stream belongs to.")
            .def("__cuda_stream__",
                 [](const stream& s) { return py::make_tuple(0, reinterpret_cast<std::uintptr_t>(s.get())); },
                 "The cuda.core stream protocol: (version, handle).")
            .def("__repr__", [](const stream& s) {
                return "<xcuda.Stream handle=0x" + [&] {
                    char text[32];
                    std::snprintf(text, sizeof text, "%llx",
                                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(s.handle)));
                    return std::string(text);
                }() + ">";
            });

        py::class_<event>(m, "Event", R"(A CUDA event, for ordering and timing work on streams.

    start, end = xcuda.Event(), xcuda.Event()
    start.record(); saxpy[g, b](a, x, y, out, n); end.record()
    end.synchronize(); print(start.elapsed_time(end), "ms"))")
            .def(py::init<bool>(), py::arg("timing") = true)
            .def("record",
                 [](event& e, py::object s) {
                     CUevent handle = e.get();
                     CUstream on = s.is_none() ? nullptr : stream_from_object(s);
                     e.make_current();
                     check(cuda_driver::get().cuEventRecord(handle, on), "cuEventRecord");
                     e.recorded = true;
                 },
                 py::arg("stream") = py::none(), "Record the event on a stream (default: the default stream).")
            .def("synchronize",
                 [](const event& e) { wait_for_event(e.get(), e.device); },
                 "Wait until the work recorded before the event has finished.")
            .def("query",
                 [](const event& e) {
                     CUresult result = cuda_driver::get().cuEventQuery(e.handle);
                     if (result == CUDA_ERROR_NOT_READY)
                     {
                         return false;
                     }
                     check(result, "cuEventQuery");
                     return true;
                 },
                 "True when the work recorded before the event has finished.")
            .def("elapsed_time",
                 [](const event& start, const event& end) {
                     if (!start.recorded || !end.recorded)
                     {
                         throw py::value_error("both events must be recorded before elapsed_time");
                     }
                     wait_for_event(end.get(), end.device);
                     float milliseconds = 0;
                     check(cuda_driver::get().cuEventElapsedTime(&milliseconds, start.handle, end.handle),
                           "cuEventElapsedTime");
                     return milliseconds;
                 },
                 py::arg("end"), "Milliseconds from this event to `end` (waits for `end`).");

        m.def("synchronize",
              [](py::object device) {
                  cuda_session& session = cuda_session::instance();
                  int ordinal = device.is_none() ? session.device_ordinal() : device.cast<int>();
                  session.make_current(ordinal);
                  py::gil_scoped_release release;
                  session.synchronize(ordinal);
              },
              py::arg("device") = py::none(),
              "Wait until all work on the current device (or on `device`) has finished. An interrupt "
              "(Kernel > Interrupt) ends the wait with KeyboardInterrupt.");
    }
}
