// xcuda.graph() and xcuda.Graph: the core's cuda_graph as a Python context manager.
//
//     with xcuda.graph() as g:          # captures; nothing runs on the GPU in the block
//         step[grid, block](x, n)        # launches that name no stream go to the graph's stream
//         xcuda.copy(y, x)               # device-to-device copies are captured too
//     g.launch()                         # replays every captured launch and copy, in order
//     g.update(0, x2, n)                 # new arguments for node 0 (the first launch), no re-capture
//
// While a block is open, operations that a graph cannot hold raise GraphCaptureError before they
// reach the driver, naming what to do instead: synchronize (of the device, a stream, an event),
// synchronous host copies (numpy arrays as launch arguments, to_device of host data, copy_to_host into
// or copy_from of pageable numpy arrays), timing, and launches on another stream. Copies between a
// DeviceArray and page-locked numpy memory (xcuda.empty_pinned) are captured as copy nodes.
// Allocations (xcuda.empty, zeros) run once, when the block runs; their memory is kept by the graph
// as long as a captured launch uses it.
//
// Ownership: a Graph owns its cuda_graph (made when its block opens: that needs the GPU), which keeps
// the Python arguments of every captured node (cuda_graph::keep, so the device memory a replay uses
// stays alive); `update` replaces a node's. Threading: GIL held throughout. A capture belongs to its
// stream, as in CUDA (runtime/capture_registry): each thread may have one block open, launches on a
// graph's stream are captured from whichever thread makes them, and the refusals above are the thread's
// that opened the block; another thread's work on another stream runs as usual.

#include "py_common.hpp"

#include "cuda_graph.hpp"
#include "errors.hpp"

namespace xcuda::python
{
    namespace
    {
        // A Graph object: its cuda_graph, made when its block opens (that needs the GPU), is in the
        // session's capture registry while the block is open.
        struct graph_object
        {
            cuda_session* session;
            std::unique_ptr<cuda_graph> graph;

            explicit graph_object(cuda_session& owner) : session(&owner) {}
            graph_object(graph_object&&) = default;
            ~graph_object()
            {
                if (graph && session->captures().close(graph.get()))  // dropped with its block open: the capture ends
                {
                    graph->discard_capture();
                }
            }
            bool open() const { return graph && session->captures().is_open(graph.get()); }
        };

        // What a node's replays read and write, kept by the graph; dropped with the GIL.
        std::shared_ptr<void> kept(py::object objects)
        {
            return std::shared_ptr<void>(new py::object(std::move(objects)), [](void* pointer) {
                if (Py_IsInitialized())
                {
                    py::gil_scoped_acquire gil;
                    delete static_cast<py::object*>(pointer);
                }
            });
        }

        py::object graph_stream(const graph_object& self)
        {
            if (!self.graph)
            {
                return py::none();
            }
            return py::int_(reinterpret_cast<std::uintptr_t>(self.graph->raw_stream()));
        }

        std::array<unsigned, 3> dims_of(py::handle value, const char* what)
        {
            py::tuple items = py::isinstance<py::tuple>(value) || py::isinstance<py::list>(value)
                                  ? py::tuple(py::reinterpret_borrow<py::sequence>(value))
                                  : py::make_tuple(value);
            std::vector<long long> values;
            for (auto item : items)
            {
                values.push_back(item.cast<long long>());
            }
            return cuda_graph::checked_dims(values, what);
        }

        void enter(graph_object& self)
        {
            capture_registry& captures = self.session->captures();
            cuda_graph::check_can_open(captures.of_this_thread() != nullptr, self.graph != nullptr);
            self.graph = std::make_unique<cuda_graph>(*self.session);
            self.graph->begin_capture();
            captures.open(self.graph.get(), self.graph->raw_stream());
        }

