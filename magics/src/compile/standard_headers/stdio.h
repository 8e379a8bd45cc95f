// xcuda stand-in for <stdio.h> under NVRTC: device printf is built into NVRTC; this adds what device code
// takes from the host header alongside it (size_t, NULL, EOF). FILE, fopen and the rest are host-only.
// A header of this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include "xcuda_std_namespace.h"
#include <cuda/std/cstddef>
#ifndef NULL
#define NULL 0
#endif
#ifndef EOF
#define EOF (-1)
#endif
