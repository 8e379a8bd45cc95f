#pragma once
// The parameter layout of one kernel, worked out once per kernel: each parameter's class (scalar,
// pointer, by-value struct), its byte size and its offset in an argument block. It holds no argument
// values: each launch writes its own into an argument_block of its own (argument_block.hpp), so two
// threads launching the same kernel never see each other's arguments.
//
// Immutable once built, so any number of threads may read it at once. The sizes the driver reports
// for by-value parameters the declaration left unknown make a new plan (with_driver_sizes); the
// kernel swaps it in (cuda_kernel::plan).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernel_signature.hpp"

namespace xcuda
{
    struct device_properties;

    enum class parameter_class : std::uint8_t
    {
        scalar,   // a value of a known scalar kind
        pointer,  // any T*; the element kind is checked against arrays
        opaque,   // a by-value struct, vector type or template parameter: raw bytes of the right size
        handle    // a texture or surface object (cudaTextureObject_t, cudaSurfaceObject_t): a 64-bit handle
    };

    struct parameter_slot
    {
        parameter_class cls = parameter_class::opaque;
        scalar_kind kind = scalar_kind::unknown;  // value kind, or pointee kind for pointers
        bool is_const = false;                    // pointers: const T*
        std::size_t size = 0;                     // bytes; 0 = unknown (opaque with no driver info)
        std::size_t offset = 0;                   // into the argument block
        std::string name;
        std::string type;
    };

    // What the launch path reads of each slot for every argument, kept apart from the names and types
    // (parameter_slot) so that a launch's pass over its arguments reads 3 bytes per parameter.
    struct slot_kind
    {
        parameter_class cls = parameter_class::opaque;
        scalar_kind kind = scalar_kind::unknown;
        bool is_const = false;
    };

    struct launch_dims
    {
        std::array<unsigned, 3> grid{1, 1, 1};
        std::array<unsigned, 3> block{1, 1, 1};
        unsigned shared_mem = 0;
    };

    // "(256, 1, 1)": a grid or block as messages and replay scripts write it.
    std::string dims_text(const std::array<unsigned, 3>& dims);

    class launch_plan
    {
    public:
        explicit launch_plan(const kernel_signature& signature);

        // Sizes the driver reports for each parameter (cuFuncGetParamInfo): a mismatch with the
        // parsed signature means the parse is wrong, and launching would corrupt arguments
        // (signature_error). Returns the plan with the sizes it did not know filled in, or null
        // when it knew them all.
        std::unique_ptr<launch_plan> with_driver_sizes(const std::vector<std::size_t>& sizes) const;

        const std::vector<parameter_slot>& slots() const noexcept { return m_slots; }
        // The slots' classes and kinds, and their offsets, each one array in parameter order (the launch
        // path's copies of slots()' fields).
        const slot_kind* kinds() const noexcept { return m_kinds.data(); }
        const std::size_t* offsets() const noexcept { return m_offsets.data(); }
        std::size_t arity() const noexcept { return m_slots.size(); }
        // Whether a by-value parameter's size is unknown (the driver tells it: with_driver_sizes).
        bool has_unknown_sizes() const noexcept { return m_unknown_sizes; }
        // Bytes of an argument block: every slot at a 16-byte aligned offset, or, for a packed plan, the
        // kernel's own parameter bytes (the end of its last parameter).
        std::size_t block_bytes() const noexcept { return m_block_bytes; }

        // The plan laid out as the compiled kernel lays out its parameters (`offsets`: what
        // cuFuncGetParamInfo reports for each), so that a block of it is the one buffer cuLaunchKernel
        // can take whole (CU_LAUNCH_PARAM_BUFFER_POINTER) instead of one pointer per parameter. Null when a
        // size is unknown, the count differs, or the offsets do not fit the sizes (two parameters
        // overlapping, one not aligned to its own size, or the end past the driver's 32,764 bytes).
        std::unique_ptr<launch_plan> packed_at(const std::vector<std::size_t>& offsets) const;
        // Whether the slots sit at the kernel's own offsets (packed_at made it).
        bool packed() const noexcept { return m_packed; }
        // Whether a packed block has bytes no slot covers (alignment padding): a block zeroes them, since
        // the driver copies the buffer whole.
        bool has_gaps() const noexcept { return m_gaps; }
        // Whether the slots sit at exactly these offsets.
        bool has_offsets(const std::vector<std::size_t>& offsets) const noexcept;

        // The number of parameters of `.entry symbol(...)` in PTX text, or -1 when the entry is not
        // there. How many parameters the compiled kernel has, asked without a failing driver call
        // (cuFuncGetParamInfo past the last one fails, and compute-sanitizer reports every failing
        // call as the user's error).
        static int ptx_parameter_count(const std::string& ptx, const std::string& symbol);

        // "parameter 2 'x' (const float*)": the prefix of every conversion message.
        std::string describe(std::size_t index) const;

        // Checks grid and block against the device and the function's limits.
        static void validate(const launch_dims& dims, const device_properties& device, int max_threads_for_function,
                             int max_dynamic_shared_for_function, const std::string& kernel_name);

        // Half and bfloat16 bit patterns (round to nearest even), as the device reads them.
        static std::uint16_t to_half(float value);
        static std::uint16_t to_bfloat16(float value);
        // fp8 bit patterns of a double (round to nearest even, straight from the double, as ml_dtypes
        // converts): false when a finite value rounds past the format's largest finite (448 for e4m3,
        // 57344 for e5m2) or, for e4m3 (which has none), for an infinity. NaN keeps its sign.
        static bool to_fp8_e4m3(double value, std::uint8_t& bits);
        static bool to_fp8_e5m2(double value, std::uint8_t& bits);

    private:
        std::vector<parameter_slot> m_slots;
        std::size_t m_block_bytes = 0;
        bool m_unknown_sizes = false;
        bool m_packed = false;
        bool m_gaps = false;
        std::vector<slot_kind> m_kinds;
        std::vector<std::size_t> m_offsets;
        int m_line = 0;  // the kernel's line in its cell, for errors about its declaration
        void layout();
        void index_slots();  // kinds() and offsets() from m_slots
    };
}
