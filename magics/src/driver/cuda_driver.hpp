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

#include <atomic>
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
// still runs the rest; their callers name the missing call. cuLaunchKernelEx and cuOccupancyMaxActiveClusters
// (CUDA 12.0+) carry launch attributes (clusters, priority, programmatic dependent launch: launch_attributes).
#define XCUDA_DRIVER_OPTIONAL(X)          \
    X(cuFuncGetParamInfo)                 \
    X(cuFuncSetAttribute)                 \
    X(cuModuleGetGlobal)                  \
    X(cuLaunchCooperativeKernel)          \
    X(cuLaunchKernelEx)                   \
    X(cuOccupancyMaxActiveClusters)       \
    X(cuTensorMapEncodeTiled)             \
    X(cuTensorMapEncodeIm2col)            \
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

// CUDA arrays, their copies, texture and surface objects (runtime/textures, docs/textures.md). Optional like the
// list above: a driver or a test double without them still runs everything else, and runtime/textures names
// the missing call when a texture is asked for.
#define XCUDA_DRIVER_TEXTURES(X)          \
    X(cuArrayCreate)                      \
    X(cuArray3DCreate)                    \
    X(cuArrayDestroy)                     \
    X(cuArrayGetDescriptor)               \
    X(cuArray3DGetDescriptor)             \
    X(cuMemcpy2D)                         \
    X(cuMemcpy3D)                         \
    X(cuTexObjectCreate)                  \
    X(cuTexObjectDestroy)                 \
    X(cuTexObjectGetResourceDesc)         \
    X(cuSurfObjectCreate)                 \
    X(cuSurfObjectDestroy)

    class cuda_driver
    {
    public:
#define XCUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
        XCUDA_DRIVER_REQUIRED(XCUDA_DRIVER_MEMBER)
        XCUDA_DRIVER_OPTIONAL(XCUDA_DRIVER_MEMBER)
        XCUDA_DRIVER_TEXTURES(XCUDA_DRIVER_MEMBER)
#undef XCUDA_DRIVER_MEMBER

        // The loaded, initialised driver; throws cuda_unavailable_error (no library, a stub, no
        // device) or cuda_error. The load and cuInit are attempted once per process.
        //
        // The fallback: where no NVIDIA driver or no device is found (no libcuda.so.1, the toolkit's stub,
        // cuInit's CUDA_ERROR_NO_DEVICE) and nothing chose the device (XCUDA_DEVICE and XCUDA_LIBCUDA
        // unset), the first get() switches the process to the PTX simulator, once, and returns its table;
        // take_fallback_notice() then tells it once, for the notice a user sees. XCUDA_DEVICE=gpu (or any
        // XCUDA_DEVICE but "simulator") refuses it: the error stays. Any other failure (a driver too old,
        // a mismatch, another cuInit error) stays an error naming xcuda.use_simulator(). Serialised with
        // use_simulator() and use_gpu(): threads that ask at once see one switch.
        static const cuda_driver& get()
        {
            // The launch path (twice per launch): a working table is one load, inline.
            if (const cuda_driver* working = s_working.load(std::memory_order_acquire))
            {
                return *working;
            }
            return get_checked();
        }

        // True when the PTX simulator (libxcuda-sim.so) was opened instead of libcuda.so.1
        // (XCUDA_DEVICE=simulator, use_simulator(), the fallback): modules must then be loaded from PTX
        // (docs/simulator.md).
        bool simulated() const noexcept { return m_simulated; }

        // Who chose this table, in words for %cuda_info: "XCUDA_DEVICE=simulator", "xcuda.use_simulator()",
        // "the fallback: no NVIDIA driver was found and XCUDA_DEVICE is unset", "xcuda.use_gpu()"; "" for
        // the driver found by default.
        const std::string& chosen_by() const noexcept { return m_chosen_by; }

        // Switches this process to the PTX simulator (libxcuda-sim.so), as XCUDA_DEVICE=simulator does at
        // start: later calls of get() return its table. "" when done (or already on it), else why not (the
        // library could not be opened). The caller (the runtime) must hold no handle of the driver it
        // replaces: no context, module or memory (cuda_session::forget_devices_if_unused). Serialised.
        static std::string use_simulator();

        // Switches this process from the simulator back to the NVIDIA driver (libcuda.so.1, or
        // XCUDA_LIBCUDA): "" when done or already on a driver, else why not (no driver, no device: the
        // simulator stays). The caller holds no handle of the simulator (as for use_simulator). Serialised.
        static std::string use_gpu();

        // The fallback's reason ("no NVIDIA driver was found") the first time it is asked after the
        // fallback happened; "" every other time, and when there was none. Thread-safe: one caller gets it.
        static std::string take_fallback_notice();

        // True when get() would succeed without the fallback (the table in use works); never throws and
        // never falls back, so that questions asked while compiling do not switch the process.
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
        // get() when no working table is published: loads the driver, falls back or raises.
        static const cuda_driver& get_checked();
        // Makes table the one in use (instance()), and get()'s when it works.
        static void publish(cuda_driver* table) noexcept;
        inline static std::atomic<const cuda_driver*> s_working{nullptr};  // the table in use when it works
        void load();
        static void connect_launch_watch(void* library);  // the simulator's, to set_launch_watch's

        // The fallback of get(): the simulator's table once it is open (or another thread's switch), else
        // the table in use with `why` the simulator could not be opened.
        static const cuda_driver& fall_back(std::string& why);
        // load()'s record of a no-driver case: the short reason, and whether nothing chose the device
        // (no XCUDA_LIBCUDA, no XCUDA_DEVICE, not use_gpu()); an XCUDA_DEVICE is named in the error.
        void may_fall_back(const std::string& reason, bool explicit_library, const std::string& device);

        void* m_library = nullptr;
        bool m_tried = false;
        bool m_simulated = false;
        bool m_force_simulator = false;  // made by use_simulator() or the fallback
        bool m_force_gpu = false;        // made by use_gpu(): XCUDA_DEVICE=simulator is not read
        bool m_may_fall_back = false;    // no driver or no device, and nothing chose the device
        std::string m_fallback_reason;   // short: "no NVIDIA driver was found"
        std::string m_chosen_by;
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
