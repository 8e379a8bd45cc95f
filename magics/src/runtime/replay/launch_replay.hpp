#pragma once
// What xcuda-replay does with a replay_bundle: in a process of its own, allocate the bundle's regions,
// copy their bytes in, rewrite the pointer arguments to them, launch the kernel once, wait, and free
// everything again (so that a leak check of the replay finds only the kernel's own doing).
//
// It uses the driver directly (cuda_driver: libcuda loaded at run time), the device's primary context
// and no session: the process exists for one launch, under ncu or compute-sanitizer, and ends.
//
// Outcome: run() returns normally when the launch completed; a failing driver call (a fault of the
// kernel included) throws cuda_error, or cuda_unavailable_error without a GPU. Not thread-safe; one
// call per process is what it is made for.

#include <string>

#include "replay_bundle.hpp"

namespace xcuda
{
    class launch_replay
    {
    public:
        // Launches the bundle's kernel once. When output_folder is not empty, each initialised or
        // written region's bytes after the launch go to output_folder/region-N.out (tests compare them
        // with the live launch's results).
        static void run(const replay_bundle& bundle, const std::string& output_folder = "");
    };
}
