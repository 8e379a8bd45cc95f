#pragma once
// How every report of the simulator names what it is about, the same in each (docs/simulator.md, "Checks"): a
// thread and its block by their CUDA coordinates, an instruction by its PTX text, its function and its source
// line ("line N of FILE", which xcuda rewrites as the cell's own line: base/cell_lines), a shared address by the
// variable that holds it, a global address by the kernel argument whose array it is in. The interpreter's faults
// and the check plugins both use it, giving it the launch's parts it needs (a block's dimensions `dims`, its
// coordinates `ctaid`), so that it depends on neither. Stateless; safe from any thread.

#include <cstddef>
#include <cstdint>
#include <string>

#include "ptx_program.hpp"
#include "sim_memory.hpp"

namespace xcuda::sim
{

    class check_report
    {
    public:
        // "block (x,y,z)"
        static std::string block(const unsigned ctaid[3]);
        // "thread (x,y,z) of block (a,b,c)", from the thread's linear id in its block.
        static std::string thread(const unsigned dims[3], const unsigned ctaid[3], std::uint32_t linear);
        // "thread (x,y,z)" alone (where the block is named once for two threads).
        static std::string thread_in_block(const unsigned dims[3], std::uint32_t linear);
        // "warp W (threads (a,b,c) to (d,e,f))"
        static std::string warp(const unsigned dims[3], unsigned warp, unsigned lanes);
        // "in FUNCTION, line N of FILE" (no line where the PTX has no .loc).
        static std::string location(const ptx_program& program, const ptx_function& function, const instruction& in);
        // "'PTX TEXT' in FUNCTION, line N of FILE"
        static std::string place(const ptx_program& program, const ptx_function& function, const instruction& in);
        // The function whose code holds `in` (the entry when none does: the instruction is then not a program's).
        static const ptx_function& function_of(const ptx_program& program, int entry, const instruction& in);
        // "'kernel::s' (byte 4 of 256)", "the dynamic shared memory 'buffer'", or "shared memory".
        static std::string shared_variable(const ptx_program& program, std::uint64_t offset);
        // "'kernel::s' (byte 4 of 256), shared address 0x10": the byte a shared-memory report is about.
        static std::string shared_address(const ptx_program& program, std::uint64_t offset);
        // "thread (x,y,z)" + `does` + "'PTX TEXT' in FUNCTION, line N of FILE": one of the accesses a report of a
        // block names (`does`: " writes it at ", " read it before at ", ...).
        static std::string access(const ptx_program& program, const ptx_function& function, const unsigned dims[3],
                                  std::uint32_t thread, const char* does, const instruction& in);
        // " (the array of the kernel's parameter 1, name_param_1)": the pointer argument of the launch of `entry` with
        // `params` whose allocation is nearest to address (within 1 MiB), else "".
        static std::string argument_near(const ptx_program& program, int entry, const std::uint8_t* params,
                                         std::size_t param_bytes, const sim_memory& memory, std::uint64_t address);
    };
}
