// The fake's streams and the waits on them: work runs at once, so a stream has nothing to wait for, except
// where xcuda_fake_set_busy makes its queries answer CUDA_ERROR_NOT_READY; a synchronising call (of a stream,
// the context, or an event: fake_events.cpp) prints what xcuda_fake_print_at_sync asked for; synchronising or
// querying a capturing stream, or synchronising the context while any stream captures, fails and
// invalidates the capture (the capture itself: fake_graphs.cpp).

#include "fake_state.hpp"

using namespace xcuda_fake;

namespace
{
    CUresult refuse_while_any_capture()
    {
        bool refused = false;
        for (stream* s : g_streams)
        {
            if (s->capturing)
            {
                s->invalidated = true;
                refused = true;
            }
        }
        return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
    }
}

extern "C" void xcuda_fake_set_busy(int busy)
{
    lock held(g_mutex);
    g_busy = busy != 0;
}

extern "C" void xcuda_fake_print_at_sync(const char* text)
{
    lock held(g_mutex);
    g_sync_print = text;
}

CUresult CUDAAPI cuCtxSynchronize()
{
    lock held(g_mutex);
    CUresult refused = refuse_while_any_capture();
    if (refused == CUDA_SUCCESS)
    {
        print_at_sync();
    }
    return refused;
}
CUresult CUDAAPI cuStreamCreate(CUstream* handle, unsigned int)
{
    lock held(g_mutex);
    auto* s = new stream;
    g_streams.push_back(s);
    *handle = reinterpret_cast<CUstream>(s);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamDestroy(CUstream handle)
{
    lock held(g_mutex);
    stream* s = as_stream(handle);
    for (auto it = g_streams.begin(); it != g_streams.end(); ++it)
    {
        if (*it == s)
        {
            g_streams.erase(it);
            break;
        }
    }
    delete s;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream handle)
{
    lock held(g_mutex);
    if (capturing(handle))
    {
        as_stream(handle)->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    print_at_sync();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamQuery(CUstream handle)
{
    lock held(g_mutex);
    if (capturing(handle))
    {
        as_stream(handle)->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return g_busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
