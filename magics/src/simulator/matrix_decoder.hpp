#pragma once
// The opcodes of a warp's matrix operations -> instruction fields (opcode::matrix, instruction::shape):
// wmma.load / wmma.store / wmma.mma (.sync.aligned; m16n16k16, m32n8k16, m8n32k16 for f16, bf16, s8, u8;
// m16n16k8 for tf32), mma.sync.aligned (m16n8k16 f16/bf16, m16n8k8 tf32 and f16/bf16, m16n8k32 s8/u8, with
// f32, f16 or s32 accumulators), ldmatrix.sync.aligned.m8n8.x1/.x2/.x4{.trans}.b16, and cvt.rna.tf32.f32
// (wmma::__float_to_tf32, the rounding of a tf32 input). What the simulator
// does not run (other shapes and types, sparse mma, sub-byte types, stmatrix) is refused with the reason.
// Stateless.

#include <string>
#include <vector>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    class matrix_decoder
    {
    public:
        // True when `parts` (the opcode split at its dots) is wmma, mma or ldmatrix; `refusal` is then "" when the
        // simulator runs it, else why not.
        static bool decode(const std::vector<std::string>& parts, const std::string& text, instruction& in,
                           std::string& refusal);
    };
}
