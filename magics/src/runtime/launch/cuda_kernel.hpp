#pragma once
// One __global__ function of a compiled module, with its launch plan (its parameter layout).
//
// Ownership: holds its module (std::shared_ptr), so it stays launchable while referenced even after
// its cell was re-run. The CUfunction and its limits are looked up per device at the first launch
// there, and again after that device's context changes generation.
//
// Threading: launch(), node_params(), function() and the limits may be called from several threads at
// once (a mutex guards the per-device entries; the plan is immutable and replaced, never changed, when
// the driver tells a size the declaration left unknown: every plan made stays alive with the kernel).
// The argument values of a launch are the caller's (launch_call), never the kernel's.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <cuda.h>

#include "cuda_module.hpp"
#include "launch_history.hpp"
#include "launch_plan.hpp"
#include "resource_usage.hpp"

namespace xcuda
{
    class argument_block;

    // How a launch hands its argument values to the driver: one pointer per parameter (kernelParams, what
    // the C++ loop, CuPy and cuda.core do) or the whole block as one buffer laid out as the compiled kernel
    // lays out its parameters (CU_LAUNCH_PARAM_BUFFER_POINTER; a kernel whose layout the driver cannot
    // tell, or a cooperative launch, still passes pointers). The same values arrive either way;
    // tests/bench/bench_gpu.py measures both in one process. Process-wide: XCUDA_LAUNCH_ARGUMENTS at start,
    // xcuda.launch_options(arguments=...) later; a launch reads it once, so threads may change it at any time.
    enum class argument_passing : int
    {
        pointers,
        buffer
    };

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
        // The plan a launch lays its block out by: the packed one when arguments pass as one buffer and the
        // driver told the kernel's layout, else the current plan. A reference stays valid as long as the kernel.
        const launch_plan& plan() const noexcept
        {
            if (passing() == argument_passing::buffer)
            {
                if (const launch_plan* packed = m_packed.load(std::memory_order_acquire))
                {
                    return *packed;
                }
            }
            return *m_plan.load(std::memory_order_acquire);
        }

        // The process-wide way of passing arguments (argument_passing).
        static argument_passing passing() noexcept { return s_passing.load(std::memory_order_relaxed); }
        static void set_passing(argument_passing mode) noexcept;
        // "pointers" or "buffer"; parse_passing raises usage_error naming both for anything else.
        static const char* passing_name(argument_passing mode) noexcept;
        static argument_passing parse_passing(const std::string& text);
        // Raises usage_error when XCUDA_LAUNCH_ARGUMENTS held neither name at start and no call has set the
        // way since (every first launch of a kernel says so; nothing else refuses).
        static void check_passing_setting();
        // Raises argument_type_error saying how to instantiate it when the kernel is a template, and
        // naming the parameter and why when the reader refused a parameter's type (kernel_parameter::refusal).
        void refuse_if_template() const;
        // The plan a new launch lays its argument block out by (plan()), the function prepared first when
        // the plan still waits for the driver: a by-value parameter's size unknown, or arguments passing as
        // one buffer and the kernel's layout not known yet (the driver tells both at the first load). Not
        // prepared when no session is active there, or when preparing fails (the launch then says why).
        const launch_plan& plan_for_launch()
        {
            const launch_plan* current = m_plan.load(std::memory_order_acquire);
            if (passing() == argument_passing::buffer)
            {
                if (const launch_plan* packed = m_packed.load(std::memory_order_acquire))
                {
                    return *packed;
                }
                prepare_if_possible();
                return plan();
            }
            if (current->has_unknown_sizes())
            {
                prepare_if_possible();
                return plan();
            }
            return *current;
        }
        // Prepares the function on the current device when a session is active there (the plan then has
        // the driver's sizes and layout); does nothing otherwise, or when preparing fails.
        void prepare_if_possible() noexcept;

        // Loads the module on the current device if needed and returns the function; first use per
        // device and generation also reads its limits and checks parameter sizes (cuFuncGetParamInfo).
        CUfunction function();

        // Validates dims against the device and this function, then cuLaunchKernel on stream with the
        // arguments: the block whole when its plan is packed, else its pointers. A launch the simulator
        // failed names the cell's line (the module's cell_lines), and carries it as an editor mark.
        // `validated`, when given, is the caller's memo for one unchanging dims (a Launcher's): the device
        // entry dims were last validated against; validation is skipped while the launch finds that entry.
        void launch(const launch_dims& dims, CUstream stream, const argument_block& arguments,
                    std::atomic<const void*>* validated = nullptr);
        // What a CUDA graph's kernel node needs to launch it as launch() would: the function on the
        // current device, dims checked against the device and the function, and the arguments (the
        // driver copies the values when it is given them).
        CUDA_KERNEL_NODE_PARAMS node_params(const launch_dims& dims, void** arguments);

        // Thread-block clusters (launch_attributes): how many clusters of dims.cluster (or the kernel's
        // __cluster_dims__) with dims' block and shared memory fit on the current device at once.
        int max_active_clusters(const launch_dims& dims);

        int max_threads_per_block();
        int registers();

