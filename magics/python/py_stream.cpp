// xcuda.Stream, xcuda.Event and xcuda.synchronize().
//
// Ownership: a Stream or Event owns its driver handle and destroys it when garbage-collected, unless
// the session that made it has closed (the handle died with the context). Waits release the GIL.

#include "py_common.hpp"

#include "cuda_driver.hpp"
#include "cuda_session.hpp"

namespace xcuda::python
{
    namespace
    {
        struct stream
        {
            CUstream handle = nullptr;
            std::uint64_t generation = 0;

            stream()
            {
                cuda_session& session = cuda_session::instance();
                session.make_current();
                // CU_STREAM_DEFAULT: ordered with the legacy default stream, which xcuda's own copies use.
                check(cuda_driver::get().cuStreamCreate(&handle, CU_STREAM_DEFAULT), "cuStreamCreate");
                generation = session.generation();
            }
            ~stream()
            {
                cuda_session& session = cuda_session::instance();
                if (handle && session.active() && session.generation() == generation)
                {
                    cuda_driver::get().cuStreamDestroy(handle);
                }
            }
            stream(const stream&) = delete;
            stream& operator=(const stream&) = delete;

            CUstream get() const
            {
                if (cuda_session::instance().generation() != generation)
                {
                    throw std::runtime_error("this Stream belonged to a CUDA session that was closed; create a new one");
                }
                return handle;
            }
        };

        struct event
        {
            CUevent handle = nullptr;
            std::uint64_t generation = 0;
            bool recorded = false;

            explicit event(bool timing)
            {
                cuda_session& session = cuda_session::instance();
                session.make_current();
                check(cuda_driver::get().cuEventCreate(&handle, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
                      "cuEventCreate");
                generation = session.generation();
            }
            ~event()
            {
                cuda_session& session = cuda_session::instance();
                if (handle && session.active() && session.generation() == generation)
                {
                    cuda_driver::get().cuEventDestroy(handle);
                }
            }
            event(const event&) = delete;
            event& operator=(const event&) = delete;
        };
    }

    CUstream stream_from_object(py::handle object)
    {
        if (object.is_none())
        {
            return cuda_session::instance().stream();
        }
        if (py::isinstance<stream>(object))
        {
            return object.cast<const stream&>().get();
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
                 [](const stream& s) {
                     CUstream handle = s.get();
                     py::gil_scoped_release release;
                     check(cuda_driver::get().cuStreamSynchronize(handle), "cuStreamSynchronize");
                 },
                 "Wait until all work queued on the stream has finished.")
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
                     CUstream handle = stream_from_object(s);
                     cuda_session::instance().make_current();
                     check(cuda_driver::get().cuEventRecord(e.handle, handle), "cuEventRecord");
                     e.recorded = true;
                 },
                 py::arg("stream") = py::none(), "Record the event on a stream (default: the default stream).")
            .def("synchronize",
                 [](const event& e) {
                     py::gil_scoped_release release;
                     check(cuda_driver::get().cuEventSynchronize(e.handle), "cuEventSynchronize");
                 },
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
                     {
                         py::gil_scoped_release release;
                         check(cuda_driver::get().cuEventSynchronize(end.handle), "cuEventSynchronize");
                     }
                     float milliseconds = 0;
                     check(cuda_driver::get().cuEventElapsedTime(&milliseconds, start.handle, end.handle),
                           "cuEventElapsedTime");
                     return milliseconds;
                 },
                 py::arg("end"), "Milliseconds from this event to `end` (waits for `end`).");

        m.def("synchronize",
              [] {
                  cuda_session& session = cuda_session::instance();
                  session.make_current();
                  py::gil_scoped_release release;
                  check(cuda_driver::get().cuCtxSynchronize(), "cuCtxSynchronize");
              },
              "Wait until all work on the current device has finished.");
    }
}
