#pragma once
// The opcodes of thread-block clusters -> instruction fields: barrier.cluster.arrive{.release,.relaxed}{.aligned},
// barrier.cluster.wait{.acquire}{.aligned}, mapa{.shared::cluster}.{u32,u64} and getctarank{.shared::cluster}.{u32,u64}
// (what cooperative_groups' cluster API and cuda::ptx emit for sm_90), and isspacep.{global,shared{::cta,::cluster},
// local} (__isShared, __isClusterShared, __isGlobal, __isLocal). ptx_decoder hands it every opcode; it claims these
// and leaves the rest. ld/st/atom/red .shared::cluster are ptx_decoder's (a state space). Stateless.

#include <string>
#include <vector>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    class cluster_decoder
    {
    public:
        // True when `parts` (the opcode split at its dots) is one of these; `refusal` is then "" when the simulator
        // runs it, else why not.
        static bool decode(const std::vector<std::string>& parts, const std::string& text, instruction& in,
                           std::string& refusal);
    };
}
