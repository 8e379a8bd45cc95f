#pragma once
// The attributes of a kernel that code sets with cudaFuncSetAttribute / cuFuncSetAttribute, by name:
// what kernel.set_attribute(name, value) accepts (docs/launching.md, "Function attributes").
//
// A name is matched without regard to case or underscores, with or without the driver's
// CU_FUNC_ATTRIBUTE_ or the runtime's cudaFuncAttribute prefix, so "preferred_shared_memory_carveout",
// "PreferredSharedMemoryCarveout" and "cudaFuncAttributePreferredSharedMemoryCarveout" are one attribute,
// and the runtime's "MaxDynamicSharedMemorySize" is the driver's MAX_DYNAMIC_SHARED_SIZE_BYTES.
// Stateless; any thread.

#include <string>
#include <vector>

#include <cuda.h>

namespace xcuda
{
    struct function_attribute
    {
        const char* name;  // the documented spelling (snake_case of the driver's enum)
        CUfunction_attribute value;
        bool settable;     // false: read-only (kernel.get_attribute only)

        // The attribute a name means; throws argument_value_error listing the known names (the settable
        // ones when `to_set`) when it means none, or when it is read-only and `to_set`.
        static const function_attribute& named(const std::string& name, bool to_set);
        // Every attribute, in the driver's order.
        static const std::vector<function_attribute>& all();
    };
}
