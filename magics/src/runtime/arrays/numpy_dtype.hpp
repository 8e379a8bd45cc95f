#pragma once
// What numpy.dtype(...) is made of for a value layout the signature reader read (runtime's view of
// compile's value_layout), without numpy: a scalar's name, uint64 for a pointer, "V<size>" for bytes
// numpy has no kind for (bfloat16, fp8 inside a record), or a record's fields with unique names at their
// offsets and the record's itemsize.
//
// Why here: which layouts numpy can describe, the names a derived class's hidden fields get, and the
// fallbacks are decisions; the binding only calls numpy.dtype on the result (py_device_array.cpp).
//
// Ownership: a value. Threading: none.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernel_signature.hpp"

namespace xcuda
{
    class numpy_dtype
    {
    public:
        struct field
        {
            std::string name;  // unique and non-empty, as numpy needs
            std::size_t offset = 0;
            std::vector<std::size_t> extents;  // a field array's: numpy's (format, shape) subarray
            std::shared_ptr<const numpy_dtype> type;
        };

        // The dtype of `layout`; none when it is unknown or has a field of unknown layout. bfloat16 and fp8
        // are named as ml_dtypes names them (from_ml_dtypes).
        static std::optional<numpy_dtype> of(const std::shared_ptr<const value_layout>& layout);

        bool is_record() const noexcept { return m_record; }
        // A scalar's numpy name ("float32", "uint64", "V12"); empty for a record.
        const std::string& name() const noexcept { return m_name; }
        // A scalar numpy has only through ml_dtypes (name() is its name there: "bfloat16"): without the
        // package, "V<itemsize>" inside a record and no dtype at the top.
        bool from_ml_dtypes() const noexcept { return m_ml_dtypes; }
        const std::vector<field>& fields() const noexcept { return m_fields; }
        std::size_t itemsize() const noexcept { return m_itemsize; }

    private:
        static numpy_dtype scalar(std::string name, std::size_t itemsize);

        bool m_record = false;
        bool m_ml_dtypes = false;
        std::string m_name;
        std::vector<field> m_fields;
        std::size_t m_itemsize = 0;
    };
}
