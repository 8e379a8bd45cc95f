#include "cuda_graph.hpp"

#include "launch_call.hpp"

#include "cuda_driver.hpp"
#include "cuda_kernel.hpp"
#include "device_buffer.hpp"
#include "errors.hpp"
#include "host_staging.hpp"
#include "launch_attributes.hpp"
#include "pinned_memory.hpp"

namespace xcuda
{
    namespace
    {
        // The graph calls are optional in the driver table: name the first one this driver lacks.
        void require_graph_api(const cuda_driver& driver)
        {
            const char* missing = !driver.cuStreamBeginCapture             ? "cuStreamBeginCapture"
                                  : !driver.cuStreamEndCapture             ? "cuStreamEndCapture"
                                  : !driver.cuStreamGetCaptureInfo         ? "cuStreamGetCaptureInfo"
                                  : !driver.cuGraphInstantiate             ? "cuGraphInstantiate"
                                  : !driver.cuGraphLaunch                  ? "cuGraphLaunch"
                                  : !driver.cuGraphExecKernelNodeSetParams ? "cuGraphExecKernelNodeSetParams"
                                  : !driver.cuGraphExecDestroy             ? "cuGraphExecDestroy"
                                  : !driver.cuGraphDestroy                 ? "cuGraphDestroy"
                                                                           : nullptr;
            if (missing)
            {
                throw cuda_unavailable_error(std::string("this NVIDIA driver has no ") + missing +
                                             ": CUDA graphs need a driver for CUDA 12.3 or newer");
            }
        }

        // "saxpy[(256, 1, 1), (256, 1, 1)]" as the launch was written, with its shared memory when not 0.
        std::string launch_text(const std::string& kernel, const launch_dims& dims)
        {
            return kernel + "[" + dims_text(dims.grid) + ", " + dims_text(dims.block) +
                   (dims.shared_mem ? ", " + std::to_string(dims.shared_mem) : std::string()) +
                   launch_attributes::text(dims) + "]";
        }
    }

