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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "cuda_session.hpp"
#include "launch_plan.hpp"

namespace xcuda
{
    class cuda_kernel;
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

        const std::vector<node>& nodes() const noexcept { return m_nodes; }
        std::size_t kernel_count() const noexcept;

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
        void destroy() noexcept;

        cuda_session& m_session;
        int m_device = 0;
        std::uint64_t m_generation = 0;
        CUstream m_stream = nullptr;
        CUgraph m_graph = nullptr;
        CUgraphExec m_exec = nullptr;
        state m_state = state::created;
        std::vector<node> m_nodes;
    };
}
