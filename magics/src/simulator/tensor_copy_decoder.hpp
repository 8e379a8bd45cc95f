#pragma once
// The opcodes of TMA (the tensor memory accelerator) -> instruction fields: cp.async.bulk.tensor.{1..5}d loads
// (.tile, .im2col, completing bytes on an mbarrier, .multicast::cluster with a ctaMask) and stores (.bulk_group),
// cp.reduce.async.bulk.tensor, cp.async.bulk from shared to global memory, cp.reduce.async.bulk (to global memory,
// and to a .shared::cluster window with an mbarrier), cp.async.bulk.commit_group and wait_group(.read); the
// prefetches (cp.async.bulk.prefetch(.tensor), prefetch(u), prefetch.tensormap) are no-ops. async_decoder hands
// these to it; what the simulator does not run (a CTA pair's .cta_group, sm_100; the store of im2col) is refused
// with the reason. Stateless.

#include <string>
#include <vector>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    class tensor_copy_decoder
    {
    public:
        // Whether `parts` (the opcode split at its dots) is one of the forms above.
        static bool owns(const std::vector<std::string>& parts);
        // "" when the simulator runs it (in filled in), else why not.
        static std::string decode(const std::vector<std::string>& parts, const std::string& text, instruction& in);
    };
}