        bool exit(graph_object& self, py::handle type)
        {
            if (!self.open())
            {
                return false;
            }
            self.session->captures().close(self.graph.get());
            if (!type.is_none())
            {
                self.graph->discard_capture();
                self.graph->forget_kept();
                return false;  // the block's own error goes on
            }
            self.graph->end_capture();
            return false;
        }

        void launch_graph(graph_object& self, py::object stream)
        {
            cuda_graph::check_replayable(self.graph.get());
            CUstream handle = stream.is_none() ? self.session->stream() : stream_from_object(*self.session, stream);
            self.graph->launch(handle);
        }

        void update(graph_object& self, std::size_t index, py::args args, py::object grid, py::object block,
                    py::object shared_mem)
        {
            const cuda_graph::node& node = cuda_graph::launch_node(self.graph.get(), index);
            std::shared_ptr<cuda_kernel> kernel = node.kernel;
            launch_dims dims = node.dims;
            if (!grid.is_none())
            {
                dims.grid = dims_of(grid, "grid");
            }
            if (!block.is_none())
            {
                dims.block = dims_of(block, "block");
            }
            if (!shared_mem.is_none())
            {
                dims.shared_mem = cuda_graph::checked_shared_mem(shared_mem.cast<long long>());
            }
            launch_call call(*kernel, dims, self.graph->raw_stream());
            call_objects objects;
            {
                capture_registry::updating updating(self.session->captures());
                bind_argument_tuple(call, args, objects);
            }
            self.graph->update_kernel(index, call);
            self.graph->keep(index, kept(py::tuple(args)));
        }

        py::list node_list(const graph_object& self)
        {
            py::list result;
            if (!self.graph)
            {
                return result;
            }
            std::size_t index = 0;
            for (const auto& node : self.graph->nodes())
            {
                py::dict entry;
                entry["index"] = index++;
                bool kernel = node.kind == cuda_graph::node_kind::kernel;
                entry["kind"] = kernel ? "launch" : "copy";
                entry["kernel"] = kernel ? py::object(py::str(node.kernel->signature().name)) : py::object(py::none());
                entry["grid"] = kernel ? py::object(dims_tuple(node.dims.grid)) : py::object(py::none());
                entry["block"] = kernel ? py::object(dims_tuple(node.dims.block)) : py::object(py::none());
                entry["shared_mem"] = kernel ? py::object(py::int_(node.dims.shared_mem)) : py::object(py::none());
                entry["text"] = node.description;
                result.append(entry);
            }
            return result;
        }
    }

    void refuse_while_capturing(const cuda_session& session, const std::string& what, const std::string& instead)
    {
        if (capturing_graph(session))
        {
            cuda_graph::refuse(what, instead);
        }
    }

    void refuse_while_capturing(const cuda_session& session, graph_refusal kind)
    {
        if (capturing_graph(session))
        {
            auto [what, instead] = cuda_graph::refusal(kind);
            cuda_graph::refuse(what, instead);
        }
    }

    void refuse_host_argument(const launch_call& call, const std::string& parameter, const std::string& what)
    {
        const capture_registry& captures = call.kernel().module()->session().captures();
        if (captures.of_this_thread() || captures.updating_on_this_thread() || captures.on_stream(call.stream()))
        {
            cuda_graph::refuse_host_argument(parameter, what);
        }
    }

    void note_captured_launch(cuda_graph& graph, const std::shared_ptr<cuda_kernel>& kernel, const launch_dims& dims,
                              PyObject* const* args, std::size_t nargs)
    {
        graph.note_kernel(kernel, dims);
        py::tuple arguments(nargs);
        for (std::size_t i = 0; i < nargs; ++i)
        {
            arguments[i] = py::reinterpret_borrow<py::object>(args[i]);
        }
        graph.keep_for_last(kept(std::move(arguments)));
    }

    bool capture_host_copy(const device_array& device, const py::array& host, bool to_device)
    {
        cuda_graph* graph = capturing_graph(cuda_session::of(device.buffer->session()));
        if (!graph)
        {
            return false;
        }
        graph->capture_host_copy(*device.buffer, const_cast<void*>(host.data()), device.nbytes(), to_device,
                                 to_device ? "copy_from" : "copy_to_host");
        graph->keep_for_last(kept(py::make_tuple(host, py::cast(device))));
        return true;
    }

