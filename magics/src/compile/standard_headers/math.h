// xcuda stand-in for <math.h> under NVRTC: CCCL's <cuda/std/cmath>, with std:: naming it. A header of
// this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include "xcuda_std_namespace.h"
#include <cuda/std/cmath>
#include <cuda/std/limits>

// M_PI and kin, INFINITY, NAN and HUGE_VAL come from the nvcc prelude (xcuda_nvcc_prelude.h), which NVRTC
// reads before every cell, as nvcc's host <math.h> gives them to every .cu file.
