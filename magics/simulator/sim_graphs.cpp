// libxcuda-sim.so's streams, stream capture and graphs, as a GPU's driver has them, so that xcuda's
// `with xcuda.graph() as g:` (docs/graphs-and-transfers.md) runs on the simulator.
//
// Work runs at once (streams have no asynchrony: every call returns when its work is done), except on a
// stream that captures: its launches and async copies become nodes of the capture's graph, in order, and
// run when an instantiated graph is launched (each kernel node through the same watched launch as
// cuLaunchKernel: progress, interrupt). A kernel node takes new parameters (cuGraphExecKernelNodeSetParams).
// As on a GPU, the legacy stream cannot capture, and synchronising or querying a capturing stream (or
// synchronising the context while any stream captures) fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
// invalidates the capture, whose end then says CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. A memset is not captured
// (xcuda captures none): it invalidates the capture the same way.

#include <algorithm>
#include <cstring>

#include "sim_driver_state.hpp"

using namespace xcuda_sim;

namespace
{
    struct graph_node
    {
        bool is_kernel = true;
        kernel_launch launch;  // a kernel node
        void* to = nullptr;    // a copy node
        const void* from = nullptr;
        std::size_t bytes = 0;
    };
    struct sim_graph
    {
        std::vector<std::unique_ptr<graph_node>> nodes;
    };
    // An instantiated graph: its own copy of the nodes (updates change the copy), by the captured ones' handles.
    struct sim_graph_exec
    {
        std::vector<const graph_node*> originals;
        std::vector<graph_node> nodes;
    };
    struct sim_stream
    {
        bool capturing = false;
        bool invalidated = false;
        sim_graph* captured = nullptr;
        CUgraphNode last = nullptr;  // the last node captured: the stream's dependency (cuStreamGetCaptureInfo)
    };
    std::vector<sim_stream*> g_streams;  // created and not destroyed

    // A stream this library made, else null (the legacy and per-thread streams, or a stranger's handle).
    sim_stream* as_stream(CUstream handle)
    {
        auto* s = reinterpret_cast<sim_stream*>(handle);
        return std::find(g_streams.begin(), g_streams.end(), s) != g_streams.end() ? s : nullptr;
    }

    void record(CUstream handle, std::unique_ptr<graph_node> n)
    {
        sim_stream* s = as_stream(handle);
        s->last = reinterpret_cast<CUgraphNode>(n.get());
        s->captured->nodes.push_back(std::move(n));
    }

    // A synchronising call or a query of a capturing stream: refused, and the capture is invalidated.
    CUresult refuse_capturing(sim_stream* s)
    {
        s->invalidated = true;
        return failed(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                      "the stream is capturing a graph: synchronising or querying it is not allowed during a capture");
    }

    CUresult copy_on(CUstream stream, void* to, const void* from, std::size_t bytes)
    {
        lock held(g_mutex);
        if (capturing(stream))
        {
            capture_copy(stream, to, from, bytes);
            return CUDA_SUCCESS;
        }
        std::memmove(to, from, bytes);
        device_copied(to, from, bytes);
        return CUDA_SUCCESS;
    }
}

namespace xcuda_sim
{
    bool capturing(CUstream handle)
    {
        sim_stream* s = as_stream(handle);
        return s && s->capturing;
    }

    void capture_launch(CUstream stream, kernel_launch launch)
    {
        auto n = std::make_unique<graph_node>();
        n->launch = std::move(launch);
        record(stream, std::move(n));
    }

    void capture_copy(CUstream stream, void* to, const void* from, std::size_t bytes)
    {
        auto n = std::make_unique<graph_node>();
        n->is_kernel = false;
        n->to = to;
        n->from = from;
        n->bytes = bytes;
        record(stream, std::move(n));
    }
}

