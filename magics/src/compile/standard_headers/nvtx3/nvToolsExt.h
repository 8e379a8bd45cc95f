// xcuda stand-in for NVTX 3's <nvtx3/nvToolsExt.h> under NVRTC: NVTX names ranges and marks of the host's
// timeline for Nsight Systems, from host code (llm.c's NvtxRange around each layer); the toolkit's header
// declares host functions, which NVRTC refuses. Here each call is a no-op, __host__ __device__ and inline (the
// only functions NVRTC takes), so the host code using them parses until it is set aside; a kernel calling one
// compiles to nothing, as the profiler sees no device ranges. A header of this name in a -I folder or a header
// cell is taken instead of this one.
#pragma once
#include <cuda/std/cstdint>
typedef ::cuda::std::uint64_t nvtxRangeId_t;
typedef struct nvtxDomainRegistration_st* nvtxDomainHandle_t;
typedef struct nvtxStringRegistration_st* nvtxStringHandle_t;
typedef struct nvtxEventAttributes_v2
{
    ::cuda::std::uint16_t version;
    ::cuda::std::uint16_t size;
    ::cuda::std::uint32_t category;
    ::cuda::std::int32_t colorType;
    ::cuda::std::uint32_t color;
    ::cuda::std::int32_t payloadType;
    ::cuda::std::int32_t reserved0;
    union { ::cuda::std::uint64_t ullValue; ::cuda::std::int64_t llValue; double dValue; } payload;
    ::cuda::std::int32_t messageType;
    union { const char* ascii; const wchar_t* unicode; nvtxStringHandle_t registered; } message;
} nvtxEventAttributes_t;
#define NVTX_VERSION 3
#define NVTX_EVENT_ATTRIB_STRUCT_SIZE ((::cuda::std::uint16_t)(sizeof(nvtxEventAttributes_t)))
#define NVTX_COLOR_ARGB 1
#define NVTX_MESSAGE_TYPE_ASCII 1
__host__ __device__ inline int nvtxRangePushA(const char*) { return 0; }
__host__ __device__ inline int nvtxRangePushW(const wchar_t*) { return 0; }
__host__ __device__ inline int nvtxRangePushEx(const nvtxEventAttributes_t*) { return 0; }
__host__ __device__ inline int nvtxRangePop() { return 0; }
__host__ __device__ inline nvtxRangeId_t nvtxRangeStartA(const char*) { return 0; }
__host__ __device__ inline nvtxRangeId_t nvtxRangeStartW(const wchar_t*) { return 0; }
__host__ __device__ inline nvtxRangeId_t nvtxRangeStartEx(const nvtxEventAttributes_t*) { return 0; }
__host__ __device__ inline void nvtxRangeEnd(nvtxRangeId_t) {}
__host__ __device__ inline void nvtxMarkA(const char*) {}
__host__ __device__ inline void nvtxMarkW(const wchar_t*) {}
__host__ __device__ inline void nvtxMarkEx(const nvtxEventAttributes_t*) {}
__host__ __device__ inline void nvtxNameOsThreadA(::cuda::std::uint32_t, const char*) {}
__host__ __device__ inline nvtxDomainHandle_t nvtxDomainCreateA(const char*) { return nullptr; }
__host__ __device__ inline void nvtxDomainDestroy(nvtxDomainHandle_t) {}
__host__ __device__ inline int nvtxDomainRangePushEx(nvtxDomainHandle_t, const nvtxEventAttributes_t*) { return 0; }
__host__ __device__ inline int nvtxDomainRangePop(nvtxDomainHandle_t) { return 0; }
#ifndef UNICODE
#define nvtxRangePush nvtxRangePushA
#define nvtxRangeStart nvtxRangeStartA
#define nvtxMark nvtxMarkA
#define nvtxNameOsThread nvtxNameOsThreadA
#define nvtxDomainCreate nvtxDomainCreateA
#else
#define nvtxRangePush nvtxRangePushW
#define nvtxRangeStart nvtxRangeStartW
#define nvtxMark nvtxMarkW
#endif
