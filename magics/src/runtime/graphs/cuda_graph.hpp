#pragma once
// A CUDA graph made by capturing a stream: the launches and copies queued on the graph's own stream
// between begin_capture() and end_capture(), instantiated once and replayed by launch() for a few
// microseconds of host time whatever the number of nodes.
//
// Why: an eager launch costs the host a few microseconds each (cuLaunchKernel, argument conversion);
// a chain of small kernels is bound by that cost. A replay hands the driver the whole chain at once.
//
// Nodes keep their order of capture: node(i) is the i-th launch or copy captured. A kernel node's
// arguments and dimensions can be changed in the instantiated graph (update_kernel,
// cuGraphExecKernelNodeSetParams) without capturing again: later replays use the new values.
//
// The capture stream is non-blocking (CU_STREAM_NON_BLOCKING): work other code queues on the legacy
// default stream meanwhile neither joins the graph nor invalidates its capture. The capture mode is
// relaxed: calls that are not stream work (a module loaded at a kernel's first launch, an allocation)
// run as usual instead of failing; what a graph cannot hold (synchronous copies, synchronisation,
// timing) the caller refuses before it reaches the driver (graph_capture_error).
//
// Ownership: owns its stream, the CUgraph and the CUgraphExec, made in the context of the device that
// was current at construction; a session_resource of that device (freed at close, forgotten after a
// kernel fault). Holds the kernels whose nodes it has (std::shared_ptr), so their modules stay loaded
// while it may replay them. The device memory its nodes read and write is the caller's to keep alive.
// Threading: GIL held, one caller at a time.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda.h>

#include "cuda_session.hpp"
#include "launch_plan.hpp"

namespace xcuda
{
    class cuda_kernel;
    class device_buffer;
    class launch_call;

    class cuda_graph : public session_resource
    {
    public:
        enum class node_kind
        {
            kernel,
            copy
        };

        struct node
        {
            node_kind kind = node_kind::kernel;
            CUgraphNode handle = nullptr;
            std::shared_ptr<cuda_kernel> kernel;  // kernel nodes
            launch_dims dims;                     // kernel nodes: as captured, or as last updated
            std::string description;              // "saxpy[(256,1,1), (256,1,1)]", "copy of 4096 bytes host -> device"
        };

        // A graph of the session's current device; creates its context if needed (throws
        // cuda_unavailable_error without a GPU) and checks that the driver has the graph API.
        explicit cuda_graph(cuda_session& session);
        ~cuda_graph() override;
        cuda_graph(const cuda_graph&) = delete;
        cuda_graph& operator=(const cuda_graph&) = delete;

        // Starts capturing the graph's stream. Once per graph.
        void begin_capture();
        // Ends the capture and instantiates the graph; a capture the driver invalidated (something on
        // the stream it cannot hold) raises graph_capture_error with the driver's reason.
        void end_capture();
        // Ends a capture abandoned by an error inside it and drops what was captured; never throws.
        void discard_capture() noexcept;

        bool capturing() const noexcept { return m_state == state::capturing; }
        bool ready() const noexcept { return m_state == state::ready; }
        // The stream launches and copies go to while capturing (checked for a live context).
        CUstream stream() const;
        // The stream handle without any check, for the launch path's comparisons.
        CUstream raw_stream() const noexcept { return m_stream; }

        // Inside the block, work that names a stream must name the graph's own (graph_capture_error).
        // Inline: on the launch path.
        void require_own_stream(CUstream stream) const
        {
            if (stream != m_stream)
            {
                refuse_other_stream();
            }
        }
        // While capturing, after a launch on stream(): records the kernel node just captured.
        void note_kernel(std::shared_ptr<cuda_kernel> kernel, const launch_dims& dims);
        // While capturing: copies queued on the stream and recorded as copy nodes. Host memory must be
        // page-locked (a replay's DMA reads or writes it at the time of the replay).
        void copy_to_device(CUdeviceptr destination, const void* source, std::size_t bytes);
        void copy_to_host(void* destination, CUdeviceptr source, std::size_t bytes);
        void copy_on_device(CUdeviceptr destination, CUdeviceptr source, std::size_t bytes);

        // Replays the graph on stream (of the graph's device; null: its legacy default stream). Returns
        // once queued, like a launch.
        void launch(CUstream stream);
        // Gives kernel node `index` the arguments and dims of `call` (converted, never run), for later
        // replays. The node's kernel must be the call's.
        void update_kernel(std::size_t index, launch_call& call);

