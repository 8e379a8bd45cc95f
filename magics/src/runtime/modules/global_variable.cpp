#include "global_variable.hpp"

#include "array_layout.hpp"
#include "errors.hpp"

namespace xcuda
{
    global_variable::global_variable(module_variable variable, std::string dtype_text, bool has_dtype)
        : m_variable(std::move(variable))
        , m_dtype_text(std::move(dtype_text))
    {
        if (!has_dtype || m_variable.size() == 0)
        {
            bool extent = false;
            for (std::size_t e : m_variable.extents)
            {
                extent = extent || e == 0;
            }
            throw signature_error(m_variable.line, "the " + m_variable.space + " variable '" + m_variable.qualified_name +
                                                       "' has " +
                                                       (extent ? "an array extent" : "a type (" + m_variable.type + ")") +
                                                       " the signature reader cannot work out, so its dtype and size "
                                                       "are unknown; declare it with a builtin, CUDA vector or plain "
                                                       "struct type and integer-constant extents");
        }
    }

    std::string global_variable::names(const std::vector<module_variable>& variables)
    {
        std::string text;
        for (const module_variable& v : variables)
        {
            text += (text.empty() ? "" : ", ") + v.qualified_name;
        }
        return text;
    }

    std::vector<std::string> global_variable::name_list(const std::vector<module_variable>& variables, bool qualified)
    {
        std::vector<std::string> result;
        for (const module_variable& v : variables)
        {
            result.push_back(qualified ? v.qualified_name : v.name);
        }
        return result;
    }

    std::string global_variable::missing_message(const std::string& module_name,
                                                 const std::vector<module_variable>& variables, const std::string& name)
    {
        std::string listed = names(variables);
        return "module '" + module_name + "' has no __constant__ or __device__ variable '" + name +
               "' at namespace scope" + (listed.empty() ? std::string(" (it has none)") : "; it has: " + listed);
    }

    std::vector<std::int64_t> global_variable::shape() const
    {
        return std::vector<std::int64_t>(m_variable.extents.begin(), m_variable.extents.end());
    }

    std::size_t global_variable::count() const noexcept
    {
        std::size_t n = 1;
        for (std::size_t extent : m_variable.extents)
        {
            n *= extent;
        }
        return n;
    }

    std::string global_variable::spelling() const
    {
        std::string text = m_variable.space + " " + m_variable.type + " " + m_variable.qualified_name;
        for (std::size_t extent : m_variable.extents)
        {
            text += "[" + std::to_string(extent) + "]";
        }
        return text;
    }

    std::string global_variable::typed() const
    {
        std::string text = m_dtype_text;
        if (!m_variable.extents.empty())
        {
            text += array_layout::shape_text(shape());
        }
        return text + " (" + std::to_string(nbytes()) + " bytes)";
    }

    std::string global_variable::describe(const std::string& module_name) const
    {
        return "<xcuda.ModuleVariable " + spelling() + ": " + typed() + " of module " + module_name + ">";
    }

    void global_variable::check_array_dtype(bool same_dtype, const std::string& given_dtype,
                                            const std::string& given_shape, std::size_t given_bytes,
                                            const std::string& numpy_name) const
    {
        if (!same_dtype)
        {
            throw argument_type_error("'" + m_variable.qualified_name + "' is " + typed() + "; the numpy array given is " +
                                      given_dtype + given_shape + " (" + std::to_string(given_bytes) +
                                      " bytes): convert it first, for example with .astype(numpy." + numpy_name + ")");
        }
    }

    void global_variable::refuse_conversion(const std::string& value_type, const std::string& value_text,
                                            const std::string& reason) const
    {
        throw argument_type_error("'" + m_variable.qualified_name + "' is " + typed() + ": " + value_type + " " +
                                  value_text.substr(0, 80) + " does not make values of that dtype (" + reason + ")");
    }

    void global_variable::check_size(std::size_t elements, std::size_t bytes) const
    {
        if (elements != count() || bytes != nbytes())
        {
            throw argument_value_error("'" + m_variable.qualified_name + "' is " + typed() + "; the value given has " +
                                       std::to_string(elements) + " elements (" + std::to_string(bytes) + " bytes)");
        }
    }
}
