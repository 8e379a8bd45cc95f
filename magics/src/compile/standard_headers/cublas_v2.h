// xcuda stand-in for <cublas_v2.h> under NVRTC. cuBLAS is a host library: nvcc compiles a .cu file's calls to it
// with the host compiler, and NVRTC refuses every declaration of the real header (host functions are not
// allowed in JIT mode), so a kernel file that includes it (siboehm's SGEMM kernels, llm.c) failed before its
// first kernel. This declares the library's handle and enum types only, so that the host helpers and host
// variables beside the kernels (a cublasCheck(cublasStatus_t ...), `cublasHandle_t handle;`) parse and are
// set aside as host code; cuBLAS itself is not callable from a kernel. A header of this name in a -I folder or
// a header cell is taken instead of this one.
#pragma once
typedef struct cublasContext* cublasHandle_t;
typedef enum
{
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum
{
    CUBLAS_COMPUTE_16F = 64,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    CUBLAS_COMPUTE_64F = 70,
    CUBLAS_COMPUTE_32I = 72
} cublasComputeType_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TENSOR_OP_MATH = 1, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
