// xcuda stand-in for the runtime's <cuda_profiler_api.h> under NVRTC: cudaProfilerStart() and cudaProfilerStop()
// are host calls, in host code (llm.c's training loop) that a cell sets aside; NVRTC would refuse their
// declarations, so nothing is declared. A header of this name in a -I folder or a header cell is taken instead.
#pragma once
#include <cuda_runtime.h>
