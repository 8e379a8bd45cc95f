#pragma once
// A cell's __constant__/__device__/__managed__ variable as the host reads and writes it
// (xcuda.ModuleVariable): its declared shape and size, how it is spelled in messages, and the checks of
// a value written into it against that declaration, with the messages the Python API raises.
//
// Why here: the binding turns numpy arrays into sizes and dtype texts and raises what this class
// throws; the rules (a dtype must match exactly, the size must be the declared one, an unknown layout
// is refused) are testable without Python or a GPU. The memory itself is cuda_module's (global,
// read_global, write_global).
//
// Ownership: a value (a copy of the declaration and the text of its numpy dtype). Threading: none.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernel_signature.hpp"

namespace xcuda
{
    class global_variable
    {
    public:
        // `variable` of a module; dtype_text is its element's numpy dtype as str() spells it
        // ("float32", "[('x', '<f4'), ('y', '<f4')]"); has_dtype: numpy could make one from its layout.
        // Raises signature_error when the element's dtype or size is unknown.
        global_variable(module_variable variable, std::string dtype_text, bool has_dtype);

        // "c_Kernel, filters::taps": the qualified names, for messages and repr.
        static std::string names(const std::vector<module_variable>& variables);
        // The qualified names (iter(module.globals)) or the plain ones (dir(module.globals)), in order.
        static std::vector<std::string> name_list(const std::vector<module_variable>& variables, bool qualified);
        // The KeyError text of module.get_global(name) for a name the module does not have.
        static std::string missing_message(const std::string& module_name, const std::vector<module_variable>& variables,
                                           const std::string& name);

        const module_variable& variable() const noexcept { return m_variable; }
        // () for one value, else the declared extents.
        std::vector<std::int64_t> shape() const;
        std::size_t count() const noexcept;
        std::size_t nbytes() const { return m_variable.size(); }
        // "__constant__ float c_Kernel[17]" and "float32(17,) (68 bytes)".
        std::string spelling() const;
        std::string typed() const;
        // repr: "<xcuda.ModuleVariable __constant__ float c[4]: float32(4,) (16 bytes) of module m>".
        std::string describe(const std::string& module_name) const;

        // set(array): a numpy array of another dtype is refused (argument_type_error) naming both; given:
        // its dtype, shape text and bytes; numpy_name: the variable dtype's name, for the .astype hint.
        void check_array_dtype(bool same_dtype, const std::string& given_dtype, const std::string& given_shape,
                               std::size_t given_bytes, const std::string& numpy_name) const;
        // set(value) of something numpy could not convert to the dtype (argument_type_error).
        [[noreturn]] void refuse_conversion(const std::string& value_type, const std::string& value_text,
                                            const std::string& reason) const;
        // set(value): the value must have the declared element count and bytes (argument_value_error).
        void check_size(std::size_t elements, std::size_t bytes) const;

    private:
        module_variable m_variable;
        std::string m_dtype_text;
    };
}
