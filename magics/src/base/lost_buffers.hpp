#pragma once
// What a kernel fault lost, in the user's words: each device buffer of the fault (kernel_fault::lost)
// with the names of the user's variables that viewed it, and the text added to KernelFault's message
// (which arrays are gone, how many unnamed buffers, what is intact, what to run). py_errors.cpp reads
// the namespace and calls name() for each device array; it builds nothing of the text. Plain data.

#include <cstdint>
#include <string>
#include <vector>

#include "errors.hpp"

namespace xcuda
{
    class lost_buffers
    {
    public:
        struct entry
        {
            kernel_fault::lost_buffer buffer;
            std::vector<std::string> names;  // the variables viewing it, in the order named
        };

        explicit lost_buffers(const kernel_fault& fault);

        // The variable `name` views the buffer `id` (kernel_fault::lost_buffer::id); ids the fault did
        // not lose are ignored.
        void name(std::uintptr_t id, const std::string& name);

        const std::vector<entry>& entries() const noexcept { return m_entries; }

        // "\nDevice arrays lost ...:\n  x = y: label ... Run %cuda_recover ...": appended to the fault's message.
        std::string describe() const;

    private:
        std::vector<entry> m_entries;
    };
}
