#pragma once
// What the parts of libxcuda-sim.so share (docs/simulator.md). The parts:
//   xcuda_sim_driver.cpp   the device, its context, modules and functions, host memory, copies, events, trace;
//   sim_launches.cpp       cuLaunchKernel: the grid on host threads, watched (progress, interrupt) and cancelled;
//   sim_device_memory.cpp  device memory and its size, from what the host can hold;
//   sim_graphs.cpp         streams with their capture state, stream capture and graphs.
// Hidden: the library exports the driver's entry points and the xcuda_sim_* controls only.
//
// Threading: every entry point takes `lock` (one process-wide mutex). A watched launch's grid runs on a host
// thread of its own while the launching thread waits and calls the launch watch, without the mutex (the
// watch may wait for Python's GIL, which a thread waiting for the mutex may hold); every other thread's
// `lock` waits until the grid has ended (g_grid_owner, cleared by the grid's thread), as a GPU's cuMemFree
// waits for the kernels that use the memory.

#include <cuda.h>

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device_heap.hpp"
#include "ptx_program.hpp"
#include "sim_memory.hpp"
#include "warp_interpreter.hpp"

namespace xcuda_sim __attribute__((visibility("hidden")))
{
    using namespace xcuda::sim;

    extern std::recursive_mutex g_mutex;
    extern std::condition_variable_any g_grid_ended;
    extern std::thread::id g_grid_owner;  // the thread whose launch's grid runs now (g_mutex), else none

    // g_mutex, once no other thread's grid runs.
    class lock
    {
    public:
        explicit lock(std::recursive_mutex& mutex) : m_held(mutex)
        {
            while (g_grid_owner != std::thread::id() && g_grid_owner != std::this_thread::get_id())
            {
                g_grid_ended.wait(m_held);
            }
        }

    private:
        std::unique_lock<std::recursive_mutex> m_held;
    };

    extern sim_memory g_memory;
    extern device_heap g_heap;  // device malloc/free's (xcuda_sim_driver.cpp)

    // Records the description of a failure, which cuGetErrorString returns for its code; returns code.
    CUresult failed(CUresult code, std::string detail);
    // A thread-block cluster against the device's rules (1 to 8 blocks, 16 with the function's non-portable
    // cluster size attribute; a grid, when given, a multiple of it): CUDA_SUCCESS, else
    // CUDA_ERROR_INVALID_CLUSTER_SIZE described, naming `call`.
    CUresult check_cluster(CUfunction handle, const unsigned* grid, const unsigned cluster[3], const std::string& call);
    CUresult code_for(sim_error::kind kind);

    struct free_deleter
    {
        void operator()(std::uint8_t* p) const { std::free(p); }
    };
    struct module;
    struct function
    {
        module* owner = nullptr;
        int index = -1;
    };
    // A loaded module owns its .global/.const variables (aligned_alloc'd, registered in g_memory) and
    // the function handles given out for it; cuModuleUnload frees all of them.
    struct module
    {
        ptx_program program;
        std::vector<std::unique_ptr<std::uint8_t, free_deleter>> variables;
        std::vector<std::unique_ptr<function>> functions;
    };

    // Device printf's text since the last synchronising call, which prints it (print_pending).
    extern std::string g_printf;
    CUresult print_pending();
    // A launch's warnings, each once in the process, into g_printf (printed where the printf text is).
    void warn_once(const launch_warnings& warnings);

    // xcuda.trace: the next launch records one thread.
    extern bool g_trace_armed;
    extern thread_trace g_trace;

    extern std::uint64_t g_launches;
    extern std::uint64_t g_thread_instructions;

    // ---- launches (sim_launches.cpp) ----
    // XCUDA_SIM_MAX_STEPS: warp-instructions per host thread before a launch is stopped; unset or 0: none.
    std::uint64_t step_limit();
    // One launch as cuLaunchKernel or a graph's kernel node gives it: the parameters packed in the entry's layout.
    struct kernel_launch
    {
        const function* f = nullptr;
        unsigned grid[3] = {1, 1, 1};
        unsigned block[3] = {1, 1, 1};
        unsigned shared = 0;
        std::vector<std::uint8_t> params;
        bool cooperative = false;  // cuLaunchCooperativeKernel: every block at once, a grid workspace
        unsigned cluster[3] = {1, 1, 1};  // blocks per cluster (block_executor runs them together)
        bool explicit_cluster = false;    // a launch attribute or __cluster_dims__ named it (%is_explicit_cluster)
    };
    // cuLaunchKernel's kernelParams or extra, packed as the entry lays its parameters out.
    CUresult pack_parameters(const function& f, void** params, void** extra, std::vector<std::uint8_t>& packed);
    // Runs the grid (g_mutex held once, by `lock`); CUDA_ERROR_TIMEOUT when it was interrupted.
    CUresult run_launch(const kernel_launch& launch);
    // cuLaunchKernel, cuLaunchCooperativeKernel and cuLaunchKernelEx (g_mutex held): the launch run now, or recorded
    // on a capturing stream. `cluster`: the launch attribute's blocks per cluster, or nullptr (the kernel's own
    // __cluster_dims__, else none).
    CUresult launch_or_capture(CUfunction handle, const unsigned grid[3], const unsigned block[3], unsigned shared,
                               CUstream stream, void** params, void** extra, bool cooperative, const unsigned* cluster);

    // ---- capture (sim_graphs.cpp) ----
    bool capturing(CUstream stream);
    // On a capturing stream, work is recorded as a node of its graph instead of run.
    void capture_launch(CUstream stream, kernel_launch launch);
    void capture_copy(CUstream stream, void* to, const void* from, std::size_t bytes);
}
