#include "python_error_class.hpp"

#include <cstring>

namespace xcuda
{
    const std::vector<python_error_class::entry>& python_error_class::defined()
    {
        static const std::vector<entry> table = {
            {"CudaError", "RuntimeError",
             "A CUDA driver call failed. Attributes: call (the driver function), code "
             "(the CUresult value), name (the CUresult name)."},
            {"CudaUnavailableError", "CudaError",
             "No NVIDIA driver or no CUDA device: GPU operations cannot run. "
             "Compiling %%cuda cells and inspecting PTX still work."},
            {"OutOfMemoryError", "CudaError",
             "An allocation larger than the device's free memory. Attributes: "
             "requested, free (bytes)."},
            {"CompileError", "RuntimeError",
             "NVRTC could not compile the source. Attributes: log (NVRTC's log, "
             "with the cell's own line numbers), options (what NVRTC was given), "
             "diagnostics (a dict per message: file ('' for the cell, else the "
             "header cell's name), line (in that file), column, severity, message, "
             "source_line, hint) and html (the messages with a caret under each)."},
            {"SignatureError", "ValueError", "A __global__ declaration could not be read. Attribute: line."},
            {"ToolNotFoundError", "RuntimeError", "A CUDA toolkit program a view needs (nvdisasm, cuobjdump) is missing."},
            {"KernelFault", "CudaError",
             "A kernel faulted (illegal address, trap, assert...). Attributes: kernels "
             "(the launches since the last wait, the likeliest last), device, lost (a "
             "dict per lost device buffer: label, bytes, device, names). CUDA refuses "
             "further GPU work in this process; %cuda_recover replaces it."},
            {"SessionLostError", "CudaError",
             "A GPU operation after a kernel fault made the GPU unusable in this "
             "process; %cuda_recover replaces the process keeping your variables."},
            {"DeviceMismatchError", "ValueError", "A launch argument or stream lives on another device than the launch."},
            {"ToolError", "RuntimeError",
             "A CUDA toolkit program (nvdisasm, cuobjdump, ptxas) failed; the message "
             "carries what it said."},
            {"NVRTCError", "RuntimeError",
             "An NVRTC API call failed for another reason than the source (a bad name "
             "expression, out of memory, a broken installation). Attributes: call, code."},
            {"SessionClosedError", "RuntimeError", "A buffer, stream or event of a CUDA session that was closed."},
            {"GraphCaptureError", "RuntimeError",
             "Inside `with xcuda.graph():` an operation a CUDA graph cannot hold (a "
             "synchronous numpy copy, a synchronize, an allocation), or a graph used "
             "before its capture ended; the message says what to do instead."},
            {"ProgramError", "RuntimeError",
             "A %%cuda_program program (or the profiler or sanitizer it ran under) "
             "ended with a non-zero exit status. Attribute: returncode."},
        };
        return table;
    }

    bool python_error_class::is_root(const entry& e)
    {
        return std::strcmp(e.base, "RuntimeError") == 0 || std::strcmp(e.base, "ValueError") == 0;
    }

    std::string python_error_class::class_of(const error& e)
    {
        // Most derived first: device_mismatch_error is an argument_value_error, kernel_fault and
        // out_of_memory_error are cuda_errors.
        if (dynamic_cast<const kernel_fault*>(&e)) return "KernelFault";
        if (dynamic_cast<const out_of_memory_error*>(&e)) return "OutOfMemoryError";
        if (dynamic_cast<const cuda_error*>(&e)) return "CudaError";
        if (dynamic_cast<const session_lost_error*>(&e)) return "SessionLostError";
        if (dynamic_cast<const cuda_unavailable_error*>(&e)) return "CudaUnavailableError";
        if (dynamic_cast<const interrupted_error*>(&e)) return "KeyboardInterrupt";
        if (dynamic_cast<const device_mismatch_error*>(&e)) return "DeviceMismatchError";
        if (dynamic_cast<const compile_error*>(&e)) return "CompileError";
        if (dynamic_cast<const signature_error*>(&e)) return "SignatureError";
        if (dynamic_cast<const tool_not_found_error*>(&e)) return "ToolNotFoundError";
        if (dynamic_cast<const index_error*>(&e)) return "IndexError";
        if (dynamic_cast<const export_error*>(&e)) return "BufferError";
        if (dynamic_cast<const argument_type_error*>(&e)) return "TypeError";
        if (dynamic_cast<const argument_value_error*>(&e)) return "ValueError";
        if (dynamic_cast<const usage_error*>(&e)) return "ValueError";
        if (dynamic_cast<const tool_error*>(&e)) return "ToolError";
        if (dynamic_cast<const program_error*>(&e)) return "ProgramError";
        if (dynamic_cast<const nvrtc_error*>(&e)) return "NVRTCError";
        if (dynamic_cast<const session_closed_error*>(&e)) return "SessionClosedError";
        if (dynamic_cast<const graph_capture_error*>(&e)) return "GraphCaptureError";
        if (dynamic_cast<const host_out_of_memory_error*>(&e)) return "MemoryError";
        // A class added to the hierarchy without its own Python exception yet.
        return "RuntimeError";
    }
}
