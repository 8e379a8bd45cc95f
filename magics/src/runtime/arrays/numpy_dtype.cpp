#include "numpy_dtype.hpp"

#include <set>

#include "array_layout.hpp"

namespace xcuda
{
    numpy_dtype numpy_dtype::scalar(std::string name, std::size_t itemsize)
    {
        numpy_dtype d;
        d.m_name = std::move(name);
        d.m_itemsize = itemsize;
        return d;
    }

    std::optional<numpy_dtype> numpy_dtype::of(const std::shared_ptr<const value_layout>& layout)
    {
        if (!layout || !layout->known())
        {
            return std::nullopt;
        }
        if (layout->is_pointer)
        {
            return scalar("uint64", 8);
        }
        if (layout->kind != scalar_kind::unknown)
        {
            if (const char* name = array_layout::numpy_name(layout->kind))
            {
                return scalar(name, layout->size);
            }
            if (const char* name = array_layout::ml_dtypes_name(layout->kind))
            {
                numpy_dtype d = scalar(name, layout->size);
                d.m_ml_dtypes = true;
                return d;
            }
            return std::nullopt;
        }
        if (!layout->is_record())
        {
            return scalar("V" + std::to_string(layout->size), layout->size);
        }
        numpy_dtype record;
        record.m_record = true;
        record.m_itemsize = layout->size;
        std::set<std::string> used;
        for (const auto& member : layout->fields)
        {
            std::optional<numpy_dtype> type = of(member.type);
            if (!type && member.type && member.type->known())
            {
                type = scalar("V" + std::to_string(member.type->size), member.type->size);  // bfloat16, ...
            }
            if (!type)
            {
                return std::nullopt;
            }
            // numpy needs unique, non-empty names: a base's field hidden by the derived class's gets a suffix.
            std::string name = member.name.empty() ? "f" + std::to_string(used.size()) : member.name;
            for (int n = 1; used.count(name) != 0; ++n)
            {
                name = (member.name.empty() ? "f" : member.name) + "_" + std::to_string(n);
            }
            used.insert(name);
            record.m_fields.push_back({name, member.offset, member.extents,
                                       std::make_shared<const numpy_dtype>(std::move(*type))});
        }
        return record;
    }
}
