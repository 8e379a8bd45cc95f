// xcuda.Stream, xcuda.Event and xcuda.synchronize(): the core's cuda_stream and cuda_event as Python
// objects. Waits release the GIL and end with KeyboardInterrupt on an interrupt.

#include "py_common.hpp"

#include "cuda_event.hpp"
#include "cuda_stream.hpp"

namespace xcuda::python
{
    namespace
    {
        // A CUstream from a stream object (not None): see stream_from_object.
        CUstream resolve_stream(const cuda_session& session, py::handle object)
        {
            if (py::isinstance<cuda_stream>(object))
            {
                return object.cast<const cuda_stream&>().handle_on(session.device_ordinal());
            }
            if (PyLong_Check(object.ptr()))
            {
                // A bare integer is no stream: taken as a handle, a wrong one crashes the driver (1024 and
                // 2**31 did), and kernel[grid, block, 1024] is CUDA's <<<grid, block, shared_mem>>> habit.
                int overflow = 0;
                long long value = PyLong_AsLongLongAndOverflow(object.ptr(), &overflow);
                if (value == 0 && overflow == 0 && !PyErr_Occurred() && !PyBool_Check(object.ptr()))
                {
                    return nullptr;  // 0: the default stream, as None
                }
                PyErr_Clear();
                cuda_stream::refuse_integer(str_of(object));
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
            cuda_stream::refuse_object(str_of(py::type::of(object)));
        }
    }

    CUstream stream_from_object(const cuda_session& session, py::handle object)
    {
        cuda_graph* capture = session.captures().of_this_thread();  // no lock while no capture is open
        if (object.is_none())
        {
            // Inside this thread's `with xcuda.graph()`, work that names no stream is captured on the graph's stream.
            return capture ? capture->raw_stream() : session.stream();
        }
        CUstream stream = resolve_stream(session, object);
        if (capture)
        {
            capture->require_own_stream(stream);
        }
        return stream;
    }

    void register_streams(py::module_& m, notebook_session& notebook)
    {
        py::class_<cuda_stream>(m, "Stream", R"(A CUDA stream in the session's context.

Launch on it with kernel[grid, block, stream](...). It is ordered with the default stream, like
CuPy's and PyTorch's ordinary streams.)")
            .def(py::init([&notebook] { return new cuda_stream(notebook.session); }))
            .def("synchronize",
                 [&notebook](cuda_stream& s) {
                     refuse_while_capturing(notebook.session, graph_refusal::stream_synchronize);
                     if (notebook.session.captures().on_stream(s.handle()))  // another thread's graph captures it
                     {
                         auto [what, instead] = cuda_graph::refusal(graph_refusal::stream_synchronize);
                         cuda_graph::refuse(what, instead);
                     }
                     py::gil_scoped_release release;
                     s.synchronize();
                 },
                 "Wait until all work queued on the stream has finished (an interrupt ends the wait).")
            .def("query", &cuda_stream::query, "True when all work queued on the stream has finished.")
            .def_property_readonly("handle", [](const cuda_stream& s) { return reinterpret_cast<std::uintptr_t>(s.handle()); },
                                   "The CUstream handle (an int).")
            .def_property_readonly("device", &cuda_stream::device, "The device whose context the stream belongs to.")
            .def("__cuda_stream__",
                 [](const cuda_stream& s) { return py::make_tuple(0, reinterpret_cast<std::uintptr_t>(s.handle())); },
                 "The cuda.core stream protocol: (version, handle).")
            .def("__repr__", &cuda_stream::describe);

        py::class_<cuda_event>(m, "Event", R"(A CUDA event, for ordering and timing work on streams.

    start, end = xcuda.Event(), xcuda.Event()
    start.record(); saxpy[g, b](a, x, y, out, n); end.record()
    end.synchronize(); print(start.elapsed_time(end), "ms"))")
            .def(py::init([&notebook](bool timing) { return new cuda_event(notebook.session, timing); }), py::arg("timing") = true)
            .def("record",
                 [&notebook](cuda_event& e, py::object s) { e.record(stream_from_object(notebook.session, s)); },
                 py::arg("stream") = py::none(), "Record the event on a stream (default: the default stream).")
            .def("synchronize",
                 [&notebook](cuda_event& e) {
                     refuse_while_capturing(notebook.session, graph_refusal::event_synchronize);
                     py::gil_scoped_release release;
                     e.synchronize();
                 },
                 "Wait until the work recorded before the event has finished.")
            .def("query", &cuda_event::query, "True when the work recorded before the event has finished.")
            .def("elapsed_time",
                 [&notebook](cuda_event& start, cuda_event& end) {
                     refuse_while_capturing(notebook.session, graph_refusal::elapsed_time);
                     py::gil_scoped_release release;
                     return start.elapsed_ms(end);
                 },
                 py::arg("end"), "Milliseconds from this event to `end` (waits for `end`).");

        m.def("synchronize",
              [&notebook](py::object device) {
                  cuda_session& session = notebook.session;
                  refuse_while_capturing(session, graph_refusal::synchronize);
                  int ordinal = device.is_none() ? session.device_ordinal() : device.cast<int>();
                  session.make_current(ordinal);
                  py::gil_scoped_release release;
                  session.waits().synchronize(ordinal);
              },
              py::arg("device") = py::none(),
              "Wait until all work on the current device (or on `device`) has finished. An interrupt "
              "(Kernel > Interrupt) ends the wait with KeyboardInterrupt.");
    }
}
