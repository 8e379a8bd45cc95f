#include "argument_problems.hpp"

#include "array_layout.hpp"
#include "errors.hpp"

namespace xcuda
{
    bool argument_problems::pairs_fit(const launch_plan& plan, std::size_t index, scalar_kind have,
                                      long long last_extent) noexcept
    {
        scalar_kind element = array_layout::pair_element(plan.slots()[index].kind);
        return element != scalar_kind::unknown && have == element && last_extent >= 0 && last_extent % 2 == 0;
    }

    void argument_problems::wrong_element_kind(const launch_plan& plan, std::size_t index, const std::string& dtype,
                                               const std::string& what, bool ml_dtypes_missing)
    {
        scalar_kind kind = plan.slots()[index].kind;
        scalar_kind element = array_layout::pair_element(kind);
        scalar_kind named = element == scalar_kind::unknown ? kind : element;
        const char* ml_name = array_layout::ml_dtypes_name(named);
        std::string convert = std::string(".astype(") + (ml_name ? "ml_dtypes." : "numpy.") + scalar_kind_name(named) + ")";
        std::string install = ml_name && ml_dtypes_missing
                                  ? std::string(" (numpy has no ") + ml_name +
                                        ": the ml_dtypes package adds it: pip install ml_dtypes)"
                                  : "";
        if (element != scalar_kind::unknown)
        {
            throw argument_type_error(plan.describe(index) + " needs pairs of " + scalar_kind_name(element) + ", got " +
                                      what + " of " + dtype + "; pass " + scalar_kind_name(element) +
                                      " elements with an even last dimension (x and y interleaved) or a structured "
                                      "dtype of two " + scalar_kind_name(element) + " fields, for example with " +
                                      convert + install);
        }
        throw argument_type_error(plan.describe(index) + " needs " + scalar_kind_name(kind) + " elements, got " + what +
                                  " of " + dtype + "; convert it first, for example with " + convert + install);
    }

    void argument_problems::integer_too_large_for_float(const launch_plan& plan, std::size_t index)
    {
        throw argument_value_error(plan.describe(index) + ": the integer is too large for a float");
    }

    void argument_problems::integer_too_large(const launch_plan& plan, std::size_t index, const std::string& repr)
    {
        throw argument_value_error(plan.describe(index) + ": " + repr + " does not fit in any 64-bit integer");
    }

    void argument_problems::not_a_number(const launch_plan& plan, std::size_t index, const std::string& type,
                                         not_number_hint hint)
    {
        std::string why;
        if (hint == not_number_hint::array)
        {
            why = "; for a single value pass a scalar (array.item() or array[0])";
        }
        else if (hint == not_number_hint::device_array)
        {
            why = "; this parameter is a value, not a pointer";
        }
        throw argument_type_error(plan.describe(index) + " takes a number, got " + type + why);
    }

    void argument_problems::value_not_packed(const launch_plan& plan, std::size_t index, const std::string& value,
                                             const std::string& dtype, const std::string& why)
    {
        throw argument_type_error(plan.describe(index) + ": " + value + " does not make a value of dtype " + dtype +
                                  " (" + why + ")");
    }

    void argument_problems::value_without_bytes(const launch_plan& plan, std::size_t index, const std::string& dtype,
                                                const std::string& type)
    {
        std::string expected = dtype.empty() ? std::string("a matching structured dtype")
                                             : "dtype " + dtype + " (kernel.parameters[" + std::to_string(index) +
                                                   "]['dtype']), or a tuple of its fields";
        throw argument_type_error(plan.describe(index) + " is passed by value as raw bytes: give a numpy scalar or 0-d "
                                  "array of " + expected + ", or a bytes object of the type's size; got " + type);
    }

    void argument_problems::check_copy_out(const launch_plan& plan, std::size_t index, bool copy_out, const char* transfer)
    {
        if (copy_out && plan.slots()[index].is_const)
        {
            throw argument_value_error(plan.describe(index) + " is const: the kernel cannot write it, so xcuda." +
                                       transfer + " would copy back nothing; use xcuda.In");
        }
    }

    void argument_problems::check_writable(const launch_plan& plan, std::size_t index, bool read_only, const char* what)
    {
        if (read_only && !plan.slots()[index].is_const)
        {
            throw argument_value_error(plan.describe(index) + " is written by the kernel, but the " + what +
                                       " passed is read-only");
        }
    }

