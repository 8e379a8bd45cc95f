#pragma once
// The CUDA driver API, loaded at run time.
//
// libcuda.so.1 is opened with dlopen the first time a GPU operation needs it, never at import or at
// kernel start-up, so the kernel and the compiler work on machines without a driver. Every driver call
// of the project goes through the function table below and through check(), the one error helper that
// turns a CUresult into an exception naming the call, the error name and its description.
//
// A sticky kernel fault (an illegal address, a trap, an assert) reported by any call goes to the
// fault hook that the layer above installs (the CUDA session: it records what was lost and throws
// kernel_fault); this layer knows nothing of sessions. Without a hook it is a plain cuda_error.
//
// Thread safety: get() is safe to call from any thread (a function-local static); the table is
// immutable once loaded. The calls themselves follow the driver's own rules (context current per thread).
// The fault hook is set once, before GPU work starts, and read on error paths only.

#include <functional>
#include <string>

#include <cuda.h>

namespace xcuda
{
// X-macro list: (name as written in code). The headers map several names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2); the loader stringifies the macro-expanded name so the symbol matches.
#define XCUDA_DRIVER_REQUIRED(X)   \
    X(cuInit)                      \
    X(cuDriverGetVersion)          \
    X(cuGetErrorName)              \
    X(cuGetErrorString)            \
    X(cuDeviceGetCount)            \
    X(cuDeviceGet)                 \
    X(cuDeviceGetName)             \
    X(cuDeviceGetAttribute)        \
    X(cuDeviceTotalMem)            \
    X(cuDevicePrimaryCtxRetain)    \
    X(cuDevicePrimaryCtxRelease)   \
    X(cuDeviceCanAccessPeer)       \
    X(cuCtxEnablePeerAccess)       \
    X(cuMemcpyPeerAsync)           \
    X(cuCtxSetCurrent)             \
    X(cuCtxGetCurrent)             \
    X(cuCtxSynchronize)            \
    X(cuMemGetInfo)                \
    X(cuMemAlloc)                  \
    X(cuMemFree)                   \
    X(cuMemAllocHost)              \
    X(cuMemFreeHost)               \
    X(cuMemHostRegister)           \
    X(cuMemHostUnregister)         \
    X(cuMemcpyHtoD)                \
    X(cuMemcpyDtoH)                \
    X(cuMemcpyHtoDAsync)           \
    X(cuMemcpyDtoHAsync)           \
    X(cuMemcpyDtoDAsync)           \
    X(cuMemsetD8Async)             \
    X(cuModuleLoadDataEx)          \
    X(cuModuleUnload)              \
    X(cuModuleGetFunction)         \
    X(cuFuncGetAttribute)          \
    X(cuLaunchKernel)              \
    X(cuStreamCreate)              \
    X(cuStreamDestroy)             \
    X(cuStreamSynchronize)         \
    X(cuStreamQuery)               \
    X(cuStreamWaitEvent)           \
    X(cuEventCreate)               \
    X(cuEventDestroy)              \
    X(cuEventRecord)               \
    X(cuEventSynchronize)          \
    X(cuEventQuery)                \
    X(cuEventElapsedTime)          \
    X(cuPointerGetAttributes)      \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
    X(cuOccupancyMaxPotentialBlockSize)

// Present only in newer drivers; null when missing, and callers check. The graph calls (stream capture,
// instantiation, replay, kernel-node updates) are optional so that a driver without them still runs
// everything else; runtime/cuda_graph says which one is missing. cuFuncSetAttribute, cuModuleGetGlobal and
// cuLaunchCooperativeKernel are in every CUDA 13 driver, but optional so that a test double without them
// still runs the rest; their callers name the missing call.
#define XCUDA_DRIVER_OPTIONAL(X)          \
    X(cuFuncGetParamInfo)                 \
    X(cuFuncSetAttribute)                 \
    X(cuModuleGetGlobal)                  \
    X(cuLaunchCooperativeKernel)          \
    X(cuDeviceGetUuid)                    \
    X(cuStreamBeginCapture)               \
    X(cuStreamEndCapture)                 \
    X(cuStreamIsCapturing)                \
    X(cuStreamGetCaptureInfo)             \
    X(cuGraphInstantiate)                 \
    X(cuGraphLaunch)                      \
    X(cuGraphExecKernelNodeSetParams)     \
    X(cuGraphExecDestroy)                 \
    X(cuGraphDestroy)

