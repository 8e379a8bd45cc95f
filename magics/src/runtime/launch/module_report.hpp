#pragma once
// The words and figures xcuda.Module and xcuda.Kernel show about a compiled module and its kernels:
// their reprs, the ptxas resources of each kernel, what a missing kernel's message says (and the hint
// when the name is a module variable), the warning of a launch of a stale kernel, the texts of the
// ResourceUsage and Occupancy results. Read from the module; computed when asked, on the thread
// that asks (the binding holds the GIL). Stateless.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda_kernel.hpp"
#include "cuda_module.hpp"
#include "resource_usage.hpp"

namespace xcuda
{
    class module_report
    {
    public:
        // "sm_90", or "compute_75 PTX" for a module without a CUBIN.
        static std::string target_text(const cuda_module& module);
        // The kernels' names, once each, in the order of the module's signatures.
        static std::vector<std::string> kernel_names(const cuda_module& module);
        // "<xcuda.Module cell_1 [sm_90]: saxpy, scale>" and "<xcuda.Kernel void saxpy(...) [sm_90]>".
        static std::string module_text(const cuda_module& module);
        static std::string kernel_text(const cuda_kernel& kernel);

        // Kernel name -> resources from this compile's own ptxas report (none for compute_XX targets),
        // in the order of the signatures.
        static std::vector<std::pair<std::string, resource_usage>> ptxas_resources(const cuda_module& module);

        // The message for module['name'] / module.name of a kernel it does not have: the first lists the
        // kernels it has. Both end with variable_hint.
        static std::string missing_kernel(cuda_module& module, const std::string& name);
        static std::string missing_attribute(cuda_module& module, const std::string& name);
        // "; 'c_Kernel' is a __constant__ variable: module.get_global('c_Kernel') ..." when the name is one
        // of the module's variables, else "" (also for Python's own probes, __array_interface__, ...).
        static std::string variable_hint(cuda_module& module, const std::string& name);

        // The warning of a launch of a kernel whose module was compiled with an older header cell.
        static std::string stale_warning(const cuda_kernel& kernel);
        // The message for kernel(...) without a configuration.
        static std::string needs_configuration(const cuda_kernel& kernel);
        // Throws usage_error unless measured (a profile's kernel; null for recorded ncu output) is kernel:
        // figures by line number are only right for the compile they were measured on.
        static void check_profile_of(const cuda_kernel& kernel, const std::shared_ptr<cuda_kernel>& measured);
        // Throws argument_type_error: lines(profile=...) was given a `type` that is not a LaunchProfile.
        [[noreturn]] static void not_a_profile(const std::string& type);

        // ResourceUsage's and Occupancy's repr.
        static std::string resource_text(const resource_usage& usage);
        static std::string occupancy_text(const occupancy_report& report);
    };
}
