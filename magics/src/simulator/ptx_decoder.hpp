#pragma once
// One PTX opcode with its modifiers ("ld.global.nc.v4.f32") -> the fields of an instruction the
// interpreter switches on (opcode, types, space, comparison, rounding, variant, vector width).
//
// Every modifier is either understood, known to change nothing in a one-thread-at-a-time machine
// (cache hints, memory-order and scope qualifiers), or refused: decode() returns why the simulator
// cannot run the instruction, and the parser keeps it as an `unsupported` instruction that raises
// that reason, naming its line, if it is ever executed. Stateless.

#include <string>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    // A PTX type name without its dot ("u32", "pred") -> the type; false when it is none the simulator has.
    bool parse_type_name(const std::string& name, ptx_type& type);

    class ptx_decoder
    {
    public:
        // Fills in's opcode and modifiers from the opcode text; "" when the simulator can run it, else why not.
        static std::string decode(const std::string& text, instruction& in);
    };
}
