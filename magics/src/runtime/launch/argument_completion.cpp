#include "argument_completion.hpp"

#include <string>
#include <vector>

#include "constant_expression.hpp"
#include "errors.hpp"

namespace xcuda
{
    bool argument_completion::passes_as_given(const cuda_kernel& kernel, std::size_t nargs, std::size_t keywords)
    {
        const kernel_signature& signature = kernel.signature();
        if (!signature.is_template() && nargs <= signature.parameters.size())
        {
            return false;
        }
        if (keywords != 0 && signature.is_template())
        {
            kernel.refuse_if_template();
        }
        return true;
    }

    namespace
    {
        std::string names_of(const std::vector<std::string>& names)
        {
            std::string text;
            for (std::size_t i = 0; i < names.size(); ++i)
            {
                text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
            }
            return text;
        }
    }

    std::size_t argument_completion::parameter_named(const kernel_signature& signature, const char* name)
    {
        const std::vector<kernel_parameter>& parameters = signature.parameters;
        for (std::size_t index = 0; index < parameters.size(); ++index)
        {
            if (parameters[index].name == name)
            {
                return index;
            }
        }
        std::vector<std::string> known;
        for (const auto& p : parameters)
        {
            if (!p.name.empty())
            {
                known.push_back("'" + p.name + "'");
            }
        }
        throw argument_type_error("kernel " + signature.to_string() + " has no parameter named '" + name + "'" +
                                  (known.empty() ? std::string() : "; its parameters are " + names_of(known)));
    }

    void argument_completion::given_twice(const kernel_signature& signature, std::size_t index, const char* name)
    {
        throw argument_type_error("kernel " + signature.to_string() + " got parameter " + std::to_string(index) + " '" +
                                  name + "' twice: by position and by name");
    }

    void argument_completion::wrong_count(const kernel_signature& signature, std::size_t expected, std::size_t given)
    {
        throw argument_type_error("kernel " + signature.to_string() + " takes " + std::to_string(expected) +
                                  " argument" + (expected == 1 ? "" : "s") + ", got " + std::to_string(given));
    }

    bool argument_completion::default_of(const kernel_parameter& parameter, default_argument& value)
    {
        cxx::constant_value v = cxx::evaluate_constant(parameter.default_value);
        using type = cxx::constant_value::type;
        if (parameter.is_pointer)
        {
            value.kind = default_argument::type::null_pointer;
            return v.kind == type::null_pointer || (v.kind == type::integer && v.value == 0);
        }
        switch (v.kind)
        {
        case type::integer:
            value.kind = v.is_unsigned ? default_argument::type::unsigned_integer : default_argument::type::integer;
            value.integer = v.value;
            return true;
        case type::floating:
            value.kind = default_argument::type::floating;
            value.real = v.real;
            return true;
        case type::boolean:
            value.kind = default_argument::type::boolean;
            value.integer = v.value != 0;
            return true;
        default: return false;
        }
    }

    void argument_completion::fill_defaults(const kernel_signature& signature, std::size_t given,
                                            const std::function<bool(std::size_t)>& has_argument,
                                            const std::function<void(std::size_t, const default_argument&)>& use)
    {
        const std::vector<kernel_parameter>& parameters = signature.parameters;
        std::vector<std::string> missing;
        for (std::size_t i = 0; i < parameters.size(); ++i)
        {
            if (has_argument(i))
            {
                continue;
            }
            const kernel_parameter& parameter = parameters[i];
            std::string label = parameter.name.empty() ? "parameter " + std::to_string(i) : "'" + parameter.name + "'";
            if (parameter.default_value.empty())
            {
                missing.push_back(label);
                continue;
            }
            default_argument value;
            if (!default_of(parameter, value))
            {
                throw argument_type_error("kernel " + signature.to_string() + ": " + label + " defaults to '" +
                                          parameter.default_value + "', which is not a constant xcuda can "
                                          "evaluate; pass it");
            }
            use(i, value);
        }
        if (!missing.empty())
        {
            throw argument_type_error("kernel " + signature.to_string() + " takes " + std::to_string(parameters.size()) +
                                      " argument" + (parameters.size() == 1 ? "" : "s") + ", got " +
                                      std::to_string(given) + ": " + names_of(missing) +
                                      (missing.size() == 1 ? " has" : " have") + " no default argument");
        }
    }
}
