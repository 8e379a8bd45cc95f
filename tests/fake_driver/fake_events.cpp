// The fake's events: recorded at once, so an event has nothing to wait for, except where xcuda_fake_set_busy
// makes its queries answer CUDA_ERROR_NOT_READY; synchronising with one prints what xcuda_fake_print_at_sync
// asked for (the waits: fake_streams.cpp); the elapsed time between two is a fixed 0.01 ms.

#include "fake_state.hpp"

using namespace xcuda_fake;

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int)
{
    *event = reinterpret_cast<CUevent>(new char[1]);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent event)
{
    delete[] reinterpret_cast<char*>(event);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventSynchronize(CUevent)
{
    lock held(g_mutex);
    print_at_sync();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventQuery(CUevent)
{
    lock held(g_mutex);
    return g_busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent, CUevent)
{
    *ms = 0.01f;
    return CUDA_SUCCESS;
}
