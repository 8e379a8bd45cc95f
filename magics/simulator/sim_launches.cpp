// libxcuda-sim.so's launches: cuLaunchKernel runs the grid at once (block_executor, its blocks on
// XCUDA_SIM_THREADS host threads) and returns when it is done, or recorded on a capturing stream
// (sim_graphs.cpp).
//
// Watched: with a watch set (xcuda_sim_set_watch: xcuda's driver layer sets one, and its session answers
// with progress and the interrupt check), the grid runs on a thread of its own while the launching thread
// calls the watch about every 20 ms with the blocks done so far; a watch that answers non-zero (an
// interrupt) sets the launch's cancel flag, which the grid looks at between blocks and every few thousand
// warp-instructions inside one, so even a kernel that never ends stops within milliseconds. The launch then
// returns CUDA_ERROR_TIMEOUT, which xcuda raises as KeyboardInterrupt; device memory keeps what the blocks that
// ran wrote, and nothing else is lost. No step limit unless XCUDA_SIM_MAX_STEPS sets one (for tests): a long
// loop is not an endless one, and the interrupt is the way out of both.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <system_error>

#include "block_executor.hpp"
#include "sim_driver_state.hpp"
#include "xcuda_sim_shared.hpp"

using namespace xcuda_sim;

namespace
{
    // The launch watch: (context, kernel, blocks done, blocks, seconds since the start, finished). Called
    // on the launching thread without g_mutex; non-zero stops the launch.
    using watch_function = int (*)(void*, const char*, unsigned long long, unsigned long long, double, int);
    watch_function g_watch = nullptr;
    void* g_watch_context = nullptr;

    // XCUDA_SIM_THREADS: host threads that run a launch's blocks (default: the machine's cores).
    unsigned sim_threads()
    {
        const char* text = std::getenv("XCUDA_SIM_THREADS");
        unsigned long n = text && *text ? std::strtoul(text, nullptr, 10) : std::thread::hardware_concurrency();
        return static_cast<unsigned>(std::max(1ul, std::min(n, 256ul)));
    }

    struct grid_result
    {
        bool failed = false;
        sim_error::kind kind = sim_error::kind::launch_failed;
        std::string message;
    };

    grid_result run_grid(launch_context& launch)
    {
        grid_result result;
        try
        {
            block_executor executor(launch);
            executor.run_grid();
        }
        catch (const sim_error& e)
        {
            result = {true, e.what_kind(), e.what()};
        }
        catch (const std::exception& e)  // std::bad_alloc from a block's memory: the grid's thread must not throw
        {
            result = {true, sim_error::kind::launch_failed, std::string("the simulator failed: ") + e.what()};
        }
        return result;
    }

    // The grid on a thread of its own while this thread calls the watch. This thread lets go of g_mutex (held
    // once, by cuLaunchKernel's or cuGraphLaunch's `lock`) while it waits and while the watch runs: the watch
    // may wait for the GIL, which a thread that waits for the grid may hold. Other threads' `lock` waits while
    // g_grid_owner is this thread; the grid's thread clears it when the grid ends, so they go on even while
    // this thread still waits for the GIL.
    grid_result run_watched(launch_context& launch, unsigned long long blocks, std::atomic<std::uint64_t>& done,
                            std::atomic<bool>& cancel)
    {
        bool finished = false;  // g_mutex
        grid_result result;
        std::thread runner;
        try
        {
            runner = std::thread([&] {
                grid_result r = run_grid(launch);
                std::lock_guard<std::recursive_mutex> held(g_mutex);
                result = std::move(r);
                finished = true;
                g_grid_owner = std::thread::id();
                g_grid_ended.notify_all();
            });
        }
        catch (const std::system_error&)
        {
            return run_grid(launch);  // no thread to be had: unwatched, on this one
        }
        g_grid_owner = std::this_thread::get_id();  // before the grid's thread can take g_mutex to clear it
        const auto start = std::chrono::steady_clock::now();
        auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
        bool watched = false;
        while (!g_grid_ended.wait_for(g_mutex, std::chrono::milliseconds(20), [&] { return finished; }))
        {
            if (cancel.load())
            {
                continue;  // stopping: the grid ends within milliseconds
            }
            watched = true;
            g_mutex.unlock();
            int stop = g_watch(g_watch_context, launch.kernel.c_str(), done.load(), blocks, seconds(), 0);
            g_mutex.lock();
            if (stop)
            {
                cancel.store(true);
            }
        }
        runner.join();
        if (watched)
        {
            g_mutex.unlock();
            g_watch(g_watch_context, launch.kernel.c_str(), done.load(), blocks, seconds(), 1);
            g_mutex.lock();
        }
        return result;
    }

    std::string count_text(unsigned long long n, const char* what)
    {
        return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
    }
}

