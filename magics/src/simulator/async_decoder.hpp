#pragma once
// The opcodes of asynchronous copies and their barriers -> instruction fields: cp.async (ca/cg, 4/8/16
// bytes, src-size or ignore-src), cp.async.commit_group / wait_group / wait_all, cp.async.mbarrier.arrive,
// cp.async.bulk from global to shared with an mbarrier's complete_tx, and mbarrier.* (init, arrive,
// arrive_drop, expect_tx, complete_tx, test_wait/try_wait with a state or a parity, pending_count, inval).
// ptx_decoder hands it every opcode whose base is "cp" or "mbarrier"; what the simulator does not run
// (tensor copies, multicast, clusters' remote barriers) is refused with the reason. Stateless.

#include <string>
#include <vector>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    class async_decoder
    {
    public:
        // True when `parts` (the opcode split at its dots) is one of these families; `refusal` is then "" when
        // the simulator runs it, else why not.
        static bool decode(const std::vector<std::string>& parts, const std::string& text, instruction& in,
                           std::string& refusal);
    };
}
