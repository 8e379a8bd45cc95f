#pragma once
// What the shim's files share (xcuda_sim_driver.cpp and xcuda_sim_textures.cpp): the failure description that
// cuGetErrorString returns, and the texture registry every launch reads. Defined in xcuda_sim_driver.cpp.

#include <cuda.h>

#include <string>

#include "texture_registry.hpp"

namespace xcuda_sim
{
    // Records detail as the description of code (what cuGetErrorString returns for it) and returns code.
    CUresult failed_with(CUresult code, std::string detail);
    // The process' CUDA arrays, texture objects and surface objects.
    xcuda::sim::texture_registry& textures();
}
