#include "errors.hpp"

namespace xcuda
{
    cuda_error::cuda_error(std::string call, int code, std::string name, std::string description)
        : error(call + " failed: " + name + " (" + std::to_string(code) + "): " + description)
        , m_call(std::move(call))
        , m_code(code)
        , m_name(std::move(name))
    {
    }

    cuda_error::cuda_error(whole_message, const std::string& message, std::string call, int code, std::string name)
        : error(message)
        , m_call(std::move(call))
        , m_code(code)
        , m_name(std::move(name))
    {
    }

    cuda_error cuda_error::relocated(const std::string& message, std::vector<editor_mark> marks) const
    {
        cuda_error copy(whole_message{}, message, m_call, m_code, m_name);
        copy.m_marks = std::move(marks);
        return copy;
    }

    cuda_unavailable_error::cuda_unavailable_error(const std::string& reason)
        : error("CUDA is not available: " + reason +
                             "\nCompiling %%cuda cells and inspecting their PTX still work; launching kernels and "
                             "device memory need an NVIDIA GPU with its driver (libcuda.so.1), or the PTX simulator: "
                             "call xcuda.use_simulator() (or set XCUDA_DEVICE=simulator before xcuda starts) to run "
                             "kernels on the CPU (docs/simulator.md).")
    {
    }

    namespace
    {
        std::string mib(std::size_t bytes)
        {
            return std::to_string(bytes / (1024 * 1024)) + " MiB";
        }
    }

    out_of_memory_error::out_of_memory_error(std::string call, int code, std::size_t requested,
                                             std::size_t free_bytes, std::size_t total_bytes, const std::string& detail)
        : cuda_error(std::move(call), code, "CUDA_ERROR_OUT_OF_MEMORY",
                     "requested " + std::to_string(requested) + " bytes (" + mib(requested) + ") but only " +
                         std::to_string(free_bytes) + " bytes (" + mib(free_bytes) + ") of " + mib(total_bytes) +
                         " are free on the device; free buffers you no longer need (del buf) or use smaller ones" +
                         (detail.empty() ? std::string() : ". " + detail))
        , m_requested(requested)
        , m_free(free_bytes)
    {
    }

    kernel_fault::kernel_fault(std::string call, int code, std::string name, const std::string& message,
                               std::vector<std::string> kernels, int device, std::vector<lost_buffer> lost,
                               std::size_t modules)
        : cuda_error(whole_message{}, message, std::move(call), code, std::move(name))
        , m_kernels(std::move(kernels))
        , m_device(device)
        , m_lost(std::move(lost))
        , m_modules(modules)
    {
    }

    compile_error::compile_error(const std::string& message, std::string log, std::vector<std::string> options,
                                 std::vector<diagnostic> parsed)
        : error(message)
        , m_log(std::move(log))
        , m_options(std::move(options))
        , m_parsed(std::move(parsed))
    {
    }

    nvrtc_error::nvrtc_error(std::string call, int code, const std::string& description)
        : error(call + " failed: " + description + " (nvrtcResult " + std::to_string(code) + ")")
        , m_call(std::move(call))
        , m_code(code)
        , m_description(description)
    {
    }

    signature_error::signature_error(int line, const std::string& message)
        : error("line " + std::to_string(line) + ": " + message)
        , m_line(line)
    {
    }
}
