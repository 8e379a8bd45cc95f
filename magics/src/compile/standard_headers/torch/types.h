// xcuda stand-in for PyTorch's <torch/types.h> under NVRTC. A PyTorch C++ extension's .cu file (flash-attention-
// minimal's flash.cu) holds its kernels beside a host function over torch::Tensor that launches them; nvcc
// compiles that function with PyTorch's headers, which are host C++ NVRTC cannot compile. The type's name
// only, so the host function parses and is set aside as host code while the kernels compile; launch them from
// Python with torch tensors (they have __cuda_array_interface__). A header of this name in a -I folder or a
// header cell is taken instead of this one.
#pragma once
namespace at
{
    class Tensor;
}
namespace torch
{
    using at::Tensor;
}