// Sets the launch watch (null: none). Called by xcuda's driver layer when it opens the simulator.
extern "C" void xcuda_sim_set_watch(watch_function watch, void* context)
{
    lock held(g_mutex);
    g_watch = watch;
    g_watch_context = context;
}

namespace xcuda_sim
{
    std::uint64_t step_limit()
    {
        const char* text = std::getenv("XCUDA_SIM_MAX_STEPS");
        return text && *text ? std::strtoull(text, nullptr, 10) : 0;
    }

    CUresult pack_parameters(const function& f, void** params, void** extra, std::vector<std::uint8_t>& packed)
    {
        const ptx_program& program = f.owner->program;
        const ptx_function& entry = program.functions[static_cast<std::size_t>(f.index)];
        packed.assign(std::max<std::size_t>(entry.param_bytes, 1), 0);
        if (params)
        {
            for (std::size_t i = 0; i < entry.params.size(); ++i)
            {
                const ptx_symbol& p = program.symbols[static_cast<std::size_t>(entry.params[i])];
                std::memcpy(packed.data() + p.offset, params[i], p.size);
            }
            return CUDA_SUCCESS;
        }
        if (extra)
        {
            void* buffer = nullptr;
            std::size_t bytes = 0;
            for (std::size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2)
            {
                if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                {
                    buffer = extra[i + 1];
                }
                else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                {
                    bytes = *static_cast<std::size_t*>(extra[i + 1]);
                }
            }
            // The driver takes a buffer of exactly the kernel's parameter bytes, laid out as the kernel
            // lays them out (cuFuncGetParamInfo's offsets).
            if (!buffer || bytes != entry.param_bytes)
            {
                return failed(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel of " + entry.name + " with a parameter buffer of " +
                                                            std::to_string(buffer ? bytes : 0) + " bytes; its parameters are " +
                                                            std::to_string(entry.param_bytes) + " bytes");
            }
            std::memcpy(packed.data(), buffer, bytes);
            return CUDA_SUCCESS;
        }
        if (!entry.params.empty())
        {
            return failed(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel of " + entry.name + " without its parameters");
        }
        return CUDA_SUCCESS;
    }

    CUresult run_launch(const kernel_launch& k)
    {
        const ptx_program& program = k.f->owner->program;
        const ptx_function& entry = program.functions[static_cast<std::size_t>(k.f->index)];
        launch_context launch;
        launch.program = &program;
        launch.entry = k.f->index;
        launch.kernel = entry.name;
        launch.params = k.params.data();
        launch.param_bytes = entry.param_bytes;
        std::copy(k.grid, k.grid + 3, launch.grid);
        std::copy(k.block, k.block + 3, launch.block);
        launch.dynamic_shared = k.shared;
        std::copy(k.cluster, k.cluster + 3, launch.cluster);
        launch.explicit_cluster = k.explicit_cluster;
        launch.memory = &g_memory;
        launch.heap = &g_heap;
        launch.textures = &xcuda_sim::textures();
        // A cooperative grid's workspace: the counter its grid-wide syncs share, known to the memory while it runs.
        std::vector<std::uint64_t> workspace(8, 0);
        struct forget_workspace
        {
            std::uintptr_t at;
            ~forget_workspace()
            {
                if (at)
                {
                    g_memory.remove(at);
                }
            }
        } forget{k.cooperative ? reinterpret_cast<std::uintptr_t>(workspace.data()) : 0};
        if (k.cooperative)
        {
            launch.cooperative = true;
            launch.grid_workspace = reinterpret_cast<std::uintptr_t>(workspace.data());
            g_memory.add(launch.grid_workspace, workspace.size() * 8, "cooperative grid workspace");
        }
        launch.step_limit = step_limit();
        launch.printf_output = &g_printf;
        const char* racecheck = std::getenv("XCUDA_SIM_RACECHECK");
        launch.race_check = !(racecheck && std::strcmp(racecheck, "0") == 0);
        launch.threads = sim_threads();
        const char* strict = std::getenv("XCUDA_SIM_STRICT_BARRIERS");
        launch.strict_barriers = strict && std::strcmp(strict, "1") == 0;
        launch_warnings warnings;
        launch.warnings = &warnings;
        if (g_trace_armed)
        {
            launch.trace = &g_trace;  // this launch only
            g_trace_armed = false;
        }
        std::atomic<std::uint64_t> done{0};
        std::atomic<bool> cancel{false};  // this launch's: set by its watch
        launch.cancel = &cancel;
        launch.blocks_progress = &done;
        const unsigned long long blocks = static_cast<unsigned long long>(k.grid[0]) * k.grid[1] * k.grid[2];
        ++g_launches;
        grid_result result = g_watch ? run_watched(launch, blocks, done, cancel) : run_grid(launch);
        g_thread_instructions += launch.thread_instructions;
        warn_once(warnings);
        if (!result.failed)
        {
            return CUDA_SUCCESS;
        }
        if (result.kind == sim_error::kind::launch_failed && launch.warp_steps == 0)
        {
            return failed(CUDA_ERROR_INVALID_VALUE, result.message);  // the launch configuration: nothing ran
        }
        if (result.kind == sim_error::kind::interrupted)
        {
            return failed(CUDA_ERROR_TIMEOUT,
                          "the launch of kernel '" + entry.name + "' on the PTX simulator was stopped by an interrupt after " +
                              std::to_string(done.load()) + " of " + count_text(blocks, "block") + " (" + result.message +
                              "). The blocks that ran have written device memory; device arrays, modules and the "
                              "session are kept, and the next launch runs.");
        }
        // A fault, barrier divergence, a race or the simulator's limit: the launch itself returns it (the
        // grid has run, synchronously), and nothing is left broken; the next call works.
        return failed(code_for(result.kind), result.message);
    }
}

namespace xcuda_sim
{
    // The launch's cluster: the attribute's, else the kernel's __cluster_dims__ (.reqnctapercluster); both: they agree.
    CUresult launch_or_capture(CUfunction handle, const unsigned grid[3], const unsigned block[3], unsigned shared,
                               CUstream stream, void** params, void** extra, bool cooperative, const unsigned* cluster)
    {
        kernel_launch launch;
        launch.f = reinterpret_cast<function*>(handle);
        const ptx_function& entry = launch.f->owner->program.functions[static_cast<std::size_t>(launch.f->index)];
        const unsigned* compiled = entry.cluster_dims;
        auto text = [](const unsigned* c) {
            return "(" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]) + ")";
        };
        if (cluster && compiled[0] && !std::equal(compiled, compiled + 3, cluster))
        {
            return failed(CUDA_ERROR_INVALID_CLUSTER_SIZE, "cuLaunchKernelEx of " + entry.name + " with cluster=" +
                                                               text(cluster) + ": it is compiled with __cluster_dims__" +
                                                               text(compiled));
        }
        const unsigned* dims = cluster ? cluster : compiled[0] ? compiled : nullptr;
        if (dims)
        {
            if (CUresult checked = check_cluster(handle, grid, dims, "the launch"); checked != CUDA_SUCCESS)
            {
                return checked;
            }
            if (cooperative && dims[0] * dims[1] * dims[2] > 1)
            {
                return failed(CUDA_ERROR_NOT_SUPPORTED, "a cooperative launch of " + entry.name + " in clusters of " +
                                                            text(dims) + " blocks: the PTX simulator does not run the two "
                                                                         "together (launch it without one of them)");
            }
            std::copy(dims, dims + 3, launch.cluster);
            launch.explicit_cluster = true;
        }
        if (CUresult packed = pack_parameters(*launch.f, params, extra, launch.params); packed != CUDA_SUCCESS)
        {
            return packed;
        }
        std::copy(grid, grid + 3, launch.grid);
        std::copy(block, block + 3, launch.block);
        launch.shared = shared;
        launch.cooperative = cooperative;
        if (capturing(stream))
        {
            capture_launch(stream, std::move(launch));
            return CUDA_SUCCESS;
        }
        return run_launch(launch);
    }
}

