// xcuda stand-in for <float.h> under NVRTC. CCCL's <cuda/std/cfloat> defines nothing under NVRTC (it
// forwards to the host's <float.h>), so the macros are here, with the values gcc's <float.h> has on
// x86-64 and aarch64 (IEEE 754 binary32 and binary64; long double is double in device code). A header
// of this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include "xcuda_std_namespace.h"
#ifndef FLT_MAX
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define DBL_MANT_DIG 53
#define LDBL_MANT_DIG DBL_MANT_DIG
#define FLT_DIG 6
#define DBL_DIG 15
#define LDBL_DIG DBL_DIG
#define FLT_DECIMAL_DIG 9
#define DBL_DECIMAL_DIG 17
#define DECIMAL_DIG DBL_DECIMAL_DIG
#define FLT_MIN_EXP (-125)
#define DBL_MIN_EXP (-1021)
#define FLT_MAX_EXP 128
#define DBL_MAX_EXP 1024
#define FLT_MIN_10_EXP (-37)
#define DBL_MIN_10_EXP (-307)
#define FLT_MAX_10_EXP 38
#define DBL_MAX_10_EXP 308
#define FLT_MAX 0x1.fffffep+127F
#define DBL_MAX 0x1.fffffffffffffp+1023
#define LDBL_MAX DBL_MAX
#define FLT_MIN 0x1p-126F
#define DBL_MIN 0x1p-1022
#define LDBL_MIN DBL_MIN
#define FLT_EPSILON 0x1p-23F
#define DBL_EPSILON 0x1p-52
#define LDBL_EPSILON DBL_EPSILON
#define FLT_TRUE_MIN 0x1p-149F
#define DBL_TRUE_MIN 0x1p-1074
#define FLT_EVAL_METHOD 0
#define FLT_ROUNDS 1
#endif