    void argument_problems::int_for_pointer(const launch_plan& plan, std::size_t index, const std::string& value)
    {
        throw argument_type_error(plan.describe(index) + " takes a device array, and an int is not taken for an "
                                  "address by accident; if " + value + " is a device address, say so: xcuda.Pointer(" +
                                  value + ")");
    }

    void argument_problems::not_a_pointer(const launch_plan& plan, std::size_t index, const std::string& type)
    {
        throw argument_type_error(plan.describe(index) +
                                  " takes a device array (xcuda.DeviceArray, or any object with "
                                  "__cuda_array_interface__ or __dlpack__, such as a CuPy array or a PyTorch CUDA "
                                  "tensor), a numpy array (copied to the device for the launch) or None; got " + type);
    }

    void argument_problems::wrong_handle_object(const launch_plan& plan, std::size_t index, const std::string& given,
                                                const std::string& wanted)
    {
        throw argument_type_error(plan.describe(index) + " takes a " + wanted + " object (xcuda." + wanted +
                                  "(...)), not a " + given + " object: " +
                                  (wanted == "surface" ? "make one with xcuda.surface(xcuda.cuda_array(shape, dtype, "
                                                         "surface=True))"
                                                       : "make one with xcuda.texture(array)"));
    }

    void argument_problems::not_a_handle(const launch_plan& plan, std::size_t index, const std::string& type,
                                         const std::string& wanted)
    {
        throw argument_type_error(plan.describe(index) + " takes an xcuda " + wanted + " object (xcuda." + wanted +
                                  "(...)) or its 64-bit integer handle; got " + type);
    }

    void argument_problems::handle_in_replay(const launch_plan& plan, std::size_t index, const std::string& wanted)
    {
        throw argument_type_error(plan.describe(index) + ": a launch with a " + wanted + " object cannot be replayed in "
                                  "another process (xcuda-replay, under ncu or compute-sanitizer): the object lives in "
                                  "this process' CUDA context and its handle means nothing there; profile it with "
                                  "launcher.time() or nsys on the notebook's process instead");
    }

    void argument_problems::check_c_contiguous(const launch_plan& plan, std::size_t index, const std::size_t* shape,
                                               const long long* strides, std::size_t dimensions, std::size_t itemsize,
                                               const std::string& strides_text)
    {
        std::size_t expected = itemsize;
        for (std::size_t d = dimensions; d-- > 0;)
        {
            if (shape[d] > 1 && strides[d] != static_cast<long long>(expected))
            {
                throw argument_value_error(plan.describe(index) + ": the array is not C-contiguous (strides " +
                                           strides_text + "); a kernel gets a plain pointer, so pass a contiguous copy");
            }
            expected *= shape[d];
        }
    }

    void argument_problems::check_copy_target(const char* transfer, bool is_array, bool writeable,
                                              const std::string& type)
    {
        if (!is_array)
        {
            throw argument_type_error(std::string("xcuda.") + transfer +
                                      " needs a numpy array to copy the result into, got " + type);
        }
        if (!writeable)
        {
            throw argument_value_error(std::string("xcuda.") + transfer + " needs a writeable array");
        }
    }

    std::size_t argument_problems::check_dimensions(const launch_plan& plan, std::size_t index, std::size_t dimensions)
    {
        if (dimensions > max_dimensions)
        {
            throw argument_value_error(plan.describe(index) + ": the array has " + std::to_string(dimensions) +
                                       " dimensions, more than numpy's " + std::to_string(max_dimensions));
        }
        return dimensions;
    }

    void argument_problems::device_mismatch(const cuda_kernel& kernel, std::size_t index, int owner, int current)
    {
        std::string o = std::to_string(owner);
        std::string c = std::to_string(current);
        throw device_mismatch_error(kernel.plan().describe(index) + " of kernel '" + kernel.signature().name +
                                    "' lives on device " + o + ", but the launch is on device " + c +
                                    " (the current device). Copy it over with xcuda.copy(xcuda.empty_like(arr), "
                                    "arr) made under `with xcuda.device(" + c + "):`, launch inside `with "
                                    "xcuda.device(" + o + "):`, or let device " + c + " read device " + o +
                                    "'s memory with xcuda.enable_peer_access(" + c + ", " + o + ")");
    }
}
