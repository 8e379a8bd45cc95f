// xcuda stand-in for <cuda.h> under NVRTC: the driver API's types that device code uses (CUtensorMap
// for TMA, the texture/surface object handles, CUdeviceptr), as the toolkit's cuda.h defines them.
// The toolkit's cuda.h itself cannot be compiled by NVRTC: it declares the driver API's host
// functions, and NVRTC refuses any host function declaration ("host functions are not allowed in JIT
// mode"). A header of this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include "stdint.h"
#include "stdlib.h"

#ifndef CUDA_VERSION
#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10)
#endif

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef unsigned long long CUtexObject_v1;
typedef CUtexObject_v1 CUtexObject;
typedef unsigned long long CUsurfObject_v1;
typedef CUsurfObject_v1 CUsurfObject;

#define CU_TENSOR_MAP_NUM_QWORDS 16
// The tensor map descriptor: 128 opaque bytes, 128-byte aligned (passed as
// `const __grid_constant__ CUtensorMap`, read by cp.async.bulk.tensor).
typedef struct CUtensorMap_st
{
    alignas(128) cuuint64_t opaque[CU_TENSOR_MAP_NUM_QWORDS];
} CUtensorMap;
