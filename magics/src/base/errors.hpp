#pragma once
// The one error hierarchy of the C++ core. Every failure the core reports is an xcuda::error; no
// bare standard exception leaves a layer. The Python module translates each class to one Python
// exception in one place (magics/python/py_errors.cpp), so a message written here is what the user
// reads:
//
//   error                          (root; never thrown itself)
//     cuda_error                   a driver call failed            -> xcuda.CudaError
//       out_of_memory_error        an allocation too large         -> xcuda.OutOfMemoryError
//       kernel_fault               a kernel faulted                -> xcuda.KernelFault
//     cuda_unavailable_error       no driver or no GPU             -> xcuda.CudaUnavailableError
//     session_lost_error           GPU use after a fault           -> xcuda.SessionLostError
//     session_closed_error         use of a closed session's object-> xcuda.SessionClosedError
//     host_out_of_memory_error     host memory exhausted           -> MemoryError
//     interrupted_error            an interrupted GPU wait         -> KeyboardInterrupt
//     nvrtc_error                  an NVRTC API call failed        -> xcuda.NVRTCError
//     compile_error                NVRTC rejected the source       -> xcuda.CompileError
//     signature_error              an unreadable declaration       -> xcuda.SignatureError
//     tool_not_found_error         nvdisasm / cuobjdump missing    -> xcuda.ToolNotFoundError
//     tool_error                   a toolkit program failed        -> xcuda.ToolError
//     usage_error                  a bad option or call            -> ValueError (UsageError in magics)
//     argument_type_error          a launch argument of a wrong type  -> TypeError
//     argument_value_error         a launch argument out of range  -> ValueError
//       device_mismatch_error      an argument on another device   -> xcuda.DeviceMismatchError
//     graph_capture_error          what a CUDA graph cannot capture -> xcuda.GraphCaptureError
//
// This layer is pure C++: no CUDA, no NVRTC, no Python.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "diagnostic.hpp"

namespace xcuda
{
    class error : public std::runtime_error
    {
    public:
        using std::runtime_error::runtime_error;
    };

    // A CUDA driver call failed. Names the call, the CUresult name and its description.
    class cuda_error : public error
    {
    public:
        cuda_error(std::string call, int code, std::string name, std::string description);
        const std::string& call() const noexcept { return m_call; }
        int code() const noexcept { return m_code; }
        const std::string& name() const noexcept { return m_name; }

        // A line of a %%cuda cell the error is about (a simulated fault's instruction), for the editor to
        // mark as it marks compile errors: the cell's In[N] (0: not a cell of this notebook's editor),
        // the editor's line and what to say there.
        struct editor_mark
        {
            int cell = 0;
            int line = 0;
            std::string message;
        };
        const std::vector<editor_mark>& marks() const noexcept { return m_marks; }
        // The same error with its message said anew (its lines located in the cell) and marks added.
        cuda_error relocated(const std::string& message, std::vector<editor_mark> marks) const;

    protected:
        struct whole_message {};
        // For subclasses that write the whole message themselves.
        cuda_error(whole_message, const std::string& message, std::string call, int code, std::string name);

    private:
        std::string m_call;
        int m_code;
        std::string m_name;
        std::vector<editor_mark> m_marks;
    };

    // An allocation larger than the device can give; carries the requested and the free bytes.
    class out_of_memory_error : public cuda_error
    {
    public:
        // detail, when not empty, follows: why the device has that size (the PTX simulator's says).
        out_of_memory_error(std::string call, int code, std::size_t requested, std::size_t free_bytes,
                            std::size_t total_bytes, const std::string& detail = "");
        std::size_t requested() const noexcept { return m_requested; }
        std::size_t free_bytes() const noexcept { return m_free; }

    private:
        std::size_t m_requested;
        std::size_t m_free;
    };

    // A kernel faulted (illegal address, trap, assert...). Names the kernels launched since the last
    // completed wait (the faulting one is among them; the last is the likeliest), the device, the call
    // that reported it, and what was lost: the driver refuses every later call of this process.
    class kernel_fault : public cuda_error
    {
    public:
        struct lost_buffer
        {
            std::string label;
            std::size_t bytes = 0;
            int device = 0;
            std::uintptr_t id = 0;  // the device_buffer's address, to find the Python objects viewing it
        };
        kernel_fault(std::string call, int code, std::string name, const std::string& message,
                     std::vector<std::string> kernels, int device, std::vector<lost_buffer> lost, std::size_t modules);
        const std::vector<std::string>& kernels() const noexcept { return m_kernels; }
        int device() const noexcept { return m_device; }
        const std::vector<lost_buffer>& lost() const noexcept { return m_lost; }
        std::size_t modules() const noexcept { return m_modules; }