        // What the caller's node `index` reads and writes (its arguments' objects, for the binding Python
        // objects), kept alive as long as the graph may replay it: set when the node is captured, replaced
        // by an update, dropped with the graph or by forget_kept() (a capture abandoned by an error). Kept
        // apart from the nodes: release() at a session's close drops the nodes, not these (their owner
        // decides which thread and lock they are dropped under).
        void keep(std::size_t index, std::shared_ptr<void> objects);
        void keep_for_last(std::shared_ptr<void> objects) { keep(m_nodes.empty() ? 0 : m_nodes.size() - 1, std::move(objects)); }
        void forget_kept() noexcept { m_kept.clear(); }
        std::size_t kept_count() const noexcept { return m_kept.size(); }

        const std::vector<node>& nodes() const noexcept { return m_nodes; }
        std::size_t kernel_count() const noexcept;

        // ---- the rules of `with xcuda.graph() as g:` (the binding's Graph object), with their messages ----
        // What a graph cannot hold that the Python API refuses inside a block (refusal() says why and
        // what to do instead).
        enum class refusal_kind
        {
            to_device_of_host_data,
            copy_to_new_host_array,
            copy_from_converted,
            asarray,
            stream_synchronize,
            event_synchronize,
            elapsed_time,
            synchronize,
            transfer_options,
            release_host_registrations,
            release_cached_temporaries
        };
        // refuse()'s "what" and "instead" for one of them.
        static std::pair<const char*, const char*> refusal(refusal_kind kind) noexcept;
        // Raises graph_capture_error "<what> cannot be captured in a CUDA graph: <instead>".
        [[noreturn]] static void refuse(const std::string& what, const std::string& instead);
        // A launch argument `parameter` that is host memory (`what`: "a numpy array") inside a block or an update.
        [[noreturn]] static void refuse_host_argument(const std::string& parameter, const std::string& what);
        // A block may open when no other is open and this Graph has not captured yet.
        static void check_can_open(bool another_open, bool captured_already);
        // g.launch(): `graph` (null: never captured) has ended its capture.
        static void check_replayable(const cuda_graph* graph);
        // g.update(index, ...): the launch node `index` of `graph` (captured and ended); index_error past
        // the nodes, argument_value_error for a copy node.
        static const node& launch_node(const cuda_graph* graph, std::size_t index);
        // grid=/block= values of g.update (1 to 3 of them, each 1 to 2**32-1) and shared_mem=.
        static std::array<unsigned, 3> checked_dims(const std::vector<long long>& values, const std::string& what);
        static unsigned checked_shared_mem(long long bytes);
        // "not captured" (null), "capturing", "ready" or "failed"; and repr's
        // "<xcuda.Graph of 3 nodes (2 launches), ready>".
        static std::string state_text(const cuda_graph* graph);
        static std::string summary(const cuda_graph* graph);

        // While capturing: a copy of `bytes` between device memory and host memory, which must be
        // page-locked (not merely registered in place by xcuda, which may unregister it before a replay),
        // else graph_capture_error naming `what` ("copy_from", "copy_to_host").
        void capture_host_copy(const device_buffer& device, void* host, std::size_t bytes, bool to_device, const char* what);
        // While capturing: a copy between two buffers, both on the graph's device.
        void capture_device_copy(const device_buffer& destination, const device_buffer& source, std::size_t bytes);

        void release() noexcept override;
        void abandon() noexcept override;
        std::string describe() const override;
        const char* kind() const noexcept override { return "graph"; }
        int device() const noexcept override { return m_device; }

    private:
        enum class state
        {
            created,
            capturing,
            ready,
            failed
        };
        // The node the last operation on the capturing stream added.
        CUgraphNode last_captured(const char* what);
        void require_capturing(const char* what) const;
        [[noreturn]] static void refuse_other_stream();
        void destroy() noexcept;

        cuda_session& m_session;
        int m_device = 0;
        std::uint64_t m_generation = 0;
        CUstream m_stream = nullptr;
        CUgraph m_graph = nullptr;
        CUgraphExec m_exec = nullptr;
        state m_state = state::created;
        std::vector<node> m_nodes;
        std::vector<std::shared_ptr<void>> m_kept;  // by node index
    };
}
