#include "launch_attributes.hpp"

#include <vector>

#include "argument_block.hpp"
#include "cuda_driver.hpp"
#include "device_properties.hpp"
#include "errors.hpp"

namespace xcuda
{
    namespace
    {
        bool any_cluster(const std::array<unsigned, 3>& cluster) { return cluster[0] != 0; }

        const cuda_driver& driver_with_launch_ex(const std::string& kernel)
        {
            const cuda_driver& driver = cuda_driver::get();
            if (!driver.cuLaunchKernelEx)
            {
                throw cuda_unavailable_error("launch attributes (cluster, priority, programmatic) of kernel '" + kernel +
                                             "' need cuLaunchKernelEx, which this NVIDIA driver lacks (CUDA 12.0 or newer has it)");
            }
            return driver;
        }

        // The attributes of dims as cuLaunchKernelEx takes them; a kernel's own __cluster_dims__ stays its own.
        std::vector<CUlaunchAttribute> attribute_list(const launch_dims& dims, bool cooperative,
                                                      const std::array<unsigned, 3>& required)
        {
            std::vector<CUlaunchAttribute> list;
            if (any_cluster(dims.cluster) && !any_cluster(required))
            {
                CUlaunchAttribute a{};
                a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
                a.value.clusterDim.x = dims.cluster[0];
                a.value.clusterDim.y = dims.cluster[1];
                a.value.clusterDim.z = dims.cluster[2];
                list.push_back(a);
            }
            if (dims.has_priority)
            {
                CUlaunchAttribute a{};
                a.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
                a.value.priority = dims.priority;
                list.push_back(a);
            }
            if (dims.programmatic)
            {
                CUlaunchAttribute a{};
                a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
                a.value.programmaticStreamSerializationAllowed = 1;
                list.push_back(a);
            }
            if (cooperative)
            {
                CUlaunchAttribute a{};
                a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
                a.value.cooperative = 1;
                list.push_back(a);
            }
            return list;
        }

        CUlaunchConfig config_of(const launch_dims& dims, CUstream stream, std::vector<CUlaunchAttribute>& list)
        {
            CUlaunchConfig config{};
            launch_attributes::set_dimensions(config, dims);
            config.hStream = stream;
            config.attrs = list.empty() ? nullptr : list.data();
            config.numAttrs = static_cast<unsigned>(list.size());
            return config;
        }
    }

    std::array<unsigned, 3> launch_attributes::required_cluster(CUfunction function)
    {
        const cuda_driver& driver = cuda_driver::get();
        static const CUfunction_attribute which[3] = {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                                                      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                                                      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH};
        std::array<unsigned, 3> required{0, 0, 0};
        for (int i = 0; i < 3; ++i)
        {
            int value = 0;
            if (driver.cuFuncGetAttribute(&value, which[i], function) != CUDA_SUCCESS || value <= 0)
            {
                return {0, 0, 0};
            }
            required[i] = static_cast<unsigned>(value);
        }
        return required;
    }

    void launch_attributes::check(const launch_dims& dims, const device_properties& device,
                                  const std::array<unsigned, 3>& required, const std::string& kernel)
    {
        bool clustered = any_cluster(dims.cluster) || any_cluster(required);
        if ((clustered || dims.programmatic) && device.cc_major < 9)
        {
            throw argument_value_error(std::string(clustered ? "thread-block clusters" : "programmatic dependent launch") +
                                       " need compute capability 9.0 or newer; " + device.name + " is " +
                                       std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor) +
                                       ": launch kernel '" + kernel + "' without " +
                                       (clustered ? "cluster=" : "programmatic=True"));
        }
        if (any_cluster(dims.cluster) && any_cluster(required) && dims.cluster != required)
        {
            throw argument_value_error("kernel '" + kernel + "' is compiled with __cluster_dims__" + dims_text(required) +
                                       "; a launch with cluster=" + dims_text(dims.cluster) +
                                       " conflicts with it: leave cluster= out or give " + dims_text(required));
        }
        const std::array<unsigned, 3>& cluster = any_cluster(required) ? required : dims.cluster;
        if (!any_cluster(cluster))
        {
            return;
        }
        static const char* axes[3] = {"x", "y", "z"};
        for (int i = 0; i < 3; ++i)
        {
            if (dims.grid[i] % cluster[i] != 0)
            {
                throw argument_value_error("grid " + std::string(axes[i]) + " = " + std::to_string(dims.grid[i]) +
                                           " is not a multiple of the cluster's " + std::to_string(cluster[i]) +
                                           " (cluster " + dims_text(cluster) + " of kernel '" + kernel +
                                           "'): a grid holds whole clusters; round it up to a multiple");
            }
        }
    }

    void launch_attributes::launch(CUfunction function, const launch_dims& dims, CUstream stream, bool cooperative,
                                   const std::array<unsigned, 3>& required, const argument_block& arguments,
                                   const std::string& kernel)
    {
        const cuda_driver& driver = driver_with_launch_ex(kernel);
        std::vector<CUlaunchAttribute> list = attribute_list(dims, cooperative, required);
        CUlaunchConfig config = config_of(dims, stream, list);
        // A packed block goes whole (as cuda_kernel::launch sends it), any other as one pointer per slot.
        std::size_t bytes = arguments.bytes();
        bool whole = arguments.plan().packed() && bytes > 0 && !cooperative;
        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, arguments.data(),
                         CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END};
        xcuda::check(driver.cuLaunchKernelEx(&config, function, whole ? nullptr : arguments.pointers(), whole ? extra : nullptr),
              "cuLaunchKernelEx");
    }

    void launch_attributes::launch(CUfunction function, const launch_dims& dims, CUstream stream, bool cooperative,
                                   void** parameters, const std::string& kernel)
    {
        const cuda_driver& driver = driver_with_launch_ex(kernel);
        std::vector<CUlaunchAttribute> list = attribute_list(dims, cooperative, required_cluster(function));
        CUlaunchConfig config = config_of(dims, stream, list);
        xcuda::check(driver.cuLaunchKernelEx(&config, function, parameters, nullptr), "cuLaunchKernelEx");
    }

    int launch_attributes::max_active_clusters(CUfunction function, const launch_dims& dims,
                                               const std::array<unsigned, 3>& required, const std::string& kernel)
    {
        const cuda_driver& driver = cuda_driver::get();
        if (!driver.cuOccupancyMaxActiveClusters)
        {
            throw cuda_unavailable_error("kernel '" + kernel + "'.max_active_clusters needs cuOccupancyMaxActiveClusters, "
                                         "which this NVIDIA driver lacks (CUDA 12.0 or newer has it)");
        }
        if (!any_cluster(dims.cluster) && !any_cluster(required))
        {
            throw argument_value_error("max_active_clusters of kernel '" + kernel +
                                       "' needs a cluster: give cluster=(x, y, z) (the kernel has no __cluster_dims__)");
        }
        std::vector<CUlaunchAttribute> list = attribute_list(dims, false, required);
        CUlaunchConfig config = config_of(dims, nullptr, list);
        int clusters = 0;
        xcuda::check(driver.cuOccupancyMaxActiveClusters(&clusters, function, &config), "cuOccupancyMaxActiveClusters");
        return clusters;
    }

    std::string launch_attributes::text(const launch_dims& dims)
    {
        std::string text;
        if (any_cluster(dims.cluster))
        {
            text += ", cluster=" + dims_text(dims.cluster);
        }
        if (dims.has_priority)
        {
            text += ", priority=" + std::to_string(dims.priority);
        }
        if (dims.programmatic)
        {
            text += ", programmatic=True";
        }
        return text;
    }
}
