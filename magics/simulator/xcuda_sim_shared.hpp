#pragma once
// What the shim's files share (xcuda_sim_driver.cpp and xcuda_sim_textures.cpp): the failure description that
// cuGetErrorString returns, and the texture registry every launch reads. Defined in xcuda_sim_driver.cpp.

#include <cuda.h>

#include <cstddef>
#include <string>

#include "texture_registry.hpp"

namespace xcuda_sim
{
    // Records detail as the description of code (what cuGetErrorString returns for it) and returns code.
    CUresult failed_with(CUresult code, std::string detail);
    // The process' CUDA arrays, texture objects and surface objects.
    xcuda::sim::texture_registry& textures();
    // Device memory written outside a kernel (a memset, a copy from the host), or copied from `from`: for the global
    // initcheck's record of written bytes (docs/simulator.md, "Checks"); nothing when it tracks no allocation.
    void device_written(const void* to, std::size_t bytes);
    void device_copied(void* to, const void* from, std::size_t bytes);
}
