#include "array_layout.hpp"

#include "errors.hpp"

namespace xcuda
{
    array_layout::array_layout(std::vector<std::int64_t> shape, std::size_t itemsize)
        : m_shape(std::move(shape))
        , m_itemsize(itemsize)
    {
    }

    std::vector<std::int64_t> array_layout::checked_shape(const std::vector<std::int64_t>& extents)
    {
        for (std::int64_t extent : extents)
        {
            if (extent < 0)
            {
                throw argument_value_error("negative dimensions are not allowed (shape has " + std::to_string(extent) +
                                           ")");
            }
        }
        return extents;
    }

    std::string array_layout::shape_text(const std::vector<std::int64_t>& shape)
    {
        std::string text = "(";
        for (std::size_t i = 0; i < shape.size(); ++i)
        {
            text += std::to_string(shape[i]) + (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
        }
        return text + ")";
    }

    scalar_kind array_layout::kind_of_numpy(char kind, std::size_t size) noexcept
    {
        switch (kind)
        {
        case 'b': return size == 1 ? scalar_kind::boolean : scalar_kind::unknown;
        case 'i':
            return size == 1 ? scalar_kind::i8 : size == 2 ? scalar_kind::i16 : size == 4 ? scalar_kind::i32
                 : size == 8 ? scalar_kind::i64 : scalar_kind::unknown;
        case 'u':
            return size == 1 ? scalar_kind::u8 : size == 2 ? scalar_kind::u16 : size == 4 ? scalar_kind::u32
                 : size == 8 ? scalar_kind::u64 : scalar_kind::unknown;
        case 'f':
            return size == 2 ? scalar_kind::f16 : size == 4 ? scalar_kind::f32 : size == 8 ? scalar_kind::f64
                 : scalar_kind::unknown;
        default: return scalar_kind::unknown;
        }
    }

    const char* array_layout::numpy_name(scalar_kind kind) noexcept
    {
        // numpy has every scalar kind but bfloat16, the fp8 kinds (ml_dtypes_name) and the packed pairs;
        // scalar_kind_name spells the others as numpy does.
        return kind == scalar_kind::unknown || ml_dtypes_name(kind) || is_packed_pair(kind) ? nullptr
                                                                                             : scalar_kind_name(kind);
    }

    const char* array_layout::ml_dtypes_name(scalar_kind kind) noexcept
    {
        return kind == scalar_kind::bf16 || kind == scalar_kind::fp8_e4m3 || kind == scalar_kind::fp8_e5m2
                   ? scalar_kind_name(kind)
                   : nullptr;
    }

    scalar_kind array_layout::kind_of_numpy_name(const std::string& name) noexcept
    {
        for (scalar_kind kind : {scalar_kind::bf16, scalar_kind::fp8_e4m3, scalar_kind::fp8_e5m2})
        {
            if (name == scalar_kind_name(kind))
            {
                return kind;
            }
        }
        return scalar_kind::unknown;
    }

    scalar_kind array_layout::pair_kind(scalar_kind first, std::size_t first_offset, scalar_kind second,
                                        std::size_t second_offset, std::size_t itemsize) noexcept
    {
        if (first != second || first_offset != 0 || second_offset != 2 || itemsize != 4)
        {
            return scalar_kind::unknown;
        }
        return first == scalar_kind::f16 ? scalar_kind::f16x2 : first == scalar_kind::bf16 ? scalar_kind::bf16x2
                                                                                            : scalar_kind::unknown;
    }

    scalar_kind array_layout::pair_element(scalar_kind pair) noexcept
    {
        return pair == scalar_kind::f16x2 ? scalar_kind::f16 : pair == scalar_kind::bf16x2 ? scalar_kind::bf16
                                                                                           : scalar_kind::unknown;
    }

    std::size_t array_layout::size() const noexcept
    {
        std::size_t n = 1;
        for (std::int64_t extent : m_shape)
        {
            n *= static_cast<std::size_t>(extent);
        }
        return n;
    }

    std::int64_t array_layout::length() const
    {
        if (m_shape.empty())
        {
            throw argument_type_error("len() of a 0-d device array");
        }
        return m_shape[0];
    }

    void array_layout::require_rows() const
    {
        if (m_shape.empty())
        {
            throw index_error("a 0-d device array has no rows to slice");
        }
    }

    void array_layout::refuse_index(const std::string& type, const std::string& index)
    {
        throw argument_type_error("a DeviceArray is indexed by a slice d[start:stop] (a view of its memory); got " +
                                  type + ". To read values, copy to the host first: d.copy_to_host()[" + index + "]");
    }

    void array_layout::check_plain_dtype(bool holds_objects, const std::string& dtype_name)
    {
        if (holds_objects)
        {
            throw argument_type_error("device arrays cannot hold Python objects (dtype " + dtype_name + ")");
        }
    }

    array_layout::rows_view array_layout::rows(std::int64_t start, std::int64_t stop, std::int64_t step) const
    {
        require_rows();
        if (step != 1)
        {
            throw argument_value_error("a DeviceArray view takes a slice with step 1 (kernels get a plain pointer to "
                                       "contiguous memory); got step " + std::to_string(step) +
                                       ": copy to the host, or pass the stride to the kernel");
        }
        // Python's PySlice_AdjustIndices for a step of 1.
        std::int64_t length = m_shape[0];
        auto adjust = [length](std::int64_t& index) {
            if (index < 0)
            {
                index = index + length < 0 ? 0 : index + length;
            }
            else if (index >= length)
            {
                index = length;
            }
        };
        adjust(start);
        adjust(stop);
        std::int64_t count = stop > start ? stop - start : 0;
        std::size_t row_bytes = m_itemsize;
        for (std::size_t d = 1; d < m_shape.size(); ++d)
        {
            row_bytes *= static_cast<std::size_t>(m_shape[d]);
        }
        rows_view view;
        view.shape = m_shape;
        view.shape[0] = count;
        view.byte_offset = static_cast<std::size_t>(start) * row_bytes;
        view.nbytes = static_cast<std::size_t>(count) * row_bytes;
        return view;
    }

    std::vector<std::int64_t> array_layout::reinterpreted(std::size_t new_size, const std::string& dtype_name,
                                                          const std::string& new_dtype_name) const
    {
        std::vector<std::int64_t> shape = m_shape;
        if (new_size == m_itemsize)
        {
            return shape;
        }
        if (m_shape.empty())
        {
            throw argument_value_error("a 0-d array of " + dtype_name + " cannot be viewed as " + new_dtype_name +
                                       ": the itemsizes differ (" + std::to_string(m_itemsize) + " and " +
                                       std::to_string(new_size) + " bytes)");
        }
        std::size_t last_bytes = static_cast<std::size_t>(m_shape.back()) * m_itemsize;
        if (new_size == 0 || last_bytes % new_size != 0)
        {
            throw argument_value_error("the last axis of " + shape_text() + " " + dtype_name + " is " +
                                       std::to_string(last_bytes) + " bytes, not a multiple of " + new_dtype_name +
                                       "'s " + std::to_string(new_size) + " bytes");
        }
        shape.back() = static_cast<std::int64_t>(last_bytes / new_size);
        return shape;
    }

    void array_layout::check_device_source(std::size_t source_bytes) const
    {
        if (source_bytes != nbytes())
        {
            throw argument_value_error("copy_from needs " + std::to_string(nbytes()) +
                                       " bytes, the source device array has " + std::to_string(source_bytes));
        }
    }

    void array_layout::check_host_source(std::size_t elements) const
    {
        if (elements != size())
        {
            throw argument_value_error("copy_from needs " + std::to_string(size()) + " elements (shape " +
                                       shape_text() + "), got " + std::to_string(elements));
        }
    }

    void array_layout::check_host_destination(bool fits, const std::string& dtype_name) const
    {
        if (!fits)
        {
            throw argument_value_error("out must be a writeable C-contiguous numpy array of dtype " + dtype_name +
                                       " and " + std::to_string(nbytes()) + " bytes");
        }
    }

    std::string array_layout::describe(const std::string& dtype_name, bool valid, int device) const
    {
        std::string text = "<xcuda.DeviceArray shape=" + shape_text() + " dtype=" + dtype_name +
                           " nbytes=" + std::to_string(nbytes());
        if (!valid)
        {
            return text + " (released)>";
        }
        return text + " device=" + std::to_string(device) + ">";
    }
}
