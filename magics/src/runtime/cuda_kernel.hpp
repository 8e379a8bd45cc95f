#pragma once
// One __global__ function of a compiled module, with its launch plan.
//
// Ownership: holds its module (std::shared_ptr), so it stays launchable while referenced even after
// its cell was re-run. The CUfunction and its limits are looked up per device at the first launch
// there, and again after that device's context changes generation. GIL held for all calls.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "cuda_module.hpp"
#include "launch_plan.hpp"
#include "resource_usage.hpp"

namespace xcuda
{
    struct occupancy_report
    {
        int block = 0;
        int dynamic_shared = 0;
        int active_blocks_per_sm = 0;
        int active_warps_per_sm = 0;
        int max_warps_per_sm = 0;
        double occupancy = 0.0;         // active warps / max warps, 0..1
        std::string limiter;            // "threads per SM", "blocks per SM", "registers", "shared memory"
        int suggested_block = 0;        // cuOccupancyMaxPotentialBlockSize
        int suggested_min_grid = 0;     // blocks that fill the device at suggested_block
    };

    class cuda_kernel
    {
    public:
        cuda_kernel(std::shared_ptr<cuda_module> module, kernel_signature signature);

        const kernel_signature& signature() const noexcept { return m_signature; }
        const std::shared_ptr<cuda_module>& module() const noexcept { return m_module; }
        const std::string& symbol() const noexcept { return m_symbol; }
        launch_plan& plan() noexcept { return m_plan; }

        // Loads the module on the current device if needed and returns the function; first use per
        // device and generation also reads its limits and checks parameter sizes (cuFuncGetParamInfo).
        CUfunction function();

        // Validates dims against the device and this function, then cuLaunchKernel with the plan's
        // current argument block on stream.
        void launch(const launch_dims& dims, CUstream stream);
        // What a CUDA graph's kernel node needs to launch it as launch() would: the function on the
        // current device, dims checked against the device and the function, and the plan's current
        // argument block (the driver copies the values when it is given them).
        CUDA_KERNEL_NODE_PARAMS node_params(const launch_dims& dims);
        // Launches with the plan's current arguments warmup times, then repeat times between CUDA
        // events (event_timer); the milliseconds of each timed launch. No Python state: release the GIL.
        std::vector<double> time(const launch_dims& dims, CUstream stream, int repeat, int warmup);

        int max_threads_per_block();
        int registers();

        // From the driver when a GPU is present, else from ptxas' report of the inspection compile.
        resource_usage resources();
        // Always from ptxas' report (compiling for sm_XX if needed); no GPU needed.
        resource_usage ptxas_resources();
        // Through the driver's occupancy API (needs a GPU).
        occupancy_report occupancy(int block, int dynamic_shared);

    private:
        struct per_device
        {
            CUfunction function = nullptr;
            std::uint64_t generation = 0;
            int max_threads = 0;
            int max_dynamic_shared = 0;
            int registers = 0;
        };
        // The current device's entry, prepared (function looked up, limits read) if needed.
        per_device& prepared();

        std::shared_ptr<cuda_module> m_module;
        kernel_signature m_signature;
        std::string m_symbol;
        launch_plan m_plan;
        std::vector<per_device> m_devices;  // indexed by device ordinal
    };
}
