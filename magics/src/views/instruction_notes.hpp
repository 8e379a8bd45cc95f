#pragma once
// What an instruction does, in a sentence, for the hover text of the PTX and SASS views (as Compiler
// Explorer shows one). Written in our own words from the PTX ISA for the opcodes NVRTC emits and the
// modifiers that change their meaning (state space, type, rounding, caching, comparison); SASS
// opcodes of Volta to Hopper where their meaning is known from NVIDIA's instruction set reference
// (SASS is not documented instruction by instruction, so those notes are short).
//
// An opcode with modifiers reads as its base opcode's note followed by each known modifier's:
// "ld.global.nc.f32" -> "ld: load from memory into a register. .global: global (device) memory.
// .nc: through the read-only, non-coherent cache. .f32: a 32-bit float." Unknown modifiers are left
// out; an unknown base opcode gives "".
//
// Pure functions over constant tables; safe from any thread.

#include <string>

namespace xcuda
{
    class instruction_notes
    {
    public:
        // "ld.global.f32", "setp.lt.s32", "@%p1 bra" is not an opcode: pass "bra".
        static std::string ptx(const std::string& opcode);
        // "IMAD.WIDE.U32", "LDG.E.64", "FFMA".
        static std::string sass(const std::string& opcode);
    };
}