    private:
        std::vector<std::string> m_kernels;
        int m_device;
        std::vector<lost_buffer> m_lost;
        std::size_t m_modules;
    };

    // No usable driver or GPU: libcuda.so.1 missing, a stub library, no device. Compiling still works.
    class cuda_unavailable_error : public error
    {
    public:
        explicit cuda_unavailable_error(const std::string& reason);
    };

    // Host memory could not be allocated (page-locked buffers): MemoryError in Python.
    class host_out_of_memory_error : public error
    {
    public:
        using error::error;
    };

    // A GPU operation after a kernel fault made the GPU unusable in this process.
    class session_lost_error : public error
    {
    public:
        using error::error;
    };

    // An object (a buffer, a stream, an event) used after the CUDA session that made it was closed.
    class session_closed_error : public error
    {
    public:
        using error::error;
    };

    // A wait for the GPU was interrupted (SIGINT in a notebook). The message says what still runs.
    class interrupted_error : public error
    {
    public:
        using error::error;
    };

    // An NVRTC API call failed for another reason than the source (out of memory, a bad name
    // expression, a broken installation). Names the call and NVRTC's result.
    class nvrtc_error : public error
    {
    public:
        nvrtc_error(std::string call, int code, const std::string& description);
        const std::string& call() const noexcept { return m_call; }
        int code() const noexcept { return m_code; }
        const std::string& description() const noexcept { return m_description; }

    private:
        std::string m_call;
        int m_code;
        std::string m_description;
    };

    // NVRTC rejected the source. what() is the log (with the cell's own line numbers), the options
    // used and the numbered source lines around the first error.
    class compile_error : public error
    {
    public:
        compile_error(const std::string& message, std::string log, std::vector<std::string> options,
                      std::vector<diagnostic> parsed = {});
        const std::string& log() const noexcept { return m_log; }
        const std::vector<std::string>& options() const noexcept { return m_options; }
        const std::vector<diagnostic>& parsed() const noexcept { return m_parsed; }

    private:
        std::string m_log;
        std::vector<std::string> m_options;
        std::vector<diagnostic> m_parsed;
    };

    // A __global__ declaration that cannot be understood. what() reads "line 3: <problem>".
    class signature_error : public error
    {
    public:
        signature_error(int line, const std::string& message);
        int line() const noexcept { return m_line; }

    private:
        int m_line;
    };

    // A toolkit program a view needs (nvdisasm, cuobjdump) is not installed; the message says which
    // and how to get it.
    class tool_not_found_error : public error
    {
    public:
        using error::error;
    };

    // A toolkit program ran and failed, or could not be run; the message carries what it said.
    class tool_error : public error
    {
    public:
        using error::error;
    };

    // A %%cuda_program program (or the tool it ran under) ended with a non-zero exit status.
    class program_error : public error
    {
    public:
        program_error(const std::string& message, int status)
            : error(message)
            , m_status(status)
        {
        }
        int status() const noexcept { return m_status; }

    private:
        int m_status;
    };

    // A call or a magic's option line that does not make sense: an unknown option, a missing value,
    // a device that does not exist, a copy of the wrong size. Says what was expected.
    class usage_error : public error
    {
    public:
        using error::error;
    };

    // A compile option whose value the cell does not fit (--instantiate naming no template kernel of the
    // cell, or arguments its template does not take): a usage_error (ValueError) from xcuda.compile, and
    // from %%cuda a short error at the option (IPython's UsageError), as a wrong option line is.
    class option_error : public usage_error
    {
    public:
        using usage_error::usage_error;
    };

    // Launch arguments that do not match the kernel's signature (TypeError or ValueError in Python).
    class argument_type_error : public error
    {
    public:
        using error::error;
    };

    class argument_value_error : public error
    {
    public:
        using error::error;
    };

    // An index past what it indexes: a graph's node number, a row of a 0-d array (an IndexError).
    class index_error : public error
    {
    public:
        using error::error;
    };

    // An export a consumer asked for that cannot be made: a DLPack copy, device or dtype it cannot
    // describe (a BufferError, as the DLPack protocol expects).
    class export_error : public error
    {
    public:
        using error::error;
    };

    // A launch argument or stream that lives on another device than the launch (a ValueError).
    class device_mismatch_error : public argument_value_error
    {
    public:
        using argument_value_error::argument_value_error;
    };

    // Inside `with xcuda.graph():` an operation that a CUDA graph cannot hold (a synchronous copy of a
    // pageable numpy array, a synchronize, an allocation, a launch on another stream), or a graph used
    // in a way it cannot be (replayed before its capture ended, updated with a different kernel). The
    // message names the operation and what to do instead.
    class graph_capture_error : public error
    {
    public:
        using error::error;
    };
}
