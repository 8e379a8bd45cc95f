// A stand-in for libcuda.so.1 on machines without a GPU: a test double of the driver API, so that the
// host-side logic of xcuda's transfers and CUDA graphs runs in CPU tests (tests/runtime/test_graphs_transfers.py,
// test_launch_features.py, test_concurrent_launches.py, which point XCUDA_LIBCUDA at this library in a child
// process, and the C++ tests of the launch path). Not a GPU emulator.
//
// What it models, and nothing more:
//   - one device (sm_90) with its primary context; device memory is host memory (so copies are memcpy);
//   - page-locked memory: cuMemAllocHost'd and cuMemHostRegister'ed ranges report
//     CU_MEMORYTYPE_HOST; registering a range that overlaps a registered one fails as the driver does;
//     unregistering checks that the pages are still mapped: memory freed while registered (the bug a
//     registration cache must never have) counts as a violation (xcuda_fake_counter("violations"));
//   - device memory: allocations are counted, and XCUDA_FAKE_DEVICE_MB caps them (out of memory beyond);
//   - the driver version: cuDriverGetVersion reports XCUDA_FAKE_DRIVER_VERSION (12040 for 12.4; unset: 13000);
//   - module variables: cuModuleGetGlobal finds a module's __constant__/__device__ variables in its image
//     (the CUBIN's symbol table, or the PTX) and gives each zeroed memory of its size;
//   - kernels: a few known names run a host implementation (saxpy, chain_step, fill, many); any other
//     launches and does nothing. Work runs at once: streams have no asynchrony to observe;
//   - stream capture: work on a capturing stream is recorded as graph nodes instead of run; replays run
//     the nodes in order; kernel nodes take new parameters; synchronizing a capturing stream or the
//     context fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, as on a GPU.
//   - waits: xcuda_fake_set_busy(1) makes stream and event queries answer CUDA_ERROR_NOT_READY (work
//     that never ends, for the interrupt tests of session_waits) until xcuda_fake_set_busy(0);
//     xcuda_fake_print_at_sync(text) has the next synchronising call write text to stdout, as the driver
//     prints device printf output there.
// Every entry point has the versioned name the headers map it to (cuMemAlloc -> cuMemAlloc_v2). Besides
// xcuda's table, the few calls tests/bench/launch_baseline.cpp adds, so that its transfers and graphs
// modes can be checked here too (LD_LIBRARY_PATH at a folder with libcuda.so.1 -> this library).
//
// The library's sources, one for each part of the driver API it fakes (each opens with a paragraph on its part):
//   fake_state.hpp/.cpp  the state they share: the lock, the counters, the known ranges of memory, streams
//                        with their capture state, what the waits answer;
//   fake_device.cpp      initialisation, the device, its context, the driver version, error names, counters;
//   fake_memory.cpp      device memory, page-locked and registered host memory, copies, memsets, pointers;
//   fake_modules.cpp     modules, their variables, functions and their attributes;
//   fake_launches.cpp    the known kernels, launches (cooperative ones too), parameter layouts, occupancy;
//   fake_streams.cpp     streams, synchronising the context, and the waits' controls;
//   fake_events.cpp      events;
//   fake_graphs.cpp      stream capture and graphs;
//   fake_textures.cpp    CUDA arrays, their copies, texture and surface objects.
// What they share lives in namespace xcuda_fake, hidden (visibility): the library exports the driver's entry
// points and the xcuda_fake_* controls only. What one file uses alone stays in its anonymous namespace, under
// a name no other file uses (the unity build compiles them as one translation unit).

#pragma once

#include <cuda.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#pragma GCC visibility push(hidden)  // the fake's own symbols stay inside it
namespace xcuda_fake
{
    extern std::recursive_mutex g_mutex;
    using lock = std::lock_guard<std::recursive_mutex>;

