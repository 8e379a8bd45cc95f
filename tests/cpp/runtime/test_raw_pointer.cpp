// runtime/raw_pointer: xcuda.Pointer's checks of the address Python gives, p + offset and its repr.

#include <gtest/gtest.h>

#include "errors.hpp"
#include "expect_error.hpp"
#include "raw_pointer.hpp"

namespace
{
    using xcuda::raw_pointer;
    using xcuda_tests::message_of;

    TEST(raw_pointer, an_address_keeps_its_extent_and_an_offset_forgets_it)
    {
        raw_pointer p = raw_pointer::of(false, false, 0x7f0000001000ULL, 256, "");
        EXPECT_EQ(p.address, 0x7f0000001000ULL);
        EXPECT_EQ(p.nbytes, 256u);
        raw_pointer moved = p.plus(16);
        EXPECT_EQ(moved.address, 0x7f0000001010ULL);
        EXPECT_EQ(moved.nbytes, 0u);
        EXPECT_EQ(p.describe(), "xcuda.Pointer(0x7f0000001000)");
    }

    TEST(raw_pointer, negative_wide_and_non_integer_addresses_are_refused_with_what_was_given)
    {
        EXPECT_EQ(message_of<xcuda::argument_value_error>([] { raw_pointer::of(true, false, 0, 0, "-8"); }),
                  "xcuda.Pointer: a device address is not negative, got -8");
        EXPECT_EQ(message_of<xcuda::argument_value_error>([] { raw_pointer::of(false, true, 0, 0, "18446744073709551616"); }),
                  "xcuda.Pointer: 18446744073709551616 does not fit in 64 bits");
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { raw_pointer::refuse_type("float"); }),
                  "xcuda.Pointer takes an int or numpy.uintp address, got float");
    }
}
