#pragma once
// The launch fast path: a Launcher's call whose argument types were seen before, converted by a few
// steps chosen once per type signature, with no launch_call, no allocation and no lock.
//
// After a launch through the general path (bind_arguments, launch_call) succeeds with every argument of a
// type the fast path knows (a float or int for a number parameter, a DeviceArray or None for a pointer),
// learn() keeps that call's argument types and, for each argument, the step that converts it: an entry
// keyed by the types. A later call with the same types (compared exactly, one pointer per argument) runs
// the entry's steps into an argument block on the stack and launches (cuda_kernel::launch). Each step still
// checks what the type alone does not say (a DeviceArray's element type and device, an int's range, a
// float's overflow); anything it does not accept, and anything the fast path does not handle (a stream
// object, a capture, a stale module, keywords), sends the whole call to the general path, which converts
// from scratch and reports errors in its words. So a call either launches here with exactly the values the
// general path would pass, or nothing happened yet when the general path takes it.
//
// A call with the same DeviceArray objects as the entry's last one takes their addresses from a memo
// (array_memo below) instead of reading each array, while no buffer was released and no DeviceArray went
// since: a loop launching on the same arrays reads none of them. A call with the very same argument objects
// as the last one, scalars included, copies the block that call filled (call_memo below; while calls keep
// missing it, it remembers only now and then).
//
// One cache per Kernel object, shared by its Launchers (std::shared_ptr). Threading: the entries are
// immutable once made and published with an atomic store into a slot of a fixed array (at most `capacity`
// type signatures; later ones are not learned and go the general path); learn() takes a mutex, the hit
// path only reads atomics. Entries live as long as the cache.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <Python.h>

#include "launch_plan.hpp"

namespace xcuda
{
    class argument_block;
    class cuda_kernel;
    class device_session;
}

namespace xcuda::python
{
    class fast_launch_cache
    {
    public:
        static constexpr std::size_t capacity = 4;

        fast_launch_cache() = default;
        fast_launch_cache(const fast_launch_cache&) = delete;
        fast_launch_cache& operator=(const fast_launch_cache&) = delete;

        // Launches `kernel` with these positional arguments (exactly the kernel's arity) if an entry knows
        // their types and every step accepts its value; false (nothing done) otherwise. Throws what
        // cuda_kernel::launch throws (the same as the general path's launch would). Needs the GIL.
        // `validated`: the Launcher's memo for its dims (cuda_kernel::launch).
        bool launch(cuda_kernel& kernel, const launch_dims& dims, PyObject* stream_object, PyObject* const* args,
                    std::size_t nargs, std::atomic<const void*>* validated);
        // Remembers these arguments' types after a successful general launch with them (no effect when an
        // entry has them already, when a type is not one the fast path converts, or when the cache is full).
        void learn(cuda_kernel& kernel, PyObject* const* args, std::size_t nargs) noexcept;
        // How many type signatures are cached.
        std::size_t size() const noexcept { return m_count.load(std::memory_order_acquire); }

    private:
        enum class step : std::uint8_t
        {
            float_to_f32,    // a Python float for a float parameter
            float_to_f64,    // a Python float for a double parameter
            int_to_integer,  // a Python int for an integer parameter (range-checked)
            int_to_float,    // a Python int for a float or double parameter
            device_array,    // an xcuda.DeviceArray for a pointer parameter (element type and device checked)
            null_pointer     // None for a pointer parameter
        };
        // One argument's type and what to do with it: where its value goes in the plan's block.
        struct argument
        {
            PyTypeObject* type;
            std::size_t offset;
            step how;
            scalar_kind kind;
        };
        // The three common steps, each run in a loop of its own without the step's dispatch: a float for a
        // float parameter, a DeviceArray for a pointer, an int for an integer parameter (an argument's
        // index, where its value goes, the kind).
        struct float_slot
        {
            std::size_t index;
            std::size_t offset;
        };
        struct array_slot
        {
            std::size_t index;
            std::size_t offset;
            scalar_kind kind;
        };
        // Where the launch runs: DeviceArrays must be allocations of this session in this context generation
        // (which names the device).
        struct where
        {
            const device_session* session;
            std::uint64_t generation;
        };

