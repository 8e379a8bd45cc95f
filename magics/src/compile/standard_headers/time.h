// xcuda stand-in for <time.h> under NVRTC: CCCL's <cuda/std/ctime> (time_t, clock_t, CLOCKS_PER_SEC, struct
// timespec), with std:: naming it; device code has clock() and clock64() built in. time(), srand(time(NULL))
// and the rest are the host's, in the host code beside the kernels that a cell sets aside. A header of this
// name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include "xcuda_std_namespace.h"
#include <cuda/std/ctime>
#ifndef CLOCKS_PER_SEC
#define CLOCKS_PER_SEC ((::cuda::std::clock_t)1000000)  // glibc's (POSIX fixes it at one million)
#endif
