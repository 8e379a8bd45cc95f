#pragma once
// What is wrong with a launch argument, in words: each function throws the argument_type_error /
// argument_value_error / device_mismatch_error that the module raises as TypeError, ValueError and
// xcuda.DeviceMismatchError. The checks that need no Python are here too (element types against the
// kernel_signature, const parameters against copies back, contiguity from shape and strides). The
// launch path calls only the checks (a comparison each) and reaches a message only on a failure;
// py_arguments.cpp gives the Python-side words (type names, reprs, dtype names) as text. Stateless.

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda_kernel.hpp"
#include "launch_plan.hpp"

namespace xcuda
{
    class argument_problems
    {
    public:
        // Whether elements of kind `have` fit pointer parameter `index` (an unknown element type takes any).
        static bool element_kind_fits(const launch_plan& plan, std::size_t index, scalar_kind have) noexcept
        {
            scalar_kind wanted = plan.slots()[index].kind;
            return wanted == scalar_kind::unknown || wanted == have;
        }
        // A pointer to a packed pair (__half2*, __nv_bfloat162*) also takes arrays of its element with an even
        // last extent (x and y interleaved): whether `have` with that last extent (-1: a 0-d array) fits.
        static bool pairs_fit(const launch_plan& plan, std::size_t index, scalar_kind have,
                              long long last_extent) noexcept;
        // "... needs float32 elements, got <what> of <dtype>; convert it first ..."; for the kinds numpy has
        // only through ml_dtypes, the .astype names ml_dtypes and, when it is not installed (ml_dtypes_missing),
        // how to install it.
        [[noreturn]] static void wrong_element_kind(const launch_plan& plan, std::size_t index,
                                                    const std::string& dtype, const std::string& what,
                                                    bool ml_dtypes_missing = false);

        // Scalars: an integer no float or 64-bit integer holds; an object that is not a number (hint:
        // what it is instead, when that helps).
        enum class not_number_hint
        {
            none,
            array,        // a numpy array: pass one value
            device_array  // a DeviceArray for a value parameter
        };
        [[noreturn]] static void integer_too_large_for_float(const launch_plan& plan, std::size_t index);
        [[noreturn]] static void integer_too_large(const launch_plan& plan, std::size_t index, const std::string& repr);
        [[noreturn]] static void not_a_number(const launch_plan& plan, std::size_t index, const std::string& type,
                                              not_number_hint hint);

        // By-value structs and vectors: a tuple numpy could not pack (why: numpy's message), or an object
        // that has no bytes (dtype: the parameter's dtype, "" when xcuda has none for it).
        [[noreturn]] static void value_not_packed(const launch_plan& plan, std::size_t index, const std::string& value,
                                                  const std::string& dtype, const std::string& why);
        [[noreturn]] static void value_without_bytes(const launch_plan& plan, std::size_t index,
                                                     const std::string& dtype, const std::string& type);

        // Pointers: a copy back into a const parameter (transfer: "In", "Out", "InOut"), a read-only
        // array for a written one (what: "numpy array" / "array"), an int taken for an address, an
        // object of no array kind.
        static void check_copy_out(const launch_plan& plan, std::size_t index, bool copy_out, const char* transfer);
        static void check_writable(const launch_plan& plan, std::size_t index, bool read_only, const char* what);
        [[noreturn]] static void int_for_pointer(const launch_plan& plan, std::size_t index, const std::string& value);
        [[noreturn]] static void not_a_pointer(const launch_plan& plan, std::size_t index, const std::string& type);
        // Texture and surface parameters (cudaTextureObject_t, cudaSurfaceObject_t): an xcuda object of the other
        // kind (given: "texture" or "surface"), or something that is neither such an object nor an integer.
        [[noreturn]] static void wrong_handle_object(const launch_plan& plan, std::size_t index, const std::string& given,
                                                     const std::string& wanted);
        [[noreturn]] static void not_a_handle(const launch_plan& plan, std::size_t index, const std::string& type,
                                              const std::string& wanted);
        // A launch replayed in another process (xcuda-replay, under ncu or compute-sanitizer) cannot take a
        // texture or surface: the object lives in this process' context, and its handle means nothing there.
        [[noreturn]] static void handle_in_replay(const launch_plan& plan, std::size_t index, const std::string& wanted);
        // An array of more dimensions than numpy's 64 (NPY_MAXDIMS) is refused; returns dimensions.
        static constexpr std::size_t max_dimensions = 64;
        static std::size_t check_dimensions(const launch_plan& plan, std::size_t index, std::size_t dimensions);
        // Throws unless strides (bytes per step of each dimension) are C order for shape and itemsize;
        // strides_text is how the user wrote them.
        static void check_c_contiguous(const launch_plan& plan, std::size_t index, const std::size_t* shape,
                                       const long long* strides, std::size_t dimensions, std::size_t itemsize,
                                       const std::string& strides_text);

        // xcuda.Out / InOut (transfer) of an object: a writeable numpy array to copy the result into.
        static void check_copy_target(const char* transfer, bool is_array, bool writeable, const std::string& type);

        // An argument of device `owner` for a launch on `current`, without a peer path: what to do.
        [[noreturn]] static void device_mismatch(const cuda_kernel& kernel, std::size_t index, int owner, int current);
    };
}