        // The DeviceArrays of the entry's last call that converted them all, and their addresses: a later call
        // whose DeviceArrays are the same objects gets the same addresses without reading the arrays (three
        // objects each, a cache miss each after the driver's launch has filled the cache with its own), while
        // nothing they depend on changed: no buffer was released (device_buffer::releases), no DeviceArray went
        // (g_device_arrays_gone: an object's address is then not a new object's), and the launch runs where it
        // ran. The objects are borrowed and never read through. A DeviceArray is immutable, so its element
        // type, the other thing checked, is the same too. Written and read with the GIL held (launch() needs
        // it; the steps call nothing that could release it).
        struct array_memo
        {
            bool valid = false;
            std::uint64_t releases = 0;
            std::uint64_t arrays_gone = 0;
            where at{nullptr, 0};
            std::vector<PyObject*> objects;        // one per entry of `arrays`, in its order
            std::vector<std::uint64_t> addresses;  // (the same)
        };
        // The whole of the entry's last call that converted: every argument object and the block they filled.
        // A later call with the very same objects fills the same block (a copy of it), under array_memo's
        // conditions for the DeviceArrays among them (borrowed, never read through: the counters say whether
        // one went). The other arguments (floats, ints, None) are held: a reference each, so that the same
        // object is still the same immutable value (a float freed and another made at its address would
        // otherwise pass). Written and read with the GIL held, as array_memo.
        struct call_memo
        {
            bool valid = false;
            std::uint64_t releases = 0;
            std::uint64_t arrays_gone = 0;
            where at{nullptr, 0};
            std::vector<PyObject*> objects;      // one per argument (held unless a DeviceArray); null: none yet
            std::vector<unsigned char> block;    // the plan's block_bytes()
            // Conversions since the last hit: past the first two, only every 32nd is remembered, so that a loop
            // whose scalars change every call (`k(t, ...)` for t in range) pays for remembering rarely.
            std::uint32_t misses = 0;
        };
        // Every argument's step (`arguments`, in order: what knows() compares), and the same steps grouped:
        // the floats, the DeviceArrays, the ints, and the rest by their step. Immutable once published.
        struct entry
        {
            entry() = default;
            entry(const entry&) = delete;
            entry& operator=(const entry&) = delete;
            // Lets go of the call memo's references (the caches go with a Kernel or Launcher object, the GIL
            // held; without it, they are left rather than touched).
            ~entry();
            const launch_plan* plan;  // the plan the offsets are of (a kernel may swap in another: a miss)
            std::size_t arity;        // arguments.size()
            std::vector<argument> arguments;
            std::vector<float_slot> floats;
            std::vector<array_slot> arrays;
            std::vector<array_slot> ints;
            std::vector<argument> rest;      // (type and step as in `arguments`, offset of the argument)
            std::vector<std::size_t> rest_index;
            mutable array_memo memo;  // (the GIL; the rest is immutable)
            mutable call_memo call;   // (the GIL)
        };

        // The block filled by the first entry whose types are these arguments' and whose steps accept their
        // values: that entry, or null (the block then holds nothing meaningful).
        [[gnu::always_inline]] inline const entry* convert(const launch_plan& plan, unsigned char* data,
                                                           PyObject* const* args, std::size_t nargs,
                                                           const where& here) const;
        // The entry's steps into data; false at the first argument of another type or a value a step does not
        // accept (a DeviceArray not alive where the launch runs included: the general path raises for it).
        // Never throws. Inline (with the loops below, into launch()): a call's prologue costs more than a short
        // loop's work. The floats first, then the DeviceArrays, the ints, then the rest (step by step).
        [[gnu::always_inline]] inline static bool convert(const entry& e, unsigned char* data, PyObject* const* args, const where& here) noexcept;
        [[gnu::always_inline]] inline static bool convert_floats(const entry& e, unsigned char* data, PyObject* const* args) noexcept;
        [[gnu::always_inline]] inline static bool convert_arrays(const entry& e, unsigned char* data, PyObject* const* args, const where& here,
                                                                 std::uint64_t releases, std::uint64_t gone) noexcept;
        // After a conversion of every argument: the call memo takes these objects and the block they filled.
        static void remember_call(const entry& e, const unsigned char* data, PyObject* const* args, const where& here,
                                  std::uint64_t releases, std::uint64_t gone) noexcept;
        [[gnu::always_inline]] inline static bool convert_ints(const entry& e, unsigned char* data, PyObject* const* args) noexcept;
        static bool convert_step(const argument& a, void* slot, PyObject* object, const where& here) noexcept;
        void remember(cuda_kernel& kernel, PyObject* const* args, std::size_t nargs);
        // Whether an entry for this plan has exactly these arguments' types.
        bool knows(const launch_plan& plan, PyObject* const* args, std::size_t nargs) const noexcept;

        std::atomic<const entry*> m_entries[capacity]{};
        std::atomic<std::size_t> m_count{0};
        std::mutex m_learning;                        // learn() only
        std::vector<std::unique_ptr<entry>> m_owned;  // (m_learning)
    };
}
