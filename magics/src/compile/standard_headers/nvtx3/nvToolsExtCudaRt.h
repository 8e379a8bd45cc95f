// xcuda stand-in for NVTX 3's <nvtx3/nvToolsExtCudaRt.h> under NVRTC: naming CUDA devices, streams and events
// for the profiler, from host code; no-ops as in <nvtx3/nvToolsExt.h> (see there). A header of this name in a -I
// folder or a header cell is taken instead of this one.
#pragma once
#include <nvtx3/nvToolsExt.h>
#include <cuda_runtime.h>
__host__ __device__ inline void nvtxNameCudaDeviceA(int, const char*) {}
__host__ __device__ inline void nvtxNameCudaStreamA(cudaStream_t, const char*) {}
__host__ __device__ inline void nvtxNameCudaEventA(cudaEvent_t, const char*) {}
#ifndef UNICODE
#define nvtxNameCudaDevice nvtxNameCudaDeviceA
#define nvtxNameCudaStream nvtxNameCudaStreamA
#define nvtxNameCudaEvent nvtxNameCudaEventA
#endif