    bool capture_device_copy(device_array& destination, const device_array& source)
    {
        cuda_graph* graph = capturing_graph(cuda_session::of(destination.buffer->session()));
        if (!graph)
        {
            return false;
        }
        graph->capture_device_copy(*destination.buffer, *source.buffer, source.nbytes());
        graph->keep_for_last(kept(py::make_tuple(py::cast(destination), py::cast(source))));
        return true;
    }

    void register_graphs(py::module_& m, notebook_session& notebook)
    {
        py::class_<graph_object>(m, "Graph", R"(A CUDA graph: launches and copies captured once, replayed with g.launch().

    with xcuda.graph() as g:
        step[grid, block](x, n)        # captured, not run
    g.launch()                         # runs every captured launch and copy, in order
    g.update(0, other_x, n)            # node 0 takes new arguments (no re-capture)

Inside the block, launches that name no stream (or name g.stream) are captured, as are
device-to-device copies (xcuda.copy, d.copy_from(other_device_array)) and copies between a
DeviceArray and page-locked numpy memory (xcuda.empty_pinned). What a graph cannot hold raises
GraphCaptureError inside the block: synchronize, np.asarray(d), numpy arrays as launch arguments,
copies of pageable numpy arrays, timing, launches on another stream. Allocations (xcuda.empty,
zeros) run once, when the block runs.)")
            .def(py::init([&notebook] { return new graph_object(notebook.session); }))
            .def("__enter__",
                 [](py::object self) {
                     enter(self.cast<graph_object&>());
                     return self;
                 })
            .def("__exit__",
                 [](graph_object& self, py::handle type, py::handle, py::handle) { return exit(self, type); })
            .def("launch", &launch_graph, py::arg("stream") = py::none(),
                 "Replay the graph on `stream` (default: the default stream, ordered with other work there).\n"
                 "Returns once queued, like a kernel launch; xcuda.synchronize() waits for it.")
            .def("update", &update, py::arg("index"), py::kw_only(), py::arg("grid") = py::none(),
                 py::arg("block") = py::none(), py::arg("shared_mem") = py::none(),
                 R"(update(index, *args, grid=None, block=None, shared_mem=None)

Give launch node `index` (its place among the captured launches and copies, see g.nodes) new
arguments, converted as a launch converts them, and optionally new launch dimensions. Later replays
use them; the graph is not captured again. Arguments must be device memory (DeviceArray, CuPy,
PyTorch...): numpy arrays raise GraphCaptureError.)")
            .def_property_readonly("nodes", &node_list,
                                   "The captured launches and copies in order: a dict each (index, kind 'launch' or "
                                   "'copy', kernel, grid, block, shared_mem, text).")
            .def_property_readonly("stream", &graph_stream,
                                   "The stream the graph captures (an int handle; None before the block): "
                                   "launches may name it.")
            .def_property_readonly("state", [](const graph_object& self) { return cuda_graph::state_text(self.graph.get()); },
                                   "'not captured', 'capturing', 'ready' or 'failed'.")
            .def("__len__", [](const graph_object& self) { return self.graph ? self.graph->nodes().size() : 0; })
            .def("close",
                 [](graph_object& self) {
                     if (self.open())
                     {
                         throw graph_capture_error("a graph cannot be closed inside its own `with` block");
                     }
                     self.graph.reset();
                 },
                 "Free the graph now (its device resources, and the arguments it kept alive).")
            .def("__repr__", [](const graph_object& self) { return cuda_graph::summary(self.graph.get()); });

        m.def("graph", [&notebook] { return graph_object(notebook.session); },
              R"(A new Graph; use it as `with xcuda.graph() as g:` to capture launches and copies, then g.launch().)");
    }
}