CUresult CUDAAPI cuStreamCreate(CUstream* handle, unsigned int)
{
    lock held(g_mutex);
    g_streams.push_back(new sim_stream);
    *handle = reinterpret_cast<CUstream>(g_streams.back());
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream handle)
{
    lock held(g_mutex);
    sim_stream* s = as_stream(handle);
    if (!s)
    {
        return failed(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy of a stream the simulator did not make");
    }
    g_streams.erase(std::find(g_streams.begin(), g_streams.end(), s));
    delete s->captured;
    delete s;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream handle)
{
    lock held(g_mutex);
    if (capturing(handle))
    {
        return refuse_capturing(as_stream(handle));
    }
    return print_pending();
}
CUresult CUDAAPI cuStreamQuery(CUstream handle)
{
    lock held(g_mutex);
    return capturing(handle) ? refuse_capturing(as_stream(handle)) : CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize()  // every operation has finished when it returns
{
    lock held(g_mutex);
    CUresult result = CUDA_SUCCESS;
    for (sim_stream* s : g_streams)
    {
        result = s->capturing ? refuse_capturing(s) : result;
    }
    return result == CUDA_SUCCESS ? print_pending() : result;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr to, const void* from, size_t bytes, CUstream stream)
{
    return copy_on(stream, reinterpret_cast<void*>(to), from, bytes);
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* to, CUdeviceptr from, size_t bytes, CUstream stream)
{
    return copy_on(stream, to, reinterpret_cast<const void*>(from), bytes);
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream)
{
    return copy_on(stream, reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes);
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr to, unsigned char value, size_t bytes, CUstream stream)
{
    lock held(g_mutex);
    if (capturing(stream))
    {
        as_stream(stream)->invalidated = true;
        return failed(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the simulator does not capture memsets in a graph");
    }
    std::memset(reinterpret_cast<void*>(to), value, bytes);
    device_written(reinterpret_cast<void*>(to), bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream handle, CUstreamCaptureMode)
{
    lock held(g_mutex);
    sim_stream* s = as_stream(handle);
    if (!s)
    {
        return failed(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the legacy stream cannot capture a graph");
    }
    if (s->capturing)
    {
        return failed(CUDA_ERROR_ILLEGAL_STATE, "the stream is capturing already");
    }
    s->capturing = true;
    s->invalidated = false;
    s->captured = new sim_graph;
    s->last = nullptr;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamIsCapturing(CUstream handle, CUstreamCaptureStatus* status)
{
    lock held(g_mutex);
    sim_stream* s = as_stream(handle);
    *status = !s || !s->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->invalidated    ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream handle, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                                        const CUgraphNode** dependencies, const CUgraphEdgeData** edges, size_t* count)
{
    lock held(g_mutex);
    sim_stream* s = as_stream(handle);
    cuStreamIsCapturing(handle, status);
    const bool active = s && s->capturing;
    if (id)
    {
        *id = active ? reinterpret_cast<cuuint64_t>(s->captured) : 0;
    }
    if (graph)
    {
        *graph = active ? reinterpret_cast<CUgraph>(s->captured) : nullptr;
    }
    if (edges)
    {
        *edges = nullptr;
    }
    // Captured in order, the stream depends on its last node alone.
    if (dependencies)
    {
        *dependencies = active && s->last ? &s->last : nullptr;
    }
    if (count)
    {
        *count = active && s->last ? 1 : 0;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamEndCapture(CUstream handle, CUgraph* result)
{
    lock held(g_mutex);
    sim_stream* s = as_stream(handle);
    *result = nullptr;
    if (!s || !s->capturing)
    {
        return failed(CUDA_ERROR_ILLEGAL_STATE, "cuStreamEndCapture of a stream that does not capture");
    }
    s->capturing = false;
    sim_graph* captured = s->captured;
    s->captured = nullptr;
    s->last = nullptr;
    if (s->invalidated)
    {
        delete captured;
        return failed(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                      "the capture was invalidated by an operation it could not hold (a synchronisation of the "
                      "capturing stream or the context, or a memset)");
    }
    *result = reinterpret_cast<CUgraph>(captured);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* exec, CUgraph handle, unsigned long long)
{
    lock held(g_mutex);
    auto* g = reinterpret_cast<sim_graph*>(handle);
    auto* e = new sim_graph_exec;
    for (const auto& n : g->nodes)
    {
        e->originals.push_back(n.get());
        e->nodes.push_back(*n);
    }
    *exec = reinterpret_cast<CUgraphExec>(e);
    return CUDA_SUCCESS;
}
// The nodes in capture order; the first that fails ends the replay with its error.
CUresult CUDAAPI cuGraphLaunch(CUgraphExec handle, CUstream stream)
{
    lock held(g_mutex);
    if (capturing(stream))
    {
        as_stream(stream)->invalidated = true;
        return failed(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the simulator does not capture a graph's launch in a graph");
    }
    for (const graph_node& n : reinterpret_cast<sim_graph_exec*>(handle)->nodes)
    {
        if (!n.is_kernel)
        {
            std::memmove(n.to, n.from, n.bytes);
            device_copied(n.to, n.from, n.bytes);
        }
        else if (CUresult result = run_launch(n.launch); result != CUDA_SUCCESS)
        {
            return result;
        }
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec handle, CUgraphNode target, const CUDA_KERNEL_NODE_PARAMS* params)
{
    lock held(g_mutex);
    auto* e = reinterpret_cast<sim_graph_exec*>(handle);
    auto found = std::find(e->originals.begin(), e->originals.end(), reinterpret_cast<const graph_node*>(target));
    if (found == e->originals.end() || !e->nodes[static_cast<std::size_t>(found - e->originals.begin())].is_kernel)
    {
        return failed(CUDA_ERROR_INVALID_VALUE, "cuGraphExecKernelNodeSetParams of a node that is not a kernel node of the graph");
    }
    graph_node& n = e->nodes[static_cast<std::size_t>(found - e->originals.begin())];
    const auto* f = reinterpret_cast<const function*>(params->func);
    if (f->owner != n.launch.f->owner || f->index != n.launch.f->index)
    {
        return failed(CUDA_ERROR_INVALID_VALUE, "a kernel node's function cannot change (cuGraphExecKernelNodeSetParams)");
    }
    kernel_launch updated;
    updated.f = n.launch.f;
    if (CUresult packed = pack_parameters(*f, params->kernelParams, params->extra, updated.params); packed != CUDA_SUCCESS)
    {
        return packed;
    }
    updated.grid[0] = params->gridDimX;
    updated.grid[1] = params->gridDimY;
    updated.grid[2] = params->gridDimZ;
    updated.block[0] = params->blockDimX;
    updated.block[1] = params->blockDimY;
    updated.block[2] = params->blockDimZ;
    updated.shared = params->sharedMemBytes;
    n.launch = std::move(updated);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec handle)
{
    lock held(g_mutex);
    delete reinterpret_cast<sim_graph_exec*>(handle);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphDestroy(CUgraph handle)
{
    lock held(g_mutex);
    delete reinterpret_cast<sim_graph*>(handle);
    return CUDA_SUCCESS;
}
