#pragma once
// Which checks a launch runs (docs/simulator.md, "Checks"), from three environment variables read at each launch:
//   XCUDA_SIM_CHECKS     a comma-separated list over the defaults: a check's name turns it on, "-name" off;
//                        "all", "none" and "default" set every check first ("none,race" is the race check alone);
//   XCUDA_SIM_RACECHECK  0: no race check; 1: races between warps; warp or all: those and races inside a warp;
//   XCUDA_SIM_INITCHECK  0: no initcheck; shared, global, or all (1): uninitialised reads of those spaces.
// The two older variables win over XCUDA_SIM_CHECKS for their checks. A value outside these is an error naming
// the variable and what it takes (std::invalid_argument), so a typo never runs a launch unchecked in silence.

#include <string>

namespace xcuda::sim
{
    struct check_options
    {
        bool race = true;          // shared-memory races between warps (race_check)
        bool warp_race = false;    // shared-memory races between lanes of one warp (warp_race_check)
        bool init_shared = false;  // reads of shared memory no thread of the block wrote (init_check)
        bool init_global = false;  // reads of device allocations never written (init_check, written_memory)
        bool async_copy = true;    // shared accesses of a cp.async's destination before its wait (async_hazard_check)

        // From the variables' values (nullptr: unset); throws std::invalid_argument for a value it cannot read.
        static check_options parse(const char* checks, const char* racecheck, const char* initcheck);
        // parse() of the process's environment now.
        static check_options from_environment();
        // "race, init-shared" (the names of the checks on), "none" when none is.
        std::string names() const;
    };
}
