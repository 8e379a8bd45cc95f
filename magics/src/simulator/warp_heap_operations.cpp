// warp_interpreter's device malloc and free (issue 46): NVRTC compiles them to calls of the extern functions
// `malloc` (one .b64 parameter, a .b64 result) and `free`, which the simulator answers from the context's
// device_heap. And the check of an access that falls in the heap's arena: it must lie wholly in one block
// alive now (an overrun, or a use after free, is an illegal address naming the block).

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "device_heap.hpp"
#include "warp_interpreter.hpp"
#include "warp_values.hpp"

namespace xcuda::sim
{
    void warp_interpreter::heap_call(const instruction& in, std::uint32_t active, bool allocate)
    {
        const ptx_program& program = *m_launch.program;
        const ptx_symbol& argument = program.symbols[static_cast<std::size_t>(in.call_arguments[0])];
        XCUDA_SIM_LANES(active)
        {
            std::uint8_t* area = m_frame->params.data() + static_cast<std::size_t>(l) * m_function->frame_bytes;
            std::uint64_t value = 0;
            std::memcpy(&value, area + argument.offset, std::min<std::size_t>(argument.size, 8));
            if (allocate)
            {
                // Lanes allocate in lane order, one block each; null when the heap is full (as a GPU's malloc).
                std::uint64_t block = m_launch.heap->allocate(static_cast<std::size_t>(value));
                if (in.call_result >= 0)
                {
                    const ptx_symbol& result = program.symbols[static_cast<std::size_t>(in.call_result)];
                    std::memcpy(area + result.offset, &block, std::min<std::size_t>(result.size, 8));
                }
            }
            else if (value != 0 && !m_launch.heap->release(value))
            {
                throw sim_error(sim_error::kind::illegal_address,
                                "kernel '" + m_launch.kernel + "', " + thread_name(l) + ": free(" + hex(value) + "), " +
                                    (m_launch.heap->in_arena(value) ? m_launch.heap->describe(value, 1) + ": not a block malloc gave and not yet freed"
                                                                    : "an address device malloc did not give (free() of a cudaMalloc pointer, "
                                                                      "of a pointer into a block, or twice)") +
                                    ", at " + where(in));
            }
        }
    }

    std::uint8_t* warp_interpreter::heap_address(const instruction& in, unsigned lane, std::uint64_t address, unsigned bytes,
                                                 bool write)
    {
        const std::string access = std::string(write ? "writes " : "reads ") + std::to_string(bytes) + " bytes at " +
                                   (in.space == state_space::generic ? "generic" : space_name(in.space)) + " address " + hex(address);
        if (!m_launch.heap->in_arena(address))
        {
            fault(in, lane, access + ", " + m_launch.memory->describe(address, bytes) + argument_near(address));
        }
        std::uint8_t* p = m_launch.heap->find(address, bytes);
        if (!p)
        {
            fault(in, lane, access + ", " + m_launch.heap->describe(address, bytes));
        }
        return p;
    }
}
