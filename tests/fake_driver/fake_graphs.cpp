// The fake's stream capture and graphs: work on a capturing stream (launches: fake_launches.cpp, copies:
// fake_memory.cpp) is recorded as graph nodes instead of run; a capture that a synchronising call
// invalidated ends with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; an instantiated graph replays its nodes in
// order, and its kernel nodes take new parameters.

#include "fake_state.hpp"

using namespace xcuda_fake;

namespace
{
    void run(const node& n)
    {
        if (n.is_kernel)
        {
            run_kernel(*n.f, n.threads, n.params);
        }
        else
        {
            std::memmove(n.destination, n.source, n.bytes);
        }
    }
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream handle, CUstreamCaptureMode)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    if (!s)
    {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
    }
    s->capturing = true;
    s->invalidated = false;
    s->captured = new graph;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamIsCapturing(CUstream handle, CUstreamCaptureStatus* status)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    *status = !s || !s->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->invalidated    ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream handle, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* g,
                                        const CUgraphNode** dependencies, const CUgraphEdgeData** edges,
                                        size_t* count)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    cuStreamIsCapturing(handle, status);
    if (id)
    {
        *id = 1;
    }
    if (g)
    {
        *g = s && s->captured ? reinterpret_cast<CUgraph>(s->captured) : nullptr;
    }
    if (edges)
    {
        *edges = nullptr;
    }
    bool any = s && s->captured && !s->captured->nodes.empty();
    if (dependencies)
    {
        *dependencies = any ? reinterpret_cast<const CUgraphNode*>(&s->captured->nodes.back()) : nullptr;
    }
    if (count)
    {
        *count = any ? 1 : 0;
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamEndCapture(CUstream handle, CUgraph* result)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    if (!s || !s->capturing)
    {
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    s->capturing = false;
    if (s->invalidated)
    {
        delete s->captured;
        s->captured = nullptr;
        *result = nullptr;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *result = reinterpret_cast<CUgraph>(s->captured);
    s->captured = nullptr;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* exec, CUgraph handle, unsigned long long)
{
    lock held(g_mutex);
    auto* g = reinterpret_cast<graph*>(handle);
    auto* e = new graph_exec;
    for (node* n : g->nodes)
    {
        e->originals.push_back(n);
        e->nodes.push_back(*n);
    }
    *exec = reinterpret_cast<CUgraphExec>(e);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec handle, CUstream s)
{
    lock held(g_mutex);
    if (capturing(s))
    {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    ++g_count.graph_launches;
    for (const node& n : reinterpret_cast<graph_exec*>(handle)->nodes)
    {
        run(n);
    }
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec handle, CUgraphNode target,
                                                const CUDA_KERNEL_NODE_PARAMS* params)
{
    lock held(g_mutex);
    auto* e = reinterpret_cast<graph_exec*>(handle);
    for (std::size_t i = 0; i < e->originals.size(); ++i)
    {
        if (reinterpret_cast<CUgraphNode>(e->originals[i]) == target)
        {
            node& n = e->nodes[i];
            if (!n.is_kernel || reinterpret_cast<function*>(params->func)->name != n.f->name)
            {
                return CUDA_ERROR_INVALID_VALUE;
            }
            n.f = reinterpret_cast<function*>(params->func);
            n.threads = params->gridDimX * params->gridDimY * params->gridDimZ * params->blockDimX *
                        params->blockDimY * params->blockDimZ;
            n.params = copy_params(*n.f, params->kernelParams);
            ++g_count.node_updates;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec handle)
{
    lock held(g_mutex);
    delete reinterpret_cast<graph_exec*>(handle);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphDestroy(CUgraph handle)
{
    lock held(g_mutex);
    delete reinterpret_cast<graph*>(handle);
    return CUDA_SUCCESS;
}
