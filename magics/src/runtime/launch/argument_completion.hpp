#pragma once
// A launch's arguments matched to the kernel's parameters: keywords by parameter name, the rest from
// the declaration's default arguments (`int n = 256`, `float* out = nullptr`), and the TypeError text
// for a wrong count, an unknown or repeated name, a parameter without a default or with one xcuda
// cannot evaluate. py_arguments.cpp holds the Python objects and asks this class where each goes;
// only a launch that gives fewer arguments than parameters reaches fill_defaults. Stateless; the
// callbacks run on the caller's thread, once per parameter left without an argument.

#include <cstddef>
#include <functional>

#include "cuda_kernel.hpp"
#include "kernel_signature.hpp"

namespace xcuda
{
    class argument_completion
    {
    public:
        // A default argument as a value, for the binding to make its own object of.
        struct default_argument
        {
            enum class type
            {
                null_pointer,
                integer,
                unsigned_integer,
                floating,
                boolean
            };
            type kind = type::integer;
            long long integer = 0;  // integer, unsigned_integer (as its bits), boolean (0 or 1)
            double real = 0;        // floating
        };

        // Whether a call of nargs positional and `keywords` named arguments goes to the argument binding
        // as given, with nothing to complete: a template's (given keywords, refused here at once) or one
        // of more arguments than parameters (the binding says what is wrong).
        static bool passes_as_given(const cuda_kernel& kernel, std::size_t nargs, std::size_t keywords);
        // The index of the parameter named `name`; throws argument_type_error naming the parameters.
        static std::size_t parameter_named(const kernel_signature& signature, const char* name);
        // Throws argument_type_error: parameter index was given by position and by name.
        [[noreturn]] static void given_twice(const kernel_signature& signature, std::size_t index, const char* name);
        // Throws argument_type_error: the kernel takes `expected` arguments, the call gave `given`.
        [[noreturn]] static void wrong_count(const kernel_signature& signature, std::size_t expected, std::size_t given);

        // For each parameter without an argument (has_argument(i) false), in order: use(i, its default).
        // Throws argument_type_error for a default xcuda cannot evaluate (at once) and, after the others,
        // for the parameters without a default (given: how many arguments the call had).
        static void fill_defaults(const kernel_signature& signature, std::size_t given,
                                  const std::function<bool(std::size_t)>& has_argument,
                                  const std::function<void(std::size_t, const default_argument&)>& use);

        // The value of a parameter's default argument; false when it has none xcuda can read (a pointer
        // takes only a null one).
        static bool default_of(const kernel_parameter& parameter, default_argument& value);
    };
}