    struct counters
    {
        long registered = 0;       // ranges registered now
        long registrations = 0;    // cuMemHostRegister successes
        long violations = 0;       // memory unmapped while registered; device memory touched outside an allocation
        long launches = 0;         // kernels run (eagerly or in replays)
        long graph_launches = 0;
        long node_updates = 0;
        long staged_copies = 0;    // copies whose host side was cuMemAllocHost'd memory
        long registered_copies = 0;  // copies whose host side was a registered range
        long pageable_copies = 0;  // copies whose host side was neither
        long allocations = 0;      // cuMemAlloc successes
        long device_bytes = 0;     // device memory allocated now
        long attribute_sets = 0;   // cuFuncSetAttribute successes
        long cooperative_launches = 0;  // cuLaunchCooperativeKernel successes
        long buffer_launches = 0;  // cuLaunchKernel given its parameters as one buffer (extra)
    };
    extern counters g_count;

    // The device's opt-in maximum of shared memory per block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    // and what cuOccupancyMaxActiveBlocksPerMultiprocessor answers: with 4 SMs a cooperative grid holds 32 blocks.
    constexpr int k_shared_optin = 232448;
    constexpr int k_blocks_per_sm = 8;
    constexpr int k_multiprocessors = 4;

    enum class kind
    {
        device,
        pinned,
        registered
    };
    struct range
    {
        std::size_t bytes = 0;
        kind what = kind::device;
    };
    extern std::map<std::uintptr_t, range> g_ranges;  // by start

    const range* find_range(const void* pointer, std::uintptr_t* start = nullptr);

    // Whether [pointer, pointer + bytes) lies inside one cuMemAlloc'd range; if not, counted as a violation
    // and named on stderr (fake_state.cpp says why).
    bool device_span_ok(const void* pointer, std::size_t bytes, const char* what);

    // ---- kernels ----
    struct function
    {
        std::string name;
        std::vector<std::size_t> sizes;  // parameter sizes, for the known kernels
        std::map<int, int> attributes;   // what cuFuncSetAttribute set
    };

    // A known kernel's parameter sizes (saxpy, chain_step, fill, many; fake_launches.cpp), {} for any other.
    std::vector<std::size_t> known_sizes(const std::string& name);
    // Runs a known kernel on the host; any other does nothing.
    void run_kernel(const function& f, unsigned threads, const std::vector<std::vector<char>>& params);
    // A launch's parameters, copied by the sizes of a known kernel's parameters.
    std::vector<std::vector<char>> copy_params(const function& f, void** params);
    // The same from cuLaunchKernel's kernelParams, or from its extra (one buffer at the offsets
    // cuFuncGetParamInfo reports, of exactly their end's size); false when extra is malformed or its
    // buffer is not that size (the launch is then CUDA_ERROR_INVALID_VALUE).
    bool launch_params(const function& f, void** params, void** extra, std::vector<std::vector<char>>& out);
    // A known kernel's parameter offsets: each at a multiple of its size, as the PTX lays them out.
    std::vector<std::size_t> param_offsets(const function& f);

    // ---- streams and graphs ----
    struct node
    {
        bool is_kernel = true;
        function* f = nullptr;
        unsigned threads = 0;
        std::vector<std::vector<char>> params;
        void* destination = nullptr;
        const void* source = nullptr;
        std::size_t bytes = 0;
    };
    struct graph
    {
        std::vector<node*> nodes;
        ~graph()
        {
            for (node* n : nodes)
            {
                delete n;
            }
        }
    };
    struct graph_exec
    {
        std::vector<node*> originals;
        std::vector<node> nodes;
    };
    struct stream
    {
        bool capturing = false;
        bool invalidated = false;
        graph* captured = nullptr;
    };
    extern std::vector<stream*> g_streams;

    stream* as_stream(CUstream handle);
    bool capturing(CUstream handle);
    void record(CUstream handle, node* n);

    // ---- textures (fake_textures.cpp) ----
    // Whether `handle` is a live texture object (surface false) or surface object (surface true).
    bool view_live(unsigned long long handle, bool surface);

    // ---- waits ----
    extern bool g_busy;               // stream and event queries answer CUDA_ERROR_NOT_READY (xcuda_fake_set_busy)
    extern std::string g_sync_print;  // written to stdout by the next synchronising call (xcuda_fake_print_at_sync)
    // At a synchronising call, with g_mutex held: what xcuda_fake_print_at_sync asked for, once.
    void print_at_sync();
}
#pragma GCC visibility pop
