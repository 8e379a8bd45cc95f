// xcuda's stand-in for what nvcc's host headers put into every .cu file with no #include: nvcc
// includes cuda_runtime.h first, which brings glibc's <sys/types.h> (uint, ushort, ulong), <math.h>
// (M_PI and kin, INFINITY, NAN, HUGE_VAL), <limits.h> (INT_MAX, ...) and <stdlib.h> (RAND_MAX,
// EXIT_SUCCESS). Real kernels use these names without including anything. NVRTC reads this text before
// the cell (--pre-include); nvcc_prelude drops each #define that the cell, a header cell it includes or
// a -D option defines itself, so a user's own definition is taken without a redefinition warning, and
// takes NVRTC's warning out of the log when a later header defines one again (CCCL's <cuda/std/cmath>
// makes its own INFINITY and NAN under NVRTC, unguarded; CUB includes it).
// No #include here: every cell pays for this text, and a few lines cost nothing. The limits are
// spelled as CCCL's <cuda/std/climits> spells them under NVRTC, so that including <climits> later
// repeats them identically (no warning). glibc's x86-64 values; no FLT_MAX and no INT32_MAX: nvcc does
// not give <float.h> or <stdint.h> without an #include either.
#pragma once
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
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
#define INFINITY   (__builtin_bit_cast(float, 0x7f800000U))
#define NAN        (__builtin_bit_cast(float, 0x7fc00000U))
#define HUGE_VALF  (__builtin_bit_cast(float, 0x7f800000U))
#define HUGE_VAL   (__builtin_bit_cast(double, 0x7ff0000000000000ULL))
#define MAXFLOAT   3.40282347e+38F
#define CHAR_BIT 8
#define SCHAR_MIN         (-128)
#define SCHAR_MAX         127
#define UCHAR_MAX         255
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#define SHRT_MIN  (-SHRT_MAX - 1)
#define SHRT_MAX  0x7fff
#define USHRT_MAX 0xffff
#define INT_MIN   (-INT_MAX - 1)
#define INT_MAX   0x7fffffff
#define UINT_MAX  0xffffffff
#define LONG_MIN  (-LONG_MAX - 1)
#define LONG_MAX  LLONG_MAX
#define ULONG_MAX ULLONG_MAX
#define LLONG_MIN  (-LLONG_MAX - 1)
#define LLONG_MAX  0x7fffffffffffffffLL
#define ULLONG_MAX 0xffffffffffffffffUL
#define RAND_MAX     2147483647
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
