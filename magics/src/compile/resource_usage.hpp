#pragma once
// Per-kernel resources: registers, spills, stack, shared, constant memory and the block limit.
//
// Two sources that must agree: ptxas' verbose log (NVRTC with --ptxas-options=-v, for an sm_XX
// target; no GPU needed) and the driver's function attributes (a loaded kernel). Pure text parsing
// here; the driver side lives in cuda_kernel.

#include <map>
#include <string>

namespace xcuda
{
    struct resource_usage
    {
        int registers = 0;
        int barriers = 0;
        long spill_stores = 0;       // bytes
        long spill_loads = 0;        // bytes
        long stack_frame = 0;        // bytes of local memory per thread (ptxas); local size (driver)
        long static_shared = 0;      // bytes
        long constant = 0;           // bytes of user constant memory (cmem[0] / the driver's const size)
        int max_threads_per_block = 0;  // from the driver only (0 when from ptxas)
        std::string source;          // "ptxas" or "driver"
        std::string arch;

        // "12 registers, 0 B spilled, 0 B stack, 0 B shared, 0 B constant"
        std::string summary() const;

        // Resources by mangled function name, from the log NVRTC returns when ptxas ran verbosely.
        static std::map<std::string, resource_usage> parse_ptxas_log(const std::string& log);
    };
}
