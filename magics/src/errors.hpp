#pragma once
// The exceptions of the C++ core. The Python module maps each one to an exception class of the same
// meaning (cuda_error -> xcuda.CudaError, ...), so a message written here is what the user reads.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "diagnostics.hpp"

namespace xcuda
{
    // A CUDA driver call failed. Names the call, the CUresult name and its description.
    class cuda_error : public std::runtime_error
    {
    public:
        cuda_error(std::string call, int code, std::string name, std::string description);
        const std::string& call() const noexcept { return m_call; }
        int code() const noexcept { return m_code; }
        const std::string& name() const noexcept { return m_name; }

    protected:
        struct whole_message {};
        // For subclasses that write the whole message themselves.
        cuda_error(whole_message, const std::string& message, std::string call, int code, std::string name);

    private:
        std::string m_call;
        int m_code;
        std::string m_name;
    };

    // No usable driver or GPU: libcuda.so.1 missing, a stub library, no device. Compiling still works.
    class cuda_unavailable_error : public std::runtime_error
    {
    public:
        explicit cuda_unavailable_error(const std::string& reason);
    };

    // An allocation larger than the device can give; carries the requested and the free bytes.
    class out_of_memory_error : public cuda_error
    {
    public:
        out_of_memory_error(std::string call, int code, std::size_t requested, std::size_t free_bytes,
                            std::size_t total_bytes);
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
        kernel_fault(std::string call, int code, const std::string& message, std::vector<std::string> kernels,
                     int device, std::vector<lost_buffer> lost, std::size_t modules);
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

    // A GPU operation after a kernel fault made the GPU unusable in this process.
    class session_lost_error : public std::runtime_error
    {
    public:
        using std::runtime_error::runtime_error;
    };

    // A wait for the GPU was interrupted (SIGINT in a notebook). The message says what still runs.
    class interrupted_error : public std::runtime_error
    {
    public:
        using std::runtime_error::runtime_error;
    };

    // A launch argument or stream that lives on another device than the launch (ValueError).
    class device_mismatch_error : public std::invalid_argument
    {
    public:
        using std::invalid_argument::invalid_argument;
    };

    // NVRTC rejected the source. what() is the log (with the cell's own line numbers), the options
    // used and the numbered source lines around the first error.
    class compile_error : public std::runtime_error
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

    // A toolkit program a view needs (nvdisasm, cuobjdump) is not installed; the message says which
    // and how to get it.
    class tool_not_found_error : public std::runtime_error
    {
    public:
        using std::runtime_error::runtime_error;
    };

    // Launch arguments that do not match the kernel's signature (maps to TypeError or ValueError).
    class argument_type_error : public std::invalid_argument
    {
    public:
        using std::invalid_argument::invalid_argument;
    };

    class argument_value_error : public std::invalid_argument
    {
    public:
        using std::invalid_argument::invalid_argument;
    };
}
