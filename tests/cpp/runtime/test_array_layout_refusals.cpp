// runtime/array_layout: what a DeviceArray refuses before touching memory, with the messages Python
// users read (TypeError: argument_type_error here).

#include <gtest/gtest.h>

#include "array_layout.hpp"
#include "errors.hpp"
#include "expect_error.hpp"

namespace
{
    using xcuda::array_layout;
    using xcuda_tests::message_of;

    TEST(array_layout_refusals, an_index_that_is_not_a_slice_says_how_to_read_values)
    {
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { array_layout::refuse_index("int", "3"); }),
                  "a DeviceArray is indexed by a slice d[start:stop] (a view of its memory); got int. To read "
                  "values, copy to the host first: d.copy_to_host()[3]");
    }

    TEST(array_layout_refusals, a_dtype_of_python_objects_is_refused_naming_it)
    {
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { array_layout::check_plain_dtype(true, "object"); }),
                  "device arrays cannot hold Python objects (dtype object)");
        EXPECT_EQ(message_of<xcuda::argument_type_error>([] { array_layout::check_plain_dtype(false, "float32"); }),
                  "(nothing thrown)");
    }
}
