#pragma once
// PTX text -> ptx_program, for the PTX NVRTC 13 emits (ISA 9.x, .address_size 64).
//
// Reads the module directives (.version, .target, .address_size, .file), variables (.global, .const,
// .shared, with alignment, arrays and initialisers), .entry and .func definitions and declarations with
// their .param lists, and function bodies: .reg declarations (with <N> counts), .shared/.local/.param
// declarations, nested { } blocks (call sequences), labels, .loc lines, predicated instructions,
// vector operands and [reg+offset] addresses. Every instruction is decoded here, once: an opcode or a
// modifier the simulator does not implement is refused now, naming the instruction and its source
// line, so that a kernel never runs half-understood. The module level (tokens, directives, variables,
// function headers) is ptx_module_reader's; ptx_parser.cpp reads the function bodies, instruction by
// instruction.
//
// Stateless; parse() may be called from any thread.

#include <string>

#include "ptx_program.hpp"

namespace xcuda::sim
{
    class ptx_parser
    {
    public:
        // Throws sim_error (invalid_ptx for text that is not PTX as expected, unsupported for an
        // instruction the simulator does not implement).
        static ptx_program parse(const std::string& text);
    };
}
