#pragma once
// xcuda.Pointer apart from Python: a raw device address given for a kernel's pointer parameter (from
// cuda.core, PyCUDA, d.ptr + offset), with the extent the kernel may touch (0: unknown). Nothing is
// checked or kept alive: the memory must stay allocated until the kernel has run.
//
// A plain value, copied freely; any thread.

#include <cstddef>
#include <cstdint>
#include <string>

namespace xcuda
{
    struct raw_pointer
    {
        std::uint64_t address = 0;
        std::size_t nbytes = 0;

        // The address Python gave, as its int reads: argument_value_error when negative or wider than
        // 64 bits (`written` is the value as Python writes it, for the message).
        static raw_pointer of(bool negative, bool too_wide, std::uint64_t value, std::size_t nbytes,
                              const std::string& written);
        // argument_type_error for an address that is no int (`type` is its type's name).
        [[noreturn]] static void refuse_type(const std::string& type);

        // p + offset: the address moved, its extent unknown.
        raw_pointer plus(long long offset) const { return {address + static_cast<std::uint64_t>(offset), 0}; }
        // "xcuda.Pointer(0x7f0000001000)".
        std::string describe() const;
    };
}
