#include "function_attribute.hpp"

#include <cctype>

#include "errors.hpp"

namespace xcuda
{
    const std::vector<function_attribute>& function_attribute::all()
    {
        static const std::vector<function_attribute> attributes = {
            {"max_threads_per_block", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, false},
            {"shared_size_bytes", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, false},
            {"const_size_bytes", CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, false},
            {"local_size_bytes", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, false},
            {"num_regs", CU_FUNC_ATTRIBUTE_NUM_REGS, false},
            {"ptx_version", CU_FUNC_ATTRIBUTE_PTX_VERSION, false},
            {"binary_version", CU_FUNC_ATTRIBUTE_BINARY_VERSION, false},
            {"cache_mode_ca", CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, false},
            {"max_dynamic_shared_size_bytes", CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, true},
            {"preferred_shared_memory_carveout", CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, true},
            {"cluster_size_must_be_set", CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, false},
            {"required_cluster_width", CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, true},
            {"required_cluster_height", CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, true},
            {"required_cluster_depth", CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, true},
            {"non_portable_cluster_size_allowed", CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, true},
            {"cluster_scheduling_policy_preference", CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, true},
        };
        return attributes;
    }

    namespace
    {
        // Lower case, no underscores, no CU_FUNC_ATTRIBUTE_ / cudaFuncAttribute prefix.
        std::string folded(const std::string& name)
        {
            std::string out;
            for (char c : name)
            {
                if (c != '_')
                {
                    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                }
            }
            for (const char* prefix : {"cufuncattribute", "cudafuncattribute"})
            {
                std::string p = prefix;
                if (out.compare(0, p.size(), p) == 0)
                {
                    out = out.substr(p.size());
                }
            }
            return out;
        }
    }

    const function_attribute& function_attribute::named(const std::string& name, bool to_set)
    {
        std::string key = folded(name);
        // The CUDA runtime's own spellings where they differ from the driver's.
        if (key == "maxdynamicsharedmemorysize")
        {
            key = "maxdynamicsharedsizebytes";
        }
        for (const function_attribute& attribute : all())
        {
            if (folded(attribute.name) == key)
            {
                if (to_set && !attribute.settable)
                {
                    break;
                }
                return attribute;
            }
        }
        std::string known;
        for (const function_attribute& attribute : all())
        {
            if (attribute.settable || !to_set)
            {
                known += std::string(known.empty() ? "" : ", ") + attribute.name;
            }
        }
        bool read_only = false;
        for (const function_attribute& attribute : all())
        {
            read_only = read_only || (folded(attribute.name) == key && !attribute.settable);
        }
        throw argument_value_error(std::string("function attribute '") + name + "' " +
                                   (read_only ? "is read-only (kernel.get_attribute reads it)"
                                              : "is not one the driver knows") +
                                   "; the ones " + (to_set ? "set_attribute can set" : "there are") + ": " + known);
    }
}
