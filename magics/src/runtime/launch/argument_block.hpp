#pragma once
// The argument values of one launch: a block laid out as its kernel's launch_plan says, and the void*
// array cuLaunchKernel takes, pointing into it. One per call (it lives in the call's launch_call, on
// the caller's stack): nothing of a launch's arguments is shared with another launch, so launches of
// one kernel from several threads each pass their own values.
//
// Small blocks (the common case: up to 512 bytes and 48 parameters) live inside the object, so the
// launch path allocates nothing; larger ones take one allocation.
//
// The stores check ranges and say which parameter was wrong and why (argument_value_error /
// argument_type_error); they need no GPU, so the conversion rules are tested without one.
//
// Threading: one thread at a time per block (it is the call's own); the plan it reads is immutable.
// Not copyable or movable: the pointer array points into the object.

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "launch_plan.hpp"

namespace xcuda
{
    class argument_block
    {
    public:
        // The plan must outlive the block (a launch_call keeps its kernel, which keeps its plans).
        // Inline: the launch path's common case (a small block without gaps) is a few stores.
        explicit argument_block(const launch_plan& plan)
            : m_plan(&plan)
            , m_offsets(plan.offsets())
            , m_kinds(plan.kinds())
            , m_count(plan.arity())
            , m_data(m_inline)
            , m_pointers(m_inline_pointers)
        {
            std::size_t bytes = plan.block_bytes();
            if (bytes > sizeof m_inline || m_count > inline_parameters || plan.has_gaps())
            {
                allocate(bytes, m_count);
            }
        }
        argument_block(const argument_block&) = delete;
        argument_block& operator=(const argument_block&) = delete;

        const launch_plan& plan() const noexcept { return *m_plan; }
        // What cuLaunchKernel's kernelParams (and a graph's kernel node) takes: one pointer per slot, made
        // when asked (a launch passing the block as one buffer never asks).
        void** pointers() const noexcept
        {
            // Locals, so that the compiler sees the stores cannot change what the loop reads.
            void** out = m_pointers;
            unsigned char* data = m_data;
            const std::size_t* offsets = m_offsets;
            for (std::size_t i = 0, n = m_count; i < n; ++i)
            {
                out[i] = data + offsets[i];
            }
            return out;
        }
        void* slot(std::size_t index) const noexcept { return m_data + m_offsets[index]; }
        // The block itself: for a packed plan, the one buffer cuLaunchKernel takes whole
        // (CU_LAUNCH_PARAM_BUFFER_POINTER, with bytes() as CU_LAUNCH_PARAM_BUFFER_SIZE).
        void* data() const noexcept { return m_data; }
        std::size_t bytes() const noexcept { return m_plan->block_bytes(); }

        // Range-checked stores of a number into parameter `index`'s slot.
        void store_signed(std::size_t index, long long value);
        void store_unsigned(std::size_t index, unsigned long long value);
        void store_float(std::size_t index, double value)
        {
            // The launch path's common case inline: a float32 parameter given a value it can hold.
            if (m_kinds[index].kind == scalar_kind::f32 && std::fabs(value) <= FLT_MAX)
            {
                float single = static_cast<float>(value);
                std::memcpy(slot(index), &single, sizeof single);
                return;
            }
            store_float_checked(index, value);
        }
        void store_bool(std::size_t index, bool value);
        void store_pointer(std::size_t index, std::uint64_t address)
        {
            std::memcpy(slot(index), &address, sizeof address);
        }
        void store_bytes(std::size_t index, const void* data, std::size_t size);

    private:
        // The constructor's rest: a block or pointer array too large to live inline, and the zeroed padding.
        void allocate(std::size_t bytes, std::size_t count);
        // Every kind and value store_float may be given: ranges checked, the error names the parameter.
        void store_float_checked(std::size_t index, double value);
        // An fp8 parameter's value, rounded to nearest even; argument_value_error past its range.
        void store_fp8(std::size_t index, double value);
        static constexpr std::size_t inline_parameters = 48;
        const launch_plan* m_plan;
        const std::size_t* m_offsets;  // the plan's
        const slot_kind* m_kinds;      // the plan's
        std::size_t m_count;
        alignas(16) unsigned char m_inline[512];
        mutable void* m_inline_pointers[inline_parameters];
        std::unique_ptr<unsigned char[]> m_heap;
        std::unique_ptr<void*[]> m_heap_pointers;
        unsigned char* m_data;
        void** m_pointers;
    };
}
