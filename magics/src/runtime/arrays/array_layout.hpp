#pragma once
// The shape of a typed, C-contiguous array in device memory (an xcuda.DeviceArray) and what follows
// from it: element and byte counts, the rows a slice views, the shape under another itemsize, and the
// size checks of copies into and out of it, with the messages the Python API raises.
//
// Why here: the binding turns numpy shapes, slices and dtypes into these values and raises what this
// class throws; the arithmetic and its wording are testable without Python. Also the mapping between
// numpy's dtype (kind letter and itemsize) and the core's scalar_kind.
//
// Ownership: a value; holds no memory. Threading: none of its own (a value copied per use).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernel_signature.hpp"

namespace xcuda
{
    class array_layout
    {
    public:
        array_layout() = default;
        array_layout(std::vector<std::int64_t> shape, std::size_t itemsize);

        // The extents of a new array; a negative one raises argument_value_error.
        static std::vector<std::int64_t> checked_shape(const std::vector<std::int64_t>& extents);
        // "(3,)", "(2, 3)", "()": Python's tuple spelling.
        static std::string shape_text(const std::vector<std::int64_t>& shape);

        // The scalar kind of a numpy dtype given by its kind letter ('b', 'i', 'u', 'f', ...) and
        // itemsize: unknown for anything else (structured, complex, object, bfloat16).
        static scalar_kind kind_of_numpy(char kind, std::size_t itemsize) noexcept;
        // The numpy dtype name of a scalar kind ("float32"), or null where numpy has none (bfloat16).
        static const char* numpy_name(scalar_kind kind) noexcept;

        // ---- dtypes numpy has only through the ml_dtypes package (issue 45, item 5) ----
        // ml_dtypes' name of a kind numpy lacks ("bfloat16", "float8_e4m3fn", "float8_e5m2"), or null.
        static const char* ml_dtypes_name(scalar_kind kind) noexcept;
        // The kind of a dtype numpy does not know itself, by its name (ml_dtypes' dtypes are numpy
        // user types, their kind letter 'V' or 'f' and no standard itemsize): unknown for other names.
        static scalar_kind kind_of_numpy_name(const std::string& name) noexcept;
        // The packed pair a structured dtype of two fields is (__half2 from two float16 at offsets 0 and 2
        // in 4 bytes, __nv_bfloat162 from two bfloat16): f16x2, bf16x2, or unknown.
        static scalar_kind pair_kind(scalar_kind first, std::size_t first_offset, scalar_kind second,
                                     std::size_t second_offset, std::size_t itemsize) noexcept;
        // The element of a packed pair kind (f16 of f16x2), else unknown.
        static scalar_kind pair_element(scalar_kind pair) noexcept;

        const std::vector<std::int64_t>& shape() const noexcept { return m_shape; }
        std::size_t itemsize() const noexcept { return m_itemsize; }
        std::size_t size() const noexcept;
        std::size_t nbytes() const noexcept { return size() * m_itemsize; }
        std::string shape_text() const { return shape_text(m_shape); }
        // len(d): the first extent; argument_type_error for a 0-d array, as numpy raises TypeError.
        std::int64_t length() const;

        // Rows start:stop:step of the first axis as a view: step 1 only; start and stop as Python's
        // slice gives them (negative counts from the end, out of range clamps).
        struct rows_view
        {
            std::vector<std::int64_t> shape;
            std::size_t byte_offset = 0;
            std::size_t nbytes = 0;
        };
        // Raises index_error for a 0-d array, which has no rows (checked before the index's type).
        void require_rows() const;
        rows_view rows(std::int64_t start, std::int64_t stop, std::int64_t step) const;
        // argument_type_error for an index that is not a slice (`type` its type's name, `index` as
        // Python writes it): says how to read values instead.
        [[noreturn]] static void refuse_index(const std::string& type, const std::string& index);
        // argument_type_error for a dtype holding Python objects (device memory cannot hold them).
        static void check_plain_dtype(bool holds_objects, const std::string& dtype_name);

        // The shape of the same bytes seen as elements of new_itemsize bytes (numpy's ndarray.view):
        // the last axis rescaled; dtype names are for the messages.
        std::vector<std::int64_t> reinterpreted(std::size_t new_itemsize, const std::string& dtype_name,
                                                const std::string& new_dtype_name) const;

        // copy_from a device array of source_bytes, or from host data of `elements` elements.
        void check_device_source(std::size_t source_bytes) const;
        void check_host_source(std::size_t elements) const;
        // copy_to_host(out=...): `fits` when out is a writeable C-contiguous array of the dtype and size.
        void check_host_destination(bool fits, const std::string& dtype_name) const;

        // repr(d): "<xcuda.DeviceArray shape=(4,) dtype=float32 nbytes=16 device=0>".
        std::string describe(const std::string& dtype_name, bool valid, int device) const;

    private:
        std::vector<std::int64_t> m_shape;
        std::size_t m_itemsize = 0;
    };
}