    class cuda_driver
    {
    public:
#define XCUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
        XCUDA_DRIVER_REQUIRED(XCUDA_DRIVER_MEMBER)
        XCUDA_DRIVER_OPTIONAL(XCUDA_DRIVER_MEMBER)
#undef XCUDA_DRIVER_MEMBER

        // The loaded, initialised driver; throws cuda_unavailable_error (no library, a stub, no
        // device) or cuda_error. The load and cuInit are attempted once per process.
        static const cuda_driver& get();

        // True when XCUDA_DEVICE=simulator made load() open the PTX simulator (libxcuda-sim.so) instead
        // of libcuda.so.1: modules must then be loaded from PTX (docs/simulator.md).
        bool simulated() const noexcept { return m_simulated; }

        // Switches this process to the PTX simulator (libxcuda-sim.so), as XCUDA_DEVICE=simulator does at
        // start: later calls of get() return its table. "" when done (or already on it), else why not (the
        // library could not be opened). The caller (the runtime) must hold no handle of the driver it
        // replaces: no context, module or memory (cuda_session::forget_devices_if_unused). Serialised.
        static std::string use_simulator();

        // True when get() would succeed; never throws.
        static bool available() noexcept;

        // Why the driver is unavailable ("" when it is available or was never tried).
        static std::string unavailable_reason();

        // Called with the result and the call's name when a call returns a sticky kernel fault; it
        // is expected to throw (a kernel_fault). An empty function removes the hook.
        using fault_hook = std::function<void(CUresult result, const char* call)>;
        // Setting it loads nothing.
        static void set_fault_hook(fault_hook hook);
        static const fault_hook& current_fault_hook();

        // The PTX simulator runs a launch's grid on host threads while the launching thread waits, and calls
        // the launch watch there (GIL released, no lock held) about every 20 ms, and once more when a launch it
        // was called for ends (finished). true stops the launch: it returns CUDA_ERROR_TIMEOUT, which check()
        // raises as interrupted_error. Set once, before launches, like the fault hook; setting it loads nothing.
        struct simulated_launch
        {
            const char* kernel;
            unsigned long long blocks_done;
            unsigned long long blocks;
            double seconds;  // since the launch began
            bool finished;
        };
        using launch_watch = std::function<bool(const simulated_launch&)>;
        static void set_launch_watch(launch_watch watch);

        cuda_driver(const cuda_driver&) = delete;
        cuda_driver& operator=(const cuda_driver&) = delete;

    private:
        friend std::string cuda_error_name(CUresult);
        friend std::string cuda_error_description(CUresult);
        cuda_driver() = default;
        static cuda_driver& instance();
        void load();
        static void connect_launch_watch(void* library);  // the simulator's, to set_launch_watch's

        void* m_library = nullptr;
        bool m_tried = false;
        bool m_simulated = false;
        bool m_force_simulator = false;  // made by use_simulator()
        std::string m_unavailable;
        std::string m_error;  // a cuda_error message from cuInit that was not a "no driver" case
        int m_error_code = 0;
    };

    // The error helper: throws cuda_error naming `call` when result is not CUDA_SUCCESS; a sticky
    // kernel fault goes to the fault hook first.
    inline void check(CUresult result, const char* call);
    [[noreturn]] void throw_cuda_error(CUresult result, const char* call);

    inline void check(CUresult result, const char* call)
    {
        if (result != CUDA_SUCCESS)
        {
            throw_cuda_error(result, call);
        }
    }

    // Whether result is a sticky kernel fault (illegal address, trap, assert, ...): one that leaves the
    // process' CUDA state unusable.
    bool is_kernel_fault(CUresult result) noexcept;

    // The CUresult's name and description, through the driver when loaded, else a fallback.
    std::string cuda_error_name(CUresult result);
    std::string cuda_error_description(CUresult result);
}
