"""CUDA sources more than one test file compiles (tests/ is on sys.path: conftest.py lives there)."""

# A CUB block reduction: CCCL headers from the toolkit, a template kernel body behind extern "C".
CUB_REDUCTION = r"""
#include <cub/block/block_reduce.cuh>
#include <cuda/std/cstdint>

extern "C" __global__ void block_sum(const float* in, float* out, cuda::std::int32_t n)
{
    using reduce = cub::BlockReduce<float, 128>;
    __shared__ typename reduce::TempStorage storage;
    int i = blockIdx.x * 128 + threadIdx.x;
    float sum = reduce(storage).Sum(i < n ? in[i] : 0.0f);
    if (threadIdx.x == 0)
        out[blockIdx.x] = sum;
}
"""
