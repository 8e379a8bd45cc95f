// xcuda stand-in helper, included first by every stand-in that maps a standard header to CCCL's.
// It names CCCL's cuda::std as std, so that `std::min`, `std::numeric_limits`, `std::is_same` in code
// written for nvcc find libcu++'s device versions (NVRTC has no C++ standard library; under nvcc these
// calls reach the host library's constexpr or __device__ versions). A using-directive, so names that
// CCCL declares later, in any of its headers, are found through std:: as well.
#pragma once
namespace cuda
{
    namespace std
    {
    }
}
namespace std
{
    using namespace ::cuda::std;
}
// glibc's <sys/types.h> names; nvcc's host headers bring them into every .cu file.
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
// NVRTC 12 with CUDA 13's headers (NVRTC 12's wheel has no headers of its own): CCCL's type traits
// include the toolkit's cuda_fp8.hpp, written against CUDA 13's vector_types.h (which defines this
// macro), not NVRTC 12's built-in one. CCCL's own switches leave the fp8/fp6/fp4 traits out then.
#ifndef __NV_SILENCE_DEPRECATION_BEGIN
#ifndef CCCL_DISABLE_NVFP8_SUPPORT
#define CCCL_DISABLE_NVFP8_SUPPORT
#endif
#ifndef CCCL_DISABLE_NVFP6_SUPPORT
#define CCCL_DISABLE_NVFP6_SUPPORT
#endif
#ifndef CCCL_DISABLE_NVFP4_SUPPORT
#define CCCL_DISABLE_NVFP4_SUPPORT
#endif
#endif
