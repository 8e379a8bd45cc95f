#pragma once
// CUDA sources that several C++ tests compile (as tests/cuda_sources.py is for the Python tests).

namespace xcuda_tests
{
    inline const char* const saxpy_source =
        "extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n)\n"
        "{ size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i < n) out[i] = a * x[i] + y[i]; }\n";
}
