#pragma once
// One launch of a kernel: the transaction a call `kernel[grid, block](*args)` makes, from the converted
// arguments to the results copied back.
//
// A launch_call is made per call and owns everything of that call: its argument block (argument_block,
// laid out by the kernel's immutable plan), the host arrays it copies to device buffers of its own (taken
// from the session's temporary cache and given back once every use has completed), the streams whose work
// must finish first (an array's producer), the objects kept until the launch has completed (imported DLPack
// tensors), and for a replay the extent of each pointer argument. Nothing of a call lives in an object
// shared with another call, so launches of the same kernel from several threads each see their own
// arguments, as cuda.core's per-call argument holder does.
//
// The layer above (the Python binding) converts its objects into the call's values with the store and
// pass functions, which check types and ranges without touching the GPU; then run() does the GPU work:
//   1. waits for the producers' streams (interruptibly);
//   2. copies each host array in (unless it is write-only, xcuda.Out) to a device buffer;
//   3. launches (cuda_kernel::launch: the function on the current device, its limits checked);
//   4. when host arrays or kept objects are there: waits for the launch, copies the written arrays back,
//      waits for the copies, gives the device buffers back to the temporary cache, drops the kept objects.
// A launch with device memory only (the hot path) queues the kernel and returns.
//
// Errors: anything thrown after copies were queued first waits (without polling for an interrupt) for
// the stream, so no copy still reads or writes host memory whose registration goes with the call; the
// buffers of a failed call are freed, never kept.
//
// Threading: one thread per call (it is the caller's own object); calls on different threads, of the same
// kernel or different kernels, on the same stream or different ones, run concurrently: the kernel, module
// and session they share guard their own state. run() holds no Python state, so the binding releases the
// GIL around it when it may block (host arrays, producers to wait for).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "argument_block.hpp"
#include "host_staging.hpp"

namespace xcuda
{
    class cuda_kernel;
    class device_buffer;
    class host_memory_owner;

    // Where a pointer argument points, for a replay of the launch in another process: device memory
    // [address, address + bytes), or host memory (`host` set) whose bytes the replay gets instead.
    struct argument_extent
    {
        std::size_t index = 0;
        std::uint64_t address = 0;
        std::size_t bytes = 0;
        const void* host = nullptr;
        bool initialised = true;  // false for xcuda.Out: the live launch's device copy starts uninitialised
    };

    class launch_call
    {
    public:
        // The kernel must outlive the call. When the kernel's plan still lacks a by-value parameter's size
        // and a GPU session is active, the kernel is prepared first (the driver says the size), so the
        // first launch can pass it.
        launch_call(cuda_kernel& kernel, const launch_dims& dims, CUstream stream);
        ~launch_call();
        launch_call(const launch_call&) = delete;
        launch_call& operator=(const launch_call&) = delete;

        cuda_kernel& kernel() const noexcept { return m_kernel; }
        const launch_plan& plan() const noexcept { return m_arguments.plan(); }
        argument_block& arguments() noexcept { return m_arguments; }
        const launch_dims& dims() const noexcept { return m_dims; }
        CUstream stream() const noexcept { return m_stream; }

        // A replay's call: host arrays are not copied to the device (their slot stays 0) and every
        // pointer argument's extent is recorded (extents()). Set before any pass_ call.
        void record_for_replay() noexcept { m_for_replay = true; }
        bool for_replay() const noexcept { return m_for_replay; }
        const std::vector<argument_extent>& extents() const noexcept { return m_extents; }

        // Device memory for pointer parameter `index` (a DeviceArray, a CUDA Array Interface or DLPack
        // array): its address and bytes (counted for bandwidth figures and recorded for a replay).
        void pass_device_memory(std::size_t index, std::uint64_t address, std::size_t bytes)
        {
            m_arguments.store_pointer(index, address);
            m_array_bytes += bytes;
            if (m_for_replay)
            {
                record_extent(index, address, bytes);
            }
        }
        // Host memory for pointer parameter `index`, copied to a device buffer of the call's own before
        // the launch (copy_in) and back after it (copy_out). The memory must stay valid until run()
        // returns; `owner` (may be null) keeps it allocated while the registration cache holds it.
        void pass_host_array(std::size_t index, void* data, std::size_t bytes, bool copy_in, bool copy_out,
                             std::shared_ptr<host_memory_owner> owner, std::string label);
        // Work queued on `producer` must be complete before the launch reads the arguments.
        void wait_for(CUstream producer);
        // Kept until the launch has completed (then dropped, in run()).
        void keep_until_complete(std::shared_ptr<void> object);

        bool has_host_arrays() const noexcept { return !m_host.empty(); }
        // Whether run() may block (waits, copies): the binding releases the GIL around it then.
        bool blocks() const noexcept { return !m_host.empty() || !m_producers.empty() || !m_kept.empty(); }
        // Bytes of all array arguments.
        std::size_t array_bytes() const noexcept { return m_array_bytes; }

        // The transaction (see the header comment). Once per call.
        void run();
        // The same transaction with the launch made warmup times, then repeat times between CUDA events;
        // the milliseconds of each timed launch.
        std::vector<double> time(int repeat, int warmup);
        // What a CUDA graph's kernel node needs to make this launch (device memory only; the driver
        // copies the argument values when it is given them).
        CUDA_KERNEL_NODE_PARAMS node_params();

    private:
        // A device-memory argument kept for a replay (pass_device_memory when record_for_replay).
        void record_extent(std::size_t index, std::uint64_t address, std::size_t bytes);
        struct host_array
        {
            std::size_t index = 0;
            void* data = nullptr;
            std::size_t bytes = 0;
            bool copy_in = true;
            bool copy_out = true;
            std::shared_ptr<host_memory_owner> owner;
            std::string label;
            std::shared_ptr<device_buffer> device;
        };

        // Steps 1 and 2 of run(); complete() is step 4.
        void begin();
        void complete();
        // On the simulator the launch has run when it returns: its device printf output is shown at once,
        // where the launch is in the cell, not at the cell's end after its result.
        void show_device_output();
        // On an error path: waits for queued copies without polling, so their registrations may go.
        void settle() noexcept;

        cuda_kernel& m_kernel;
        launch_dims m_dims;
        CUstream m_stream;
        argument_block m_arguments;
        std::vector<host_array> m_host;
        std::vector<CUstream> m_producers;
        std::vector<std::shared_ptr<void>> m_kept;
        pending_copies m_pending;
        std::vector<argument_extent> m_extents;
        std::size_t m_array_bytes = 0;
        bool m_for_replay = false;
    };
}
