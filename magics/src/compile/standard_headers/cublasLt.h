// xcuda stand-in for <cublasLt.h> under NVRTC: cuBLASLt is a host library (see the stand-in for <cublas_v2.h>,
// which this includes). Its handle and descriptor types only, so the host code beside the kernels parses and
// is set aside. A header of this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include <cublas_v2.h>
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque_t* cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque_t* cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque_t* cublasLtMatmulPreference_t;
