#include "raw_pointer.hpp"

#include <cstdio>

#include "errors.hpp"

namespace xcuda
{
    raw_pointer raw_pointer::of(bool negative, bool too_wide, std::uint64_t value, std::size_t nbytes,
                                const std::string& written)
    {
        if (negative)
        {
            throw argument_value_error("xcuda.Pointer: a device address is not negative, got " + written);
        }
        if (too_wide)
        {
            throw argument_value_error("xcuda.Pointer: " + written + " does not fit in 64 bits");
        }
        return {value, nbytes};
    }

    void raw_pointer::refuse_type(const std::string& type)
    {
        throw argument_type_error("xcuda.Pointer takes an int or numpy.uintp address, got " + type);
    }

    std::string raw_pointer::describe() const
    {
        char text[64];
        std::snprintf(text, sizeof text, "xcuda.Pointer(0x%llx)", static_cast<unsigned long long>(address));
        return text;
    }
}
