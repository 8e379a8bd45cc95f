#pragma once
// Launch attributes: what a launch says beyond grid, block, stream and shared memory, given through
// kernel.configure(..., cluster=, priority=, programmatic=) and made with cuLaunchKernelEx.
//
// - cluster (x, y, z): the blocks of each cluster of that shape run together on one GPC and share their
//   shared memory (thread-block clusters, compute capability 9.0+). The grid must be a multiple of it on
//   every axis. A kernel compiled with __cluster_dims__ has its cluster already: a launch that asks for
//   another is refused (the driver would refuse it with a bare CUDA_ERROR_INVALID_VALUE), the same one is
//   allowed (and left to the kernel's own attribute).
// - priority: the launch's priority (CU_LAUNCH_ATTRIBUTE_PRIORITY); the driver clamps it to the device's range.
// - programmatic: programmatic dependent launch (PROGRAMMATIC_STREAM_SERIALIZATION, 9.0+): the launch may
//   start before the previous kernel of its stream has finished (cudaGridDependencySynchronize waits).
// A cooperative kernel keeps its cooperative launch (CU_LAUNCH_ATTRIBUTE_COOPERATIVE) when it has attributes.
//
// Why a class of its own: these launches are off the common path (a launch without attributes never reaches
// here), and the checks must run before the driver, whose errors for them name no axis. Stateless.

#include <array>
#include <string>

#include <cuda.h>

#include "launch_plan.hpp"

namespace xcuda
{
    struct device_properties;
    class argument_block;

    class launch_attributes
    {
    public:
        // dims' grid, block and dynamic shared memory into a CUlaunchConfig or CUDA_KERNEL_NODE_PARAMS (the
        // same field names in both).
        template <class T>
        static void set_dimensions(T& target, const launch_dims& dims)
        {
            target.gridDimX = dims.grid[0];
            target.gridDimY = dims.grid[1];
            target.gridDimZ = dims.grid[2];
            target.blockDimX = dims.block[0];
            target.blockDimY = dims.block[1];
            target.blockDimZ = dims.block[2];
            target.sharedMemBytes = dims.shared_mem;
        }

        // The kernel's __cluster_dims__ (CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_*), {0, 0, 0} when it has none or
        // the driver does not say (older drivers and GPUs).
        static std::array<unsigned, 3> required_cluster(CUfunction function);

        // The rules above, against the device and the kernel's required cluster; argument_value_error naming
        // what is wrong and what to do.
        static void check(const launch_dims& dims, const device_properties& device,
                          const std::array<unsigned, 3>& required, const std::string& kernel);

        // cuLaunchKernelEx with dims' attributes (after check); the arguments as cuda_kernel::launch passes
        // them (the packed block whole, else its pointers).
        static void launch(CUfunction function, const launch_dims& dims, CUstream stream, bool cooperative,
                           const std::array<unsigned, 3>& required, const argument_block& arguments,
                           const std::string& kernel);

        // The same with one pointer per parameter: xcuda-replay's launch of a bundle (no argument_block there);
        // the kernel's own __cluster_dims__ is read from the function and stays its own.
        static void launch(CUfunction function, const launch_dims& dims, CUstream stream, bool cooperative,
                           void** parameters, const std::string& kernel);

        // cuOccupancyMaxActiveClusters: how many clusters of dims.cluster (or the kernel's own) with dims'
        // block and shared memory can be resident at once on the current device.
        static int max_active_clusters(CUfunction function, const launch_dims& dims,
                                       const std::array<unsigned, 3>& required, const std::string& kernel);

        // ", cluster=(2, 1, 1), priority=1, programmatic=True" for a Launcher's repr; "" without attributes.
        static std::string text(const launch_dims& dims);
    };
}
