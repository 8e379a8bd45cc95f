#include "module_report.hpp"

#include <algorithm>
#include <cstdio>

#include "errors.hpp"

namespace xcuda
{
    std::string module_report::target_text(const cuda_module& module)
    {
        return module.compiled().arch + (module.compiled().cubin.empty() ? " PTX" : "");
    }

    std::vector<std::string> module_report::kernel_names(const cuda_module& module)
    {
        std::vector<std::string> names;
        for (const auto& signature : module.signatures())
        {
            if (std::find(names.begin(), names.end(), signature.name) == names.end())
            {
                names.push_back(signature.name);
            }
        }
        return names;
    }

    std::string module_report::module_text(const cuda_module& module)
    {
        std::string names;
        for (const std::string& name : kernel_names(module))
        {
            names += (names.empty() ? "" : ", ") + name;
        }
        return "<xcuda.Module " + module.name() + " [" + target_text(module) + "]: " + names + ">";
    }

    std::string module_report::kernel_text(const cuda_kernel& kernel)
    {
        return "<xcuda.Kernel " + kernel.signature().to_string() + " [" + target_text(*kernel.module()) + "]>";
    }

    std::vector<std::pair<std::string, resource_usage>> module_report::ptxas_resources(const cuda_module& module)
    {
        std::vector<std::pair<std::string, resource_usage>> result;
        auto reported = resource_usage::parse_ptxas_log(module.compiled().log);
        for (const auto& signature : module.signatures())
        {
            auto it = reported.find(module.symbol_for(signature));
            if (it != reported.end())
            {
                resource_usage usage = it->second;
                usage.arch = module.compiled().arch;
                result.emplace_back(signature.name, std::move(usage));
            }
        }
        return result;
    }

    std::string module_report::missing_kernel(cuda_module& module, const std::string& name)
    {
        std::string listed;
        for (const std::string& known : kernel_names(module))
        {
            listed += (listed.empty() ? "'" : ", '") + known + "'";
        }
        return "module '" + module.name() + "' has no kernel '" + name + "'; it has: [" + listed + "]" +
               variable_hint(module, name);
    }

    std::string module_report::missing_attribute(cuda_module& module, const std::string& name)
    {
        return "module '" + module.name() + "' has no kernel '" + name + "'" + variable_hint(module, name);
    }

    std::string module_report::variable_hint(cuda_module& module, const std::string& name)
    {
        if (name.rfind("__", 0) == 0)
        {
            return "";  // Python's own probes (__array_interface__, ...)
        }
        try
        {
            if (const module_variable* v = module.variable(name))
            {
                return "; '" + name + "' is a " + v->space + " variable: module.get_global('" + name +
                       "') or module.globals." + v->name + " reads and writes it";
            }
        }
        catch (const std::exception&)
        {
            // a source the variable reader refuses: no hint
        }
        return "";
    }

    std::string module_report::stale_warning(const cuda_kernel& kernel)
    {
        return "kernel '" + kernel.signature().name + "' was compiled with an older " +
               kernel.module()->stale_because() + "; run its %%cuda cell again to use the new header";
    }

    std::string module_report::needs_configuration(const cuda_kernel& kernel)
    {
        const std::string& name = kernel.signature().name;
        return "a kernel needs a launch configuration: " + name + "[grid, block](...), or " + name +
               ".forall(n)(...) to cover n elements";
    }

    void module_report::check_profile_of(const cuda_kernel& kernel, const std::shared_ptr<cuda_kernel>& measured)
    {
        if (measured.get() != &kernel)
        {
            throw usage_error("this profile is of " +
                              (measured ? "kernel '" + measured->signature().name + "' (" + measured->module()->name() + ")"
                                        : std::string("recorded ncu output")) +
                              ", not of this kernel as compiled now; profile it again");
        }
    }

    void module_report::not_a_profile(const std::string& type)
    {
        throw argument_type_error("lines(profile=...) takes an xcuda.LaunchProfile (from %cuda_profile -o or "
                                  "kernel.profile), got " + type);
    }

    std::string module_report::resource_text(const resource_usage& usage)
    {
        return usage.summary() + " [" + usage.arch + ", " + usage.source + "]";
    }

    std::string module_report::occupancy_text(const occupancy_report& o)
    {
        char text[320];
        std::snprintf(text, sizeof text,
                      "block %d: %d blocks (%d of %d warps) per SM, occupancy %.0f%%, limited by %s; suggested block %d",
                      o.block, o.active_blocks_per_sm, o.active_warps_per_sm, o.max_warps_per_sm, o.occupancy * 100,
                      o.limiter.c_str(), o.suggested_block);
        return text;
    }
}