    cuda_graph::cuda_graph(cuda_session& session)
        : m_session(session)
    {
        session.make_current();
        const cuda_driver& driver = cuda_driver::get();
        require_graph_api(driver);
        m_device = session.device_ordinal();
        m_generation = session.generation();
        check(driver.cuStreamCreate(&m_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        session.resources().add(this);
    }

    cuda_graph::~cuda_graph()
    {
        m_session.resources().remove(this);
        if (m_session.make_current_if_alive(m_device, m_generation))
        {
            destroy();
        }
    }

    void cuda_graph::destroy() noexcept
    {
        const cuda_driver& driver = cuda_driver::get();
        if (m_state == state::capturing && m_stream)
        {
            CUgraph dropped = nullptr;
            driver.cuStreamEndCapture(m_stream, &dropped);
            if (dropped)
            {
                driver.cuGraphDestroy(dropped);
            }
        }
        if (m_exec)
        {
            driver.cuGraphExecDestroy(m_exec);
        }
        if (m_graph)
        {
            driver.cuGraphDestroy(m_graph);
        }
        if (m_stream)
        {
            driver.cuStreamDestroy(m_stream);
        }
        m_exec = nullptr;
        m_graph = nullptr;
        m_stream = nullptr;
    }

    void cuda_graph::release() noexcept
    {
        destroy();
        m_nodes.clear();
        m_state = state::failed;
    }

    void cuda_graph::abandon() noexcept
    {
        m_exec = nullptr;
        m_graph = nullptr;
        m_stream = nullptr;
        m_nodes.clear();
        m_state = state::failed;
    }

    std::string cuda_graph::describe() const
    {
        return "CUDA graph of " + std::to_string(m_nodes.size()) + " node" + (m_nodes.size() == 1 ? "" : "s") +
               " (" + std::to_string(kernel_count()) + " kernel" + (kernel_count() == 1 ? "" : "s") + ")";
    }

    std::size_t cuda_graph::kernel_count() const noexcept
    {
        std::size_t count = 0;
        for (const node& n : m_nodes)
        {
            count += n.kind == node_kind::kernel;
        }
        return count;
    }

    CUstream cuda_graph::stream() const
    {
        m_session.check_alive(m_device, m_generation, "the CUDA graph");
        if (!m_stream)
        {
            throw graph_capture_error("this CUDA graph was released");
        }
        return m_stream;
    }

    void cuda_graph::begin_capture()
    {
        if (m_state != state::created)
        {
            throw graph_capture_error("a Graph captures once: make a new one with xcuda.graph() to capture again "
                                      "(to change a captured launch's arguments, use graph.update)");
        }
        CUstream capture = stream();
        m_session.make_current(m_device);
        check(cuda_driver::get().cuStreamBeginCapture(capture, CU_STREAM_CAPTURE_MODE_RELAXED),
              "cuStreamBeginCapture");
        m_state = state::capturing;
    }

    void cuda_graph::end_capture()
    {
        require_capturing("ending the capture");
        const cuda_driver& driver = cuda_driver::get();
        m_session.make_current(m_device);
        CUgraph graph = nullptr;
        CUresult ended = driver.cuStreamEndCapture(m_stream, &graph);
        if (ended != CUDA_SUCCESS)
        {
            m_state = state::failed;
            m_nodes.clear();
            if (graph)
            {
                driver.cuGraphDestroy(graph);
            }
            if (ended == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED || ended == CUDA_ERROR_STREAM_CAPTURE_UNJOINED ||
                ended == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
            {
                throw graph_capture_error("the capture was invalidated by an operation the graph cannot hold (" +
                                          cuda_error_name(ended) + ": " + cuda_error_description(ended) +
                                          "); only xcuda launches and copies on the graph's stream are captured");
            }
            check(ended, "cuStreamEndCapture");
        }
        m_graph = graph;
        CUresult instantiated = driver.cuGraphInstantiate(&m_exec, m_graph, 0);
        if (instantiated != CUDA_SUCCESS)
        {
            m_state = state::failed;
            check(instantiated, "cuGraphInstantiate");
        }
        m_state = state::ready;
    }

    void cuda_graph::discard_capture() noexcept
    {
        if (m_state != state::capturing)
        {
            return;
        }
        if (m_session.make_current_if_alive(m_device, m_generation) && m_stream)
        {
            const cuda_driver& driver = cuda_driver::get();
            CUgraph dropped = nullptr;
            driver.cuStreamEndCapture(m_stream, &dropped);
            if (dropped)
            {
                driver.cuGraphDestroy(dropped);
            }
        }
        m_nodes.clear();
        m_state = state::failed;
    }

    void cuda_graph::require_capturing(const char* what) const
    {
        if (m_state != state::capturing)
        {
            throw graph_capture_error(std::string(what) + " needs the graph's capture to be open (inside `with "
                                      "xcuda.graph() as g:`)");
        }
    }

    CUgraphNode cuda_graph::last_captured(const char* what)
    {
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
        cuuint64_t id = 0;
        CUgraph graph = nullptr;
        const CUgraphNode* dependencies = nullptr;
        const CUgraphEdgeData* edges = nullptr;
        std::size_t count = 0;
        check(cuda_driver::get().cuStreamGetCaptureInfo(m_stream, &status, &id, &graph, &dependencies, &edges, &count),
              "cuStreamGetCaptureInfo");
        if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        {
            throw graph_capture_error(std::string("the capture was invalidated before ") + what +
                                      ": something on the graph's stream could not be captured");
        }
        // After an operation on a stream captured in order, the stream's dependency set is that one node.
        return count ? dependencies[count - 1] : nullptr;
    }

    void cuda_graph::note_kernel(std::shared_ptr<cuda_kernel> kernel, const launch_dims& dims)
    {
        require_capturing("recording a launch");
        node n;
        n.kind = node_kind::kernel;
        n.handle = last_captured("the launch was recorded");
        n.dims = dims;
        n.description = launch_text(kernel->signature().name, dims);
        n.kernel = std::move(kernel);
        m_nodes.push_back(std::move(n));
    }

    void cuda_graph::copy_to_device(CUdeviceptr destination, const void* source, std::size_t bytes)
    {
        require_capturing("a copy to the device");
        m_session.make_current(m_device);
        check(cuda_driver::get().cuMemcpyHtoDAsync(destination, source, bytes, m_stream), "cuMemcpyHtoDAsync");
        m_nodes.push_back({node_kind::copy, last_captured("the copy was recorded"), nullptr, {},
                           "copy of " + std::to_string(bytes) + " bytes host -> device"});
    }

    void cuda_graph::copy_to_host(void* destination, CUdeviceptr source, std::size_t bytes)
    {
        require_capturing("a copy to the host");
        m_session.make_current(m_device);
        check(cuda_driver::get().cuMemcpyDtoHAsync(destination, source, bytes, m_stream), "cuMemcpyDtoHAsync");
        m_nodes.push_back({node_kind::copy, last_captured("the copy was recorded"), nullptr, {},
                           "copy of " + std::to_string(bytes) + " bytes device -> host"});
    }

    void cuda_graph::copy_on_device(CUdeviceptr destination, CUdeviceptr source, std::size_t bytes)
    {
        require_capturing("a device-to-device copy");
        m_session.make_current(m_device);
        check(cuda_driver::get().cuMemcpyDtoDAsync(destination, source, bytes, m_stream), "cuMemcpyDtoDAsync");
        m_nodes.push_back({node_kind::copy, last_captured("the copy was recorded"), nullptr, {},
                           "copy of " + std::to_string(bytes) + " bytes device -> device"});
    }

    void cuda_graph::launch(CUstream stream)
    {
        if (m_state != state::ready)
        {
            throw graph_capture_error(m_state == state::capturing
                                          ? "a graph cannot be replayed inside its own capture: call g.launch() "
                                            "after the `with xcuda.graph() as g:` block"
                                          : m_state == state::created
                                                ? "this graph has not been captured yet: use `with xcuda.graph() as "
                                                  "g:` around the launches, then g.launch()"
                                                : "this graph's capture failed (see the error raised in its `with` "
                                                  "block) or it was released: capture a new one");
        }
        m_session.check_alive(m_device, m_generation, "the CUDA graph");
        m_session.make_current(m_device);
        check(cuda_driver::get().cuGraphLaunch(m_exec, stream), "cuGraphLaunch");
        static const unsigned ones[3] = {1, 1, 1};
        m_session.record_launch("a CUDA graph of " + std::to_string(m_nodes.size()) + " nodes", ones, ones, 0, stream);
    }

    void cuda_graph::update_kernel(std::size_t index, launch_call& call)
    {
        cuda_kernel& kernel = call.kernel();
        const launch_dims& dims = call.dims();
        if (m_state != state::ready)
        {
            throw graph_capture_error("graph.update needs a captured graph: update after the `with xcuda.graph() as "
                                      "g:` block has ended");
        }
        if (index >= m_nodes.size())
        {
            throw usage_error("the graph has " + std::to_string(m_nodes.size()) + " node" +
                              (m_nodes.size() == 1 ? "" : "s") + "; there is no node " + std::to_string(index));
        }
        node& n = m_nodes[index];
        if (n.kind != node_kind::kernel)
        {
            throw usage_error("node " + std::to_string(index) + " of the graph is a " + n.description +
                              ", not a launch: only launches take new arguments");
        }
        if (n.kernel.get() != &kernel)
        {
            throw usage_error("node " + std::to_string(index) + " launches " + n.kernel->signature().name +
                              ", not this kernel");
        }
        if (m_session.device_ordinal() != m_device)
        {
            throw device_mismatch_error("the graph belongs to device " + std::to_string(m_device) +
                                        "; update it inside `with xcuda.device(" + std::to_string(m_device) + "):`");
        }
        m_session.check_alive(m_device, m_generation, "the CUDA graph");
        CUDA_KERNEL_NODE_PARAMS params = call.node_params();
        check(cuda_driver::get().cuGraphExecKernelNodeSetParams(m_exec, n.handle, &params),
              "cuGraphExecKernelNodeSetParams");
        n.dims = dims;
        n.description = launch_text(kernel.signature().name, dims);
    }

    void cuda_graph::refuse(const std::string& what, const std::string& instead)
    {
        throw graph_capture_error(what + " cannot be captured in a CUDA graph: " + instead);
    }

    void cuda_graph::check_can_open(bool another_open, bool captured_already)
    {
        if (another_open)
        {
            throw graph_capture_error("a `with xcuda.graph()` block is already open: graphs do not nest; end "
                                      "the first block before starting another");
        }
        if (captured_already)
        {
            throw graph_capture_error("a Graph captures once: make a new one with xcuda.graph() to capture "
                                      "again (to change a captured launch's arguments, use graph.update)");
        }
    }

    void cuda_graph::check_replayable(const cuda_graph* graph)
    {
        if (!graph)
        {
            throw graph_capture_error("this graph has not been captured yet: use `with xcuda.graph() as g:` "
                                      "around the launches, then g.launch()");
        }
        if (graph->capturing())
        {
            throw graph_capture_error("a graph cannot be replayed inside its own capture: call g.launch() after "
                                      "the `with xcuda.graph() as g:` block");
        }
    }

    const cuda_graph::node& cuda_graph::launch_node(const cuda_graph* graph, std::size_t index)
    {
        if (!graph || !graph->ready())
        {
            throw graph_capture_error(graph && graph->capturing()
                                          ? "graph.update needs the capture to have ended: call it after the "
                                            "`with xcuda.graph() as g:` block"
                                          : "graph.update needs a captured graph (this one " +
                                                std::string(graph ? "failed to capture" : "was never captured") + ")");
        }
        const auto& nodes = graph->nodes();
        if (index >= nodes.size())
        {
            throw index_error("the graph has " + std::to_string(nodes.size()) + " node" + (nodes.size() == 1 ? "" : "s") +
                              "; there is no node " + std::to_string(index));
        }
        const node& found = nodes[index];
        if (found.kind != node_kind::kernel)
        {
            throw argument_value_error("node " + std::to_string(index) + " is a " + found.description +
                                       ", not a launch: only launches take new arguments");
        }
        return found;
    }

    std::array<unsigned, 3> cuda_graph::checked_dims(const std::vector<long long>& values, const std::string& what)
    {
        std::array<unsigned, 3> dims{1, 1, 1};
        if (values.size() < 1 || values.size() > 3)
        {
            throw argument_value_error(what + " must be an int or a tuple of 1 to 3 ints");
        }
        for (std::size_t i = 0; i < values.size(); ++i)
        {
            if (values[i] < 1 || values[i] > 0xffffffffLL)
            {
                throw argument_value_error(what + " values must be between 1 and 2**32-1, got " +
                                           std::to_string(values[i]));
            }
            dims[i] = static_cast<unsigned>(values[i]);
        }
        return dims;
    }

    unsigned cuda_graph::checked_shared_mem(long long bytes)
    {
        if (bytes < 0 || bytes > 0xffffffffLL)
        {
            throw argument_value_error("shared_mem must be between 0 and 2**32-1 bytes");
        }
        return static_cast<unsigned>(bytes);
    }

    std::string cuda_graph::state_text(const cuda_graph* graph)
    {
        if (!graph)
        {
            return "not captured";
        }
        return graph->capturing() ? "capturing" : graph->ready() ? "ready" : "failed";
    }

    std::string cuda_graph::summary(const cuda_graph* graph)
    {
        std::size_t nodes = graph ? graph->nodes().size() : 0;
        std::size_t kernels = graph ? graph->kernel_count() : 0;
        return "<xcuda.Graph of " + std::to_string(nodes) + " node" + (nodes == 1 ? "" : "s") + " (" +
               std::to_string(kernels) + " launch" + (kernels == 1 ? "" : "es") + "), " + state_text(graph) + ">";
    }

    void cuda_graph::capture_host_copy(const device_buffer& device, void* host, std::size_t bytes, bool to_device,
                                       const char* what)
    {
        // A replay's DMA reads or writes the host memory then: it must stay page-locked until the graph goes.
        if (bytes == 0 || !pinned_memory::is_page_locked(m_session, host) ||
            !pinned_memory::is_page_locked(m_session, static_cast<const char*>(host) + bytes - 1) ||
            m_session.transfers().staging(m_session.device_ordinal()).registrations().overlaps(host, bytes))
        {
            refuse(std::string(what) + " of a pageable numpy array",
                   "the copy is synchronous. Use page-locked memory (xcuda.empty_pinned), whose copies a graph "
                   "holds, or copy before the `with xcuda.graph()` block");
        }
        if (to_device)
        {
            copy_to_device(device.pointer(), host, bytes);
        }
        else
        {
            copy_to_host(host, device.pointer(), bytes);
        }
    }

    void cuda_graph::capture_device_copy(const device_buffer& destination, const device_buffer& source,
                                         std::size_t bytes)
    {
        if (destination.device() != source.device() || destination.device() != m_device)
        {
            refuse("a copy between devices",
                   "the graph holds copies on its own device (" + std::to_string(m_device) + ") only");
        }
        copy_on_device(destination.pointer(), source.pointer(), bytes);
    }

    void cuda_graph::refuse_other_stream()
    {
        throw graph_capture_error("inside `with xcuda.graph() as g:` launches are captured on the graph's own "
                                  "stream: name no stream (or g.stream); work on another stream would run now "
                                  "instead of being captured");
    }

    void cuda_graph::refuse_host_argument(const std::string& parameter, const std::string& what)
    {
        throw graph_capture_error(
            parameter + ": " + what + " is copied to and from the device around each launch, which a CUDA graph "
            "cannot hold. Pass a DeviceArray: copy it with xcuda.to_device before the `with xcuda.graph()` block "
            "(or from page-locked memory, xcuda.empty_pinned, with d.copy_from inside it)");
    }

    void cuda_graph::keep(std::size_t index, std::shared_ptr<void> objects)
    {
        if (m_kept.size() <= index)
        {
            m_kept.resize(index + 1);
        }
        m_kept[index] = std::move(objects);
    }

    std::pair<const char*, const char*> cuda_graph::refusal(refusal_kind kind) noexcept
    {
        switch (kind)
        {
        case refusal_kind::to_device_of_host_data:
            return {"xcuda.to_device of host data",
                    "the copy is synchronous; copy before the `with xcuda.graph()` block, or make the array with "
                    "xcuda.empty and fill it from page-locked memory (xcuda.empty_pinned) with d.copy_from "
                    "inside the block"};
        case refusal_kind::copy_to_new_host_array:
            return {"copy_to_host() into a new numpy array",
                    "the copy is synchronous and nothing in the block has run yet; pass out= a page-locked array "
                    "(xcuda.empty_pinned), whose copy the graph holds, or copy after g.launch()"};
        case refusal_kind::copy_from_converted:
            return {"copy_from of a numpy array that needs a conversion",
                    "the converted copy would not outlive the block; pass a C-contiguous page-locked array "
                    "(xcuda.empty_pinned) of the right dtype"};
        case refusal_kind::asarray:
            return {"numpy.asarray of a DeviceArray",
                    "the copy is synchronous and nothing in the block has run yet; read the array after g.launch()"};
        case refusal_kind::stream_synchronize:
            return {"Stream.synchronize()",
                    "a graph holds no waits; synchronize after the `with xcuda.graph()` block, or after g.launch()"};
        case refusal_kind::event_synchronize:
            return {"Event.synchronize()",
                    "a graph holds no waits; synchronize after the `with xcuda.graph()` block, or after g.launch()"};
        case refusal_kind::elapsed_time:
            return {"Event.elapsed_time()",
                    "it waits for the end event; time the replay after the block (record events around g.launch())"};
        case refusal_kind::synchronize:
            return {"xcuda.synchronize()",
                    "a graph holds no waits (and nothing in the block has run yet); synchronize after the `with "
                    "xcuda.graph()` block, or after g.launch()"};
        case refusal_kind::transfer_options:
            return {"changing xcuda.transfer_options",
                    "end the `with xcuda.graph()` block first"};
        case refusal_kind::release_host_registrations:
            return {"releasing host registrations",
                    "end the `with xcuda.graph()` block first"};
        case refusal_kind::release_cached_temporaries:
            return {"releasing cached temporaries",
                    "end the `with xcuda.graph()` block first"};
        }
        return {"this operation", "end the `with xcuda.graph()` block first"};
    }
}
