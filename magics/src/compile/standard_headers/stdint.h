// xcuda stand-in for <stdint.h> under NVRTC: CCCL's <cuda/std/cstdint>, with std:: naming it. A header of
// this name in a -I folder or a header cell is taken instead of this one.
#pragma once
#include "xcuda_std_namespace.h"
#include <cuda/std/cstdint>
