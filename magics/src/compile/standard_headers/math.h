// xcuda stand-in for <math.h> under NVRTC: CCCL's <cuda/std/cmath>, with std:: naming it. A header of
// this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include "xcuda_std_namespace.h"
#include <cuda/std/cmath>
#include <cuda/std/limits>

// What glibc's <math.h> adds (M_PI and kin are POSIX; nvcc gets them from the host header).
#ifndef M_PI
#define M_E        2.7182818284590452354
#define M_LOG2E    1.4426950408889634074
#define M_LOG10E   0.43429448190325182765
#define M_LN2      0.69314718055994530942
#define M_LN10     2.30258509299404568402
#define M_PI       3.14159265358979323846
#define M_PI_2     1.57079632679489661923
#define M_PI_4     0.78539816339744830962
#define M_1_PI     0.31830988618379067154
#define M_2_PI     0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2    1.41421356237309504880
#define M_SQRT1_2  0.70710678118654752440
#endif
#ifndef INFINITY
#define INFINITY (::cuda::std::numeric_limits<float>::infinity())
#endif
#ifndef NAN
#define NAN (::cuda::std::numeric_limits<float>::quiet_NaN())
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (::cuda::std::numeric_limits<float>::infinity())
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (::cuda::std::numeric_limits<double>::infinity())
#endif
