#pragma once
// The core state of one notebook (one Python process): its CUDA session, the compiler and the module
// registry of its cells, the bandwidth probe of its sweeps, and this engine's place on its host.
//
// The binding makes one when xcuda._core is imported and hands it to each piece that needs it (the
// registration of each part of the module, which keeps it for its functions); nothing reaches for it
// through a global. It is never destroyed: the xeus kernel ends with std::exit, after which no driver call
// may run; xcuda._shutdown closes the session instead. Making it reads the environment only: no driver is
// touched until the first GPU operation.
//
// Threading: the parts guard their own state (each says how); the object itself is never replaced.

#include "bandwidth_probe.hpp"
#include "compiler.hpp"
#include "cuda_session.hpp"
#include "engine_placement.hpp"
#include "module_registry.hpp"

namespace xcuda
{
    struct notebook_session
    {
        cuda_session session;
        class compiler compiler;
        module_registry registry{session, compiler};
        bandwidth_probe probe{session};
        // This engine's place on its host: the registry is joined only when the process is an ipyparallel
        // engine (the binding's placement functions).
        engine_placement placement{session};
    };
}
