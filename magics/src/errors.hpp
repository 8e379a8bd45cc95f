#pragma once
// The exceptions of the C++ core. The Python module maps each one to an exception class of the same
// meaning (cuda_error -> xcuda.CudaError, ...), so a message written here is what the user reads.

#include <cstddef>
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