// A cooperative launch runs every block at once (a grid-wide sync waits for all of them), so its grid may hold
// only the blocks a device of the simulator's size holds at once: the occupancy answer
// (cuOccupancyMaxActiveBlocksPerMultiprocessor) times its one multiprocessor.
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction handle, unsigned int gx, unsigned int gy, unsigned int gz,
                                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                           CUstream stream, void** params)
{
    lock held(g_mutex);
    const unsigned threads = bx * by * bz;
    const unsigned long long blocks = static_cast<unsigned long long>(gx) * gy * gz;
    const unsigned long long most = threads ? std::max(1u, std::min(32u, 2048 / threads)) : 0;
    if (blocks > most)
    {
        const auto* f = reinterpret_cast<function*>(handle);
        const ptx_function& entry = f->owner->program.functions[static_cast<std::size_t>(f->index)];
        return failed(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                      "cuLaunchCooperativeKernel of " + entry.name + " with " + std::to_string(blocks) + " blocks of " +
                          std::to_string(threads) + " threads: the simulated device holds " + std::to_string(most) +
                          " such blocks at once, and a grid-wide sync needs every block resident");
    }
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    return launch_or_capture(handle, grid, block, shared, stream, params, nullptr, true, nullptr);
}
CUresult CUDAAPI cuLaunchKernel(CUfunction handle, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params,
                                void** extra)
{
    lock held(g_mutex);
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    return launch_or_capture(handle, grid, block, shared, stream, params, extra, false, nullptr);
}