        // Cooperative launches (cuLaunchCooperativeKernel, which a grid-wide cooperative_groups sync needs):
        // automatic when the kernel's PTX reads the grid workspace (%envreg1/%envreg2, what
        // this_grid().sync() compiles to), or forced on/off. `cooperative()` is what a launch does.
        bool uses_grid_sync() const noexcept { return m_grid_sync; }
        // -1: automatic, 0: never, 1: always.
        int cooperative_setting() const noexcept { return m_cooperative.load(std::memory_order_relaxed); }
        void set_cooperative(int setting) { m_cooperative.store(setting, std::memory_order_relaxed); }
        bool cooperative() const noexcept
        {
            int setting = cooperative_setting();
            return setting == 1 || (setting == -1 && m_grid_sync);
        }
        // The most blocks of `threads` threads with `shared` bytes of dynamic shared memory that can be
        // resident at once on the current device (cuOccupancyMaxActiveBlocksPerMultiprocessor x SMs).
        long long max_cooperative_blocks(unsigned threads, unsigned shared);

        // cuFuncSetAttribute by name (function_attribute::named): remembered by the kernel and applied on
        // every device it is prepared on, now and after a reload; applied at once on the current device
        // when a session is active there (a value the driver refuses is then refused here, and forgotten).
        // max_dynamic_shared_size_bytes is checked against the device's opt-in maximum first.
        void set_attribute(const std::string& name, int value);
        // cuFuncGetAttribute by name on the current device (loads the module; needs a GPU).
        int get_attribute(const std::string& name);
        // The attributes set_attribute was given, in the order given (the latest value of each).
        std::vector<std::pair<std::string, int>> attributes_set() const;

        // From the driver when a GPU is present, else from ptxas' report of the inspection compile.
        resource_usage resources();
        // Always from ptxas' report (compiling for sm_XX if needed); no GPU needed.
        resource_usage ptxas_resources();
        // Through the driver's occupancy API (needs a GPU).
        occupancy_report occupancy(int block, int dynamic_shared);

    private:
        // launch() without its report's relocation: inlined into launch() (cuda_kernel.cpp), its only caller,
        // since a call's prologue is a tenth of the launch path's own instructions.
        [[gnu::always_inline]] inline void launch_unlocated(const launch_dims& dims, CUstream stream,
                                                            const argument_block& arguments,
                                                            std::atomic<const void*>* validated);

        struct per_device
        {
            int ordinal = -1;
            CUfunction function = nullptr;
            std::uint64_t generation = 0;
            int max_threads = 0;
            int max_dynamic_shared = 0;
            int static_shared = 0;
            int registers = 0;
        };
        // A launch asking for more dynamic shared memory than the function allows now: raises the
        // function's limit (cuFuncSetAttribute) up to the device's opt-in maximum less its static shared
        // memory, and returns the entry with the new limit; beyond that, argument_value_error naming both.
        per_device with_dynamic_shared(const per_device& entry, unsigned bytes);
        void check_dynamic_shared_limit(long long bytes, int static_shared) const;
        // launch() of dims with launch attributes (cluster, priority, programmatic): cuLaunchKernelEx.
        void launch_with_attributes(CUfunction function, const launch_dims& dims, CUstream stream,
                                    const argument_block& arguments);
        // The current device's entry, prepared (function looked up, limits read) if needed: a copy,
        // since another thread may add devices meanwhile.
        per_device prepared();
        // The same entry as published (immutable, kept as long as the kernel): the launch path's, uncopied.
        const per_device& prepared_entry()
        {
            cuda_session& session = m_module->session();
            int ordinal = session.device_ordinal();
            std::uint64_t generation = session.generation();
            const per_device* last = m_last.load(std::memory_order_acquire);
            if (last && last->ordinal == std::max(0, ordinal) && last->generation == generation && generation != 0)
            {
                return *last;  // the hot path: the device of the previous launch, its context unchanged
            }
            return prepare_entry();
        }
        // prepared_entry() when the previous launch's entry is not this device's (or there was none).
        const per_device& prepare_entry();
        // Makes entry the one the hot path finds (m_mutex held), and returns the published copy.
        const per_device& publish(const per_device& entry);
        // The driver's parameter sizes checked against the plan; a plan with sizes it lacked swapped in, and
        // the packed plan made from the driver's offsets (m_mutex held).
        void check_parameter_sizes(CUfunction function);

        std::shared_ptr<cuda_module> m_module;
        kernel_signature m_signature;
        launch_name m_launch_name;  // m_signature.name as the session's launch history keeps it
        bool m_refused = false;  // a template, or a parameter xcuda will not pass (refuse_if_template says which)
        std::string m_symbol;
        std::vector<std::unique_ptr<const launch_plan>> m_plans;  // every plan made (m_mutex)
        std::atomic<const launch_plan*> m_plan{nullptr};          // the newest of them
        std::atomic<const launch_plan*> m_packed{nullptr};        // laid out as the driver said, once it has
        static argument_passing initial_passing() noexcept;       // XCUDA_LAUNCH_ARGUMENTS, or pointers
        inline static std::atomic<argument_passing> s_passing{initial_passing()};
        mutable std::mutex m_mutex;
        std::vector<per_device> m_devices;  // indexed by device ordinal (m_mutex)
        // set_attribute's requests, applied at every prepare (m_mutex).
        std::vector<std::pair<CUfunction_attribute, int>> m_attributes;
        // The launch path's way to the entry of the device it launched on last, without the mutex: an
        // entry once published is never changed (a new one is made, and every one made is kept).
        std::vector<std::unique_ptr<const per_device>> m_published;  // (m_mutex)
        std::atomic<const per_device*> m_last{nullptr};
        bool m_grid_sync = false;
        std::atomic<int> m_cooperative{-1};
        // Refuses a cooperative grid larger than can be resident at once, naming the maximum.
        void check_cooperative_grid(const per_device& entry, const launch_dims& dims);
    };
}
